"""The post-processing filters, registered once, in the order the model's text meets them.

Each filter is one function: given the cursor's surroundings, the stage that does its
work on one suggestion (`stage.py` says what a stage may do). The stream runs the stages
as the text arrives; the text cleaned in one go is the stream run to its end. Every
filter has golden cases in fixtures/postprocess/ naming it, which fail without it.

Text the model re-types after the cursor follows one policy: whole lines that repeat
the lines below the cursor are cut (`drop_repeated_suffix_lines`); on the cursor's
line, a suggestion ending with the entire rest of the line keeps it and replaces that
range (`replaced_suffix_length`), and one ending with only the start of the rest is
trimmed before it (`trim_suffix_overlap`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from lsp_spark.languages import HeaderWords, profile_for
from lsp_spark.postprocess.brackets import CLOSE_BRACKETS, Brackets, depth_of
from lsp_spark.postprocess.context import CursorContext, columns, leading
from lsp_spark.postprocess.context import detect_indent_unit as detect_indent_unit
from lsp_spark.postprocess.fences import Fence, code_start
from lsp_spark.postprocess.reindent import Reindenter
from lsp_spark.postprocess.scope import ScopeLimit
from lsp_spark.postprocess.stage import PASS, End, Filter, Finish, Partial, Stage, Verdict

# (`detect_indent_unit` is imported as itself: the workspace reads documents' units here.)

SPECIAL_TOKEN = re.compile(
    r"<\|(?:fim_[a-z]+|endoftext|file_sep|im_end|im_start|repo_name|eot_id|end|EOT)\|>"
    r"|<(?:fim_prefix|fim_suffix|fim_middle|file_sep|EOT|PRE|SUF|MID)>|</s>"
    r"|<｜[^｜]*｜>"
)
TOKEN_WINDOW = 64
"""How far before the newest delta a special token split across deltas may start."""
MAX_CHARS = 2000
"""Hard cap on a suggestion's length, whatever the settings say."""
MAX_LINES = 100
"""Hard cap on a suggestion's lines, whatever `max_lines` says."""
MAX_REPEATED_BLOCK = 4
LOOP_CHECK_CHARS = 12
"""Characters between looks for a looping line in the line still arriving: the shortest
loop spans 8, and the look (two regexes) costs more than the rest of a delta's handling."""
LOOP_WINDOW = 96
"""How much of the line still arriving a look for a loop reads."""
MAX_PARSE_CHECKS = 5
"""Each check is a parse of the document, so `prefer_parsable` tries at most this many."""
SHORT_LOOP = re.compile(r"(.{1,3}?)\1{7,}")
SHORTEST_LOOP = 8
"""Characters the shortest loop `SHORT_LOOP` finds spans."""
LONG_LOOP = re.compile(r"(.{4,24}?)\1{3,}")
_TEXT = re.compile(r"\S")


def strip_special_tokens(_: CursorContext) -> Stage:
    """A FIM or end-of-text token means the model is done; what follows is noise."""
    return _SPECIAL_TOKENS


class _SpecialTokens(Stage):
    __slots__ = ()

    def line(self, line: str, last: bool) -> Verdict:
        found = SPECIAL_TOKEN.search(line)
        return line if found is None else End(line[: found.start()])

    def peek(self, partial: Partial) -> bool:
        text, start = partial.text, max(partial.fresh - TOKEN_WINDOW, partial.start)
        # Every token starts with `<`: looking for one costs less than the pattern's search.
        return text.find("<", start) >= 0 and SPECIAL_TOKEN.search(text, start) is not None


_SPECIAL_TOKENS = _SpecialTokens()


def strip_fences_and_preamble(_: CursorContext) -> Stage:
    """Chat models like to wrap code in Markdown, after a sentence; keep only the code."""
    return _Fenced()


