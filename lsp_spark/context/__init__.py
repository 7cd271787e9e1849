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


def cursor_window(
    line: Callable[[int], str],
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

    Reads only the lines it keeps, so the cost does not grow with the file. The two
    callables move the window's edges to syntax boundaries (statement starts and ends)
    so the model never sees half a statement at the top or bottom.
    """
    current = line(row)
    line_prefix, line_suffix = current[:column], current[column:]
    before: list[str] = []
    budget = prefix_chars - len(line_prefix)
    while row - len(before) > 0 and budget > 0:
        text = line(row - len(before) - 1)
        budget -= len(text) + 1
        if budget < 0:
            break
        before.append(text)
    first = row - len(before)
    if first > 0:
        first = min(first_row_at_or_after(first), row)
        del before[row - first :]
    before.reverse()
    after: list[str] = []
    budget = suffix_chars - len(line_suffix)
    while row + len(after) + 1 < line_count and budget > 0:
        text = line(row + len(after) + 1)
        budget -= len(text) + 1
        if budget < 0:
            break
        after.append(text)
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
