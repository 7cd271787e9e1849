"""Context building: what the model sees around the cursor, within a budget."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

NEXT_LINES_CHECKED = 3
TOP_SLACK = 0.15
"""Share of the prefix budget left unused when the window's top row moves, so the next
keystrokes keep the same top (a stable prompt start, and no boundary search per key)."""


@dataclass(frozen=True, slots=True)
class Surroundings:
    """The window's whole lines above and below the cursor's line: they hold while only
    that line changes, so typing along a row reads them once."""

    above: str
    """Each line followed by its newline."""
    below: str
    """Each line preceded by its newline."""
    next_lines: tuple[str, ...]
    rows: range

    def fit(self, line_prefix: str, line_suffix: str, prefix_chars: int, suffix_chars: int) -> bool:
        return (
            len(self.above) + len(line_prefix) <= prefix_chars
            and len(line_suffix) + len(self.below) <= suffix_chars
        )


@dataclass(frozen=True, slots=True)
class CursorWindow:
    prefix: str
    suffix: str
    line_prefix: str
    line_suffix: str
    next_lines: tuple[str, ...]
    rows: range
    """The document rows the window covers."""
    surroundings: Surroundings


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
    surroundings: Surroundings | None = None,
) -> CursorWindow:
    """Whole lines before and after the cursor within the budget.

    `previous_top` is the top row of this document's last window: kept while it still fits
    the budget and starts a statement, so typing does not move the prompt's start.
    `surroundings` are this row's from an earlier keystroke, when no other line has changed
    since: kept while they fit beside the cursor's line.

    Reads rows in small chunks and only as far as the budget reaches, so the cost does
    not grow with the file. The two callables move the window's edges to syntax
    boundaries (statement starts and ends) so the model never sees half a statement.
    """
    current = lines(row, row + 1)
    current_line = current[0] if current else ""
    # A minified file is one endless line: only its budget's worth goes to the prompt.
    line_prefix = current_line[max(0, column - prefix_chars) : column]
    line_suffix = current_line[column : column + suffix_chars]
    if surroundings is None or not surroundings.fit(
        line_prefix, line_suffix, prefix_chars, suffix_chars
    ):
        surroundings = _surroundings(
            lines,
            line_count,
            row,
            prefix_chars - len(line_prefix),
            suffix_chars - len(line_suffix),
            prefix_chars,
            first_row_at_or_after,
            last_row_at_or_before,
            previous_top,
        )
    return CursorWindow(
        prefix=surroundings.above + line_prefix,
        suffix=line_suffix + surroundings.below,
        line_prefix=line_prefix,
        line_suffix=line_suffix,
        next_lines=surroundings.next_lines,
        rows=surroundings.rows,
        surroundings=surroundings,
    )


def _surroundings(
    lines: Callable[[int, int], list[str]],
    line_count: int,
    row: int,
    above_chars: int,
    below_chars: int,
    prefix_chars: int,
    first_row_at_or_after: Callable[[int], int],
    last_row_at_or_before: Callable[[int], int],
    previous_top: int | None,
) -> Surroundings:
    before: list[str] = []
    budget = above_chars
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
    budget = below_chars
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
    return Surroundings(
        above="".join(text + "\n" for text in before),
        below="".join("\n" + text for text in after),
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
