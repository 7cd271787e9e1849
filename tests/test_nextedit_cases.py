"""Checks the next-edit evaluation cases in fixtures/nextedit/cases/ (GitHub issue 22).

Each case is an excerpt of real code (`original`), the same text after the user's
recent edit (`current`, with the `cursor` at the end of that edit) and the text after
the edit the user is expected to make next (`expected`). The evaluation relies on the
rules checked here: the user's edit is small, the expected edit stays inside the
function around the cursor (or near the cursor at module level) and never grows or
shrinks the file by more than a few lines, positions are UTF-16 code units, and enough
cases put non-ASCII text before an edited column so position encodings get exercised.
Syntax is judged with the languages' real tree-sitter grammars.
"""

from __future__ import annotations

import difflib
import json
import re
from collections import Counter
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from tree_sitter import Node, Parser

from lsp_spark.syntax.grammars import language_for

CASES_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "nextedit" / "cases"
README = CASES_DIR.parent / "README.md"
CASE_FILES = sorted(CASES_DIR.glob("*.json"))

LANGUAGES = ("python", "typescript", "go", "rust")
KINDS = (
    "rename",
    "new-parameter",
    "field-rename",
    "branch-adapt",
    "diagnostic-fix",
    "literal-update",
)
REQUIRED_KEYS = {
    "id",
    "language",
    "kind",
    "source",
    "original",
    "current",
    "cursor",
    "expected",
    "diagnostics",
}
OPTIONAL_KEYS = {"note"}
SOURCE_KEYS = {"project", "path", "licence", "url"}
LICENCES = {
    "PSF-2.0",
    "MIT",
    "Apache-2.0",
    "BSD-2-Clause",
    "BSD-3-Clause",
    "Unlicense OR MIT",
    "MIT OR Apache-2.0",
}
DIAGNOSTIC_SOURCES = {"python": "pyright", "typescript": "tsc", "go": "gopls", "rust": "rustc"}

MIN_CASES = 64
MIN_CASES_PER_LANGUAGE = 16
MIN_NON_ASCII_CASES = 10
EXCERPT_LINES = range(20, 71)
MAX_USER_EDIT_LINES = 3
MAX_LINES_ADDED_OR_REMOVED = 3
SMALL_FUNCTION_LINES = 40
WINDOW_LINES = 15

# Node types that make a function scope for the locality rule, per grammar.
FUNCTION_NODES = {
    "python": {"function_definition", "lambda"},
    "typescript": {
        "function_declaration",
        "function_expression",
        "generator_function_declaration",
        "generator_function",
        "arrow_function",
        "method_definition",
    },
    "go": {"function_declaration", "method_declaration", "func_literal"},
    "rust": {"function_item", "closure_expression"},
}


def load(path: Path) -> dict[str, Any]:
    case: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return case


@cache
def all_cases() -> tuple[dict[str, Any], ...]:
    return tuple(load(path) for path in CASE_FILES)


def utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def utf16_to_index(line: str, column: int) -> int:
    """The Python string index of a UTF-16 column; raises if it splits a character."""
    units = 0
    for index, char in enumerate(line):
        if units == column:
            return index
        units += 2 if ord(char) > 0xFFFF else 1
        if units > column:
            raise ValueError(f"column {column} splits the character at index {index}")
    if units == column:
        return len(line)
    raise ValueError(f"column {column} lies past the end of a {units}-unit line")


def lines_of(text: str) -> list[str]:
    return text.split("\n")


def line_opcodes(before: str, after: str) -> list[tuple[str, int, int, int, int]]:
    matcher = difflib.SequenceMatcher(None, lines_of(before), lines_of(after), autojunk=False)
    return [op for op in matcher.get_opcodes() if op[0] != "equal"]


def changed_line_count(before: str, after: str) -> int:
    """How many lines an edit touches, counting a replacement by its longer side."""
    return sum(max(i2 - i1, j2 - j1) for _, i1, i2, j1, j2 in line_opcodes(before, after))


