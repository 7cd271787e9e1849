"""Where a suggestion leaves the block the cursor is in, one line at a time."""

from __future__ import annotations

import re

from lsp_spark.languages import profile_for
from lsp_spark.postprocess.brackets import Brackets
from lsp_spark.postprocess.context import CursorContext, columns, leading
from lsp_spark.postprocess.stage import End, Stage, Verdict

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


class ScopeLimit(Stage):
    """Ends the suggestion where it leaves the cursor's block or starts a sibling definition.

    Languages without braces (the language's profile says): the first line indented
    less than the cursor's block, which is the cursor line's indentation (on a blank
    line, the cursor's column plus any indentation the suggestion starts with). Brace
    languages: the closer that takes the bracket depth below where the cursor is, kept
    when the code after the cursor does not close the block yet, dropped with all after
    it when it does. Both: a second definition at the block's level.
    """

    __slots__ = (
        "after_decorator",
        "block",
        "braces",
        "brackets",
        "context",
        "definitions",
        "index",
        "seen_definition",
    )

    def __init__(self, context: CursorContext) -> None:
        self.context = context
        profile = profile_for(context.language)
        self.braces = profile.braces
        self.definitions = profile.definitions
        self.brackets = Brackets(profile.syntax)
        self.block = 0
        self.index = 0
        self.seen_definition = False
        self.after_decorator = False

    def line(self, line: str, last: bool) -> Verdict:
        first = self.index == 0
        self.index += 1
        context = self.context
        if first:
            whole = context.line_prefix + line
            self.block = columns(leading(whole), context.indent_unit)
            self._starts_sibling(whole.strip())
            return self._closers(line, whole, len(context.line_prefix))
        if not line.strip():
            return line
        if self.braces:
            at_level = self.brackets.depth == 0 and self.brackets.open_until is None
        else:
            width = columns(leading(line), context.indent_unit)
            if width < self.block:
                return End()
            at_level = width == self.block
        if at_level and self._starts_sibling(line.strip()):
            return End()
        return self._closers(line, line, 0)

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

    def _closers(self, line: str, scanned: str, start: int) -> Verdict:
        """The line, or the end where one of its closers leaves the block; `scanned` is the
        line with what precedes it on the document's line (the first line's prefix), read
        from `start`."""
        if not self.braces:
            return line
        brackets = self.brackets
        closing = False
        for column, char in brackets.scan(scanned, start):
            if brackets.depth >= 0 or closing:
                continue
            if self.index == 1 and self.context.line_suffix.strip():
                # The rest of the cursor's line closes it: the suffix-overlap policy decides.
                brackets.depth = 0
            elif self._closed_in_suffix(char):
                kept = line[: column - start]
                return End(kept if kept.strip() else None)
            else:
                closing = True
        if closing and brackets.depth < 0:
            return End(line)
        return line

    def _closed_in_suffix(self, closer: str) -> bool:
        """Whether the text after the cursor already closes the cursor's block."""
        context = self.context
        if context.line_suffix.strip():
            return context.line_suffix.lstrip().startswith(closer)
        for line in context.next_lines:
            if line.strip():
                indent = columns(leading(line), context.indent_unit)
                return line.lstrip().startswith(closer) and indent <= self.block
        return False
