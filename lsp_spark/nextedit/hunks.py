"""From a predicted region to the smallest edits, and the checks each edit must pass."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from tree_sitter import Parser

from lsp_spark.documents import Document, PositionEncoding
from lsp_spark.nextedit.history import Edit
from lsp_spark.syntax.outline import error_count
from lsp_spark.syntax.trees import CHEAP_FIRST_PARSE_BYTES, SyntaxTree

WHOLE_FILE_CHECK_BYTES = CHEAP_FIRST_PARSE_BYTES
"""Up to this size a predicted edit is checked against the whole file, which is exact."""
CHECKED_ROWS_AROUND = 60
"""Rows above and below an edit that a larger file's check parses with it."""


@dataclass(frozen=True, slots=True)
class Hunk:
    """Replace the document's text from (start_row, start_column) to (end_row, end_column),
    columns in code points of the lines' content, with `text` (line breaks as "\\n")."""

    start_row: int
    start_column: int
    end_row: int
    end_column: int
    text: str


def hunks_between(
    old: Sequence[str], new: Sequence[str], start_row: int, at_file_end: bool
) -> list[Hunk]:
    """The minimal edits that turn rows `start_row`.. reading `old` into `new` (`at_file_end`:
    the last of them ends the file): a line changed in place becomes one edit of just the
    characters that differ (a rename is the name), other changes whole lines."""
    found: list[Hunk] = []
    matcher = SequenceMatcher(None, list(old), list(new), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if i2 - i1 == j2 - j1:
            for offset in range(i2 - i1):
                hunk = _within_line(old[i1 + offset], new[j1 + offset], start_row + i1 + offset)
                if hunk is not None:
                    found.append(hunk)
            continue
        row, column, end_row, end_column, text = _lines_block(old, new[j1:j2], i1, i2)
        if at_file_end and end_row == len(old) and old:
            # The region's last line break is only imagined: the file ends there. Move the
            # change before the break that ends the previous line.
            last = len(old) - 1
            if (row, column) == (end_row, 0):
                row, column, text = last, len(old[last]), "\n" + text[:-1]
            elif column == 0 and row > 0:
                row, column = row - 1, len(old[row - 1])
            end_row, end_column = last, len(old[last])
        found.append(Hunk(start_row + row, column, start_row + end_row, end_column, text))
    return found


def _within_line(old: str, new: str, row: int) -> Hunk | None:
    """The characters that differ; where some are replaced or removed, widened to whole
    words, so a rename shows as the old name replaced by the new one."""
    prefix = _common_prefix(old, new)
    if prefix == len(old) == len(new):
        return None
    suffix = _common_suffix(old, new, prefix)
    if prefix + suffix < len(old):
        while prefix > 0 and _is_word(old[prefix - 1]):
            prefix -= 1
        while suffix > 0 and _is_word(old[len(old) - suffix]):
            suffix -= 1
    return Hunk(row, prefix, row, len(old) - suffix, new[prefix : len(new) - suffix])


def _lines_block(
    old: Sequence[str], added: Sequence[str], i1: int, i2: int
) -> tuple[int, int, int, int, str]:
    """Rows i1..i2 of `old` replaced by `added`, trimmed to the characters that differ, as
    (row, column, end row, end column, text), taking every line to end with a break."""
    before = "".join(line + "\n" for line in old[i1:i2])
    after = "".join(line + "\n" for line in added)
    prefix = _common_prefix(before, after)
    suffix = _common_suffix(before, after, prefix)
    row, column = _position(old, i1, prefix)
    end_row, end_column = _position(old, i1, len(before) - suffix)
    return row, column, end_row, end_column, after[prefix : len(after) - suffix]


def _is_word(character: str) -> bool:
    return character.isalnum() or character == "_"


def _common_prefix(a: str, b: str) -> int:
    length = 0
    while length < min(len(a), len(b)) and a[length] == b[length]:
        length += 1
    return length


def _common_suffix(a: str, b: str, prefix: int) -> int:
    """Characters shared at the ends of `a` and `b`, not reaching into their common prefix."""
    length = 0
    while length < min(len(a), len(b)) - prefix and a[-1 - length] == b[-1 - length]:
        length += 1
    return length


def _position(lines: Sequence[str], row: int, offset: int) -> tuple[int, int]:
    """Row and column of `offset` characters into rows `row`.. (each with its break)."""
    while row < len(lines) and offset > len(lines[row]):
        offset -= len(lines[row]) + 1
        row += 1
    return row, offset


def applied(document: Document, hunk: Hunk, eol: str) -> str:
    """The document's text with `hunk` applied."""
    text = document.text
    start = document.offset_at(hunk.start_row, hunk.start_column, PositionEncoding.UTF32)
    end = document.offset_at(hunk.end_row, hunk.end_column, PositionEncoding.UTF32)
    return text[:start] + hunk.text.replace("\n", eol) + text[end:]


def undoes(hunk: Hunk, document: Document, latest: Edit | None) -> bool:
    """Whether `hunk` puts back lines the user's latest edit just changed."""
    if latest is None or latest.before == latest.after:
        return False
    end = latest.start + len(latest.after)
    if hunk.end_row < latest.start or hunk.start_row >= end:
        return False
    rows = document.lines(latest.start, end)
    after_hunk = list(rows)
    first = hunk.start_row - latest.start
    last = hunk.end_row - latest.start
    if first < 0 or last >= len(rows):
        return False
    head = rows[first][: hunk.start_column]
    tail = rows[last][hunk.end_column :]
    after_hunk[first : last + 1] = (head + hunk.text + tail).split("\n")
    return after_hunk == latest.before


def breaks_syntax(syntax: SyntaxTree | None, document: Document, hunk: Hunk) -> bool:
    """Whether applying `hunk` adds syntax errors. A file whose tree is cheap to read is
    checked whole; any other is checked in the rows around the edit, parsed on their own
    before and after it, so the check costs the same whatever the file's size or shape."""
    if syntax is None:
        return False
    parser = Parser(syntax.language)
    if syntax.cheap() and document.byte_length <= WHOLE_FILE_CHECK_BYTES:
        # The edit's own line breaks as "\n": the grammar reads any line ending alike.
        new_text = applied(document, hunk, "\n")
        return error_count(parser.parse(new_text.encode())) > error_count(syntax.tree)
    start = max(0, hunk.start_row - CHECKED_ROWS_AROUND)
    stop = min(document.line_count, hunk.end_row + 1 + CHECKED_ROWS_AROUND)
    rows = document.lines(start, stop)
    before = "\n".join(rows)
    after = "\n".join(
        [
            *rows[: hunk.start_row - start],
            rows[hunk.start_row - start][: hunk.start_column]
            + hunk.text
            + rows[hunk.end_row - start][hunk.end_column :],
            *rows[hunk.end_row - start + 1 :],
        ]
    )
    return error_count(parser.parse(after.encode())) > error_count(parser.parse(before.encode()))
