"""The transport, stdio or TCP: framing read on the event loop itself, and an answer for
every malformed message.

pygls reads stdin through a thread pool (three hand-offs between threads per message, each
a wake-up and a fight for the GIL on the keystroke's path) and trusts the framing: one
wrong Content-Length and no later message is ever understood; invalid JSON and malformed
envelopes go unanswered. Here a pipe, socket or terminal is watched by asyncio directly,
the reader resynchronises on the next `Content-Length` header, and the JSON-RPC errors
the spec asks for are sent.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import os
import re
import stat
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO, cast

from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidRequest,
    JsonRpcParseError,
)
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCProtocol

from lsp_spark import tcp_token
from lsp_spark.settings import SETTINGS_SECTION

log = logging.getLogger(__name__)

READ_LIMIT = 64 * 1024 * 1024
"""Longest header line kept while waiting for its end; bodies are read by length."""
MAX_BODY = 256 * 1024 * 1024
CHUNK = 64 * 1024
"""Bytes read at a time from a stdin the event loop cannot watch (a regular file)."""
CONTENT_LENGTH = re.compile(rb"Content-Length:[ \t]*(\d+)", re.IGNORECASE)
CANCEL_REQUEST = "$/cancelRequest"
JSON_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*(?:"|\\?\Z)|[\[\]{}]', re.DOTALL)
"""A JSON string (one left open runs to the end: no scan starts over inside it), or a
bracket outside strings."""
MEMBER_VALUE = re.compile(rb"\s*:")
"""What follows a string that names a member rather than being a value."""
ID_VALUE = re.compile(rb'\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)')
"""After a member's name: its value, when that is a string or a number."""
OPENING, CLOSING = (b"{", b"["), (b"}", b"]")
NO_ID = object()
MAX_WAITING = 8
"""TCP connections kept open before they send `initialize`; a ninth closes the oldest."""
UNADMITTED_BYTES = 1024 * 1024
"""What a TCP connection may send before it is admitted: an `initialize` is far smaller."""
UNADMITTED = (
    "lsp-spark over TCP serves the client whose initialize carries its token in "
    "initializationOptions.tcpToken"
)
INITIALIZE = "initialize"

Shortcut = Callable[[dict[str, Any]], bool]
"""Handles a well-formed message itself, or says it did not (the hot path)."""


@dataclass(frozen=True)
class Tcp:
    """Where to listen, the token a client presents, and whom to tell as things happen."""

    host: str
    port: int
    token: str
    listening: Callable[[int], None]
    """Told the port once it accepts connections (the one chosen for port 0)."""
    client_left: Callable[[], None]
    """Told when the admitted client's connection ends."""


def serve(server: LanguageServer, shortcut: Shortcut | None = None, tcp: Tcp | None = None) -> None:
    """Run `server` over this process's stdin and stdout until the client closes stdin, or
    on TCP, until a client sends `exit`; messages `shortcut` takes never reach pygls. The
    SystemExit that `exit` raises carries on, so the process exits with the code the LSP
    spec asks for."""
    server._stop_event = threading.Event()
    if tcp is None:
        server.protocol.set_writer(StdoutWriter(sys.stdout.buffer))
        serving = _serve(server, sys.stdin.buffer, shortcut)
    else:
        serving = _serve_tcp(server, tcp, shortcut)
    try:
        asyncio.run(serving)
    except BrokenPipeError:
        log.error("the client closed the connection")
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()


async def _serve(server: LanguageServer, stdin: BinaryIO, shortcut: Shortcut | None) -> None:
    stop = server._stop_event
    assert stop is not None
    loop = asyncio.get_running_loop()
    framer = Framer(server.protocol, stop, shortcut)
    if _watchable(stdin):
        transport, _ = await loop.connect_read_pipe(lambda: framer, stdin)
        try:
            await framer.finished
        finally:
            transport.close()
        return
    # A regular file cannot be watched by the event loop: read it on a thread instead.
    while not framer.finished.done():
        data = await loop.run_in_executor(server.thread_pool, os.read, stdin.fileno(), CHUNK)
        if not data:
            framer.eof_received()
            break
        framer.data_received(data)
    await framer.finished


