"""Bracket depth outside strings and comments, as far as cutting a suggestion needs it."""

from __future__ import annotations

import re
from collections.abc import Iterator

from lsp_spark.languages import Syntax, profile_for
from lsp_spark.postprocess.context import CursorContext

OPEN_BRACKETS = "([{"
CLOSE_BRACKETS = ")]}"
CHAR_LITERAL = re.compile(r"'(?:\\.[^'\n]{0,8}|[^\\'\n])'")


class Brackets:
    """Bracket depth outside strings and comments, fed one line at a time."""

    __slots__ = ("depth", "open_until", "syntax")

    def __init__(self, syntax: Syntax) -> None:
        self.syntax = syntax
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
        search = syntax.scanner.search
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


def _closing(line: str, start: int, delimiter: str) -> int:
    """Index just after the unescaped `delimiter` at or after `start`, or -1."""
    while (end := line.find(delimiter, start)) >= 0:
        slashes = end - len(line[start:end].rstrip("\\")) - start
        if slashes % 2 == 0:
            return end + len(delimiter)
        start = end + 1
    return -1


def depth_of(text: str, context: CursorContext) -> int:
    """Net bracket depth a text leaves when inserted at the cursor."""
    brackets = Brackets(profile_for(context.language).syntax)
    for index, line in enumerate(text.split("\n")):
        prefix = context.line_prefix if index == 0 else ""
        for _ in brackets.scan(prefix + line, len(prefix)):
            pass
    return brackets.depth
