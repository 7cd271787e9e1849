"""Each post-processing filter alone, then the streaming assembler's early stop."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lsp_spark.actions.rewrite import extract_code
from lsp_spark.languages import profile_for
from lsp_spark.postprocess import CursorContext, SuggestionStream, clean
from lsp_spark.postprocess.brackets import Brackets
from lsp_spark.postprocess.context import detect_indent_unit, enclosing_width
from lsp_spark.postprocess.filters import (
    FILTERS,
    MAX_CHARS,
    MAX_LINES,
    MAX_PARSE_CHECKS,
    cut_repetition,
    drop_repeated_suffix_lines,
    end_at_a_stray_indent,
    indent_body_under_header,
    limit_lines,
    limit_scope,
    normalise_indentation,
    open_the_block_below,
    prefer_parsable,
    replaced_suffix_length,
    strip_echoed_line_prefix,
    strip_fences_and_preamble,
    strip_special_tokens,
    trim_suffix_overlap,
    trim_trailing_whitespace,
)
from lsp_spark.postprocess.stage import Filter, Stage

AT_LINE_END = CursorContext(line_prefix="    total = ", line_suffix="")
NAMES = frozenset(step.__name__ for step in FILTERS)


def only(step: Filter, text: str, context: CursorContext) -> str:
    """The text as this one filter leaves it."""
    return clean(text, context, skip=NAMES - {step.__name__})


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
    assert only(strip_special_tokens, raw, AT_LINE_END) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("```python\nreturn x\n```\nThis returns x.", "return x\n"),
        ("Here is the completion:\n```\nfoo()\n```", "foo()\n"),
        ("```js\nlet a = 1;", "let a = 1;"),
        ("no fences here", "no fences here"),
        ("~~~go\nx := 1\n~~~", "x := 1\n"),
        ("Sure! ```js\nfoo()\n```", "foo()\n"),
        ("```python\ns = '```'\n```", "s = '```'\n"),
        (
            '```python\ndef f():\n    """\n    ```\n    """\n```',
            'def f():\n    """\n    ```\n    """\n',
        ),
        ("x = 1\n```", "x = 1\n```"),
    ],
    ids=[
        "closed",
        "preamble",
        "unclosed",
        "bare",
        "tildes",
        "sentence-on-the-fence-line",
        "fence-inside-a-string",
        "fence-inside-an-indented-docstring",
        "no-opening",
    ],
)
def test_strip_fences_and_preamble(raw: str, expected: str) -> None:
    assert only(strip_fences_and_preamble, raw, AT_LINE_END) == expected


def test_completions_and_code_actions_read_fences_alike() -> None:
    reply = "Here is the code:\n\n~~~py\nx = 1\n    ```\ny = 2\n~~~\nThis adds y."
    assert only(strip_fences_and_preamble, reply, AT_LINE_END).rstrip() == extract_code(reply)


def test_every_filter_is_one_function_named_as_the_setting_names_it() -> None:
    """`disabledFilters` names a filter by its function's name."""
    context = CursorContext(line_prefix="    x = ", line_suffix=")", next_lines=("}",))
    assert len(NAMES) == len(FILTERS)
    assert all(isinstance(step(context), Stage) for step in FILTERS)


def test_strip_echoed_line_prefix_removes_a_restated_line() -> None:
    context = CursorContext(line_prefix="    return fib(", line_suffix="")
    assert only(strip_echoed_line_prefix, "return fib(n - 1)", context) == "n - 1)"
    assert only(strip_echoed_line_prefix, "n - 1)", context) == "n - 1)"


def test_limit_lines_keeps_one_line_when_text_follows_the_cursor() -> None:
    context = CursorContext(line_prefix="print(", line_suffix=")", multiline=False)
    assert only(limit_lines, "a, b)\nprint(c)", context) == "a, b)"


def test_limit_lines_caps_multiline_output() -> None:
    context = CursorContext(line_prefix="", line_suffix="", max_lines=2)
    assert only(limit_lines, "one\ntwo\nthree", context) == "one\ntwo"


def test_limit_lines_gives_nothing_for_a_leading_blank_line_mid_line() -> None:
    context = CursorContext(line_prefix="x = ", line_suffix=" # note", multiline=False)
    assert only(limit_lines, "\n1", context) == ""


