"""The next-edit prompt, and reading the model's answer back as line edits.

The model sees the region with its line numbers and answers only the lines it changes,
each block anchored by line numbers: a rename's three uses cost three short blocks
rather than the whole region written out again.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

CURSOR = "<|cursor|>"
SYSTEM = "\n".join(
    [
        "You predict the next edit a programmer makes, from the edits they just made.",
        "You see their recent edits as diffs (oldest first), then an editable region of the",
        f"file with line numbers; {CURSOR} marks the cursor.",
        "Continue what the recent edits started: a renamed name renamed at its other uses,",
        "a new parameter passed at the calls, a changed branch mirrored in its twin, a",
        "changed literal updated where it repeats, a reported problem fixed.",
        "Answer only with edit blocks, nothing else. Each block replaces whole lines of the",
        "region, with the line numbers shown:",
        '<edit lines="FIRST-LAST">',
        "the new text of those lines, without line numbers",
        "</edit>",
        'To insert lines after line N without replacing any: <edit after="N"> … </edit>.',
        "An empty block deletes its lines.",
        "Never repeat the recent edits or undo them. If no edit follows, answer <none/>.",
    ]
)

_BLOCK = re.compile(
    r'<edit\s+(?:lines="(\d+)\s*-\s*(\d+)"|after="(\d+)")\s*>\n?(.*?)</edit>', re.DOTALL
)
_FENCE = re.compile(r"^```[^\n]*\n|\n?```\s*$")
_NUMBERED = re.compile(r"^\d+\| ?")
REWRITE_SIMILARITY = 0.6
"""How much of the region an answer without edit blocks must keep to be taken as the region
written again: a completion model's one line, or a chat model's explanation, is not."""
_NONE = re.compile(r"<none\s*/>")
_FENCED_BODY = re.compile(r"```[^\n]*\n(.*?)\n?```", re.DOTALL)


@dataclass(frozen=True, slots=True)
class LineEdit:
    """Replace the file's rows [first, end) (0-based) with `lines`; first == end inserts."""

    first: int
    end: int
    lines: tuple[str, ...]


def numbered(lines: Sequence[str], start: int, cursor: tuple[int, int] | None) -> str:
    """The region's lines as the model sees them: `12| code`, with the cursor marked."""
    shown = []
    for offset, line in enumerate(lines):
        row = start + offset
        if cursor is not None and cursor[0] == row:
            line = line[: cursor[1]] + CURSOR + line[cursor[1] :]
        shown.append(f"{row + 1}| {line}")
    return "\n".join(shown)


def next_edit_messages(
    *,
    filename: str,
    language: str,
    diffs: Sequence[str],
    related: str,
    diagnostics: Sequence[str],
    region_text: str,
    first_line: int,
    last_line: int,
    line_count: int,
) -> list[dict[str, str]]:
    """System, then the user message from what changes least to what changes most, so the
    provider's prompt cache keeps as much of the start as possible between predictions."""
    parts = []
    if related:
        parts.append(f"Related code:\n```\n{related}\n```")
    parts.append("Recent edits (oldest first):\n" + ("\n".join(diffs) if diffs else "(none)"))
    if diagnostics:
        parts.append("Problems reported in the region:\n" + "\n".join(diagnostics))
    parts.append(
        f"Editable region of {filename} ({language}), lines {first_line}-{last_line} "
        f"of {line_count}:\n{region_text}"
    )
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def parse_answer(
    answer: str, region_start: int, region: Sequence[str], rows_after: int
) -> list[LineEdit]:
    """The answer as row edits inside the region (`region` are its rows, `rows_after` the
    file's rows after it up to its last non-blank one): its edit blocks; failing those, the
    answer taken as the region, or the whole file, written out again, which is what a
    model that ignores the format, or a server that answers with the expected text, gives."""
    region_end = region_start + len(region)
    if _BLOCK.search(answer) or _NONE.search(answer):
        return parse_edits(answer, region_start, region_end)
    lines = _rewritten_lines(answer)
    if not lines:
        return []
    if len(lines) > len(region) + (region_start + rows_after) // 2:
        # The whole file: the region is what lies between the rows before and after it.
        lines = lines[region_start : max(region_start, len(lines) - rows_after)]
    # Blank rows at the region's ends, which the answer's own ends may have lost.
    leading = len(region) - len(_without_leading_blanks(region))
    trailing = len(region) - len(_without_leading_blanks(region[::-1]))
    lines = _without_leading_blanks(lines)
    lines = _without_leading_blanks(lines[::-1])[::-1]
    if not lines or _similarity(region, lines) < REWRITE_SIMILARITY:
        return []
    return [LineEdit(region_start, region_end, ("",) * leading + tuple(lines) + ("",) * trailing)]


def _similarity(region: Sequence[str], lines: Sequence[str]) -> float:
    return SequenceMatcher(None, "\n".join(region), "\n".join(lines), autojunk=False).ratio()


def _without_leading_blanks(lines: Sequence[str]) -> list[str]:
    index = 0
    while index < len(lines) and not lines[index].strip():
        index += 1
    return list(lines[index:])


def _rewritten_lines(answer: str) -> list[str]:
    """An answer's text as lines of code: fences, line numbers and markers taken off."""
    fenced = _FENCED_BODY.search(answer)
    body = fenced.group(1) if fenced else answer.strip("\n")
    lines = [line.rstrip("\r").replace(CURSOR, "") for line in body.split("\n")]
    while lines and not lines[-1].strip():
        lines.pop()
    if lines and all(_NUMBERED.match(line) for line in lines if line):
        lines = [_NUMBERED.sub("", line, count=1) for line in lines]
    return lines if any(line.strip() for line in lines) else []


def parse_edits(answer: str, region_start: int, region_end: int) -> list[LineEdit]:
    """The answer's edit blocks as row edits inside the region, in order. Blocks outside the
    region, or overlapping an earlier block, are dropped; so is a block that only restates
    its own line numbers."""
    edits: list[LineEdit] = []
    for match in _BLOCK.finditer(answer):
        first_text, last_text, after_text, body = match.groups()
        if after_text is not None:
            first = end = int(after_text)
        else:
            first, end = int(first_text) - 1, int(last_text)
        if not region_start <= first <= end <= region_end:
            continue
        if edits and first < edits[-1].end:
            continue
        body = _FENCE.sub("", body)
        body = body[:-1] if body.endswith("\n") else body
        lines = tuple(body.split("\n")) if body else ()
        if lines and all(_NUMBERED.match(line) for line in lines):
            lines = tuple(_NUMBERED.sub("", line, count=1) for line in lines)
        edits.append(LineEdit(first, end, tuple(line.rstrip("\r") for line in lines)))
    return edits


def rewritten(lines: Sequence[str], region_start: int, edits: Sequence[LineEdit]) -> list[str]:
    """The region's lines with `edits` (in order, not overlapping) applied."""
    result = list(lines)
    for edit in reversed(edits):
        result[edit.first - region_start : edit.end - region_start] = edit.lines
    return result