async def _serve_tcp(server: LanguageServer, tcp: Tcp, shortcut: Shortcut | None) -> None:
    """Clients connect one after another (an editor that restarts connects again); the
    admitted one is read exactly as stdin is: the same framing, the same shortcut."""
    stop = server._stop_event
    assert stop is not None
    gate = Gate(server.protocol, stop, shortcut, tcp)
    loop = asyncio.get_running_loop()
    listener = await loop.create_server(lambda: Connection(gate), tcp.host, tcp.port)
    tcp.listening(listener.sockets[0].getsockname()[1])
    async with listener:
        await listener.serve_forever()


class Framer(asyncio.Protocol):
    """Frames messages by their Content-Length header as bytes arrive, and dispatches each
    in the same callback: no reader task to wake, no line-by-line coroutine.

    A line that is not a header (the tail of a body whose length was wrong, junk) is
    skipped until the next header. After a message the shortcut did not finish on the
    spot, the rest waits for the loop's next turn, so a handler it started runs up to its
    first wait first: a settings change takes effect before the request behind it.
    """

    def __init__(
        self, protocol: JsonRPCProtocol, stop: threading.Event, shortcut: Shortcut | None
    ) -> None:
        self._protocol = protocol
        self._stop = stop
        self._shortcut = shortcut
        self._buffer = bytearray()
        self._length: int | None = None
        self._in_body = False
        self._resume: asyncio.Handle | None = None
        self.finished: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if self._resume is None:
            self._drain()

    def eof_received(self) -> bool:
        if self._length is not None and self._in_body:
            log.error("the client closed the connection in the middle of a message")
        self._finish()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._finish()

    def _finish(self) -> None:
        if self._resume is not None:
            self._resume.cancel()
            self._resume = None
        if not self.finished.done():
            self.finished.set_result(None)

    def _drain(self) -> None:
        self._resume = None
        buffer = self._buffer
        while not self.finished.done():
            if self._stop.is_set():
                self._finish()
                return
            if not self._in_body:
                end = buffer.find(b"\n")
                if end < 0:
                    if len(buffer) > READ_LIMIT:
                        log.warning("skipping %d bytes that are not a message header", len(buffer))
                        buffer.clear()
                    return
                line = bytes(buffer[: end + 1])
                del buffer[: end + 1]
                self._header(line)
                continue
            length = self._length
            assert length is not None
            if len(buffer) < length:
                return
            body = bytes(buffer[:length])
            del buffer[:length]
            self._length, self._in_body = None, False
            if not self._message(body) and buffer:
                self._resume = asyncio.get_running_loop().call_soon(self._drain)
                return

    def _message(self, body: bytes) -> bool:
        """Handle one message; True when nothing of it is left to run on the loop."""
        return dispatch(self._protocol, body, self._shortcut)

    def _header(self, line: bytes) -> None:
        if self._length is None:
            found = CONTENT_LENGTH.search(line)
            if found is not None and int(found.group(1)) <= MAX_BODY:
                self._length = int(found.group(1))
            elif line.strip():
                log.warning("skipping %d bytes that are not a message header", len(line))
        elif not line.strip():
            self._in_body = True