def test_drop_repeated_suffix_lines_cuts_where_the_model_retypes_the_next_line() -> None:
    context = CursorContext(
        line_prefix="    ", line_suffix="", next_lines=("    return result", "")
    )
    text = "result = compute()\n    return result\n"
    assert only(drop_repeated_suffix_lines, text, context) == "result = compute()"


def test_trim_trailing_whitespace() -> None:
    assert only(trim_trailing_whitespace, "a  \nb\t\n\n", AT_LINE_END) == "a\nb"


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


# --- The document's indentation ------------------------------------------------------


@pytest.mark.parametrize(
    ("lines", "unit"),
    [
        (["def f():", "\tif x:", "\t\treturn 1", "\treturn 2"], "\t"),
        (["function f() {", "  if (x) {", "    return 1;", "  }", "}"], "  "),
        (["def f():", "    if x:", "        return 1", "", "    return 2"], "    "),
        (["x = 1", "y = 2"], "    "),
        (["f(a,", "  b)", "g(", "    c)", "h(", "    d)"], "    "),
        (["import re", "def extract_max(input):", "\t", ""], "\t"),
        (["def area(r):", "  ", ""], "  "),
        (["def f():", "  return 1", "\t"], "  "),
        (["def diff(a, b):", "    ", " "], "    "),
    ],
    ids=[
        "tabs",
        "two-spaces",
        "four-spaces",
        "flat-defaults-to-four",
        "most-frequent-step",
        "only-the-cursor-line-has-tabs",
        "only-the-cursor-line-has-two-spaces",
        "code-outweighs-a-blank-line",
        "a-stray-space-is-not-a-level",
    ],
)
def test_detect_indent_unit(lines: list[str], unit: str) -> None:
    assert detect_indent_unit(lines) == unit


@pytest.mark.parametrize(
    ("prefix", "unit", "width"),
    [
        ("def f():\n    x = 1\n    ", "    ", 0),
        ("class A:\n  def f(self):\n\n    for x in y:\n\n      ", "  ", 4),
        ("def f():\n\tif x:\n\t\t", "\t", 4),
        ("x = 1\n", "    ", None),
        ("    ", "    ", None),
    ],
    ids=["function-body", "blank-lines-skipped", "tabs-count-as-units", "top-level", "first-line"],
)
def test_enclosing_width_is_the_cursor_blocks_header(
    prefix: str, unit: str, width: int | None
) -> None:
    assert enclosing_width(prefix, unit) == width


# --- normalise_indentation -----------------------------------------------------------


def indented(unit: str, line_prefix: str = "    ", language: str = "python") -> CursorContext:
    return CursorContext(
        line_prefix=line_prefix, line_suffix="", indent_unit=unit, language=language
    )


def test_a_body_written_below_its_header_moves_under_it_with_what_is_nested_in_it() -> None:
    text = "while queue:\n    node = queue.pop()\n        visit(node)\n    return seen"
    assert only(indent_body_under_header, text, indented("    ", "        ")) == (
        "while queue:\n            node = queue.pop()\n                visit(node)\n    return seen"
    )


def test_a_moved_body_takes_the_documents_tabs() -> None:
    text = "if ready:\nstart()"
    assert only(indent_body_under_header, text, indented("\t", "\t")) == "if ready:\n\t\tstart()"


def test_bodies_already_deeper_and_lines_carrying_the_statement_on_stay() -> None:
    deeper = "if ready:\n        start()\n    else:\n        wait()"
    assert only(indent_body_under_header, deeper, indented("    ")) == deeper
    empty_branch = "if ready:\n    else:\n        wait()"
    assert only(indent_body_under_header, empty_branch, indented("    ")) == empty_branch


def test_where_indentation_is_not_syntax_a_header_keeps_what_follows_as_written() -> None:
    yaml = "services:\nweb: {}"
    assert only(indent_body_under_header, yaml, indented("  ", "", "yaml")) == yaml


# --- end_at_a_stray_indent ----------------------------------------------------------


def test_a_line_indented_under_no_header_ends_the_suggestion() -> None:
    drifting = "i = i * (1 + i)\n        i = i * (1 + i)\n       i = i * (1 + i)"
    assert only(end_at_a_stray_indent, drifting, indented("    ")) == "i = i * (1 + i)"


