"""Small pure filters from raw model text to a clean suggestion.

Each takes the text so far and the cursor's surroundings and returns the text it
keeps; none of them knows about the others, so each can be tested alone.

The judgements made line by line (repetition, indentation, scope) live in small
trackers that see one line at a time and never look ahead, so the streaming
assembler can ask the same questions of each line as it completes and close the
stream exactly where the batch filters would cut.

Text the model re-types after the cursor follows one policy: whole lines that repeat
the lines below the cursor are cut (`drop_repeated_suffix_lines`); on the cursor's
line, a suggestion ending with the entire rest of the line keeps it and replaces that
range (`replaced_suffix_length`), and one ending with only the start of the rest is
trimmed before it (`trim_suffix_overlap`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from functools import cache

SPECIAL_TOKEN = re.compile(
    r"<\|(?:fim_[a-z]+|endoftext|file_sep|im_end|im_start|repo_name|eot_id|end|EOT)\|>"
    r"|<(?:fim_prefix|fim_suffix|fim_middle|file_sep|EOT|PRE|SUF|MID)>|</s>"
    r"|<｜[^｜]*｜>"
)
FENCE_OPEN = re.compile(r"^\s*[^\n`]*?```[\w+#.-]*[^\S\n]*\n")
PREAMBLE = re.compile(
    r"^\s*(?:here(?:'s| is)|sure|certainly|the (?:missing|completed?)|to complete)[^\n]*[:.]\n",
    re.IGNORECASE,
)

DEFAULT_INDENT = "    "
MAX_CHARS = 2000
"""Hard cap on a suggestion's length, whatever the settings say."""
MAX_LINES = 100
"""Hard cap on a suggestion's lines, whatever `max_lines` says."""
MAX_PARSE_CHECKS = 5
"""Each check is a parse of the document, so `prefer_parsable` tries at most this many."""
MAX_REPEATED_BLOCK = 4

BRACE_LANGUAGES = frozenset(
    {
        "c",
        "cpp",
        "csharp",
        "java",
        "javascript",
        "javascriptreact",
        "typescript",
        "typescriptreact",
        "go",
        "rust",
        "php",
    }
)
DEFINITION_LANGUAGES = BRACE_LANGUAGES | {"python", "ruby", "lua"}
OPEN_BRACKETS = "([{"
CLOSE_BRACKETS = ")]}"

OPENS_BLOCK = re.compile(r"(?::|\{|=>|\bdo|\bthen)\s*$")
DECORATOR = re.compile(r"@[\w.]|#\[")
DEFINITION = re.compile(
    r"(?:(?:export|default|public|private|protected|internal|static|final|abstract|async|"
    r"override|virtual|sealed|partial|unsafe|extern|inline|local|pub(?:\([^)]*\))?)\s+)*"
    r"(?:def|class|function\*?|func|fn|impl|struct|enum|trait|interface|record|namespace|mod"
    r"|module|type)(?=\s+[\w$(]|\s*<)"
)
METHOD = re.compile(
    r"(?:[\w$<>\[\],.?*&:]+\s+)*(?P<name>[\w$]+)\s*(?:<[^>]*>)?\s*\([^;]*\)[^;{]*\{\s*$"
)
ARROW_FUNCTION = re.compile(
    r"(?:export\s+)?(?:const|let|var)\s+[\w$]+[^=]*=\s*(?:async\s+)?"
    r"(?:function\b|\([^)]*\)[^=]*=>|[\w$]+\s*=>)"
)
NOT_METHOD_NAMES = frozenset(
    {
        "if", "for", "while", "switch", "catch", "return", "else", "do", "try", "foreach",
        "using", "lock", "synchronized", "new", "await", "function", "func", "sizeof", "match",
        "loop",
    }
)  # fmt: skip
CHAR_LITERAL = re.compile(r"'(?:\\.[^'\n]{0,8}|[^\\'\n])'")