class Gate:
    """Admits one TCP client at a time: the first whose `initialize` carries the token.

    Until then a connection has no writer of the session's and reaches nothing: its first
    message must be that `initialize`, and anything else (another message first, no token
    or a wrong one, more than UNADMITTED_BYTES) gets one error answer, for a request, and
    the connection closed. While a client is admitted every other connection is closed as
    it arrives, unread. When the admitted client leaves, the next may be admitted.
    """

    def __init__(
        self,
        protocol: JsonRPCProtocol,
        stop: threading.Event,
        shortcut: Shortcut | None,
        tcp: Tcp,
    ) -> None:
        self.protocol, self.stop, self.shortcut = protocol, stop, shortcut
        self._token = tcp.token.encode()
        self._client_left = tcp.client_left
        self._client: Connection | None = None
        self._waiting: dict[Connection, None] = {}
        """Connections not admitted yet, oldest first."""

    def arrived(self, connection: Connection) -> None:
        if self._client is not None:
            log.warning("refused a TCP connection: another client is connected")
            connection.refuse()
            return
        self._waiting[connection] = None
        if len(self._waiting) > MAX_WAITING:
            oldest = next(iter(self._waiting))
            log.warning("closed a TCP connection that had not sent initialize")
            oldest.refuse()

    def admit(self, connection: Connection, body: bytes) -> bool:
        """Admit `connection` if `body` is an `initialize` with the token, and hand that on
        without the token; refuse it otherwise. True when nothing is left to run."""
        try:
            data = json.loads(body)
        except (ValueError, RecursionError):
            data = None
        problem, message_id = _envelope_problem(data)
        is_request = isinstance(data, dict) and "id" in data
        if problem is not None or not is_request or data.get("method") != INITIALIZE:
            log.warning("refused a TCP client: its first message is not initialize")
            answer_to = message_id if is_request else NO_ID
            connection.refuse(answer_to, f"{UNADMITTED}: the first message must be initialize")
            return True
        presented = _take_token(data)
        if presented is None or not hmac.compare_digest(presented.encode(), self._token):
            why = "without the token" if presented is None else "with a wrong token"
            log.warning("refused a TCP client: initialize came %s", why)
            connection.refuse(message_id, f"{UNADMITTED}: initialize came {why}")
            return True
        self.forget(connection)
        for other in list(self._waiting):
            other.refuse()
        self._client = connection
        connection.admitted = True
        self.protocol.set_writer(connection.transport)
        return dispatch(self.protocol, json.dumps(data).encode(), self.shortcut)

    def forget(self, connection: Connection) -> None:
        self._waiting.pop(connection, None)

    def left(self, connection: Connection) -> None:
        self.forget(connection)
        if self._client is connection:
            self._client = None
            self.protocol.writer = None
            self._client_left()


class Connection(Framer):
    """One TCP connection: framed as stdin is, through the gate until it is admitted."""

    def __init__(self, gate: Gate) -> None:
        super().__init__(gate.protocol, gate.stop, gate.shortcut)
        self._gate = gate
        self.transport: asyncio.Transport
        self.admitted = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self._gate.arrived(self)

    def data_received(self, data: bytes) -> None:
        if not self.admitted and len(self._buffer) + len(data) > UNADMITTED_BYTES:
            log.warning("refused a TCP client: over %d bytes before initialize", UNADMITTED_BYTES)
            self.refuse()
            return
        super().data_received(data)

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._gate.left(self)

    def _message(self, body: bytes) -> bool:
        if self.admitted:
            return super()._message(body)
        return self._gate.admit(self, body)

    def refuse(self, message_id: Any = NO_ID, problem: str = "") -> None:
        """Close the connection, after an error answer to the request `message_id`."""
        self._gate.forget(self)
        self._finish()
        if message_id is not NO_ID:
            error = {"code": JsonRpcInvalidRequest.CODE, "message": problem}
            body = json.dumps({"jsonrpc": "2.0", "id": message_id, "error": error})
            self.transport.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body.encode()))
        self.transport.close()


def _take_token(request: dict[str, Any]) -> str | None:
    """Remove the token from an `initialize` request's options (at the top or in our
    section), so that it never reaches the settings or a log; the token, if a string."""
    params = request.get("params")
    options = params.get("initializationOptions") if isinstance(params, dict) else None
    if not isinstance(options, dict):
        return None
    presented = options.pop(tcp_token.OPTION, None)
    section = options.get(SETTINGS_SECTION)
    if isinstance(section, dict) and tcp_token.OPTION in section:
        presented = section.pop(tcp_token.OPTION)
    return presented if isinstance(presented, str) else None


