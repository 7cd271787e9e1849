"""The cursor window: whole lines, within the budget, reading only what it keeps."""

from __future__ import annotations

from lsp_spark.context import cursor_window

TEXT = "import os\n\ndef main():\n    path = os.getcwd()\n    print(path)\n\nmain()\n"


def window(text: str, row: int, column: int, prefix_chars: int = 1000, suffix_chars: int = 1000):
    lines = text.split("\n")
    read: list[int] = []

    def line(index: int) -> str:
        read.append(index)
        return lines[index]

    result = cursor_window(
        line,
        len(lines),
        row,
        column,
        prefix_chars=prefix_chars,
        suffix_chars=suffix_chars,
        multiline=True,
        max_lines=5,
    )
    return result, read


def test_prefix_and_suffix_rejoin_to_the_text() -> None:
    result, _ = window(TEXT, 3, 10)
    assert result.prefix + result.suffix == TEXT
    assert result.prefix.endswith("    path =")
    assert result.cursor.line_prefix == "    path ="
    assert result.cursor.line_suffix == " os.getcwd()"
    assert result.cursor.next_lines == ("    print(path)", "", "main()")


def test_budget_cuts_at_line_boundaries() -> None:
    result, read = window(TEXT, 4, 4, prefix_chars=30, suffix_chars=12)
    assert result.prefix == "    path = os.getcwd()\n    "
    assert result.suffix == "print(path)\n"
    assert max(read) <= 6 and min(read) >= 2


def test_several_lines_only_from_a_blank_line() -> None:
    assert window(TEXT, 5, 0)[0].cursor.multiline
    assert not window(TEXT, 3, 10)[0].cursor.multiline
    assert not window(TEXT, 4, 4)[0].cursor.multiline
