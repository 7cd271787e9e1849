"""The messages of every keystroke, taken straight from JSON to the pipeline and back.

pygls turns each message into typed objects (cattrs both ways), copies a context, and wraps
even a synchronous handler in a future: on the keystroke's path that costs more than
everything else the server does (`python benchmarks/replay.py` shows the server's overhead
per keystroke). Here `didChange`, `inlineCompletion`, `completion` and `$/cancelRequest` for
them are read as plain JSON, and answers are written as plain JSON. A message of any other
shape is left to pygls, which answers it as the spec says, so the two paths cannot disagree
on what is valid.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Coroutine
from functools import partial
from typing import Any, Protocol, TypeGuard

from lsprotocol import types
from pygls.exceptions import JsonRpcInternalError, JsonRpcRequestCancelled

from lsp_spark.documents import Change
from lsp_spark.scheduler import cancel_once

JsonAnswer = dict[str, Any] | Coroutine[Any, Any, dict[str, Any]]
"""A result ready to send, or one still to be awaited."""


class Wire(Protocol):
    """The JSON-RPC protocol the answers go out through."""

    running: bool
    """Between `initialize` and `shutdown`: outside that the lifecycle rules, not us."""
    writer: Any

    def _send_data(self, data: Any) -> None: ...


class Keystrokes(Protocol):
    """What the server does for each keystroke message, in plain values."""

    @property
    def protocol(self) -> Wire: ...

    def change_document(self, uri: str, version: int, changes: list[Change]) -> None: ...

    def ghost_text(
        self, uri: str, line: int, character: int, *, invoked: bool = False
    ) -> JsonAnswer: ...

    def completion_list(self, uri: str, line: int, character: int) -> JsonAnswer: ...


log = logging.getLogger(__name__)

INTEGER_MAX = UINTEGER_MAX = 2**31 - 1
INTEGER_MIN = -(2**31)


def _uinteger(value: Any) -> TypeGuard[int]:
    return type(value) is int and 0 <= value <= UINTEGER_MAX


def _integer(value: Any) -> TypeGuard[int]:
    return type(value) is int and INTEGER_MIN <= value <= INTEGER_MAX


def _position(value: Any) -> tuple[int, int] | None:
    if type(value) is not dict:
        return None
    line, character = value.get("line"), value.get("character")
    return (line, character) if _uinteger(line) and _uinteger(character) else None


def _document_position(params: Any) -> tuple[str, int, int] | None:
    """`TextDocumentPositionParams`: the URI and position, when both are well formed."""
    if type(params) is not dict:
        return None
    document, position = params.get("textDocument"), _position(params.get("position"))
    if type(document) is not dict or position is None:
        return None
    uri = document.get("uri")
    return (uri, *position) if type(uri) is str else None


def _change(value: Any) -> Change | None:
    if type(value) is not dict or type(text := value.get("text")) is not str:
        return None
    if "range" not in value:
        return None, None, text
    span = value["range"]
    if type(span) is not dict:
        return None
    start, end = _position(span.get("start")), _position(span.get("end"))
    if start is None or end is None:
        return None
    return start, end, text


def _document_changes(params: Any) -> tuple[str, int, list[Change]] | None:
    if type(params) is not dict:
        return None
    document, raw_changes = params.get("textDocument"), params.get("contentChanges")
    if type(document) is not dict or type(raw_changes) is not list:
        return None
    uri, version = document.get("uri"), document.get("version")
    if type(uri) is not str or not _integer(version):
        return None
    changes: list[Change] = []
    for raw in raw_changes:
        if (change := _change(raw)) is None:
            return None
        changes.append(change)
    return uri, version, changes


class HotPath:
    """Handles the per-keystroke messages it recognises; `take` says whether it did."""

    def __init__(self, server: Keystrokes) -> None:
        self._server = server
        self._running: dict[Any, asyncio.Task[None]] = {}
        self._requests: dict[str, Callable[[Any], JsonAnswer | None]] = {
            types.TEXT_DOCUMENT_INLINE_COMPLETION: self._ghost_text,
            types.TEXT_DOCUMENT_COMPLETION: self._completion,
        }

    @property
    def pending(self) -> int:
        return len(self._running)

    def cancel_all(self) -> None:
        """Stop every request in flight (their client has gone)."""
        for task in list(self._running.values()):
            cancel_once(task)

    def take(self, message: dict[str, Any]) -> bool:
        if not self._server.protocol.running:
            return False  # SparkProtocol applies the lifecycle to everything else
        method = message.get("method")
        params = message.get("params")
        if "id" not in message:
            if method == types.TEXT_DOCUMENT_DID_CHANGE:
                return self._did_change(params)
            if method == types.CANCEL_REQUEST:
                return self._cancel(params)
            return False
        handler = self._requests.get(method)  # type: ignore[arg-type]
        if handler is None:
            return False
        answer = handler(params)
        if answer is None:
            return False
        msg_id = message["id"]
        if isinstance(answer, dict):
            self._respond(msg_id, answer)
        else:
            self._start(msg_id, answer)
        return True

    def _did_change(self, params: Any) -> bool:
        parsed = _document_changes(params)
        if parsed is None:
            return False
        self._server.change_document(*parsed)
        return True

    def _ghost_text(self, params: Any) -> JsonAnswer | None:
        parsed = _document_position(params)
        if parsed is None or type(context := params.get("context")) is not dict:
            return None
        invoked = context.get("triggerKind") == types.InlineCompletionTriggerKind.Invoked
        return self._server.ghost_text(*parsed, invoked=invoked)

    def _completion(self, params: Any) -> JsonAnswer | None:
        parsed = _document_position(params)
        return None if parsed is None else self._server.completion_list(*parsed)

    def _start(self, msg_id: Any, answer: Coroutine[Any, Any, dict[str, Any]]) -> None:
        task = asyncio.get_running_loop().create_task(self._answer(msg_id, answer))
        task.add_done_callback(partial(self._never_ran, msg_id, answer))
        self._running[msg_id] = task

    def _never_ran(
        self, msg_id: Any, answer: Coroutine[Any, Any, dict[str, Any]], task: asyncio.Task[None]
    ) -> None:
        """A task cancelled before its first step (a `$/cancelRequest` in the same read as
        its request) never runs `_answer`, which answers and forgets every other one."""
        if self._running.get(msg_id) is task:
            del self._running[msg_id]
            answer.close()
            self._send_cancelled(msg_id)

    async def _answer(self, msg_id: Any, answer: Coroutine[Any, Any, dict[str, Any]]) -> None:
        """Await the answer and send it from this task, the moment it is ready."""
        try:
            result = await answer
        except asyncio.CancelledError:
            self._send_cancelled(msg_id)
            raise
        except Exception as failure:
            log.error("answering request %r failed", msg_id, exc_info=failure)
            message = f"{type(failure).__name__}: {failure}"
            self._send(msg_id, "error", {"code": JsonRpcInternalError.CODE, "message": message})
        else:
            self._send(msg_id, "result", result)
        finally:
            # A newer request under the same id (a client reusing ids) keeps its entry.
            if self._running.get(msg_id) is asyncio.current_task():
                del self._running[msg_id]

    def _send_cancelled(self, msg_id: Any) -> None:
        error = {
            "code": JsonRpcRequestCancelled.CODE,
            "message": f"Request {msg_id!r} was cancelled",
        }
        self._send(msg_id, "error", error)

    def _respond(self, msg_id: Any, result: dict[str, Any]) -> None:
        self._send(msg_id, "result", result)

    def _send(self, msg_id: Any, key: str, value: dict[str, Any]) -> None:
        """Framed and written here: pygls' sender also formats a log line and inspects the
        writer's result on every message. (ASCII JSON: its length in bytes is its length.)
        An answer JSON cannot carry goes to the protocol's sender, which answers the request
        with an InternalError instead."""
        protocol = self._server.protocol
        writer = protocol.writer
        if writer is None:
            return
        answer = {"jsonrpc": "2.0", "id": msg_id, key: value}
        try:
            body = json.dumps(answer, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError, RecursionError):
            protocol._send_data(answer)
            return
        writer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body.encode()))

    def _cancel(self, params: Any) -> bool:
        """`$/cancelRequest` for one of ours: cancelling the task closes its upstream stream."""
        msg_id = params.get("id") if type(params) is dict else None
        task = self._running.get(msg_id)
        if task is None:
            return False
        cancel_once(task)
        return True