def dispatch(protocol: JsonRPCProtocol, body: bytes, shortcut: Shortcut | None = None) -> bool:
    """Hand one message to `shortcut` or else pygls, or answer it with the JSON-RPC error it
    deserves. True when it is settled already: nothing was left to run on the loop."""
    try:
        data = json.loads(body)
    except ValueError:
        _answer_error(protocol, None, JsonRpcParseError())
        return True
    except RecursionError:
        _answer_too_deep(protocol, body)
        return True
    problem, message_id = _envelope_problem(data)
    if problem is not None:
        log.warning("invalid JSON-RPC message: %s", problem)
        _answer_error(protocol, message_id, JsonRpcInvalidRequest(problem))
        return True
    is_request = "id" in data and isinstance(data.get("method"), str)
    try:
        if shortcut is not None and shortcut(data):
            return not is_request
        try:
            message = protocol.structure_message(data)
        except JsonRpcException as error:
            if is_request:
                _answer_error(protocol, data["id"], error)
            return True
        protocol.handle_message(message)
    except Exception:
        log.exception("handling %s failed", data.get("method", "a response"))
        if is_request:
            _answer_error(protocol, data["id"], JsonRpcInternalError())
    return False


def _envelope_problem(data: Any) -> tuple[str | None, Any]:
    """Why `data` is not a JSON-RPC 2.0 message, and the id to answer with."""
    if not isinstance(data, dict):
        return "not an object (batches are not used by LSP)", None
    message_id = data.get("id")
    valid_id = message_id is None or (
        isinstance(message_id, str | int) and not isinstance(message_id, bool)
    )
    if not valid_id:
        return "the id must be a string, a number or null", None
    if data.get("jsonrpc") != "2.0":
        return 'missing "jsonrpc": "2.0"', message_id
    method = data.get("method")
    if "method" in data and not isinstance(method, str):
        return "the method must be a string", message_id
    if "id" in data and method == CANCEL_REQUEST:
        return f"{CANCEL_REQUEST} is a notification, not a request", message_id
    if "method" not in data and "id" not in data:
        return "neither a request, a notification nor a response", None
    return None, message_id


def _answer_too_deep(protocol: JsonRPCProtocol, body: bytes) -> None:
    """JSON nested too deeply for the parser is still JSON, and a request in it still waits
    for an answer: its id is looked for at the top level, and a message without one is a
    notification, dropped."""
    message_id = _top_level_id(body)
    if message_id is NO_ID:
        log.warning("ignoring a message nested too deeply to read")
        return
    log.warning("refusing request %r: nested too deeply to read", message_id)
    _answer_error(protocol, message_id, JsonRpcInvalidRequest("nested too deeply to read"))


def _top_level_id(body: bytes) -> Any:
    """The `id` member of a JSON object, found by a scan for strings and brackets that
    keeps only a count of the open ones; NO_ID when the object has none, None when its value
    is not a valid id (JSON-RPC answers an id it cannot read with null)."""
    depth = 0
    for token in JSON_TOKEN.finditer(body):
        text = token.group()
        if text in OPENING:
            depth += 1
        elif text in CLOSING:
            depth -= 1
        elif depth == 1 and text == b'"id"' and MEMBER_VALUE.match(body, token.end()):
            value = ID_VALUE.match(body, token.end())
            try:
                message_id = json.loads(value.group(1)) if value is not None else None
            except ValueError:
                return None
            valid = isinstance(message_id, str | int) and not isinstance(message_id, bool)
            return message_id if valid else None
    return NO_ID


def _answer_error(protocol: JsonRPCProtocol, message_id: Any, error: JsonRpcException) -> None:
    answer = {"code": error.code, "message": error.message}
    protocol._send_data({"jsonrpc": "2.0", "id": message_id, "error": answer})


def _watchable(stream: BinaryIO) -> bool:
    """Pipes, sockets and terminals can be watched by the event loop; regular files cannot."""
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)
