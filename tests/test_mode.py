"""What to complete: nothing, the rest of a line, or a block."""

from __future__ import annotations

import pytest

from lsp_spark.context.builder import ContextBuilder
from lsp_spark.context.mode import Mode, completion_mode
from lsp_spark.workspace import Workspace
from tests.test_row_context import OPTIONS


@pytest.mark.parametrize(
    ("line_prefix", "line_suffix", "following", "expected"),
    [
        # Mid-line: the rest of the line, unless real code stands right of the cursor.
        ("    total = ", "", "    return total", Mode.LINE),
        ("print(", ")", "", Mode.LINE),
        ("items = [", "]", "", Mode.LINE),
        ("value = compute(", "x, y)", "", Mode.NONE),
        # A blank line whose block is empty or ends here: a block.
        ("    ", "", "", Mode.BLOCK),
        ("    ", "", "}", Mode.BLOCK),
        ("        ", "", "    return 1", Mode.BLOCK),
        ("    ", "", "  case 2:", Mode.BLOCK),
        ("    ", "", "  end", Mode.BLOCK),
        # A blank line with its block going on below, the header above or not: one statement.
        ("    ", "", "    b = 2", Mode.STATEMENT),
        ("        ", "", "        total += x", Mode.STATEMENT),
        # A blank line above deeper code: the header of that code's block, one line.
        ("    ", "", "        nested = True", Mode.HEADER),
    ],
)
def test_mode_from_the_text_around_the_cursor(
    line_prefix: str, line_suffix: str, following: str, expected: Mode
) -> None:
    mode = completion_mode(line_prefix, line_suffix, following)
    assert mode is expected


def test_comments_and_strings_follow_the_settings() -> None:
    assert completion_mode("# note", "", "", "comment") is Mode.LINE
    note = completion_mode("# note", "", "", "comment", in_comments=False)
    assert note is Mode.NONE
    text = completion_mode("s = 'ab", "'", "", "string", in_strings=False)
    assert text is Mode.NONE


def test_deeper_text_below_a_blank_line_in_a_docstring_asks_for_no_header() -> None:
    assert completion_mode("    ", "", "        x: the value", "string") is Mode.LINE


def test_a_blank_line_between_does_not_end_the_block() -> None:
    """The builder reads the mode from the next line with text: `result = []`, a blank line,
    then the loop that fills it is one block, so the cursor's line gets one statement."""
    workspace = Workspace()
    text = "def prefixes(s):\n    \n\n    for i in range(len(s)):\n        pass\n"
    document = workspace.open("file:///project/prefixes.py", "python", 1, text)
    built = ContextBuilder(workspace).build(document, 1, 4, OPTIONS)
    assert built is not None
    assert built.cursor.multiline and built.cursor.one_statement
    assert built.cursor.enclosing_width == 0
    end = workspace.open("file:///project/end.py", "python", 1, "def f():\n    \n\n\ndef g():\n")
    built = ContextBuilder(workspace).build(end, 1, 4, OPTIONS)
    assert built is not None and built.cursor.multiline and not built.cursor.one_statement
