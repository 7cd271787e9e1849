"""What to complete: nothing, the rest of a line, or a block."""

from __future__ import annotations

import pytest

from lsp_spark.context.mode import Mode, completion_mode


@pytest.mark.parametrize(
    ("language", "line_prefix", "line_suffix", "previous", "following", "expected"),
    [
        ("python", "    total = ", "", "def f():", "    return total", Mode.LINE),
        ("python", "print(", ")", "", "", Mode.LINE),
        ("python", "items = [", "]", "", "", Mode.LINE),
        ("python", "value = compute(", "x, y)", "", "", Mode.NONE),
        ("python", "    ", "", "def area(w, h):", "", Mode.BLOCK),
        ("javascript", "    ", "", "if (ready) {", "}", Mode.BLOCK),
        ("python", "        ", "", "    for x in xs:", "    return 1", Mode.BLOCK),
        ("python", "    ", "", "    a = 1", "    b = 2", Mode.LINE),
        ("python", "    ", "", "    a = 1", "", Mode.BLOCK),
        ("python", "        ", "", "    total = sum(", "    return 1", Mode.BLOCK),
        ("python", "        ", "", "    if ready:  # soon", "    return 1", Mode.BLOCK),
        ("javascript", "    ", "", "  case 1:", "  case 2:", Mode.BLOCK),
        ("ruby", "    ", "", "  items.each do", "  end", Mode.BLOCK),
        ("ruby", "    ", "", "    total = 1 # so:", "    done", Mode.LINE),
        ("lua", "    ", "", "  if ready then", "  end", Mode.BLOCK),
    ],
)
def test_mode_from_the_text_around_the_cursor(
    language: str,
    line_prefix: str,
    line_suffix: str,
    previous: str,
    following: str,
    expected: Mode,
) -> None:
    mode = completion_mode(language, line_prefix, line_suffix, previous, following)
    assert mode is expected


def test_comments_and_strings_follow_the_settings() -> None:
    assert completion_mode("python", "# note", "", "", "", "comment") is Mode.LINE
    note = completion_mode("python", "# note", "", "", "", "comment", in_comments=False)
    assert note is Mode.NONE
    text = completion_mode("python", "s = 'ab", "'", "", "", "string", in_strings=False)
    assert text is Mode.NONE