class _Fenced(Stage):
    """Holds the first lines until they show whether the code is fenced (`code_start`),
    then passes the code on up to the closing fence."""

    __slots__ = ("_fence", "_head")

    def __init__(self) -> None:
        self._head: list[str] | None = []
        self._fence: Fence | None = None

    def line(self, line: str, last: bool) -> Verdict:
        if self._fence is not None:
            closing = self._fence.closing_at(line)
            return line if closing < 0 else End(line[:closing])
        head = self._head
        if head is None:
            return line
        head.append(line)
        start = code_start(head, complete=last)
        if start is None:
            return ()
        self._head = None
        code, self._fence = start
        return tuple(head[code:])

    def peek(self, partial: Partial) -> bool:
        fence = self._fence
        return fence is not None and fence.closing_at(partial.text, partial.start) >= 0


def start_on_the_cursor_line(context: CursorContext) -> Stage:
    """On a blank line the editor has indented, the code goes on that line: a model that
    opens with a line break would leave it blank and show its code on the line below."""
    blank = not context.line_prefix.strip() and not context.line_suffix.strip()
    return _LeadingBlankLines() if blank else PASS


class _LeadingBlankLines(Stage):
    """Drops the blank lines before the first line with text, and that line's indentation:
    the cursor already stands where the editor indented it."""

    __slots__ = ("_started",)

    def __init__(self) -> None:
        self._started = False

    def line(self, line: str, last: bool) -> Verdict:
        if self._started:
            return line
        if not line.strip() and not last:
            return ()
        self._started = True
        return line.lstrip()

    def peek(self, partial: Partial) -> bool:
        if not self._started:
            found = _TEXT.search(partial.text, partial.start)
            if found is not None:
                partial.start = found.start()
        return False


def strip_echoed_line_prefix(context: CursorContext) -> Stage:
    """Drop a re-statement of the text already typed on the cursor's line."""
    typed = context.line_prefix.strip()
    return _EchoedPrefix(typed) if len(typed) >= 3 else PASS


class _EchoedPrefix(Stage):
    """Holds blank lines until the first line with text; when that line re-types the
    cursor's line, the blank lines and the re-typed text go."""

    __slots__ = ("_arriving", "_held", "_typed")

    def __init__(self, typed: str) -> None:
        self._typed = typed
        self._held: list[str] | None = []
        self._arriving: tuple[int, int] | None = None
        """Where the line still arriving starts, and where its code starts once known."""

    def line(self, line: str, last: bool) -> Verdict:
        held = self._held
        if held is None:
            return line
        if not line.strip() and not last:
            held.append(line)
            return ()
        self._held = None
        text = line.lstrip()
        if text.startswith(self._typed):
            return text[len(self._typed) :]
        return (*held, line)

    def peek(self, partial: Partial) -> bool:
        if self._held is None:
            return False
        arriving = self._arriving
        if arriving is None or arriving[0] != partial.start:
            arriving = self._arriving = self._code_start(partial.text, partial.start)
            if arriving is None:
                return False
        partial.start = arriving[1]
        return False

    def _code_start(self, text: str, start: int) -> tuple[int, int] | None:
        """(start, where the code starts) for the line arriving at `start`, once its text
        shows whether it re-types the cursor's line."""
        found = _TEXT.search(text, start)
        if found is None:
            return None
        typed = self._typed
        if text.startswith(typed, found.start()):
            return start, found.start() + len(typed)
        if typed.startswith(text[found.start() :]):
            return None
        return start, start


def cut_repetition(context: CursorContext) -> Stage:
    """Models loop: keep one copy of a repeated line, block or piece of a line; cap the size."""
    return _Repetition(context.line_prefix)


class _Repetition(Stage):
    """Lines are compared with their indentation (the first one with the cursor's line
    prefix), so `return x` inside an `if` and again after it is not a repeat. Past
    `MAX_CHARS`, the text ends with the last line that fits (or the first line, cut)."""

    __slots__ = ("_chars", "_line_prefix", "_lines", "_loop_check_at")

    def __init__(self, line_prefix: str) -> None:
        self._line_prefix = line_prefix
        self._lines: list[str] = []
        self._chars = 0
        self._loop_check_at = 0

    def line(self, line: str, last: bool) -> Verdict:
        lines = self._lines
        self._chars += len(line) + (not last)
        capped = self._chars > MAX_CHARS
        if capped:
            if lines:
                return End()
            line = line[:MAX_CHARS]
        loop = looping_at(line)
        if loop is not None:
            return End(line[:loop])
        lines.append((line if lines else self._line_prefix + line).rstrip())
        repeat = _repeat_start(lines)
        if repeat is not None:
            return End(take_back=len(lines) - 1 - repeat)
        return End(line) if capped else line

    def peek(self, partial: Partial) -> bool:
        end = len(partial.text)
        if self._chars + end - partial.start > MAX_CHARS:
            return True
        if end < self._loop_check_at:
            return False
        self._loop_check_at = end + LOOP_CHECK_CHARS
        recent = partial.text[max(partial.start, end - LOOP_WINDOW) : end]
        return looping_at(recent) is not None


