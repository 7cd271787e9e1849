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
    assert result.previous_line == "def main():"
    assert result.next_lines == ("    print(path)", "", "main()")
    assert result.rows == range(0, 8)


def test_budget_cuts_at_line_boundaries() -> None:
    result, read = window(TEXT, 4, 4, prefix_chars=30, suffix_chars=12)
    assert result.prefix == "    path = os.getcwd()\n    "
    assert result.suffix == "print(path)\n"
    assert set(read) <= set(range(len(TEXT.split("\n"))))


def test_edges_move_to_the_boundaries_the_callables_choose() -> None:
    lines = TEXT.split("\n")
    result = cursor_window(
        lambda start, stop: lines[start:stop],
        len(lines),
        4,
        4,
        prefix_chars=40,
        suffix_chars=5,
        first_row_at_or_after=lambda row: row + 1,
        last_row_at_or_before=lambda row: row - 1,
    )
    assert result.rows.start == 2
    assert result.rows.stop - 1 == 4
