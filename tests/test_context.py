"""The cursor window: whole lines, within the budget, reading only what it keeps."""

from __future__ import annotations

from lsp_spark.context import cursor_window

TEXT = "import os\n\ndef main():\n    path = os.getcwd()\n    print(path)\n\nmain()\n"


def window(text: str, row: int, column: int, prefix_chars: int = 1000, suffix_chars: int = 1000):
    lines = text.split("\n")
    read: list[int] = []

    def rows(start: int, stop: int) -> list[str]:
        read.extend(range(max(start, 0), min(stop, len(lines))))
        return lines[max(start, 0) : stop]

    result = cursor_window(
        rows, len(lines), row, column, prefix_chars=prefix_chars, suffix_chars=suffix_chars
    )
    return result, read


def test_prefix_and_suffix_rejoin_to_the_text() -> None:
    result, _ = window(TEXT, 3, 10)
    assert result.prefix + result.suffix == TEXT
    assert result.prefix.endswith("    path =")
    assert result.line_prefix == "    path ="
    assert result.line_suffix == " os.getcwd()"
    assert result.next_lines == ("    print(path)", "", "main()")
    assert result.rows == range(0, 8)


def test_budget_cuts_at_line_boundaries() -> None:
    result, read = window(TEXT, 4, 4, prefix_chars=45, suffix_chars=12)
    assert result.prefix == "    path = os.getcwd()\n    "
    assert result.suffix == "print(path)\n"
    assert set(read) <= set(range(len(TEXT.split("\n"))))


ROWS_OF_SIX = "x = 1\n" * 10


def ten_rows(previous_top: int | None = None, aligned=lambda row: row):
    """Row 9 of ten 6-character rows with 40 characters of prefix budget: rows 3..8 fit."""
    lines = ROWS_OF_SIX.split("\n")
    return cursor_window(
        lambda start, stop: lines[start:stop],
        len(lines),
        9,
        0,
        prefix_chars=40,
        suffix_chars=5,
        first_row_at_or_after=aligned,
        previous_top=previous_top,
    )


def test_a_new_top_leaves_slack_and_moves_to_the_boundary_the_callable_chooses() -> None:
    assert ten_rows().rows.start == 4, "15% of 40 characters unused: row 3 dropped"
    assert ten_rows(aligned=lambda row: row + 1).rows.start == 5


def test_the_previous_top_is_kept_while_it_fits_and_starts_a_statement() -> None:
    assert ten_rows(previous_top=3).rows.start == 3
    assert ten_rows(previous_top=2).rows.start == 4, "no longer fits: a new top"
    assert ten_rows(previous_top=3, aligned=lambda row: row + 1).rows.start == 5


def test_the_bottom_edge_moves_to_the_boundary_the_callable_chooses() -> None:
    lines = ROWS_OF_SIX.split("\n")
    result = cursor_window(
        lambda start, stop: lines[start:stop],
        len(lines),
        0,
        0,
        prefix_chars=40,
        suffix_chars=26,
        last_row_at_or_before=lambda row: row - 1,
    )
    assert result.rows.stop - 1 == 2, "rows 1..3 fit; the callable moves the edge to row 2"