def looping_at(line: str) -> int | None:
    """Where a line starts to loop on a short piece (`i, i, i, …`, `list of list of …`):
    the end of the piece's first copy. A piece needs a letter or digit (`----` is no
    loop) and a separator (`0x00000000` is no loop)."""
    if len(line) < SHORTEST_LOOP:
        return None
    for pattern in (SHORT_LOOP, LONG_LOOP):
        for match in pattern.finditer(line):
            piece = match.group(1)
            if any(char.isalnum() for char in piece) and not piece.isalnum():
                return match.start() + len(piece)
    return None


def _repeat_start(lines: list[str]) -> int | None:
    """The first line to drop when the newest line ends a line or block repeated back to
    back, or passes `MAX_LINES`."""
    count = len(lines)
    if count > MAX_LINES:
        return MAX_LINES
    for size in range(1, MAX_REPEATED_BLOCK + 1):
        if count < 2 * size:
            break
        block = lines[count - size :]
        if block == lines[count - 2 * size : count - size] and any(map(_substantial, block)):
            return count - size
    return None


def _substantial(line: str) -> bool:
    return any(char.isalnum() for char in line)


def limit_lines(context: CursorContext) -> Stage:
    """One line mid-line or where asked, or the lines its open brackets span when it ends
    the cursor's line (`return [` written over three lines is one statement; its first
    line alone breaks the code); otherwise at most `max_lines`, less the lines at the end
    that open Python blocks whose bodies the limit cuts off (`bodiless_tail`)."""
    return _LimitLines(context)


class _LimitLines(Stage):
    __slots__ = (
        "_brackets",
        "_context",
        "_count",
        "_max_lines",
        "_multiline",
        "_profile",
        "_written",
    )

    def __init__(self, context: CursorContext) -> None:
        self._multiline = context.multiline
        self._max_lines = context.max_lines
        self._count = 0
        self._context = context
        self._profile = profile_for(context.language)
        self._written: list[str] = []
        """The lines passed on, where several may be."""
        self._brackets = (
            None
            if context.multiline or context.line_suffix.strip()
            else Brackets(self._profile.syntax)
        )

    def line(self, line: str, last: bool) -> Verdict:
        index = self._count
        self._count += 1
        if self._multiline:
            if index >= self._max_lines:
                # Cut off from the bodies the limit drops, headers would break the code.
                if not self._profile.offside:
                    return End()
                return End(take_back=bodiless_tail(self._written, None, self._context))
            self._written.append(line)
            return line
        if last:
            return line
        if self._brackets is not None and line.strip():
            prefix = self._context.line_prefix if index == 0 else ""
            for _ in self._brackets.scan(prefix + line, len(prefix)):
                pass
            if self._brackets.depth > 0:
                return line if index + 1 < self._max_lines else End()
        # Mid-line, the first line is the suggestion; nothing at all when it is blank.
        return End(line if line.strip() else None)


def normalise_indentation(context: CursorContext) -> Stage:
    """Re-indent lines after the first in the document's unit (tabs, 2 or 4 spaces),
    keeping their structure: models default to four spaces whatever the file uses."""
    return Reindenter(context)


def indent_body_under_header(context: CursorContext) -> Stage:
    """Where blocks are made by indentation, give each header its body. Small models often
    write the body of the `if x:` they just opened at the header's level or below it; taken
    as written, the header is left without the body the language requires (an error the
    grammar does not even report) and the body lands in the wrong block. The line after
    the header moves under it, with the lines nested in it; a line back at its level is
    read as written, and one carrying the statement on (`else:`) stays where it is. The
    headers the suggestion ends with, comments after them aside, go where code below
    goes on at their level or shallower: that code is not their body, and at their level
    they would swallow it (`bodiless_tail`)."""
    return _BodyUnderHeader(context) if profile_for(context.language).offside else PASS