@pytest.mark.parametrize(
    "text",
    [
        "if ready:\n        start()",
        "total = combine(\n        first,\n        second)",
        "total = first + \\\n        second",
        'doc = """\n        text\n"""',
        "x = 1\n        # a comment may sit anywhere\n    y = 2",
        "x = 1\n\n    y = 2",
    ],
    ids=["header", "brackets", "backslash", "string", "comment", "blank"],
)
def test_a_deeper_line_that_something_above_explains_stays(text: str) -> None:
    assert only(end_at_a_stray_indent, text, indented("    ")) == text


def test_where_indentation_is_not_syntax_a_deeper_line_stays() -> None:
    yaml = "name: web\n  image: nginx"
    assert only(end_at_a_stray_indent, yaml, indented("  ", "", "yaml")) == yaml


# --- open_the_block_below ------------------------------------------------------------


def above_deeper_code(header_only: bool = True) -> CursorContext:
    return CursorContext(
        line_prefix="    ",
        line_suffix="",
        next_lines=("        return -multiply(x, -y)",),
        multiline=False,
        header_only=header_only,
        language="python",
    )


@pytest.mark.parametrize(
    "header",
    ["if y < 0:", "else:  # the rest", "for item in items:", "total = combine(", "x = 1 + \\"],
)
def test_above_deeper_code_a_header_or_a_line_left_open_is_kept(header: str) -> None:
    assert only(open_the_block_below, header, above_deeper_code()) == header


@pytest.mark.parametrize("statement", ["return x * y", "# multiply", "total = combine(x, y)"])
def test_above_deeper_code_a_statement_that_would_strand_it_is_dropped(statement: str) -> None:
    assert only(open_the_block_below, statement, above_deeper_code()) == ""
    assert only(open_the_block_below, statement, above_deeper_code(False)) == statement


def test_above_a_body_an_elif_follows_only_an_if_or_an_elif_is_kept() -> None:
    context = dataclasses.replace(above_deeper_code(), headers_that_fit=("if", "elif"))
    assert only(open_the_block_below, "if low == 0:", context) == "if low == 0:"
    assert only(open_the_block_below, "elif low == 0:", context) == "elif low == 0:"
    assert only(open_the_block_below, "while low >= high:", context) == ""
    assert only(open_the_block_below, "while low >= high:", above_deeper_code()) == (
        "while low >= high:"
    )


def test_normalise_indentation_turns_spaces_into_the_documents_tabs() -> None:
    text = "for x in xs:\n        total += x\n    return total"
    assert only(normalise_indentation, text, indented("\t", "\t")) == (
        "for x in xs:\n\t\ttotal += x\n\treturn total"
    )


def test_normalise_indentation_turns_tabs_into_the_documents_spaces() -> None:
    text = "for x in xs:\n\t\ttotal += x\n\treturn total"
    assert only(normalise_indentation, text, indented("  ", "  ")) == (
        "for x in xs:\n    total += x\n  return total"
    )


def test_normalise_indentation_narrows_four_space_nesting_in_a_two_space_file() -> None:
    text = "if (ok) {\n      run();\n  }\n  done();"
    assert only(normalise_indentation, text, indented("  ", "  ", "javascript")) == (
        "if (ok) {\n    run();\n  }\n  done();"
    )


def test_normalise_indentation_widens_two_space_nesting_in_a_four_space_file() -> None:
    text = "if ok:\n      run()\n        more()\n    done()"
    assert only(normalise_indentation, text, indented("    ")) == (
        "if ok:\n        run()\n            more()\n    done()"
    )


def test_normalise_indentation_leaves_matching_and_single_line_text_alone() -> None:
    text = "if ok:\n        run()\n    done()"
    assert only(normalise_indentation, text, indented("    ")) == text
    assert only(normalise_indentation, "\tx = 1", indented("    ")) == "\tx = 1"


def test_normalise_indentation_keeps_hanging_continuations() -> None:
    """Black indents a def's arguments by two levels; that is not a different unit."""
    text = "def f(\n        a,\n        b,\n):"
    assert only(normalise_indentation, text, indented("    ", "")) == text


# --- limit_scope ---------------------------------------------------------------------


def test_limit_scope_cuts_a_dedented_line_in_python() -> None:
    text = "return a + b\n\ndef sub(a, b):\n    return a - b"
    assert only(limit_scope, text, indented("    ")) == "return a + b\n"


