"""Statement boundaries for the window's edges, and the syntax check of a suggestion."""

from __future__ import annotations

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
    assert boundaries.added_errors(syntax, cursor, "return 1") == 0
    assert boundaries.added_errors(syntax, cursor, "return (1") > 0


def test_parses_near_the_cursor() -> None:
    assert boundaries.parses_near(tree_of("x = 1\n"), 3)
    assert not boundaries.parses_near(tree_of("x = (\n"), 4)
    assert not boundaries.parses_near(tree_of("def f():\n    result = (\n    \n"), 28)


def test_brace_languages_too() -> None:
    syntax = tree_of("function f() {\n  \n}\n", "javascript")
    cursor = len(b"function f() {\n  ")
    assert boundaries.added_errors(syntax, cursor, "return 1;") == 0
    assert boundaries.added_errors(syntax, cursor, "return g(;") > 0


def test_huge_statements_are_checked_in_place(monkeypatch) -> None:
    monkeypatch.setattr(boundaries, "STANDALONE_LIMIT", 0)
    text = "def f():\n    \n\nbroken = (\n"
    syntax = tree_of(text)
    cursor = len(b"def f():\n    ")
    assert boundaries.added_errors(syntax, cursor, "return 1") == 0
    assert boundaries.added_errors(syntax, cursor, "return (1") > 0
