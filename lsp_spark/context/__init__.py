"""Context building: what the model sees around the cursor, within a budget."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

NEXT_LINES_CHECKED = 3


@dataclass(frozen=True, slots=True)
class CursorWindow:
    prefix: str
    suffix: str
    line_prefix: str
    line_suffix: str
    previous_line: str
    next_lines: tuple[str, ...]
    rows: range
    """The document rows the window covers."""


CHUNK_ROWS = 32


def cursor_window(
    lines: Callable[[int, int], list[str]],
    line_count: int,
    row: int,
    column: int,
    *,
    prefix_chars: int,
    suffix_chars: int,
    first_row_at_or_after: Callable[[int], int] = lambda row: row,
    last_row_at_or_before: Callable[[int], int] = lambda row: row,
) -> CursorWindow:
    """Whole lines before and after the cursor within the budget.

    Reads rows in small chunks and only as far as the budget reaches, so the cost does
    not grow with the file. The two callables move the window's edges to syntax
    boundaries (statement starts and ends) so the model never sees half a statement.
    """
    current = lines(row, row + 1)
    current_line = current[0] if current else ""
    line_prefix, line_suffix = current_line[:column], current_line[column:]
    before: list[str] = []
    budget = prefix_chars - len(line_prefix)
    top = row
    while top > 0 and budget > 0:
        chunk = lines(max(0, top - CHUNK_ROWS), top)
        for text in reversed(chunk):
            budget -= len(text) + 1
            if budget < 0:
                break
            before.append(text)
        top -= len(chunk)
    first = row - len(before)
    if first > 0:
        first = min(first_row_at_or_after(first), row)
        del before[row - first :]
    before.reverse()
    after: list[str] = []
    budget = suffix_chars - len(line_suffix)
    bottom = row + 1
    while bottom < line_count and budget > 0:
        chunk = lines(bottom, bottom + CHUNK_ROWS)
        for text in chunk:
            budget -= len(text) + 1
            if budget < 0:
                break
            after.append(text)
        bottom += len(chunk)
    last = row + len(after)
    if last + 1 < line_count:
        last = max(last_row_at_or_before(last), row)
        del after[last - row :]
    return CursorWindow(
        prefix="".join(text + "\n" for text in before) + line_prefix,
        suffix=line_suffix + "".join("\n" + text for text in after),
        line_prefix=line_prefix,
        line_suffix=line_suffix,
        previous_line=before[-1] if before else "",
        next_lines=tuple(after[:NEXT_LINES_CHECKED]),
        rows=range(first, last + 1),
    )
