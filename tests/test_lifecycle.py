"""The LSP lifecycle over stdio, for both paths a message can take (the keystroke shortcut
and pygls): before `initialize` nothing but `initialize` and `exit`, `initialize` once, after
`shutdown` nothing but `exit`, and the exit code `exit` asks for. Also request ids a client
reuses while the first request under the id is still running."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lsp_spark.testing.cerebras_server import CerebrasTestServer, Fault
from tests.conftest import SEEN, cerebras_options
from tests.raw_client import RawClient

SERVER_NOT_INITIALIZED = -32002
INVALID_REQUEST = -32600
REQUEST_CANCELLED = -32800
WAIT = SEEN
UNREACHABLE = {"backend": "openai", "baseUrl": "http://127.0.0.1:9"}
"""Settings for tests that never reach a model."""
FUNCTION = "def f(x):\n    \n\n\ndef g(y):\n    "
"""Two places to complete at: line 1 and line 5, column 4."""

URI = "file:///work/lifecycle.py"
AT = {"textDocument": {"uri": URI}, "position": {"line": 1, "character": 4}}
SPAN = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}
REQUESTS: dict[str, tuple[str, Any]] = {
    "inline-completion": ("textDocument/inlineCompletion", {**AT, "context": {"triggerKind": 2}}),
    "completion": ("textDocument/completion", AT),
    "code-action": (
        "textDocument/codeAction",
        {"textDocument": {"uri": URI}, "range": SPAN, "context": {"diagnostics": []}},
    ),
    "custom": ("lspSpark/stats", None),
    "shutdown": ("shutdown", None),
}
"""One request of each kind: the first two are the keystroke shortcut's, the others pygls'."""


def send_request(client: RawClient, request_id: str, method: str, params: Any = None) -> None:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    client.send(message)


def error_code(answer: dict[str, Any]) -> int | None:
    return answer.get("error", {}).get("code")


def log_problems(log: Path) -> list[str]:
    """Lines at ERROR level and traceback lines."""
    text = log.read_text(errors="replace") if log.exists() else ""
    return [line for line in text.splitlines() if " ERROR " in line or "Traceback" in line]


def open_document(client: RawClient, uri: str, text: str = FUNCTION) -> None:
    item = {"uri": uri, "languageId": "python", "version": 1, "text": text}
    client.notify("textDocument/didOpen", {"textDocument": item})


def inline_params(uri: str, line: int = 1) -> dict[str, Any]:
    return {
        "textDocument": {"uri": uri},
        "position": {"line": line, "character": 4},
        "context": {"triggerKind": 2},
    }


def edit_command(uri: str) -> dict[str, Any]:
    at = {"line": 1, "character": 0}
    arguments = [{"uri": uri, "range": {"start": at, "end": at}, "instruction": "add y"}]
    return {"command": "lspSpark.editWithInstruction", "arguments": arguments}


def is_answer_to(request_id: str) -> Callable[[dict[str, Any]], bool]:
    return lambda message: message.get("id") == request_id and "method" not in message


def is_request(method: str) -> Callable[[dict[str, Any]], bool]:
    return lambda message: message.get("method") == method and "id" in message


def await_backend(client: RawClient, backend: str) -> None:
    """`initialized` configures the backend asynchronously: ask until it is in place."""
    for _ in range(1000):
        if client.request("lspSpark/stats")["result"]["backend"] == backend:
            return
    raise TimeoutError(f"the {backend} backend was never configured")


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "server.log"


@pytest.fixture
def fresh(log: Path) -> Iterator[RawClient]:
    """A server nothing has been sent to yet."""
    client = RawClient(args=["--log-file", str(log)])
    yield client
    client.close()


@pytest.fixture
def model_client(fresh: RawClient, cerebras: CerebrasTestServer) -> RawClient:
    """Initialized with the loopback model as its backend, which streams as long as a test
    wants (no cache, nothing ahead of time, no deadline a test could run into)."""
    fresh.initialize(cerebras_options(cerebras, cache=False, requestTimeoutMs=120_000))
    await_backend(fresh, "cerebras")
    return fresh


@pytest.mark.parametrize("kind", REQUESTS)
def test_requests_before_initialize_get_server_not_initialized(fresh: RawClient, kind: str) -> None:
    method, params = REQUESTS[kind]
    assert error_code(fresh.request(method, params)) == SERVER_NOT_INITIALIZED
    fresh.initialize(UNREACHABLE)
    assert "result" in fresh.request("lspSpark/stats"), "initialize still works afterwards"


def test_notifications_before_initialize_are_dropped(
    fresh: RawClient, cerebras: CerebrasTestServer
) -> None:
    """A document opened (and changed) before `initialize` is unknown afterwards: a
    completion there is empty and asks no model."""
    open_document(fresh, URI)
    x_in_signature = {"start": {"line": 0, "character": 6}, "end": {"line": 0, "character": 7}}
    change = {"range": x_in_signature, "text": "y"}
    fresh.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": URI, "version": 2}, "contentChanges": [change]},
    )
    fresh.initialize(cerebras_options(cerebras, cache=False))
    await_backend(fresh, "cerebras")
    answer = fresh.request("textDocument/inlineCompletion", inline_params(URI))
    assert answer.get("result") == {"items": []}, answer
    assert cerebras.completion_requests == []


def test_a_second_initialize_is_refused(fresh: RawClient) -> None:
    fresh.initialize(UNREACHABLE)
    await_backend(fresh, "openai")
    again = fresh.request("initialize", {"capabilities": {}, "initializationOptions": {}})
    assert error_code(again) == INVALID_REQUEST, again
    assert fresh.request("lspSpark/stats")["result"]["backend"] == "openai"


@pytest.mark.parametrize("wait_for_shutdown", [True, False], ids=["answered", "in-flight"])
def test_after_shutdown_every_request_is_refused_at_once(
    fresh: RawClient, log: Path, wait_for_shutdown: bool
) -> None:
    """From the moment `shutdown` arrives, even before it is answered: InvalidRequest for
    every request, whichever path would have served it; notifications are ignored, `exit`
    still exits."""
    fresh.initialize(UNREACHABLE)
    open_document(fresh, URI)
    send_request(fresh, "bye", "shutdown")
    if wait_for_shutdown:
        assert fresh.reply("bye").get("result") is None
    codes = {}
    for kind, (method, params) in {
        **REQUESTS,
        "initialize": ("initialize", {"capabilities": {}}),
    }.items():
        codes[kind] = error_code(fresh.request(method, params))
    assert codes == dict.fromkeys(codes, INVALID_REQUEST)
    fresh.notify("textDocument/didClose", {"textDocument": {"uri": URI}})
    fresh.notify("exit")
    assert fresh.process.wait(WAIT) == 0
    assert "ignored notification textDocument/didClose" in log.read_text()


def test_exit_before_initialize_exits_with_1(fresh: RawClient) -> None:
    fresh.notify("exit")
    assert fresh.process.wait(WAIT) == 1


def test_exit_without_shutdown_exits_with_1(fresh: RawClient) -> None:
    fresh.initialize(UNREACHABLE)
    assert "result" in fresh.request("lspSpark/stats")
    fresh.notify("exit")
    assert fresh.process.wait(WAIT) == 1


@pytest.mark.parametrize("wait_for_shutdown", [True, False], ids=["answered", "in-flight"])
def test_exit_after_shutdown_exits_with_0(
    fresh: RawClient, log: Path, wait_for_shutdown: bool
) -> None:
    """A client that sends `exit` right behind `shutdown` (not waiting for its answer, as
    it should) still has it counted, and the shutdown it cut short logs no error."""
    fresh.initialize(UNREACHABLE)
    send_request(fresh, "bye", "shutdown")
    if wait_for_shutdown:
        fresh.reply("bye")
    fresh.notify("exit")
    assert fresh.process.wait(WAIT) == 0
    assert log_problems(log) == []


def test_exit_while_a_completion_streams_ends_the_process_quietly(
    model_client: RawClient, cerebras: CerebrasTestServer, log: Path
) -> None:
    """The request still running is abandoned: no answer goes to the client that left, and
    nothing is logged as an error."""
    open_document(model_client, URI)
    cerebras.config.queue_faults(Fault.stall_after(0))
    send_request(model_client, "streaming", "textDocument/inlineCompletion", inline_params(URI))
    cerebras.wait_for(lambda: len(cerebras.completion_requests) == 1, WAIT)
    model_client.notify("exit")
    assert model_client.process.wait(WAIT) == 1
    assert [m for m in model_client.read_to_end() if m.get("id") == "streaming"] == []
    assert log_problems(log) == []


def test_a_reused_id_still_cancels_the_newest_keystroke_request(
    model_client: RawClient, cerebras: CerebrasTestServer
) -> None:
    """Two completions under one id, both streaming; the first ends (a newer request for
    its document supersedes it). `$/cancelRequest` for the id then cancels the second."""
    first, second = "file:///work/first.py", "file:///work/second.py"
    open_document(model_client, first)
    open_document(model_client, second)
    cerebras.config.queue_faults(Fault.stall_after(0), Fault.stall_after(0))
    send_request(model_client, "same", "textDocument/inlineCompletion", inline_params(first))
    cerebras.wait_for(lambda: len(cerebras.completion_requests) == 1, WAIT)
    send_request(model_client, "same", "textDocument/inlineCompletion", inline_params(second))
    cerebras.wait_for(lambda: len(cerebras.completion_requests) == 2, WAIT)
    send_request(model_client, "newer", "textDocument/inlineCompletion", inline_params(first, 5))
    model_client.read_until(is_answer_to("same"), "answer to the superseded request", WAIT)
    model_client.notify("$/cancelRequest", {"id": "same"})
    answer = model_client.read_until(is_answer_to("same"), "answer to the cancelled request")[-1]
    assert error_code(answer) == REQUEST_CANCELLED, answer
    assert cerebras.wait_for(lambda: cerebras.completion_requests[1].client_hung_up, WAIT)


def test_a_reused_id_still_cancels_the_newest_command(
    model_client: RawClient, cerebras: CerebrasTestServer
) -> None:
    """Two commands under one id (pygls' path): the first waits for the editor to apply its
    edit, the second for the model. Once the first is answered, `$/cancelRequest` for the id
    answers the second as cancelled and stops its work, closing its model stream."""
    first, second = "file:///work/first.py", "file:///work/second.py"
    text = "import os\n\n\nx = 1\n"
    open_document(model_client, first, text)
    open_document(model_client, second, text)
    cerebras.config.queue_replies("```python\ny = 2\n```")
    send_request(model_client, "same", "workspace/executeCommand", edit_command(first))
    apply = model_client.read_until(is_request("workspace/applyEdit"), "applyEdit", WAIT)[-1]
    cerebras.config.queue_faults(Fault.stall_after(0))
    send_request(model_client, "same", "workspace/executeCommand", edit_command(second))
    cerebras.wait_for(lambda: len(cerebras.completion_requests) == 2, WAIT)
    model_client.send({"jsonrpc": "2.0", "id": apply["id"], "result": {"applied": True}})
    done = model_client.read_until(is_answer_to("same"), "answer to the first command")[-1]
    assert done.get("result", {}).get("applied") is True, done
    model_client.notify("$/cancelRequest", {"id": "same"})
    answer = model_client.read_until(is_answer_to("same"), "answer to the cancelled command")[-1]
    assert error_code(answer) == REQUEST_CANCELLED, answer
    assert cerebras.wait_for(lambda: cerebras.completion_requests[1].client_hung_up, WAIT)


def test_a_request_cancelled_in_the_same_read_is_answered_once(model_client: RawClient) -> None:
    """The `$/cancelRequest` arrives with its request, before the request's task has taken a
    step: it is still answered (RequestCancelled), once, and nothing is left pending."""
    uri = "file:///work/cancelled_at_once.py"
    open_document(model_client, uri)
    request = {
        "jsonrpc": "2.0",
        "id": "at-once",
        "method": "textDocument/inlineCompletion",
        "params": inline_params(uri),
    }
    cancel = {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "at-once"}}
    framed = [json.dumps(message).encode() for message in (request, cancel)]
    model_client.write(b"".join(b"Content-Length: %d\r\n\r\n%s" % (len(b), b) for b in framed))
    answer = model_client.read_until(is_answer_to("at-once"), "answer to the cancelled request")
    assert error_code(answer[-1]) == REQUEST_CANCELLED, answer[-1]
    send_request(model_client, "stats", "lspSpark/stats")
    seen = model_client.messages_until("stats")
    assert not [message for message in seen if message.get("id") == "at-once"], "answered once"
    assert seen[-1]["result"]["pendingRequests"] == 0
