"""Every request gets an answer, however malformed; the server stays up."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.raw_client import RawClient

INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
URI = "file:///work/nested.py"
SPAN = '{"start":{"line":0,"character":0},"end":{"line":0,"character":1}}'


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


def nested(levels: int, kind: str) -> str:
    """A JSON value `levels` objects or arrays deep."""
    if kind == "object":
        return '{"a":' * levels + "1" + "}" * levels
    return "[" * levels + "1" + "]" * levels


def code_action_with_data(request_id: str, data: str) -> bytes:
    """A code action request whose diagnostic carries `data` (raw JSON), which the offered
    quick fix echoes back."""
    diagnostic = f'{{"range":{SPAN},"message":"m","data":{data}}}'
    params = (
        f'{{"textDocument":{{"uri":"{URI}"}},"range":{SPAN},'
        f'"context":{{"diagnostics":[{diagnostic}]}}}}'
    )
    return (
        f'{{"jsonrpc":"2.0","id":"{request_id}","method":"textDocument/codeAction",'
        f'"params":{params}}}'
    ).encode()


def answers_to(raw: RawClient, request_id: str) -> list[dict[str, object]]:
    """The responses carrying `request_id` sent before the answer to a request sent now
    (the requests here are answered in the order they arrive)."""
    raw.send({"jsonrpc": "2.0", "id": "after", "method": "lspSpark/stats"})
    seen = raw.messages_until("after")
    assert "result" in seen[-1], "the server must carry on"
    return [m for m in seen if m.get("id") == request_id and "method" not in m]


@pytest.mark.parametrize("kind", ["object", "array"])
@pytest.mark.parametrize(
    ("levels", "code"),
    [(100, None), (500, INVALID_PARAMS), (5000, INVALID_REQUEST)],
    ids=["100", "500", "5000"],
)
def test_deeply_nested_params_get_exactly_one_answer(
    raw: RawClient, levels: int, code: int | None, kind: str
) -> None:
    """A result as deep as the params may nest; deeper params are refused by name, and
    params too deep to parse at all still get an answer under their request's id."""
    raw.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": URI, "languageId": "python", "version": 1, "text": "x = 1\n"}},
    )
    raw.send_bytes(code_action_with_data("deep", nested(levels, kind)))
    [answer] = answers_to(raw, "deep")
    if code is None:
        assert "result" in answer, answer
    else:
        error = answer.get("error")
        assert isinstance(error, dict) and error["code"] == code, answer
        assert "deep" in error["message"], answer


def test_a_notification_too_deep_to_parse_is_dropped_without_an_answer(raw: RawClient) -> None:
    body = (
        b'{"jsonrpc":"2.0","method":"lspSpark/unknown","params":%s}'
        % nested(5000, "array").encode()
    )
    raw.send_bytes(body)
    raw.send({"jsonrpc": "2.0", "id": "after", "method": "lspSpark/stats"})
    assert [m.get("id") for m in raw.messages_until("after")] == ["after"]


def test_an_answer_json_cannot_carry_becomes_an_internal_error(raw: RawClient) -> None:
    """The quick fix would echo NaN (which Python's parser lets in) into a reply no client
    could parse: the request gets an InternalError instead, and exactly one answer."""
    raw.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": URI, "languageId": "python", "version": 1, "text": "x = 1\n"}},
    )
    raw.send_bytes(code_action_with_data("nan", "NaN"))
    [answer] = answers_to(raw, "nan")
    error = answer.get("error")
    assert isinstance(error, dict) and error["code"] == INTERNAL_ERROR, answer
