"""Statement boundaries for the window's edges, and the syntax check of a suggestion."""

from __future__ import annotations

import shlex
import textwrap
from pathlib import Path

import pytest

from lsp_spark.documents import PositionEncoding
from lsp_spark.syntax import boundaries
from lsp_spark.workspace import Workspace

SOURCE = """import os


def load(path):
    with open(path) as handle:
        data = handle.read(
            1024,
        )
    return data


class Store:
    def get(self, key):
        return key
"""


def added_errors(syntax, cursor: int, line_prefix: str, text: str) -> int:
    return boundaries.SuggestionCheck(syntax, cursor, line_prefix).added_errors(text)


def parses_at_cursor(text: str, cursor: int) -> bool:
    line_prefix = text.encode()[:cursor].decode().rpartition("\n")[2]
    return boundaries.SuggestionCheck(tree_of(text), cursor, line_prefix).parses_at_cursor()


def tree_of(text: str, language: str = "python"):
    workspace = Workspace()
    document = workspace.open(f"file:///w/example.{language}", language, 1, text)
    syntax = workspace.tree(document.uri)
    assert syntax is not None
    return syntax


def test_window_starts_move_past_a_cut_statement() -> None:
    syntax = tree_of(SOURCE)
    assert boundaries.statement_start_at_or_after(syntax, 3) == 3
    assert boundaries.statement_start_at_or_after(syntax, 6) == 8
    assert boundaries.statement_start_at_or_after(syntax, 13) == 13


def test_window_ends_move_before_a_cut_statement() -> None:
    syntax = tree_of(SOURCE)
    assert boundaries.statement_end_at_or_before(syntax, 6) == 4
    assert boundaries.statement_end_at_or_before(syntax, 8) == 8


def test_added_errors_counts_only_what_the_insertion_breaks() -> None:
    text = "def f():\n    \n\nbroken = (\n"
    syntax = tree_of(text)
    cursor = len(b"def f():\n    ")
    assert added_errors(syntax, cursor, "    ", "return 1") == 0
    assert added_errors(syntax, cursor, "    ", "return (1") > 0


def test_parses_at_the_cursor() -> None:
    assert parses_at_cursor("x = 1\n", 3)
    assert not parses_at_cursor("x = (\n", 4)
    assert not parses_at_cursor("def f():\n    result = (\n    \n", 28)


def test_brace_languages_too() -> None:
    syntax = tree_of("function f() {\n  \n}\n", "javascript")
    cursor = len(b"function f() {\n  ")
    assert added_errors(syntax, cursor, "  ", "return 1;") == 0
    assert added_errors(syntax, cursor, "  ", "return g(;") > 0


def test_an_indented_top_level_statement_is_checked_as_it_is_outside_python() -> None:
    text = "  function f() {\n    \n  }\n"
    syntax = tree_of(text, "javascript")
    cursor = len(b"  function f() {\n    ")
    assert added_errors(syntax, cursor, "    ", "return 1;") == 0
    assert added_errors(syntax, cursor, "    ", "return g(;") > 0


def test_huge_statements_are_checked_in_place(monkeypatch) -> None:
    monkeypatch.setattr(boundaries, "STANDALONE_LIMIT", 0)
    text = "def f():\n    \n\nbroken = (\n"
    syntax = tree_of(text)
    cursor = len(b"def f():\n    ")
    assert added_errors(syntax, cursor, "    ", "return 1") == 0
    assert added_errors(syntax, cursor, "    ", "return (1") > 0


BROKEN = "class Store:\n    def get(self):\n        broken = (\n        \n"

CLASS = """class Store:
    def get(self, key):
        value = self.items[key]
        \n\
    def put(self, key, value):
        self.items[key] = value
"""


def test_a_method_of_a_big_class_is_checked_without_the_class(monkeypatch) -> None:
    monkeypatch.setattr(boundaries, "STANDALONE_LIMIT", 80)

    def whole_file(*_: object) -> int:
        raise AssertionError("parsed the whole file")

    monkeypatch.setattr(boundaries, "_added_errors_in_place", whole_file)
    syntax = tree_of(CLASS)
    cursor = CLASS.index("        \n") + 8
    assert added_errors(syntax, cursor, " " * 8, "return value") == 0
    assert added_errors(syntax, cursor, " " * 8, "return (value") > 0
    stepping_out = "return value\n\n    def has(self, key):\n        return key in self.items"
    assert added_errors(syntax, cursor, " " * 8, stepping_out) == 0
    assert added_errors(syntax, cursor, " " * 8, stepping_out + "(") > 0


def test_a_nested_statement_counts_only_the_errors_the_insertion_adds() -> None:
    syntax = tree_of(BROKEN)
    cursor = len(BROKEN) - 1
    assert added_errors(syntax, cursor, " " * 8, "1)") <= 0
    assert added_errors(syntax, cursor, " " * 8, "def (") > 0


@pytest.mark.parametrize(
    "insertion",
    [
        "return value",
        "return value\n    ",
        "if value:\n            return value\n        return None",
        "for item in value:\n            yield item",
        "return value\n\n    @property\n    def size(self):\n        return len(self.items)",
        "return value\n\ndef helper():\n    pass",
        "return (value",
        "if value\n            return value",
        "return value\n    def has(self, key)\n        return key",
        "else:\n            pass",
        "return value]",
    ],
)
def test_a_nested_statement_agrees_with_the_whole_file(insertion: str) -> None:
    syntax = tree_of(CLASS)
    cursor = CLASS.index("        \n") + 8
    alone = added_errors(syntax, cursor, " " * 8, insertion)
    in_place = boundaries._added_errors_in_place(syntax, cursor, insertion.encode())
    assert (alone > 0) == (in_place > 0)


