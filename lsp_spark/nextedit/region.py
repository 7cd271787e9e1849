"""The editable region: the rows a next-edit prediction may rewrite."""

from __future__ import annotations

from dataclasses import dataclass

from lsp_spark.actions.targets import target_at
from lsp_spark.documents import Document
from lsp_spark.syntax.trees import SyntaxTree


@dataclass(frozen=True, slots=True)
class Region:
    """Rows [start, end) of a document, and the cursor inside them (row, code point column)."""

    start: int
    end: int
    cursor_row: int
    cursor_column: int


def editable_region(
    document: Document, syntax: SyntaxTree | None, row: int, column: int, max_lines: int
) -> Region:
    """The function or method around the cursor when it spans at most `max_lines` rows,
    otherwise a window of `max_lines` rows around the cursor: the edit that follows one
    usually stays within the same function, and a short region is fewer tokens for the
    model to read and to answer. (A struct or class is no such bound: its fields' uses lie
    in the functions around it.)"""
    row = min(max(row, 0), max(document.line_count - 1, 0))
    scope = target_at(document, syntax, (row, column))
    if scope is not None and scope.is_function and scope.end_row - scope.start_row <= max_lines:
        return Region(scope.start_row, scope.end_row, row, column)
    start = max(0, row - max_lines // 2)
    end = min(document.line_count, start + max_lines)
    start = max(0, min(start, end - max_lines))
    return Region(start, end, row, column)