def test_limit_scope_takes_the_first_lines_own_indentation_at_column_zero() -> None:
    context = indented("    ", "")
    assert (
        only(limit_scope, "    x = 1\n    return x\nprint(f())", context)
        == "    x = 1\n    return x"
    )


def test_limit_scope_cuts_a_sibling_definition_but_keeps_its_decorators_together() -> None:
    text = "@property\ndef a(self):\n    return 1\n\n@property\ndef b(self):\n    return 2"
    assert (
        only(limit_scope, text, indented("    ", "")) == "@property\ndef a(self):\n    return 1\n"
    )


def test_limit_scope_keeps_a_nested_definition_after_statements() -> None:
    text = "x = 1\n    def helper():\n        return x\n    return helper"
    assert only(limit_scope, text, indented("    ")) == text


def brace_context(next_lines: tuple[str, ...], line_prefix: str = "  ") -> CursorContext:
    return CursorContext(
        line_prefix=line_prefix,
        line_suffix="",
        next_lines=next_lines,
        language="javascript",
        indent_unit="  ",
    )


def test_limit_scope_drops_a_closer_the_suffix_already_has() -> None:
    text = "return a + b;\n}\n\nfunction sub(a, b) {}"
    assert only(limit_scope, text, brace_context(("}", ""))) == "return a + b;"


def test_limit_scope_keeps_a_closer_the_suffix_lacks() -> None:
    text = "return a + b;\n}\n\nfunction sub(a, b) {}"
    assert only(limit_scope, text, brace_context(())) == "return a + b;\n}"


def test_limit_scope_keeps_a_closer_that_reopens_when_the_suffix_lacks_one() -> None:
    text = "a();\n} else {\n  b();\n}\nc();"
    assert only(limit_scope, text, brace_context(())) == "a();\n} else {\n  b();\n}"


def test_limit_scope_cuts_mid_line_before_a_closer_the_suffix_has() -> None:
    assert only(limit_scope, "go(); }", brace_context(("}",))) == "go(); "


def test_limit_scope_ignores_brackets_in_strings_and_comments() -> None:
    text = "log('}', \"}\", `\n}`); /* }\n} */ // }\nnext();\n}"
    assert (
        only(limit_scope, text, brace_context(("}",)))
        == "log('}', \"}\", `\n}`); /* }\n} */ // }\nnext();"
    )


def test_limit_scope_leaves_closers_on_the_cursors_line_to_the_overlap_policy() -> None:
    context = CursorContext(line_prefix="f(", line_suffix=")", language="javascript")
    assert only(limit_scope, "a, b)", context) == "a, b)"


def test_limit_scope_does_not_count_a_closer_of_another_kind_as_already_there() -> None:
    context = CursorContext(
        line_prefix="const x = foo(", line_suffix="", next_lines=("}",), language="javascript"
    )
    assert only(limit_scope, "a, b);", context) == "a, b);"


def test_limit_scope_cuts_a_sibling_method_in_a_brace_language() -> None:
    text = "up(): void {\n    this.n++;\n  }\n\n  down(): void {\n    this.n--;\n  }"
    context = brace_context(("}",))
    assert only(limit_scope, text, context) == "up(): void {\n    this.n++;\n  }\n"


def test_brackets_skip_rust_lifetimes_and_python_long_strings() -> None:
    rust = Brackets(profile_for("rust").syntax)
    assert [char for _, char in rust.scan("fn f<'a>(x: &'a str) -> char { '}' }")] == list("(){}")
    python = Brackets(profile_for("python").syntax)
    assert list(python.scan('x = """ ( ')) == []
    assert python.open_until == '"""'
    assert [char for _, char in python.scan(' ) """ + f(1)')] == ["(", ")"]
    assert python.depth == 0


# --- cut_repetition ------------------------------------------------------------------


def test_cut_repetition_keeps_one_copy_of_a_repeated_line() -> None:
    context = indented("    ")
    assert only(cut_repetition, "run()\n    run()\n    run()", context) == "run()"


@pytest.mark.parametrize("size", [2, 3, 4])
def test_cut_repetition_keeps_one_copy_of_a_repeated_block(size: int) -> None:
    block = [f"step{index}()" for index in range(size)]
    text = "\n".join(block * 3)
    assert only(cut_repetition, text, indented("", "")) == "\n".join(block)