def test_in_the_middle_of_a_line_the_whole_statement_is_checked(monkeypatch) -> None:
    monkeypatch.setattr(boundaries, "STANDALONE_LIMIT", 80)
    syntax = tree_of(CLASS)
    cursor = CLASS.index("self.items[key]\n") + len("self.items[")
    prefix = "        value = self.items["
    assert added_errors(syntax, cursor, prefix, "key, default") == 0
    assert added_errors(syntax, cursor, prefix, "key, (") > 0


class CountingParser:
    def __init__(self, parser) -> None:
        self.parser = parser
        self.parsed: list[bytes] = []

    def parse(self, source: bytes):
        self.parsed.append(source)
        return self.parser.parse(source)


@pytest.mark.parametrize(
    ("text", "language", "line_prefix", "parsed_alone"),
    [
        ("class Store:\n    def get(self):\n        value = 1\n        \n", "python", " " * 8, 0),
        ("function f() {\n  let x = (;\n  \n}\n", "javascript", "  ", 1),
    ],
)
def test_the_statement_alone_is_parsed_at_most_once_for_all_checked_versions(
    monkeypatch, text: str, language: str, line_prefix: str, parsed_alone: int
) -> None:
    syntax = tree_of(text, language)
    counting = CountingParser(boundaries._checker(syntax.language))
    monkeypatch.setattr(boundaries, "_checker", lambda language: counting)
    cursor = text.index(line_prefix + "\n", text.index("\n")) + len(line_prefix)
    check = boundaries.SuggestionCheck(syntax, cursor, line_prefix)
    versions = ["more(1)\n  and(2)", "more(1)", "more("]
    for version in versions:
        check.added_errors(version)
    assert len(counting.parsed) == len(versions) + parsed_alone


BRANCHES = """class Store:
    def get(self, key):
        if key in self.items:
            value = self.items[key]
        # a comment between the branches belongs to neither
        \n\
    def put(self, key, value):
        self.items[key] = value
"""


@pytest.mark.parametrize(
    "insertion",
    [
        "elif key is None:\n            value = None",
        "else:\n            value = None",
        "return value",
        "elif key is None\n            value = None",
        "else:\n        value = None",
    ],
)
def test_a_branch_after_a_comment_is_checked_with_its_if(monkeypatch, insertion: str) -> None:
    monkeypatch.setattr(boundaries, "STANDALONE_LIMIT", 160)
    syntax = tree_of(BRANCHES)
    cursor = BRANCHES.index("        \n") + 8
    alone = added_errors(syntax, cursor, " " * 8, insertion)
    in_place = boundaries._added_errors_in_place(syntax, cursor, insertion.encode())
    assert (alone > 0) == (in_place > 0)


def enter_made_rows(path: str, step: int) -> list[tuple[str, str, str]]:
    """(text typed up to a row's indentation, that indentation, the row and up to two more)."""
    lines = Path(path).read_text(encoding="utf-8").split("\n")
    cases = []
    for row in range(5, len(lines) - 5, step):
        line = lines[row]
        indent = line[: len(line) - len(line.lstrip())]
        typed = "\n".join(lines[:row]) + "\n" + indent
        following = [line.lstrip(), *lines[row + 1 : row + 1 + row % 3]]
        cases.append((typed, indent, "\n".join(following)))
    return cases


@pytest.mark.parametrize("path", [textwrap.__file__, shlex.__file__])
def test_the_statement_check_agrees_with_the_whole_file_on_real_code(path: str) -> None:
    for typed, indent, following in enter_made_rows(path, 7):
        syntax = tree_of(typed)
        cursor = len(typed.encode())
        for insertion in (following, following + ")", "(" + following):
            alone = added_errors(syntax, cursor, indent, insertion)
            in_place = boundaries._added_errors_in_place(syntax, cursor, insertion.encode())
            assert (alone > 0) == (in_place > 0), (typed[-80:], insertion)


@pytest.mark.parametrize("path", [textwrap.__file__, shlex.__file__])
def test_after_enter_the_check_counts_as_with_a_reparsed_tree(path: str) -> None:
    """The check reads the tree edited by Enter, not reparsed (see `tree_before`)."""
    unparsed = 0
    for typed, indent, following in enter_made_rows(path, 7):
        above, _, _ = typed.rpartition("\n")
        syntax = tree_of(above)
        syntax.tree  # noqa: B018 - parsed before the keystroke (after the previous answer)
        document = syntax.document
        row = document.line_count - 1
        end = (row, len(document.line(row)))
        syntax.edit(document.apply_change(end, end, "\n" + indent, PositionEncoding.UTF32))
        version = syntax.version
        cursor = len(typed.encode())
        for insertion in (following, following + ")", "(" + following):
            edited = added_errors(syntax, cursor, indent, insertion)
            assert edited == added_errors(tree_of(typed), cursor, indent, insertion)
        unparsed += syntax.version == version
    assert unparsed > 0