class _BodyUnderHeader(Stage):
    __slots__ = ("_context", "_first", "_header", "_moved_from", "_profile", "_shift", "_unit")

    def __init__(self, context: CursorContext) -> None:
        self._context = context
        self._profile = profile_for(context.language)
        self._unit = columns(context.indent_unit, context.indent_unit)
        self._header: int | None = None
        """The width of the line before, when it opened a block."""
        self._shift = 0
        """Columns added to the lines being moved; 0 when none are."""
        self._moved_from = 0
        """The width the moved line was written at: only lines deeper are nested in it."""
        self._first = True

    def line(self, line: str, last: bool) -> Verdict:
        text = line.strip()
        if self._first:
            self._first = False
            whole = self._context.line_prefix + line
            self._opens(whole, self._width(whole))
            return line
        if not text:
            return line
        width = self._width(line)
        nested = bool(self._shift) and width > self._moved_from
        if not nested:
            self._shift = 0
            header = self._header
            if header is not None and width <= header and not CONTINUES_STATEMENT.match(text):
                self._moved_from = width
                self._shift = header + self._unit - width
        if self._shift:
            width += self._shift
            line = self._indentation(width) + text
        self._opens(line, width)
        return line

    def finish(self, text: str) -> str:
        below = next((line for line in self._context.next_lines if line.strip()), None)
        if below is None:
            return text  # the block ends here: a header starts new code, its body comes next
        lines = text.split("\n")
        tail = bodiless_tail(lines, below, self._context)
        return "\n".join(lines[: len(lines) - tail]).rstrip() if tail else text

    def _width(self, line: str) -> int:
        return columns(leading(line), self._context.indent_unit)

    def _opens(self, line: str, width: int) -> None:
        self._header = width if self._profile.opens_block(line.rstrip()) else None

    def _indentation(self, width: int) -> str:
        if self._context.indent_unit == "\t":
            return "\t" * (width // self._unit) + " " * (width % self._unit)
        return " " * width


def bodiless_tail(lines: list[str], below: str | None, context: CursorContext) -> int:
    """How many of a suggestion's last `lines` are headers (`if x:`) with no body, with the
    blank and comment lines after each: none of its own came, and the code `below` (the
    next line with text, if any) is one only where it is deeper. The first line is read
    after the cursor's line prefix; where it is all that is left and the user typed its
    start, the user is writing that header and its body comes next."""
    profile = profile_for(context.language)
    markers = profile.syntax.line_comments
    kept = len(lines)
    while True:
        end = kept
        while end and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith(markers)):
            end -= 1
        if end == 0 or (end == 1 and context.line_prefix.strip()):
            break
        whole = context.line_prefix + lines[0] if end == 1 else lines[end - 1]
        if not profile.opens_block(whole.rstrip()) or (
            below is not None
            and columns(leading(below), context.indent_unit)
            > columns(leading(whole), context.indent_unit)
        ):
            break
        kept = end - 1
    return len(lines) - kept


def end_at_a_stray_indent(context: CursorContext) -> Stage:
    """In an indentation language, end before a line indented deeper than the code line
    before it where that line neither opens a block nor leaves anything open (a bracket, a
    string, a backslash): Python rejects the indent, and tree-sitter's grammar takes it, so
    the parse check would not see it. Small models drift right as they repeat a line."""
    return _StrayIndent(context) if profile_for(context.language).offside else PASS


