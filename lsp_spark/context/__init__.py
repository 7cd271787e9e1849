"""Context building: what the model sees around the cursor, within a budget."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

NEXT_LINES_CHECKED = 3
TOP_SLACK = 0.15
"""Share of the prefix budget left unused when the window's top row moves, so the next
keystrokes keep the same top (a stable prompt start, and no boundary search per key)."""


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
    previous_top: int | None = None,
) -> CursorWindow:
    """Whole lines before and after the cursor within the budget.

    `previous_top` is the top row of this document's last window: kept while it still fits
    the budget and starts a statement, so typing does not move the prompt's start.

    Reads rows in small chunks and only as far as the budget reaches, so the cost does
    not grow with the file. The two callables move the window's edges to syntax
    boundaries (statement starts and ends) so the model never sees half a statement.
    """
    current = lines(row, row + 1)
    current_line = current[0] if current else ""
    # A minified file is one endless line: only its budget's worth goes to the prompt.
    line_prefix = current_line[max(0, column - prefix_chars) : column]
    line_suffix = current_line[column : column + suffix_chars]
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
        if (
            previous_top is not None
            and first <= previous_top <= row
            and first_row_at_or_after(previous_top) == previous_top
        ):
            first = previous_top
        else:
            first = min(first_row_at_or_after(_after_slack(before, first, prefix_chars)), row)
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


def _after_slack(before: list[str], first: int, prefix_chars: int) -> int:
    """The row past `first` that leaves TOP_SLACK of the budget unused (`before` runs from
    the cursor's previous line upwards)."""
    dropped = 0
    row = first
    for text in reversed(before):
        if dropped >= prefix_chars * TOP_SLACK:
            break
        dropped += len(text) + 1
        row += 1
    return row