@dataclass(frozen=True, slots=True)
class CursorContext:
    """What surrounds the cursor, as the filters need it."""

    line_prefix: str
    """Text of the cursor's line before the cursor."""
    line_suffix: str
    """Text of the cursor's line after the cursor."""
    next_lines: tuple[str, ...] = ()
    """A few lines after the cursor's line, to catch a model repeating them."""
    multiline: bool = True
    """Whether several lines may be suggested; otherwise the rest of one line."""
    max_lines: int = 12
    language: str = "plaintext"
    """The document's LSP language id; picks the scope rules and the string syntax."""
    indent_unit: str = DEFAULT_INDENT
    """The document's indentation unit ("\\t" or N spaces) that suggestions are given."""
    new_errors: Callable[[str], int] | None = None
    """How many syntax errors inserting a candidate at the cursor adds (None: no grammar)."""
    parses_at_cursor: bool | Callable[[], bool] = True
    """False when the document already has a syntax error at the cursor: error counts there
    cannot tell a bad suggestion from a bad document, so none is dropped for them. (Or how
    to find out: it takes a parse, which few suggestions need.)"""


def detect_indent_unit(lines: Iterable[str]) -> str:
    """The document's indentation unit, so suggestions can be re-indented to match it.

    Tabs when more lines are indented with tabs than with spaces; otherwise the most
    frequent positive step between consecutive non-blank lines (the smaller on a tie).
    """
    tabbed = spaced = 0
    steps: Counter[int] = Counter()
    previous = 0
    for line in lines:
        if not line.strip():
            continue
        if line.startswith("\t"):
            tabbed += 1
            continue
        width = len(line) - len(line.lstrip(" "))
        spaced += width > 0
        if 0 < width - previous <= 8:
            steps[width - previous] += 1
        previous = width
    if tabbed > spaced:
        return "\t"
    if not steps:
        return DEFAULT_INDENT
    most = max(steps.values())
    return " " * min(step for step, count in steps.items() if count == most)


