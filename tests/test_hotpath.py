"""The hot path reads only messages of exactly the expected shape; everything else is left to
pygls, whose answers the bad-input tests check."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pygls.exceptions import JsonRpcRequestCancelled

from lsp_spark.hotpath import HotPath, _document_changes, _document_position

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


class Wire:
    """What the hot path writes through: the framed answers, kept."""

    running = True

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.writer = self

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def _send_data(self, data: Any) -> None:
        raise AssertionError(f"unexpected fallback send: {data!r}")


class Keystrokes:
    """Answers ghost text after the loop's next turn, as the pipeline does on a miss."""

    def __init__(self) -> None:
        self.protocol = Wire()

    def change_document(self, uri: str, version: int, changes: list[Any]) -> None:
        raise AssertionError("no change expected")

    async def _later(self) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"items": []}

    def ghost_text(self, uri: str, line: int, character: int, *, invoked: bool = False) -> Any:
        return self._later()

    def completion_list(self, uri: str, line: int, character: int) -> Any:
        return self._later()


async def test_a_request_cancelled_before_its_task_runs_is_still_answered_once() -> None:
    """A `$/cancelRequest` read in the same turn of the loop as its request cancels a task
    that has not taken a step: it never runs its own code, and would never be answered."""
    server = Keystrokes()
    hot = HotPath(server)
    request = {"jsonrpc": "2.0", "id": 7, "method": "textDocument/inlineCompletion"}
    assert hot.take(request | {"params": position_params()})
    assert hot.take({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 7}})
    for _ in range(10):
        await asyncio.sleep(0)
    answers = [json.loads(data.split(b"\r\n\r\n", 1)[1]) for data in server.protocol.written]
    assert [answer["id"] for answer in answers] == [7]
    assert answers[0]["error"]["code"] == JsonRpcRequestCancelled.CODE
    assert hot.pending == 0
