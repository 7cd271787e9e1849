"""The stdio transport: framing read on the event loop itself, and an answer for every
malformed message.

pygls reads stdin through a thread pool (three hand-offs between threads per message, each
a wake-up and a fight for the GIL on the keystroke's path) and trusts the framing: one
wrong Content-Length and no later message is ever understood; invalid JSON and malformed
envelopes go unanswered. Here a pipe, socket or terminal is watched by asyncio directly,
the reader resynchronises on the next `Content-Length` header, and the JSON-RPC errors
the spec asks for are sent.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import stat
import sys
import threading
from collections.abc import Callable
from typing import Any, BinaryIO

from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidRequest,
    JsonRpcParseError,
)
from pygls.io_ import StdinAsyncReader, StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCProtocol

log = logging.getLogger(__name__)

READ_LIMIT = 64 * 1024 * 1024
"""Longest line asyncio's reader accepts; bodies are read by length, not by line."""
MAX_BODY = 256 * 1024 * 1024
CONTENT_LENGTH = re.compile(rb"Content-Length:[ \t]*(\d+)", re.IGNORECASE)
CANCEL_REQUEST = "$/cancelRequest"

Shortcut = Callable[[dict[str, Any]], bool]
"""Handles a well-formed message itself, or says it did not (the hot path)."""


def serve_stdio(server: LanguageServer, shortcut: Shortcut | None = None) -> None:
    """Run `server` over this process's stdin and stdout until the client exits; messages
    `shortcut` takes never reach pygls."""
    server._stop_event = threading.Event()
    server.protocol.set_writer(StdoutWriter(sys.stdout.buffer))
    try:
        asyncio.run(_serve(server, sys.stdin.buffer, shortcut))
    except BrokenPipeError:
        log.error("the client closed the connection")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()


async def _serve(server: LanguageServer, stdin: BinaryIO, shortcut: Shortcut | None) -> None:
    reader: asyncio.StreamReader | StdinAsyncReader
    if _watchable(stdin):
        pipe = reader = asyncio.StreamReader(limit=READ_LIMIT)
        loop = asyncio.get_running_loop()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(pipe), stdin)
    else:
        reader = StdinAsyncReader(stdin, server.thread_pool)
    stop = server._stop_event
    assert stop is not None
    try:
        await read_messages(reader, server.protocol, stop, shortcut)
    except asyncio.IncompleteReadError:
        log.error("the client closed the connection in the middle of a message")


async def read_messages(
    reader: asyncio.StreamReader | StdinAsyncReader,
    protocol: JsonRPCProtocol,
    stop: threading.Event,
    shortcut: Shortcut | None = None,
) -> None:
    """Frame messages by their Content-Length header; a line that is not a header (the
    tail of a body whose length was wrong, junk) is skipped until the next header."""
    length: int | None = None
    while not stop.is_set():
        line = await reader.readline()
        if not line:
            return
        if length is None:
            found = CONTENT_LENGTH.search(line)
            if found is not None and int(found.group(1)) <= MAX_BODY:
                length = int(found.group(1))
            elif line.strip():
                log.warning("skipping %d bytes that are not a message header", len(line))
            continue
        if line.strip():
            continue
        body = await reader.readexactly(length)
        length = None
        dispatch(protocol, body, shortcut)
        # Let the handler it started run up to its first wait before the next message is
        # read: a settings change must take effect before the request behind it.
        await asyncio.sleep(0)


def dispatch(protocol: JsonRPCProtocol, body: bytes, shortcut: Shortcut | None = None) -> None:
    """Hand one message to `shortcut` or else pygls, or answer it with the JSON-RPC error it
    deserves."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        _answer_error(protocol, None, JsonRpcParseError())
        return
    problem, message_id = _envelope_problem(data)
    if problem is not None:
        log.warning("invalid JSON-RPC message: %s", problem)
        _answer_error(protocol, message_id, JsonRpcInvalidRequest(problem))
        return
    is_request = "id" in data and isinstance(data.get("method"), str)
    try:
        if shortcut is not None and shortcut(data):
            return
        try:
            message = protocol.structure_message(data)
        except JsonRpcException as error:
            if is_request:
                _answer_error(protocol, data["id"], error)
            return
        protocol.handle_message(message)
    except Exception:
        log.exception("handling %s failed", data.get("method", "a response"))
        if is_request:
            _answer_error(protocol, data["id"], JsonRpcInternalError())


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