def _leading(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _width(indent: str, unit: str) -> int:
    """Columns of an indentation, a tab counting as one unit of the document."""
    tab = 4 if "\t" in unit or not unit else len(unit)
    return indent.count("\t") * tab + indent.count(" ")


# --- Strings and comments, so brackets inside them do not count ---------------------


@dataclass(frozen=True, slots=True)
class Syntax:
    """How a language writes strings and comments, as far as counting brackets needs."""

    line_comments: tuple[str, ...] = ()
    block_comment: tuple[str, str] | None = None
    quotes: str = "\"'"
    """Quotes whose strings end on their line."""
    long_quotes: tuple[str, ...] = ()
    """Delimiters of strings that may span lines."""
    char_literals: bool = False
    """`'` opens a one-character literal, and is otherwise a lifetime or label."""


C_LIKE = Syntax(("//",), ("/*", "*/"), '"', (), True)
JS_LIKE = Syntax(("//",), ("/*", "*/"), "\"'", ("`",))
SYNTAXES = {
    "python": Syntax(("#",), None, "\"'", ('"""', "'''")),
    "javascript": JS_LIKE,
    "javascriptreact": JS_LIKE,
    "typescript": JS_LIKE,
    "typescriptreact": JS_LIKE,
    "go": Syntax(("//",), ("/*", "*/"), '"', ("`",), True),
    "rust": C_LIKE,
    "c": C_LIKE,
    "cpp": C_LIKE,
    "csharp": C_LIKE,
    "java": Syntax(("//",), ("/*", "*/"), '"', ('"""',), True),
    "php": Syntax(("//", "#"), ("/*", "*/"), "\"'"),
    "ruby": Syntax(("#",)),
    "shellscript": Syntax(("#",)),
    "lua": Syntax(("--",)),
}


def _closing(line: str, start: int, delimiter: str) -> int:
    """Index just after the unescaped `delimiter` at or after `start`, or -1."""
    while (end := line.find(delimiter, start)) >= 0:
        slashes = end - len(line[start:end].rstrip("\\")) - start
        if slashes % 2 == 0:
            return end + len(delimiter)
        start = end + 1
    return -1


@cache
def _scanner(syntax: Syntax) -> re.Pattern[str]:
    """What `Brackets.scan` stops at, the alternatives in its order of precedence (a block
    comment before a line comment, a long quote before its quote character): the regex
    engine skips the plain text between them, which a loop per character did in Python."""
    openers = [
        *((syntax.block_comment[0],) if syntax.block_comment else ()),
        *syntax.line_comments,
        *syntax.long_quotes,
        *syntax.quotes,
        *(("'",) if syntax.char_literals else ()),
    ]
    return re.compile("".join(re.escape(opener) + "|" for opener in openers) + r"[()\[\]{},;]")


class Brackets:
    """Bracket depth outside strings and comments, fed one line at a time."""

    def __init__(self, language: str) -> None:
        self.syntax = SYNTAXES.get(language.lower(), Syntax())
        self._scanner = _scanner(self.syntax)
        self.depth = 0
        self.open_until: str | None = None
        """The delimiter ending a comment or string that runs past the line."""

    def scan(self, line: str, start: int = 0) -> Iterator[tuple[int, str]]:
        """Each bracket, comma or semicolon at or after `start` that is code, after the depth
        has taken it into account; what comes before `start` only sets the string state."""
        syntax = self.syntax
        at = 0
        if self.open_until is not None:
            at = _closing(line, 0, self.open_until)
            if at < 0:
                return
            self.open_until = None
        search = self._scanner.search
        while (found := search(line, at)) is not None:
            at = found.start()
            token = found.group()
            if syntax.block_comment and token == syntax.block_comment[0]:
                end = line.find(syntax.block_comment[1], at + 2)
                if end < 0:
                    self.open_until = syntax.block_comment[1]
                    return
                at = end + len(syntax.block_comment[1])
            elif token in syntax.line_comments:
                return
            elif token in syntax.long_quotes:
                at = _closing(line, at + len(token), token)
                if at < 0:
                    self.open_until = token
                    return
            elif token in syntax.quotes:
                at = _closing(line, at + 1, token)
                if at < 0:
                    return
            elif token == "'":
                literal = CHAR_LITERAL.match(line, at)
                at = literal.end() if literal else at + 1
            else:
                if at >= start:
                    self.depth += (token in OPEN_BRACKETS) - (token in CLOSE_BRACKETS)
                    yield at, token
                at += 1


def _depth_of(text: str, context: CursorContext) -> int:
    """Net bracket depth a text leaves when inserted at the cursor."""
    brackets = Brackets(context.language)
    for index, line in enumerate(text.split("\n")):
        prefix = context.line_prefix if index == 0 else ""
        for _ in brackets.scan(prefix + line, len(prefix)):
            pass
    return brackets.depth


# --- Trackers: one line at a time, never looking ahead -------------------------------


def _substantial(line: str) -> bool:
    return any(char.isalnum() for char in line)


class RepetitionTracker:
    """Where runaway output starts: a line or a block of lines repeated back to back.

    Lines are compared with their indentation (the first one with the cursor's line
    prefix), so `return x` inside an `if` and again after it is not a repeat.
    """

    def __init__(self) -> None:
        self.lines: list[str] = []

    def push(self, line: str) -> int | None:
        """The index of the first line to drop if this line completes a repeat."""
        lines = self.lines
        lines.append(line.rstrip())
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


class Reindenter:
    """Maps the model's indentation to the document's unit, one line at a time.

    The first line continues the cursor's line and is left alone. The model's unit is
    learnt from the first line that shows it and then kept, so a line's result never
    depends on the lines after it.
    """

    def __init__(self, context: CursorContext) -> None:
        self.context = context
        self.target = context.indent_unit or DEFAULT_INDENT
        self.unit: str | None = None
        self.base = ""
        self.opens_block = False
        self.previous: int | None = None
        self.index = 0

    def push(self, line: str) -> str:
        index = self.index
        self.index += 1
        if index == 0:
            whole = self.context.line_prefix + line
            self.base = _leading(whole)
            self.opens_block = bool(OPENS_BLOCK.search(whole))
            if self.target != "\t":
                self.previous = _width(self.base, self.target)
            return line
        indent = _leading(line)
        if not line.strip():
            return line
        if "\t" in indent:
            return self._from_tabs(line, indent)
        if self.target == "\t":
            return self._to_tabs(line, indent, index)
        return self._resize(line, indent, index)

    def _from_tabs(self, line: str, indent: str) -> str:
        tabs = len(indent) - len(indent.lstrip("\t"))
        if self.target == "\t" or "\t" in indent[tabs:]:
            return line
        self.unit = self.unit or "\t"
        return self.target * tabs + line[tabs:]

    def _to_tabs(self, line: str, indent: str, index: int) -> str:
        width = len(indent)
        if self.unit is None and width:
            if self.previous is not None and width != self.previous:
                step = abs(width - self.previous)
            else:
                levels = self.base.count("\t") + self.base.count(" ") // 4
                expected = levels + (index == 1 and self.opens_block)
                step = width // expected if expected and width % expected == 0 else 0
            if 2 <= step <= 8:
                self.unit = " " * step
        self.previous = width
        if self.unit is None:
            return line
        levels, extra = divmod(width, len(self.unit))
        return "\t" * levels + " " * extra + line[width:]

    def _resize(self, line: str, indent: str, index: int) -> str:
        width, size = len(indent), len(self.target)
        previous = self.previous or 0
        if self.unit is None and width != previous:
            step = abs(width - previous)
            after_opener = index == 1 and self.opens_block and width > previous
            if 2 <= step <= 8 and (step % size or after_opener):
                self.unit = " " * step
            else:
                self.unit = self.target
        self.previous = width
        if self.unit is None or self.unit in (self.target, "\t"):
            return line
        base = _width(self.base, self.target)
        levels, extra = divmod(width - base, len(self.unit))
        return " " * max(0, base + levels * size + extra) + line[width:]


class ScopeTracker:
    """Where a suggestion leaves the block the cursor is in, one line at a time.

    Indentation languages (and any language without braces): the first line indented
    less than the cursor's block, which is the cursor line's indentation (on a blank
    line, the cursor's column plus any indentation the suggestion starts with). Brace
    languages: the closer that takes the bracket depth below where the cursor is. Both:
    a second definition at the block's level.
    """

    def __init__(self, context: CursorContext) -> None:
        self.context = context
        language = context.language.lower()
        self.braces = language in BRACE_LANGUAGES
        self.definitions = language in DEFINITION_LANGUAGES
        self.brackets = Brackets(language)
        self.block = 0
        self.index = 0
        self.seen_definition = False
        self.after_decorator = False

    def push(self, line: str) -> tuple[int, int] | None:
        """Where to cut, as (line index, column in the suggestion's line), if this line
        leaves the scope; (index + 1, 0) keeps this line and drops the rest."""
        index = self.index
        self.index += 1
        context = self.context
        if index == 0:
            whole = context.line_prefix + line
            self.block = _width(_leading(whole), context.indent_unit)
            self._starts_sibling(whole.strip())
            return self._brackets(index, whole, len(context.line_prefix))
        if not line.strip():
            return None
        if self.braces:
            at_level = self.brackets.depth == 0 and self.brackets.open_until is None
        else:
            width = _width(_leading(line), context.indent_unit)
            if width < self.block:
                return index, 0
            at_level = width == self.block
        if at_level and self._starts_sibling(line.strip()):
            return index, 0
        return self._brackets(index, line, 0)

    def _starts_sibling(self, stripped: str) -> bool:
        """Whether this line at the block's level starts a second definition."""
        if not self.definitions:
            return False
        decorator = DECORATOR.match(stripped) is not None
        definition = not decorator and self._is_definition(stripped)
        sibling = (decorator or definition) and self.seen_definition and not self.after_decorator
        self.seen_definition = self.seen_definition or decorator or definition
        self.after_decorator = decorator
        return sibling

    def _is_definition(self, stripped: str) -> bool:
        if DEFINITION.match(stripped):
            return True
        if not self.braces:
            return False
        if ARROW_FUNCTION.match(stripped):
            return True
        method = METHOD.match(stripped)
        return method is not None and method["name"] not in NOT_METHOD_NAMES

    def _brackets(self, index: int, line: str, start: int) -> tuple[int, int] | None:
        if not self.braces:
            return None
        brackets = self.brackets
        closing = False
        for column, char in brackets.scan(line, start):
            if brackets.depth >= 0 or closing:
                continue
            if index == 0 and self.context.line_suffix.strip():
                # The rest of the cursor's line closes it: the suffix-overlap policy decides.
                brackets.depth = 0
            elif self._closed_in_suffix(char):
                return index, column - start
            else:
                closing = True
        if closing and brackets.depth < 0:
            return index + 1, 0
        return None

    def _closed_in_suffix(self, closer: str) -> bool:
        """Whether the text after the cursor already closes the cursor's block."""
        context = self.context
        if context.line_suffix.strip():
            return context.line_suffix.lstrip().startswith(closer)
        for line in context.next_lines:
            if line.strip():
                indent = _width(_leading(line), context.indent_unit)
                return line.lstrip().startswith(closer) and indent <= self.block
        return False


def _cut(lines: list[str], at: tuple[int, int]) -> str:
    index, column = at
    kept = lines[:index]
    if index < len(lines) and lines[index][:column].strip():
        kept.append(lines[index][:column])
    return "\n".join(kept)


# --- The filters ----------------------------------------------------------------------


def strip_special_tokens(text: str, _: CursorContext) -> str:
    """A FIM or end-of-text token means the model is done; what follows is noise."""
    match = SPECIAL_TOKEN.search(text)
    return text if match is None else text[: match.start()]


def strip_fences_and_preamble(text: str, _: CursorContext) -> str:
    """Chat models like to wrap code in Markdown; keep only the code."""
    preamble = PREAMBLE.match(text)
    if preamble and FENCE_OPEN.match(text[preamble.end() :]):
        text = text[preamble.end() :]
    opening = FENCE_OPEN.match(text)
    if opening is None:
        return text
    body = text[opening.end() :]
    closing = body.find("```")
    return body if closing < 0 else body[:closing]


def strip_echoed_line_prefix(text: str, context: CursorContext) -> str:
    """Drop a re-statement of the text already typed on the cursor's line."""
    typed = context.line_prefix.strip()
    if len(typed) < 3:
        return text
    candidate = text.lstrip()
    return candidate[len(typed) :] if candidate.startswith(typed) else text


SHORT_LOOP = re.compile(r"(.{1,3}?)\1{7,}")
LONG_LOOP = re.compile(r"(.{4,24}?)\1{3,}")


def looping_at(line: str) -> int | None:
    """Where a line starts to loop on a short piece (`i, i, i, …`, `list of list of …`):
    the end of the piece's first copy. A piece needs a letter or digit (`----` is no
    loop) and a separator (`0x00000000` is no loop)."""
    for pattern in (SHORT_LOOP, LONG_LOOP):
        for match in pattern.finditer(line):
            piece = match.group(1)
            if any(char.isalnum() for char in piece) and not piece.isalnum():
                return match.start() + len(piece)
    return None


def cut_repetition(text: str, context: CursorContext) -> str:
    """Models loop: keep one copy of a repeated line, block or piece of a line; cap the size."""
    if len(text) > MAX_CHARS:
        text = text[:MAX_CHARS]
        if "\n" in text:
            text = text[: text.rindex("\n")]
    lines = text.split("\n")
    tracker = RepetitionTracker()
    for index, line in enumerate(lines):
        loop = looping_at(line)
        if loop is not None:
            return "\n".join([*lines[:index], line[:loop]])
        cut = tracker.push(context.line_prefix + line if index == 0 else line)
        if cut is not None:
            return "\n".join(lines[:cut])
    return text


def limit_lines(text: str, context: CursorContext) -> str:
    """One line mid-line or where asked; otherwise at most `max_lines`."""
    if not context.multiline:
        first, newline, _ = text.partition("\n")
        if newline and not first.strip():
            return ""
        return first
    return "\n".join(text.split("\n")[: context.max_lines])


def normalise_indentation(text: str, context: CursorContext) -> str:
    """Re-indent lines after the first in the document's unit (tabs, 2 or 4 spaces),
    keeping their structure: models default to four spaces whatever the file uses."""
    lines = text.split("\n")
    if len(lines) < 2:
        return text
    reindenter = Reindenter(context)
    return "\n".join(reindenter.push(line) for line in lines)


def limit_scope(text: str, context: CursorContext) -> str:
    """Stop where the suggestion closes the cursor's block or starts a sibling definition.

    A closing bracket is kept when the code after the cursor does not close the block
    yet, and dropped with all after it when it does.
    """
    lines = text.split("\n")
    tracker = ScopeTracker(context)
    for line in lines:
        at = tracker.push(line)
        if at is not None:
            return _cut(lines, at)
    return text


def drop_repeated_suffix_lines(text: str, context: CursorContext) -> str:
    """Cut the suggestion where it starts to re-type the lines after the cursor.

    Whole lines below the cursor are never replaced, only trimmed off: the editor can
    replace text on the cursor's line alone.
    """
    following = next((line for line in context.next_lines if line.strip()), None)
    if following is None:
        return text
    lines = text.split("\n")
    for index in range(1, len(lines)):
        if repeats_line(lines[index], following):
            return "\n".join(lines[:index])
    return text


def repeats_line(line: str, document_line: str) -> bool:
    """Whether a suggested line re-types a line of the document: the same code, and for
    bare punctuation like `}`, which closes many blocks, also the same indentation."""
    if not line.strip():
        return False
    if _substantial(line):
        return line.strip() == document_line.strip()
    return line.rstrip() == document_line.rstrip()


def trim_trailing_whitespace(text: str, _: CursorContext) -> str:
    """Trailing blanks only make the ghost text longer than what will be kept."""
    return "\n".join(line.rstrip() for line in text.rstrip().split("\n"))


def _is_word(char: str) -> bool:
    return char.isalnum() or char in "_$"


def _retypes(text: str, overlap: str, context: CursorContext) -> bool:
    """Whether the brackets in `overlap` at the end of `text` are the suffix's, re-typed,
    rather than the suggestion's own (as in `bar(x)` before an auto-inserted `)`)."""
    if not any(char in CLOSE_BRACKETS for char in overlap):
        return True
    return _depth_of(text[: len(text) - len(overlap)], context) <= 0


def trim_suffix_overlap(text: str, context: CursorContext) -> str:
    """Trim a suggestion that ends by re-typing only the start of the rest of the line.

    For the suffix `) -> int:`, `x: int)` becomes `x: int`. A suggestion ending with
    the entire rest of the line is kept: `replaced_suffix_length` replaces that range.
    """
    tail = context.line_suffix.strip()
    if not tail or replaced_suffix_length(text, context):
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
    brackets = Brackets(context.language)
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


def prefer_parsable(text: str, context: CursorContext) -> str:
    """Prefer the longest version of the suggestion that adds no syntax error.

    Dropping trailing lines (or, in one line, cutting where the brackets balance) fixes
    most half-finished endings; with no such version there is nothing to suggest, unless
    the document is already broken at the cursor and the counts cannot be trusted.
    A single line that leaves its brackets balanced is taken as it is: the parse (the
    costliest step after the model) rarely finds anything there.
    """
    count = context.new_errors
    if count is None or not text.strip():
        return text
    if "\n" not in text and _depth_of(text, context) == 0:
        return text
    if count(_inserted(text, context)) <= 0:
        return text
    for candidate in _shorter(text, context)[: MAX_PARSE_CHECKS - 1]:
        if count(_inserted(candidate, context)) <= 0:
            return candidate
    parses = context.parses_at_cursor
    return "" if (parses() if callable(parses) else parses) else text


FILTERS = (
    strip_special_tokens,
    strip_fences_and_preamble,
    strip_echoed_line_prefix,
    cut_repetition,
    limit_lines,
    normalise_indentation,
    limit_scope,
    drop_repeated_suffix_lines,
    trim_trailing_whitespace,
    trim_suffix_overlap,
    prefer_parsable,
)


def clean(text: str, context: CursorContext, skip: Collection[str] = frozenset()) -> str:
    """Run every filter in order but those named in `skip`; each only ever shortens or
    re-indents."""
    for step in FILTERS:
        if step.__name__ not in skip:
            text = step(text, context)
    return text


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