class _StrayIndent(Stage):
    __slots__ = ("_brackets", "_context", "_previous", "_profile")

    def __init__(self, context: CursorContext) -> None:
        self._context = context
        self._profile = profile_for(context.language)
        self._brackets = Brackets(self._profile.syntax)
        self._previous: str | None = None
        """The last code line, whole (the cursor's with what precedes the cursor)."""

    def line(self, line: str, last: bool) -> Verdict:
        previous = self._previous
        whole = self._context.line_prefix + line if previous is None else line
        text = whole.strip()
        if not text or text.startswith(self._profile.syntax.line_comments):
            return line
        if previous is not None and self._stray(whole, previous):
            return End()
        if self._brackets.open_until is None:
            self._previous = whole
        for _ in self._brackets.scan(whole):
            pass
        return line

    def _stray(self, line: str, previous: str) -> bool:
        brackets = self._brackets
        width = columns(leading(line), self._context.indent_unit)
        return (
            width > columns(leading(previous), self._context.indent_unit)
            and brackets.depth <= 0
            and brackets.open_until is None
            and not previous.rstrip().endswith("\\")
            and not self._profile.opens_block(previous.rstrip())
        )


def open_the_block_below(context: CursorContext) -> Stage:
    """On a blank line above deeper code (`CursorContext.header_only`), keep only a line
    that opens a block, or one whose brackets stay open for the lines below to close:
    anything else leaves that code indented under nothing, which does not even parse
    (tree-sitter's grammar accepts it, so the parse check would not see it). Where that
    code is followed by a clause (`elif`), the line must start a header the clause can
    follow: an `elif` after a loop's body does not parse either, and the file already had
    the error of a header missing there, so the parse check does not count it as new."""
    return _HeaderAboveBody(context) if context.header_only else PASS


class _HeaderAboveBody(Stage):
    __slots__ = ("_context",)

    def __init__(self, context: CursorContext) -> None:
        self._context = context

    def finish(self, text: str) -> str:
        if not text.strip():
            return text
        context = self._context
        lines = (context.line_prefix + text.rstrip()).split("\n")
        fitting = context.headers_that_fit
        if fitting and not HeaderWords.starts(lines[0].lstrip(), fitting):
            return ""
        if profile_for(context.language).opens_block(lines[-1]):
            return text
        return text if depth_of(text, context) > 0 or lines[-1].endswith("\\") else ""


def limit_scope(context: CursorContext) -> Stage:
    """Stop where the suggestion closes the cursor's block or starts a sibling definition."""
    return ScopeLimit(context)


def fit_one_statement(context: CursorContext) -> Stage:
    """Where the code below the cursor goes on in its block, end after one statement: the
    first line, or, when that line opens a block, the block it opens. More would push
    the code below out of place or break it."""
    return _OneStatement(context) if context.one_statement else PASS


CONTINUES_STATEMENT = re.compile(
    r"[)\]}]*\s*(?:else|elif|elsif|elseif|except|finally|catch|rescue|ensure)\b"
)
"""A line at the statement's own level that carries the statement on (`else:`, `} catch`)."""
CLOSES_STATEMENT = re.compile(r"[)\]}]|end\b")


class _OneStatement(Stage):
    __slots__ = ("_bare", "_context", "_lines", "_open", "_profile", "_width")

    def __init__(self, context: CursorContext) -> None:
        self._context = context
        self._profile = profile_for(context.language)
        self._lines = 0
        self._open = False
        """Whether the statement's last header opened a block whose body may follow."""
        self._bare = 0
        """Lines passed on since that header while none of its body came (0: not open)."""
        self._width = 0

    def line(self, line: str, last: bool) -> Verdict:
        context = self._context
        self._lines += 1
        if self._lines == 1:
            whole = context.line_prefix + line
            self._width = columns(leading(whole), context.indent_unit)
            self._open = self._profile.opens_block(whole.rstrip())
            self._bare = int(self._open)
            return line
        if not self._open:
            return End()
        text = line.strip()
        if not text:
            self._bare += bool(self._bare)
            return line
        if columns(leading(line), context.indent_unit) > self._width:
            self._bare = 0
            return line
        if self._bare:
            # A header whose body never came (the model wrote it at the header's level):
            # alone, it breaks the code below.
            return End(take_back=self._bare)
        if CONTINUES_STATEMENT.match(text):
            self._open = self._profile.opens_block(text)
            self._bare = int(self._open)
            return line
        return End(line) if CLOSES_STATEMENT.match(text) else End()

    def peek(self, partial: Partial) -> bool:
        return self._lines >= 1 and not self._open


