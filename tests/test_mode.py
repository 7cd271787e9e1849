"""What to complete: nothing, the rest of a line, or a block."""

from __future__ import annotations

import pytest

from lsp_spark.context.mode import Mode, completion_mode


@pytest.mark.parametrize(
    ("line_prefix", "line_suffix", "previous", "following", "expected"),
    [
        ("    total = ", "", "def f():", "    return total", Mode.LINE),
        ("print(", ")", "", "", Mode.LINE),
        ("items = [", "]", "", "", Mode.LINE),
        ("value = compute(", "x, y)", "", "", Mode.NONE),
        ("    ", "", "def area(w, h):", "", Mode.BLOCK),
        ("    ", "", "if (ready) {", "}", Mode.BLOCK),
        ("        ", "", "    for x in xs:", "    return 1", Mode.BLOCK),
        ("    ", "", "    a = 1", "    b = 2", Mode.LINE),
        ("    ", "", "    a = 1", "", Mode.BLOCK),
    ],
)
def test_mode_from_the_text_around_the_cursor(
    line_prefix: str, line_suffix: str, previous: str, following: str, expected: Mode
) -> None:
    assert completion_mode(line_prefix, line_suffix, previous, following) is expected


def test_comments_and_strings_follow_the_settings() -> None:
    assert completion_mode("# note", "", "", "", "comment") is Mode.LINE
    assert completion_mode("# note", "", "", "", "comment", in_comments=False) is Mode.NONE
    assert completion_mode("s = 'ab", "'", "", "", "string", in_strings=False) is Mode.NONE
