"""Markdown fences and chat prose around code in a model's reply: one reading of them for
ghost text (`strip_fences_and_preamble`) and for code actions (`actions/rewrite.py`).

An opening fence is a line of three or more backticks or tildes and an info string
(```` ```python ````), alone or after a sentence (`Sure! ```python`). The block ends at
the first line that starts with the opening's character, at least as many times, indented
no deeper than the opening: a fence shown in an indented docstring stays code, and a
closing line is known as soon as its marker is, so a stream can close on it at once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

_OPENING = re.compile(r"(?P<lead>[^`~]*?)(?P<marker>`{3,}|~{3,})[^`]*")
_PROSE = re.compile(
    r"(?:here(?:'s| is| are)|sure|certainly|okay|ok|below|to complete"
    r"|the (?:missing|completed?|updated|modified|rewritten|new)|this (?:version|code|change)"
    r"|i(?:'ve| have)|note)\b.*",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Fence:
    """An opening fence: where its closing line may be indented, and its marker."""

    indent: int
    """Characters of indentation before the opening marker."""
    marker: str

    @cached_property
    def _closing(self) -> re.Pattern[str]:
        character = re.escape(self.marker[0])
        return re.compile(rf"[ \t]{{0,{self.indent}}}(?={character}{{{len(self.marker)}}})")

    def closing_at(self, line: str, start: int = 0) -> int:
        """Where the closing marker starts in the line beginning at `start` (of a longer
        text, so a stream can look at the line it is still receiving), or -1."""
        found = self._closing.match(line, start)
        return -1 if found is None else found.end()


def opening_fence(line: str) -> Fence | None:
    """The fence this line opens, if it opens one."""
    if "```" not in line and "~~~" not in line:
        return None  # most lines, found sooner than by the pattern
    found = _OPENING.fullmatch(line)
    if found is None:
        return None
    lead = found["lead"]
    if lead.strip() and not is_prose(lead):
        return None
    return Fence(len(lead) - len(lead.lstrip(" \t")), found["marker"])


def is_prose(line: str) -> bool:
    """Whether the line is a chat model's sentence about the code rather than code."""
    return _PROSE.fullmatch(line.strip()) is not None


def code_start(lines: Sequence[str], complete: bool = False) -> tuple[int, Fence | None] | None:
    """Where the code starts in a reply's first complete lines, and the fence around it.

    Blank lines, then a fence, perhaps after a sentence and blank lines: the code starts
    after the fence. Anything else is code from the first line, unfenced. None while the
    lines seen cannot tell yet (nothing but blank lines, or a sentence and blank lines).
    Once the reply is `complete`, a sentence alone (a small model's "Here's the complete
    code:" with no code after it) is no code: the code starts after every line.
    """
    first = _next_filled(lines, 0)
    if first is None:
        return (0, None) if complete else None
    fence = opening_fence(lines[first])
    if fence is not None:
        return first + 1, fence
    if not is_prose(lines[first]):
        return 0, None
    second = _next_filled(lines, first + 1)
    if second is None:
        if not complete:
            return None
        return (len(lines), None) if _is_sentence(lines[first]) else (0, None)
    fence = opening_fence(lines[second])
    return (second + 1, fence) if fence is not None else (0, None)


def _is_sentence(line: str) -> bool:
    """Prose that ends as a sentence does: `ok = x` starts like prose but is code."""
    return line.rstrip().endswith((":", ".", "!"))


def _next_filled(lines: Sequence[str], start: int) -> int | None:
    for index in range(start, len(lines)):
        if lines[index].strip():
            return index
    return None
