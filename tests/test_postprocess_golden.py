"""Golden cases: real model output at real cursors, cleaned in batch and while streaming.

Each file in fixtures/postprocess/ holds the document around the cursor (`prefix`,
`suffix`), the model's `raw` text and the suggestion expected from it (`expected`,
`expected_replace`), plus `filter`: the filter the case is about, without which it must
come out differently, and `stops_early` when the stream should close before the end
of `raw`. `multiline`, `one_statement` and `header_only` are what the context builder
decides at that cursor. Syntax errors are counted with the language's real tree-sitter grammar.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tree_sitter import Node, Parser

from lsp_spark.postprocess import CursorContext, SuggestionStream, clean, filters
from lsp_spark.postprocess.context import detect_indent_unit, enclosing_width
from lsp_spark.postprocess.filters import replaced_suffix_length
from lsp_spark.syntax.grammars import language_for

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "postprocess"
CASE_FILES = sorted(FIXTURES.glob("*.json"))
DELTA_CHARS = 3
NEXT_LINES = 3
MAX_LINES = 12
"""`maxLines` unless a case says otherwise (hosted backends' default)."""


def load(path: Path) -> dict[str, Any]:
    case: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return case


def error_nodes(node: Node) -> Iterator[Node]:
    if node.is_error or node.is_missing:
        yield node
    for child in node.children:
        yield from error_nodes(child)


def error_count(parser: Parser, text: str) -> int:
    return sum(1 for _ in error_nodes(parser.parse(text.encode()).root_node))


def syntax_checks(
    language: str, prefix: str, suffix: str
) -> tuple[Callable[[str], int] | None, bool]:
    """`new_errors` for the case, and whether the document parses at the cursor."""
    grammar = language_for(language)
    if grammar is None:
        return None, True
    parser = Parser(grammar)
    before = error_count(parser, prefix + suffix)
    cursor = len(prefix.encode())
    tree = parser.parse((prefix + suffix).encode())
    parses = not any(
        node.start_byte <= cursor <= node.end_byte for node in error_nodes(tree.root_node)
    )

    def new_errors(suggestion: str) -> int:
        return error_count(parser, prefix + suggestion + suffix) - before

    return new_errors, parses


def context_for(case: dict[str, Any]) -> CursorContext:
    prefix, suffix = case["prefix"], case["suffix"]
    line_suffix, *below = suffix.split("\n")
    new_errors, parses = syntax_checks(case["language"], prefix, suffix)
    unit = case.get("indent_unit") or detect_indent_unit((prefix + suffix).split("\n"))
    return CursorContext(
        line_prefix=prefix.rsplit("\n", 1)[-1],
        line_suffix=line_suffix,
        next_lines=tuple(below[:NEXT_LINES]),
        multiline=case["multiline"],
        one_statement=case.get("one_statement", False),
        header_only=case.get("header_only", False),
        max_lines=case.get("max_lines", MAX_LINES),
        language=case["language"],
        indent_unit=unit,
        enclosing_width=enclosing_width(prefix, unit) if case["multiline"] else None,
        new_errors=new_errors,
        parses_at_cursor=lambda: parses,
    )


def batch(case: dict[str, Any]) -> tuple[str, int]:
    context = context_for(case)
    text = clean(case["raw"], context)
    return text, replaced_suffix_length(text, context)


@pytest.fixture(params=CASE_FILES, ids=[path.stem for path in CASE_FILES])
def case(request: pytest.FixtureRequest) -> dict[str, Any]:
    return load(request.param)


def test_batch_cleaning_gives_the_expected_suggestion(case: dict[str, Any]) -> None:
    assert batch(case) == (case["expected"], case.get("expected_replace", 0)), case["note"]


def test_streaming_gives_the_batch_result_and_stops_where_the_case_says(
    case: dict[str, Any],
) -> None:
    raw = case["raw"]
    stream = SuggestionStream(context_for(case))
    fed = 0
    while fed < len(raw):
        delta = raw[fed : fed + DELTA_CHARS]
        fed += len(delta)
        if stream.feed(delta):
            break
    assert stream.suggestion() == batch(case)
    assert (fed < len(raw)) == case.get("stops_early", False), case["note"]


def test_each_case_needs_the_filter_it_is_about(
    case: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without its filter the case must come out differently, or it proves nothing."""
    name = case["filter"]
    if name == "replaced_suffix_length":
        monkeypatch.setattr(filters, "replaced_suffix_length", lambda _text, _context: 0)
    else:
        assert name in {step.__name__ for step in filters.FILTERS}, f"unknown filter {name}"
    context = context_for(case)
    text = clean(case["raw"], context, skip={name})
    expected = (case["expected"], case.get("expected_replace", 0))
    assert (text, filters.replaced_suffix_length(text, context)) != expected


def test_the_cases_cover_every_filter_and_the_main_languages() -> None:
    cases = [load(path) for path in CASE_FILES]
    assert len(cases) >= 30
    covered = {case["filter"] for case in cases}
    assert {step.__name__ for step in filters.FILTERS} <= covered
    assert "replaced_suffix_length" in covered
    languages = {case["language"] for case in cases}
    assert {"python", "go", "rust"} <= languages
    assert languages & {"javascript", "typescript"}
    assert languages & {"java", "c"}