def touched_lines(before: str, after: str) -> list[float]:
    """Lines of `before` an edit changes; an insertion sits half-way between two lines."""
    touched: list[float] = []
    for tag, i1, i2, _, _ in line_opcodes(before, after):
        if tag == "insert":
            touched.append(i1 - 0.5)
        else:
            touched.extend(range(i1, i2))
    return touched


def error_nodes(node: Node) -> Iterator[Node]:
    if node.is_error or node.is_missing:
        yield node
    for child in node.children:
        yield from error_nodes(child)


@cache
def parser_for(language: str) -> Parser:
    grammar = language_for(language)
    assert grammar is not None, f"no tree-sitter grammar for {language}"
    return Parser(grammar)


def syntax_errors(language: str, text: str) -> int:
    tree = parser_for(language).parse(text.encode("utf-8"))
    return sum(1 for _ in error_nodes(tree.root_node))


def enclosing_function_lines(language: str, text: str, line: int, column: int) -> range | None:
    """The rows of the smallest function around a position, or None at module level."""
    tree = parser_for(language).parse(text.encode("utf-8"))
    row = lines_of(text)[line]
    point = (line, len(row[: utf16_to_index(row, column)].encode("utf-8")))
    best: Node | None = None
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if not node.start_point <= point <= node.end_point:
            continue
        if node.type in FUNCTION_NODES[language]:
            best = node
        stack.extend(node.children)
    if best is None:
        return None
    return range(best.start_point.row, best.end_point.row + 1)


def edited_after_non_ascii(current: str, expected: str) -> bool:
    """Whether a line the expected edit changes has non-ASCII text before an edited column."""
    current_lines, expected_lines = lines_of(current), lines_of(expected)
    for tag, i1, i2, j1, j2 in line_opcodes(current, expected):
        if tag != "replace":
            continue
        for before, after in zip(current_lines[i1:i2], expected_lines[j1:j2], strict=False):
            matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
            for op, start, _, _, _ in matcher.get_opcodes():
                if op != "equal" and any(ord(char) > 0x7F for char in before[:start]):
                    return True
    return False


def test_case_set_is_large_and_covers_every_kind_in_every_language() -> None:
    cases = all_cases()
    assert len(cases) >= MIN_CASES
    per_language = Counter(case["language"] for case in cases)
    assert set(per_language) == set(LANGUAGES)
    for language in LANGUAGES:
        assert per_language[language] >= MIN_CASES_PER_LANGUAGE, language
        kinds = {case["kind"] for case in cases if case["language"] == language}
        assert kinds == set(KINDS), f"{language} lacks {set(KINDS) - kinds}"


def text_before_cursor(case: dict[str, Any]) -> str:
    line = lines_of(case["current"])[case["cursor"]["line"]]
    return line[: utf16_to_index(line, case["cursor"]["character"])]


def test_enough_cases_edit_after_non_ascii_text() -> None:
    exercising = [
        case["id"]
        for case in all_cases()
        if edited_after_non_ascii(case["current"], case["expected"])
    ]
    assert len(exercising) >= MIN_NON_ASCII_CASES, exercising
    beyond_bmp = re.compile(r"[^\u0000-\uffff]")
    assert any(beyond_bmp.search(case["current"]) for case in all_cases())
    assert any(beyond_bmp.search(text_before_cursor(case)) for case in all_cases()), (
        "no cursor sits after a character outside the BMP"
    )


def test_readme_attributes_every_case() -> None:
    readme = README.read_text(encoding="utf-8")
    for case in all_cases():
        assert f"`{case['id']}`" in readme, case["id"]
        assert case["source"]["path"] in readme, case["id"]


