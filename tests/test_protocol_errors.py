"""Every request gets an answer, however malformed; the server stays up."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.raw_client import RawClient

INVALID_PARAMS = -32602


@pytest.fixture
def raw() -> Iterator[RawClient]:
    client = RawClient()
    client.initialize({"backend": "openai", "baseUrl": "http://127.0.0.1:9"})
    yield client
    client.close()


def test_a_custom_request_without_params_is_answered(raw: RawClient) -> None:
    raw.send({"jsonrpc": "2.0", "id": 1, "method": "lspSpark/stats"})
    assert raw.reply(1)["result"]["backend"] == "openai"


@pytest.mark.parametrize(
    "params",
    [None, {"textDocument": {"uri": 1}}, {"position": {"line": "x", "character": 0}}, []],
    ids=["missing", "wrong-type", "bad-position", "array"],
)
def test_unreadable_params_get_an_invalid_params_error(raw: RawClient, params: object) -> None:
    message: dict[str, object] = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "textDocument/inlineCompletion",
    }
    if params is not None:
        message["params"] = params
    raw.send(message)
    assert raw.reply(2)["error"]["code"] == INVALID_PARAMS
    raw.send({"jsonrpc": "2.0", "id": 3, "method": "lspSpark/stats", "params": None})
    assert "result" in raw.reply(3), "the server must carry on after a bad request"