def drop_repeated_suffix_lines(context: CursorContext) -> Stage:
    """Cut the suggestion where it starts to re-type the lines after the cursor; the
    cursor's line, completed, counts too (nothing is left when it would be a copy of the
    line below).

    Whole lines below the cursor are never replaced, only trimmed off: the editor can
    replace text on the cursor's line alone.
    """
    for line in context.next_lines:
        if line.strip():
            return _RepeatedSuffixLines(line, context.line_prefix)
    return PASS


class _RepeatedSuffixLines(Stage):
    __slots__ = ("_following", "_typed")

    def __init__(self, following: str, typed: str) -> None:
        self._following = following
        self._typed: str | None = typed
        """What the cursor's line holds before the suggestion's first line; None after it."""

    def line(self, line: str, last: bool) -> Verdict:
        typed, self._typed = self._typed, None
        whole = line if typed is None else typed + line
        return End() if repeats_line(whole, self._following) else line


def repeats_line(line: str, document_line: str) -> bool:
    """Whether a suggested line re-types a line of the document: the same code, and for
    bare punctuation like `}`, which closes many blocks, also the same indentation."""
    if not line.strip():
        return False
    if _substantial(line):
        return line.strip() == document_line.strip()
    return line.rstrip() == document_line.rstrip()


def trim_trailing_whitespace(context: CursorContext) -> Stage:
    """Trailing blanks only make the ghost text longer than what will be kept."""
    return Finish(_without_trailing_whitespace, context)


def _without_trailing_whitespace(text: str, _: CursorContext) -> str:
    return "\n".join(line.rstrip() for line in text.rstrip().split("\n"))


def trim_suffix_overlap(context: CursorContext) -> Stage:
    """Trim a suggestion that ends by re-typing only the start of the rest of the line.

    For the suffix `) -> int:`, `x: int)` becomes `x: int`. A suggestion ending with
    the entire rest of the line is kept: `replaced_suffix_length` replaces that range.
    """
    return Finish(_without_suffix_overlap, context) if context.line_suffix.strip() else PASS


def _without_suffix_overlap(text: str, context: CursorContext) -> str:
    tail = context.line_suffix.strip()
    if replaced_suffix_length(text, context):
        return text
    last = text.rsplit("\n", 1)[-1]
    for size in range(len(tail) - 1, 0, -1):
        if _is_word(tail[size - 1]) and _is_word(tail[size]):
            continue
        head = tail[:size].rstrip()
        if not last.endswith(head):
            continue
        before = last[len(last) - len(head) - 1 : len(last) - len(head)]
        if _is_word(head[0]) and (len(head) < 3 or _is_word(before)):
            continue
        if _retypes(text, head, context):
            kept = text[: len(text) - len(head)]
            return kept.rstrip() if context.line_suffix[:1].isspace() else kept
    return text


def _is_word(char: str) -> bool:
    return char.isalnum() or char in "_$"


def _retypes(text: str, overlap: str, context: CursorContext) -> bool:
    """Whether the brackets in `overlap` at the end of `text` are the suffix's, re-typed,
    rather than the suggestion's own (as in `bar(x)` before an auto-inserted `)`)."""
    if not any(char in CLOSE_BRACKETS for char in overlap):
        return True
    return depth_of(text[: len(text) - len(overlap)], context) <= 0


def prefer_parsable(context: CursorContext) -> Stage:
    """Prefer the longest version of the suggestion that adds no syntax error.

    Dropping trailing lines (or, in one line, cutting where the brackets balance) fixes
    most half-finished endings; with no such version there is nothing to suggest, unless
    the document is already broken at the cursor and the counts cannot be trusted.
    A single line that settles everything it opens is taken as it is: the parse (the
    costliest step after the model) rarely finds anything there. One that ends on an
    operator (`return m *`, where a looping line was cut) or inside a string, or starts a
    header without opening its block (`if a and b`, cut by the token limit), is parsed.
    """
    count = context.new_errors
    return PASS if count is None else _Parsable(count, context)