@pytest.mark.parametrize("path", CASE_FILES, ids=[path.stem for path in CASE_FILES])
class TestCase:
    def test_schema(self, path: Path) -> None:
        case = load(path)
        assert REQUIRED_KEYS <= set(case) <= REQUIRED_KEYS | OPTIONAL_KEYS
        assert case["id"] == path.stem
        assert case["language"] in LANGUAGES
        assert case["kind"] in KINDS
        assert path.stem.startswith(f"{case['language']}-{case['kind']}-")
        assert re.fullmatch(r"[a-z0-9-]+", path.stem)
        assert set(case["source"]) == SOURCE_KEYS
        assert all(isinstance(value, str) and value for value in case["source"].values())
        assert case["source"]["licence"] in LICENCES
        assert case["source"]["url"].startswith("https://github.com/")
        for key in ("original", "current", "expected"):
            assert isinstance(case[key], str)
            assert "\r" not in case[key], f"{key} has a carriage return"
        assert set(case["cursor"]) == {"line", "character"}
        if "note" in case:
            assert isinstance(case["note"], str) and case["note"]

    def test_excerpt_length(self, path: Path) -> None:
        case = load(path)
        assert len(case["original"].splitlines()) in EXCERPT_LINES

    def test_cursor_ends_the_users_edit(self, path: Path) -> None:
        case = load(path)
        lines = lines_of(case["current"])
        line, column = case["cursor"]["line"], case["cursor"]["character"]
        assert 0 <= line < len(lines)
        assert 0 <= column <= utf16_length(lines[line])
        utf16_to_index(lines[line], column)
        assert any(
            j1 <= line < j2 for _, _, _, j1, j2 in line_opcodes(case["original"], case["current"])
        ), "the cursor is not on a line the user's edit changed"

    def test_texts_differ_and_the_users_edit_is_small(self, path: Path) -> None:
        case = load(path)
        assert case["original"] != case["current"] != case["expected"]
        assert case["original"] != case["expected"]
        assert changed_line_count(case["original"], case["current"]) <= MAX_USER_EDIT_LINES

    def test_expected_edit_keeps_the_line_count_close(self, path: Path) -> None:
        case = load(path)
        added = removed = 0
        for _, i1, i2, j1, j2 in line_opcodes(case["current"], case["expected"]):
            added += max(0, (j2 - j1) - (i2 - i1))
            removed += max(0, (i2 - i1) - (j2 - j1))
        assert added <= MAX_LINES_ADDED_OR_REMOVED
        assert removed <= MAX_LINES_ADDED_OR_REMOVED

    def test_expected_edit_stays_near_the_cursor(self, path: Path) -> None:
        case = load(path)
        line = case["cursor"]["line"]
        scope = enclosing_function_lines(
            case["language"], case["current"], line, case["cursor"]["character"]
        )
        for touched in touched_lines(case["current"], case["expected"]):
            if scope is not None and len(scope) <= SMALL_FUNCTION_LINES:
                assert scope.start <= touched <= scope.stop - 1, (
                    f"line {touched} lies outside the function on lines {scope.start}-"
                    f"{scope.stop - 1}"
                )
            else:
                assert abs(touched - line) <= WINDOW_LINES, f"line {touched} is far from {line}"

    def test_syntax(self, path: Path) -> None:
        case = load(path)
        language = case["language"]
        baseline = syntax_errors(language, case["original"])
        assert syntax_errors(language, case["expected"]) <= baseline
        if case["kind"] != "diagnostic-fix":
            assert syntax_errors(language, case["current"]) <= baseline

    def test_diagnostics(self, path: Path) -> None:
        case = load(path)
        diagnostics = case["diagnostics"]
        if case["kind"] != "diagnostic-fix":
            assert diagnostics == []
            return
        assert diagnostics
        lines = lines_of(case["current"])
        for diagnostic in diagnostics:
            assert set(diagnostic) == {"range", "message", "severity", "source"}
            assert diagnostic["source"] == DIAGNOSTIC_SOURCES[case["language"]]
            assert diagnostic["severity"] in (1, 2, 3, 4)
            assert diagnostic["message"]
            start, end = diagnostic["range"]["start"], diagnostic["range"]["end"]
            assert (start["line"], start["character"]) <= (end["line"], end["character"])
            for position in (start, end):
                text = lines[position["line"]]
                utf16_to_index(text, position["character"])
