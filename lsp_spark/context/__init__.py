"""Context building: what the model sees around the cursor, within a budget."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lsp_spark.postprocess import CursorContext

NEXT_LINES_CHECKED = 3


@dataclass(frozen=True, slots=True)
class CursorWindow:
    prefix: str
    suffix: str
    cursor: CursorContext


def cursor_window(
    line: Callable[[int], str],
    line_count: int,
    row: int,
    column: int,
    *,
    prefix_chars: int,
    suffix_chars: int,
    multiline: bool,
    max_lines: int,
) -> CursorWindow:
    """Whole lines before and after the cursor within the budget.

    Reads only the lines it keeps, so the cost does not grow with the file.
    """
    current = line(row)
    line_prefix, line_suffix = current[:column], current[column:]
    before: list[str] = [line_prefix]
    budget = prefix_chars - len(line_prefix)
    above = row - 1
    while above >= 0 and budget > 0:
        text = line(above)
        budget -= len(text) + 1
        if budget < 0:
            break
        before.append(text)
        above -= 1
    after: list[str] = [line_suffix]
    budget = suffix_chars - len(line_suffix)
    below = row + 1
    while below < line_count and budget > 0:
        text = line(below)
        budget -= len(text) + 1
        if budget < 0:
            break
        after.append(text)
        below += 1
    cursor = CursorContext(
        line_prefix=line_prefix,
        line_suffix=line_suffix,
        next_lines=tuple(after[1 : 1 + NEXT_LINES_CHECKED]),
        # Several lines only from a blank line; mid-line or after typed text, one line.
        multiline=multiline and not current.strip(),
        max_lines=max_lines,
    )
    return CursorWindow("\n".join(reversed(before)), "\n".join(after), cursor)
