"""Each post-processing filter alone, then the streaming assembler's early stop."""

from __future__ import annotations

import pytest

from lsp_spark.postprocess import SuggestionStream
from lsp_spark.postprocess.filters import (
    CursorContext,
    drop_repeated_suffix_lines,
    limit_lines,
    replaced_suffix_length,
    strip_echoed_line_prefix,
    strip_fences_and_preamble,
    strip_special_tokens,
    trim_trailing_whitespace,
)

AT_LINE_END = CursorContext(line_prefix="    total = ", line_suffix="")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("a + b<|endoftext|>junk", "a + b"),
        ("a + b<|fim_middle|>", "a + b"),
        ("value <EOT>", "value "),
        ("x)<｜end▁of▁sentence｜>more", "x)"),
        ("plain", "plain"),
    ],
)
def test_strip_special_tokens(raw: str, expected: str) -> None:
    assert strip_special_tokens(raw, AT_LINE_END) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("```python\nreturn x\n```\nThis returns x.", "return x\n"),
        ("Here is the completion:\n```\nfoo()\n```", "foo()\n"),
        ("```js\nlet a = 1;", "let a = 1;"),
        ("no fences here", "no fences here"),
    ],
)
def test_strip_fences_and_preamble(raw: str, expected: str) -> None:
    assert strip_fences_and_preamble(raw, AT_LINE_END) == expected


def test_strip_echoed_line_prefix_removes_a_restated_line() -> None:
    context = CursorContext(line_prefix="    return fib(", line_suffix="")
    assert strip_echoed_line_prefix("return fib(n - 1)", context) == "n - 1)"
    assert strip_echoed_line_prefix("n - 1)", context) == "n - 1)"


def test_limit_lines_keeps_one_line_when_text_follows_the_cursor() -> None:
    context = CursorContext(line_prefix="print(", line_suffix=")", multiline=False)
    assert limit_lines("a, b)\nprint(c)", context) == "a, b)"


def test_limit_lines_caps_multiline_output() -> None:
    context = CursorContext(line_prefix="", line_suffix="", max_lines=2)
    assert limit_lines("one\ntwo\nthree", context) == "one\ntwo"


def test_limit_lines_gives_nothing_for_a_leading_blank_line_mid_line() -> None:
    context = CursorContext(line_prefix="x = ", line_suffix=" # note", multiline=False)
    assert limit_lines("\n1", context) == ""


def test_drop_repeated_suffix_lines_cuts_where_the_model_retypes_the_next_line() -> None:
    context = CursorContext(
        line_prefix="    ", line_suffix="", next_lines=("    return result", "")
    )
    text = "result = compute()\n    return result\n"
    assert drop_repeated_suffix_lines(text, context) == "result = compute()"


def test_trim_trailing_whitespace() -> None:
    assert trim_trailing_whitespace("a  \nb\t\n\n", AT_LINE_END) == "a\nb"


def test_replaced_suffix_length_covers_an_auto_inserted_bracket() -> None:
    context = CursorContext(line_prefix="print(", line_suffix=")")
    assert replaced_suffix_length("a, b)", context) == 1
    assert replaced_suffix_length("a, b", context) == 0


def test_stream_stops_at_the_first_complete_line_when_single_line() -> None:
    stream = SuggestionStream(CursorContext(line_prefix="f(", line_suffix=")", multiline=False))
    assert not stream.feed("a, ")
    assert not stream.feed("b)")
    assert stream.feed("\nsecond line")
    assert stream.suggestion() == ("a, b)", 1)


def test_stream_stops_after_a_closed_fence() -> None:
    stream = SuggestionStream(AT_LINE_END)
    assert not stream.feed("```python\n")
    assert not stream.feed("a + b\n")
    assert stream.feed("```")
    assert stream.suggestion() == ("a + b", 0)


def test_stream_stops_on_a_special_token() -> None:
    stream = SuggestionStream(AT_LINE_END)
    assert stream.feed("a + b<|endoftext|>")
    assert stream.suggestion()[0] == "a + b"


def test_stream_stops_when_multiline_output_exceeds_the_cap() -> None:
    stream = SuggestionStream(CursorContext(line_prefix="", line_suffix="", max_lines=2))
    assert not stream.feed("one\ntwo\n")
    assert stream.feed("three\n")
    assert stream.suggestion()[0] == "one\ntwo"
