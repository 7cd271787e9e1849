"""The smallest set of line replacements that turns a region's text into its rewrite."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
"""A line with its terminator; exactly the LSP terminators (`str.splitlines` knows more)."""


@dataclass(frozen=True, slots=True)
class Replacement:
    """Replace the region's text from `start` to `end` (code point offsets) with `text`."""

    start: int
    end: int
    text: str


def split_lines(text: str) -> list[str]:
    """Lines with their terminators; "" gives no lines."""
    return _LINE.findall(text)


def line_ending(text: str, default: str = "\n") -> str:
    """The first line terminator in `text`, which the rest of the file is taken to follow."""
    found = re.search(r"\r\n|\r|\n", text)
    return found.group() if found else default


def region_edits(old: str, new_lines: Sequence[str], eol: str) -> list[Replacement]:
    """Replacements, in order, of only the lines that differ, so untouched lines (and their
    own terminators) are left alone. New lines end with `eol`; a region that ends without a
    terminator (the end of the file) still ends without one."""
    old_lines = split_lines(old)
    contents = [line.rstrip("\r\n") for line in old_lines]
    starts = [0]
    for line in old_lines:
        starts.append(starts[-1] + len(line))
    # The region's last line has no terminator: it ends the file.
    open_end = bool(old_lines) and old_lines[-1] == contents[-1]
    matcher = SequenceMatcher(None, contents, list(new_lines), autojunk=False)
    edits = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        start, end = starts[i1], starts[i2]
        added = list(new_lines[j1:j2])
        text = "".join(line + eol for line in added)
        if open_end and i2 == len(old_lines):
            if i1 == i2:
                text = eol + eol.join(added)
            elif added:
                text = eol.join(added)
            elif i1 > 0:
                start -= len(old_lines[i1 - 1]) - len(contents[i1 - 1])
        edits.append(Replacement(start, end, text))
    return edits


def apply(text: str, edits: Sequence[Replacement], offset: int = 0) -> str:
    """`text` with `edits` (offsets relative to `offset` in it, in order) applied."""
    for edit in sorted(edits, key=lambda edit: edit.start, reverse=True):
        text = text[: offset + edit.start] + edit.text + text[offset + edit.end :]
    return text