class _Parsable(Stage):
    __slots__ = ("_context", "_count")

    def __init__(self, count: Callable[[str], int], context: CursorContext) -> None:
        self._count = count
        self._context = context

    def finish(self, text: str) -> str:
        context, count = self._context, self._count
        if not text.strip() or ("\n" not in text and _settled(text, context)):
            return text
        if count(_inserted(text, context)) <= 0:
            return text
        for candidate in _shorter(text, context)[: MAX_PARSE_CHECKS - 1]:
            if count(_inserted(candidate, context)) <= 0:
                return candidate
        parses = context.parses_at_cursor
        return "" if parses is None or parses() else text


TRAILING_OPERATOR = re.compile(r"[-+*/%=<>&|^~,\\]\s*$")
"""A line ending here leaves an expression or a list unfinished (or, as `i++`, may not)."""


def _settled(line: str, context: CursorContext) -> bool:
    """Whether one line closes every bracket and string it opens and ends where an
    expression can, and, if it starts a block's header, opens the block: then adding it is
    most likely no syntax error. (`if x == 1 and y` cut by the token limit is not.)"""
    profile = profile_for(context.language)
    brackets = Brackets(profile.syntax)
    whole = context.line_prefix + line
    for _ in brackets.scan(whole, len(context.line_prefix)):
        pass
    headers = profile.headers
    unopened = (
        headers is not None
        and headers.starts(whole.lstrip(), headers.statements + headers.definitions)
        and not profile.opens_block(whole.rstrip())
    )
    return (
        brackets.depth == 0
        and brackets.open_until is None
        and not TRAILING_OPERATOR.search(line)
        and not unopened
    )


def _inserted(candidate: str, context: CursorContext) -> str:
    """The text as it ends up in the document once the replaced range is taken out."""
    if replaced_suffix_length(candidate, context):
        return candidate[: len(candidate) - len(context.line_suffix.strip())]
    return candidate


def _shorter(text: str, context: CursorContext) -> list[str]:
    """Shorter versions of the suggestion, longest first."""
    lines = text.split("\n")
    versions: Iterable[str]
    if len(lines) > 1:
        versions = ("\n".join(lines[:count]).rstrip() for count in range(len(lines) - 1, 0, -1))
    else:
        versions = reversed(_balanced_points(text, context))
    return [version for version in dict.fromkeys(versions) if version.strip()]


def _balanced_points(line: str, context: CursorContext) -> list[str]:
    """Prefixes of a one-line suggestion that end where its brackets are balanced."""
    brackets = Brackets(profile_for(context.language).syntax)
    start = len(context.line_prefix)
    points = []
    for column, char in brackets.scan(context.line_prefix + line, start):
        end = column - start
        if brackets.depth < 0:
            points.append(line[:end].rstrip())
            break
        if brackets.depth == 0:
            points.append(line[: end + (char in ")]};")].rstrip())
    return [point for point in points if point != line]


def replaced_suffix_length(text: str, context: CursorContext) -> int:
    """How much of the line after the cursor the suggestion replaces.

    When the suggestion's last line ends with the entire rest of the cursor's line (the
    model wrote `a, b)` where the editor auto-inserted `)`), it keeps that text and
    replaces the range rather than adding a second copy; a partial re-type is trimmed
    instead, by `trim_suffix_overlap`.
    """
    rest = context.line_suffix.rstrip()
    tail = rest.strip()
    if not tail:
        return 0
    last_line = text.rsplit("\n", 1)[-1]
    if last_line.endswith(tail) and _retypes(text, tail, context):
        return len(rest)
    return 0


FILTERS: tuple[Filter, ...] = (
    strip_special_tokens,
    strip_fences_and_preamble,
    start_on_the_cursor_line,
    strip_echoed_line_prefix,
    cut_repetition,
    limit_lines,
    normalise_indentation,
    indent_body_under_header,
    end_at_a_stray_indent,
    open_the_block_below,
    limit_scope,
    fit_one_statement,
    drop_repeated_suffix_lines,
    trim_trailing_whitespace,
    trim_suffix_overlap,
    prefer_parsable,
)
"""Every filter, in the order the text goes through them (finishing work comes after
all lines have gone through the line stages, whatever its place here)."""