def test_cut_repetition_keeps_lines_that_differ_by_indentation_or_are_punctuation() -> None:
    context = indented("    ", "")
    text = "    if a:\n        return x\n    return x\n        }\n    }\n    }"
    assert only(cut_repetition, text, context) == text


def test_cut_repetition_caps_characters_at_a_line_boundary_and_lines() -> None:
    long = "\n".join(f"value_{index} = {index}" for index in range(400))
    capped = only(cut_repetition, long, indented("", ""))
    assert len(capped) <= MAX_CHARS
    assert long.startswith(capped + "\n")
    many = "\n".join(f"v{index}" for index in range(MAX_LINES + 20))
    assert only(cut_repetition, many, indented("", "")).count("\n") == MAX_LINES - 1


# --- the suffix-overlap policy -------------------------------------------------------


def overlap_context(line_suffix: str, line_prefix: str = "def f(") -> CursorContext:
    return CursorContext(
        line_prefix=line_prefix, line_suffix=line_suffix, multiline=False, language="python"
    )


def test_trim_suffix_overlap_trims_a_partial_re_type_of_the_rest() -> None:
    assert only(trim_suffix_overlap, "x: int)", overlap_context(") -> int:")) == "x: int"


def test_trim_suffix_overlap_keeps_the_full_rest_which_is_replaced_instead() -> None:
    context = overlap_context(") -> int:")
    assert only(trim_suffix_overlap, "x: int) -> int:", context) == "x: int) -> int:"
    assert replaced_suffix_length("x: int) -> int:", context) == len(") -> int:")


def test_the_suggestions_own_closing_bracket_is_neither_trimmed_nor_replaced() -> None:
    context = overlap_context(")", "print(")
    assert only(trim_suffix_overlap, "len(x)", context) == "len(x)"
    assert replaced_suffix_length("len(x)", context) == 0


def test_trim_suffix_overlap_trims_one_of_two_auto_inserted_closers() -> None:
    context = overlap_context("))", "f(g(")
    assert only(trim_suffix_overlap, "h(1))", context) == "h(1)"
    assert replaced_suffix_length("h(1))", context) == 0


def test_trim_suffix_overlap_needs_a_token_boundary_for_words() -> None:
    assert only(trim_suffix_overlap, "a + x", overlap_context("x + 1", "y = ")) == "a + x"
    assert only(trim_suffix_overlap, "a, value", overlap_context("value)", "f(")) == "a, "
    assert only(trim_suffix_overlap, "a, val", overlap_context("value)", "f(")) == "a, val"


def test_trim_suffix_overlap_drops_the_space_before_a_spaced_suffix() -> None:
    assert only(trim_suffix_overlap, "base +", overlap_context(" + offset", "return ")) == "base"


def test_drop_repeated_suffix_lines_matches_bare_closers_only_at_the_same_indentation() -> None:
    context = CursorContext(line_prefix="    ", line_suffix="", next_lines=("}",))
    assert only(drop_repeated_suffix_lines, "if (x) {\n        y();\n    }", context) == (
        "if (x) {\n        y();\n    }"
    )
    assert only(drop_repeated_suffix_lines, "y();\n}", context) == "y();"


# --- prefer_parsable -----------------------------------------------------------------


class FakeParser:
    """Counts as an error each unclosed or surplus bracket, and records each check."""

    def __init__(self, line_prefix: str = "", line_suffix: str = "") -> None:
        self.line_prefix = line_prefix
        self.line_suffix = line_suffix
        self.checked: list[str] = []

    def __call__(self, text: str) -> int:
        self.checked.append(text)
        depth = surplus = 0
        for char in self.line_prefix + text + self.line_suffix:
            depth += char in "([{"
            if char in ")]}":
                depth -= 1
                surplus += depth < 0
                depth = max(depth, 0)
        return depth + surplus


def parsed(text: str, line_suffix: str = "", parses_at_cursor: bool = True) -> tuple[str, int]:
    checks = FakeParser("", line_suffix)
    context = CursorContext(
        line_prefix="    ",
        line_suffix=line_suffix,
        new_errors=checks,
        parses_at_cursor=lambda: parses_at_cursor,
    )
    return only(prefer_parsable, text, context), len(checks.checked)


def test_prefer_parsable_keeps_a_suggestion_that_adds_no_error() -> None:
    assert parsed("f(x)\ng(y)") == ("f(x)\ng(y)", 1)
    assert only(prefer_parsable, "f(", CursorContext(line_prefix="", line_suffix="")) == "f("


