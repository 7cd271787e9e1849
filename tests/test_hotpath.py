"""The hot path reads only messages of exactly the expected shape; everything else is left to
pygls, whose answers the bad-input tests check."""

from __future__ import annotations

from typing import Any

import pytest

from lsp_spark.hotpath import _document_changes, _document_position

URI = "file:///work/a.py"


def position_params(**overrides: Any) -> dict[str, Any]:
    return {
        "textDocument": {"uri": URI},
        "position": {"line": 3, "character": 7},
        "context": {"triggerKind": 2},
    } | overrides


def test_a_well_formed_position_is_read() -> None:
    assert _document_position(position_params()) == (URI, 3, 7)


@pytest.mark.parametrize(
    "params",
    [
        None,
        [],
        position_params(textDocument={"uri": 7}),
        position_params(textDocument="file:///x"),
        position_params(position={"line": 3}),
        position_params(position={"line": -1, "character": 0}),
        position_params(position={"line": 2**31, "character": 0}),
        position_params(position={"line": True, "character": 0}),
        position_params(position={"line": 1.0, "character": 0}),
    ],
)
def test_anything_else_is_left_to_pygls(params: Any) -> None:
    assert _document_position(params) is None


def change_params(*changes: Any, version: Any = 4) -> dict[str, Any]:
    return {"textDocument": {"uri": URI, "version": version}, "contentChanges": list(changes)}


def test_changes_are_read_in_order_whole_or_partial() -> None:
    partial = {
        "range": {"start": {"line": 1, "character": 2}, "end": {"line": 1, "character": 4}},
        "text": "ab",
    }
    assert _document_changes(change_params(partial, {"text": "all"})) == (
        URI,
        4,
        [((1, 2), (1, 4), "ab"), (None, None, "all")],
    )


@pytest.mark.parametrize(
    "params",
    [
        change_params({"text": 3}),
        change_params({"range": None, "text": "x"}),
        change_params({"range": {"start": {"line": 0, "character": 0}}, "text": "x"}),
        change_params({"text": "x"}, version=None),
        change_params({"text": "x"}, version=2**31),
        {"textDocument": {"uri": URI, "version": 1}, "contentChanges": {"text": "x"}},
    ],
)
def test_malformed_changes_are_left_to_pygls(params: Any) -> None:
    assert _document_changes(params) is None