def test_prefer_parsable_drops_trailing_lines_until_it_parses() -> None:
    assert parsed("a()\nb()\nreturn {\n  'k': 1,") == ("a()\nb()", 3)


def test_prefer_parsable_cuts_one_line_at_its_last_balanced_point() -> None:
    assert parsed("f(a), g(b))") == ("f(a), g(b)", 2)


def test_prefer_parsable_gives_nothing_when_no_version_parses() -> None:
    assert parsed("(((((\n(\n(\n(\n(\n(") == ("", MAX_PARSE_CHECKS)


def test_prefer_parsable_keeps_the_text_when_the_document_is_broken_at_the_cursor() -> None:
    assert parsed("(((", parses_at_cursor=False) == ("(((", 1)


@pytest.mark.parametrize(
    ("line", "checked"),
    [("if ready and count", True), ("if ready:", False), ("default = f(x)", False)],
)
def test_prefer_parsable_parses_a_header_line_that_does_not_open_its_block(
    line: str, checked: bool
) -> None:
    checks = FakeParser()
    context = CursorContext(
        line_prefix="    ", line_suffix="", language="python", new_errors=checks
    )
    only(prefer_parsable, line, context)
    assert bool(checks.checked) is checked


def test_prefer_parsable_checks_the_text_as_it_lands_after_the_replaced_range() -> None:
    checks = FakeParser("f(", ")")
    context = CursorContext(line_prefix="f(", line_suffix=")", new_errors=checks)
    assert only(prefer_parsable, "a, b)", context) == "a, b)"
    assert checks.checked == ["a, b"]


# --- The stream stops where the filters would cut -------------------------------------


def feed_lines(stream: SuggestionStream, *lines: str) -> list[bool]:
    return [stream.feed(line + "\n") for line in lines]


def test_stream_stops_on_a_line_that_dedents_below_the_block() -> None:
    stream = SuggestionStream(indented("    "))
    assert feed_lines(stream, "return a + b", "", "def sub(a, b):") == [False, False, True]
    assert stream.suggestion() == ("return a + b", 0)


def test_stream_stops_on_a_closer_the_suffix_already_has() -> None:
    stream = SuggestionStream(brace_context(("}",)))
    assert feed_lines(stream, "return a + b;", "}") == [False, True]
    assert stream.suggestion() == ("return a + b;", 0)


def test_stream_stops_after_the_closer_when_the_suffix_lacks_it() -> None:
    stream = SuggestionStream(brace_context(()))
    assert feed_lines(stream, "if (x) {", "  y();", "}", "}") == [False, False, False, True]
    assert stream.suggestion() == ("if (x) {\n  y();\n}\n}", 0)


def test_stream_stops_on_a_repeated_line_and_a_repeated_block() -> None:
    stream = SuggestionStream(indented("    "))
    assert feed_lines(stream, "run()", "    run()") == [False, True]
    stream = SuggestionStream(indented("", ""))
    assert feed_lines(stream, "a()", "b()", "a()", "b()") == [False, False, False, True]
    assert stream.suggestion() == ("a()\nb()", 0)


def test_stream_stops_before_retyping_the_next_line() -> None:
    context = CursorContext(line_prefix="    ", line_suffix="", next_lines=("    return data",))
    stream = SuggestionStream(context)
    assert feed_lines(stream, "data = load()", "    return data") == [False, True]
    assert stream.suggestion() == ("data = load()", 0)


def test_stream_stops_at_the_hard_character_cap() -> None:
    stream = SuggestionStream(CursorContext(line_prefix="", line_suffix="", multiline=False))
    stopped = [stream.feed("x" * 100) for _ in range(MAX_CHARS // 100 + 1)]
    assert stopped[-1] and not any(stopped[:-2])
    assert stream.suggestion()[0] == "x" * MAX_CHARS


def test_stream_skips_a_preamble_and_fence_before_judging_lines() -> None:
    stream = SuggestionStream(indented("    "))
    assert not any(feed_lines(stream, "Here is the code:", "```python", "x = 1"))
    assert stream.feed("```")
    assert stream.suggestion() == ("x = 1", 0)


def test_stream_skips_a_re_typed_line_prefix_before_judging_lines() -> None:
    context = CursorContext(line_prefix="    return fib(", line_suffix="", multiline=False)
    stream = SuggestionStream(context)
    assert not stream.feed("    return f")
    assert not stream.feed("ib(n - 1)")
    assert stream.feed("\nmore")
    assert stream.suggestion() == ("n - 1)", 0)


def test_stream_sees_a_special_token_split_across_deltas() -> None:
    stream = SuggestionStream(AT_LINE_END)
    assert not stream.feed("a + b<|end")
    assert stream.feed("oftext|>")
    assert stream.suggestion() == ("a + b", 0)


CODE = ("x = 1", "return x", "def f():", "@dec", "if a:", "}", "{", "} else {", "f(a, b)", "a, b)")
TRICKY = ("", "```", "```python", "Here is the code:", "print('})')", "/* { */", "// }", "'''", "`")
CODE_LINES = st.sampled_from([*CODE, *TRICKY])
RAW = st.lists(
    st.builds(str.__add__, st.sampled_from(["", "  ", "    ", "\t", "      "]), CODE_LINES),
    max_size=12,
).map("\n".join)
CONTEXTS = st.builds(
    CursorContext,
    line_prefix=st.sampled_from(["", "    ", "\t", "  return f(", "x = "]),
    line_suffix=st.sampled_from(["", ")", ") -> int:", "; // c"]),
    next_lines=st.sampled_from([(), ("}",), ("    return x",)]),
    multiline=st.booleans(),
    max_lines=st.sampled_from([3, 12]),
    language=st.sampled_from(["python", "javascript", "go", "rust", "plaintext"]),
    indent_unit=st.sampled_from(["    ", "  ", "\t"]),
)


SKIPS = st.frozensets(st.sampled_from([step.__name__ for step in FILTERS]), max_size=2)


@settings(max_examples=300, deadline=None)
@given(raw=RAW, context=CONTEXTS, size=st.integers(1, 7), skip=SKIPS)
def test_stream_stops_only_where_the_rest_cannot_change_the_result(
    raw: str, context: CursorContext, size: int, skip: frozenset[str]
) -> None:
    stream = SuggestionStream(context, skip)
    for start in range(0, len(raw), size):
        if stream.feed(raw[start : start + size]):
            break
    text = clean(raw, context, skip)
    assert stream.suggestion() == (text, replaced_suffix_length(text, context))


def test_skipped_filters_neither_clean_nor_stop_the_stream() -> None:
    context = indented("    ")
    skip = {"limit_scope", "indent_body_under_header", "strip_special_tokens"}
    stream = SuggestionStream(context, skip=frozenset(skip))
    assert not any(feed_lines(stream, "return 1", "def g():", "<|endoftext|>"))
    assert stream.suggestion() == ("return 1\ndef g():\n<|endoftext|>", 0)


def test_limit_scope_counts_only_real_definitions_as_siblings() -> None:
    python = "def a():\n    pass\nrecord = load()\nmod = 3\nclass_ = None"
    assert only(limit_scope, python, indented("    ", "")) == python
    go = CursorContext(line_prefix="\t", line_suffix="", language="go", indent_unit="\t")
    goroutines = "go func() {\n\twork()\n}()\ngo func() {\n\tmore()\n}()"
    assert only(limit_scope, goroutines, go) == goroutines
    branches = "if (a) {\n  x();\n}\nif (b) {\n  y();\n}"
    assert only(limit_scope, branches, brace_context(())) == branches


def test_cut_repetition_cuts_a_line_that_loops_on_a_short_piece() -> None:
    context = CursorContext(line_prefix="    yield ", line_suffix="", multiline=False)
    assert only(cut_repetition, "y, m, d" + ", i" * 30, context) == "y, m, d, i"
    looping = 'IndexError("left is not a list of' + " list of" * 12
    assert only(cut_repetition, looping, context) == 'IndexError("left is not a list of'
    assert only(cut_repetition, "[0, 0, 0, 0]", context) == "[0, 0, 0, 0]"
    assert only(cut_repetition, "# " + "-" * 40, context) == "# " + "-" * 40


def test_the_stream_stops_when_a_line_starts_looping() -> None:
    stream = SuggestionStream(CursorContext(line_prefix="x = [", line_suffix="", multiline=False))
    stopped = False
    for _ in range(60):
        if stream.feed("1, "):
            stopped = True
            break
    assert stopped
    assert stream.suggestion()[0] == "1,"
