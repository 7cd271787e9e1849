"""A real loopback HTTP/1.1 server speaking Cerebras' inference wire format.

Tests, benchmarks and the demo point the real SDK (or raw httpx) at it, so the
client code under test exercises true sockets, keep-alive, SSE framing, timing
and network faults instead of a mocked call::

    with CerebrasTestServer(ttft=0.05, tokens_per_second=500) as server:
        server.config.queue_replies("return a + b")
        server.config.queue_faults(Fault.rate_limit(retry_after=1))
        client = AsyncCerebras(api_key="k", base_url=server.base_url)
        ...
        server.wait_for(lambda: server.completion_requests[-1].finished)

It runs its asyncio loop on its own thread so synchronous tests and separate
processes (a spawned language server) can use it alike. Standard library only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import difflib
import enum
import itertools
import json
import logging
import re
import secrets
import signal
import socket
import struct
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from http import HTTPStatus
from typing import Any, TypeVar

__all__ = [
    "DEFAULT_MODELS",
    "DEFAULT_REPLY",
    "THREAD_NAME",
    "CerebrasTestServer",
    "Fault",
    "FaultKind",
    "RecordedRequest",
    "Route",
    "ServerConfig",
    "main",
    "tokenize",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
DEFAULT_MODELS = ("llama3.1-8b", "llama-3.3-70b", "qwen-3-32b", "qwen-3-coder-480b", "gpt-oss-120b")
DEFAULT_REPLY = "def add(a, b):\n    return a + b\n"
THREAD_NAME = "cerebras-test-server"
MODEL_CREATED = 1_721_001_600

_CHAT_PATH = "/v1/chat/completions"
_TEXT_PATH = "/v1/completions"
_WARMING_PATHS = frozenset({"/v1/tcp_warming", "/tcp_warming"})
_MAX_HEAD = 64 * 1024
_MAX_BODY = 16 * 1024 * 1024
_READ_SIZE = 64 * 1024
_STOP_TIMEOUT = 5.0

# Words (split after 6 letters), short digit runs, punctuation runs, each with at most one
# leading blank; every character matches some branch, so the pieces join back to the text.
_TOKEN_RE = re.compile(r"[ \t]?[^\W\d]{1,6}|[ \t]?\d{1,3}|[ \t]?[^\w\s]{1,3}|\r?\n|[ \t]+|\s")


def tokenize(text: str) -> list[str]:
    """Split text into BPE-sized pieces (~3-4 chars) so streams have realistic chunk counts."""
    return _TOKEN_RE.findall(text)


class FaultKind(enum.Enum):
    RATE_LIMIT = "rate_limit"
    SERVER_ERROR = "server_error"
    UNAUTHORIZED = "unauthorized"
    RESET_AFTER = "reset_after"
    STALL_AFTER = "stall_after"
    MALFORMED_AFTER = "malformed_after"
    NO_FINGERPRINT = "no_fingerprint"
    TRICKLE = "trickle"
    ENDLESS_EVENT = "endless_event"
    HUGE_BODY = "huge_body"
    WEB_PAGE = "web_page"
    SLOW_HEAD = "slow_head"


_ERROR_FAULTS = frozenset({FaultKind.RATE_LIMIT, FaultKind.SERVER_ERROR, FaultKind.UNAUTHORIZED})
_MID_STREAM_FAULTS = frozenset(
    {FaultKind.RESET_AFTER, FaultKind.STALL_AFTER, FaultKind.MALFORMED_AFTER}
)
_HOSTILE_FAULTS = frozenset(
    {
        FaultKind.TRICKLE,
        FaultKind.ENDLESS_EVENT,
        FaultKind.HUGE_BODY,
        FaultKind.WEB_PAGE,
        FaultKind.SLOW_HEAD,
    }
)
_HOSTILE_SECONDS = 60.0
"""How long a hostile answer goes on at most when the client never hangs up."""
_HOSTILE_PIECE = 64 * 1024
_TRICKLE_ITEMS = (
    b": keep-alive\n\n",
    b'data: {"choices":[{"index":0,"delta":{"reasoning":"."}}]}\n\n',
    b'data: {"choices":[{"index":0,"delta":{"content":""}}]}\n\n',
)
_WEB_PAGE = b"<!doctype html><html><head><title>Welcome</title></head><body>It works!</body></html>"


@dataclass(frozen=True, slots=True)
class Fault:
    """One misbehaviour applied to one completion request (or every one, when sticky)."""

    kind: FaultKind
    n_tokens: int = 0
    retry_after: float = 1.0
    interval: float = 0.0

    @classmethod
    def rate_limit(cls, retry_after: float = 1.0) -> Fault:
        """429 with a ``retry-after`` header, as Cerebras sends when a quota is exhausted."""
        return cls(FaultKind.RATE_LIMIT, retry_after=retry_after)

    @classmethod
    def server_error(cls) -> Fault:
        """500 with an error body."""
        return cls(FaultKind.SERVER_ERROR)

    @classmethod
    def unauthorized(cls) -> Fault:
        """401, as for a revoked key, whatever ``api_key`` is configured."""
        return cls(FaultKind.UNAUTHORIZED)

    @classmethod
    def reset_after(cls, n_tokens: int) -> Fault:
        """Stream n tokens, then RST the TCP connection."""
        return cls(FaultKind.RESET_AFTER, n_tokens=n_tokens)

    @classmethod
    def stall_after(cls, n_tokens: int) -> Fault:
        """Stream n tokens, then go silent with the socket open until the client leaves."""
        return cls(FaultKind.STALL_AFTER, n_tokens=n_tokens)

    @classmethod
    def malformed_after(cls, n_tokens: int) -> Fault:
        """Stream n tokens, one event that is not JSON, then carry on normally."""
        return cls(FaultKind.MALFORMED_AFTER, n_tokens=n_tokens)

    @classmethod
    def trickle(cls, interval: float = 0.5) -> Fault:
        """200 with an event stream that never ends: every `interval` seconds an SSE comment,
        a reasoning delta or an empty content delta, so the stream is never silent."""
        return cls(FaultKind.TRICKLE, interval=interval)

    @classmethod
    def endless_event(cls) -> Fault:
        """200 with an event stream whose first `data:` line never ends, at full speed."""
        return cls(FaultKind.ENDLESS_EVENT)

    @classmethod
    def huge_body(cls) -> Fault:
        """200 with a JSON body announced as 1 GiB, sent at full speed."""
        return cls(FaultKind.HUGE_BODY)

    @classmethod
    def web_page(cls) -> Fault:
        """200 with an HTML page, as a base URL that is a website (or a captive portal) does."""
        return cls(FaultKind.WEB_PAGE)

    @classmethod
    def slow_head(cls, interval: float = 0.5) -> Fault:
        """A response head that never ends: one more header byte every `interval` seconds."""
        return cls(FaultKind.SLOW_HEAD, interval=interval)

    @classmethod
    def no_fingerprint(cls) -> Fault:
        """Omit ``system_fingerprint``: the SDK then mis-parses chunks and ``delta`` is a dict."""
        return cls(FaultKind.NO_FINGERPRINT)


@dataclass
class ServerConfig:
    """Knobs the test thread may change between requests.

    The server reads each knob once per request; plain attribute assignment and
    deque append/popleft are atomic under the GIL, which is all the locking needed.
    """

    ttft: float = 0.0
    tokens_per_second: float | None = None
    default_reply: str = DEFAULT_REPLY
    reply_fn: Callable[[dict[str, Any]], str] | None = None
    models: list[str] = field(default_factory=lambda: list(DEFAULT_MODELS))
    api_key: str | None = None
    sticky_fault: Fault | None = None
    prediction_models: list[str] | None = None
    """Models that take a ``prediction`` (Predicted Outputs); None: every model. Others
    answer 400, as Cerebras does for a model without the feature."""
    replies: deque[str] = field(default_factory=deque)
    faults: deque[Fault] = field(default_factory=deque)

    def queue_replies(self, *replies: str) -> None:
        """Script the next completions, one reply consumed per completion request."""
        self.replies.extend(replies)

    def queue_faults(self, *faults: Fault) -> None:
        """Script faults for the next completion requests, one consumed per request."""
        self.faults.extend(faults)

    def next_fault(self) -> Fault | None:
        try:
            return self.faults.popleft()
        except IndexError:
            return self.sticky_fault

    def next_reply(self, body: dict[str, Any]) -> str:
        try:
            return self.replies.popleft()
        except IndexError:
            pass
        if self.reply_fn is not None:
            return self.reply_fn(body)
        return self.default_reply


@dataclass
class RecordedRequest:
    """What the server saw of one request and, for completions, how far it got answering."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw_body: bytes
    received_at: float
    connection_id: int
    status: int | None = None
    fault: Fault | None = None
    reply: str | None = None
    tokens_sent: int = 0
    """Content chunks written (for a non-streamed reply: tokens in the body once sent)."""
    finished: bool = False
    """``[DONE]`` written (for a non-streamed reply: the body written)."""
    client_hung_up: bool = False
    hung_up_at: float | None = None
    completed_at: float | None = None
    """Monotonic time the answer ended for any reason: written in full, client gone, or fault."""

    @property
    def suffix(self) -> str | None:
        """FIM suffix a client sent; recorded only, since real Cerebras ignores it."""
        return self.body.get("suffix") if isinstance(self.body, dict) else None


Route = Callable[[RecordedRequest], Any]
"""Answers one request of an extra endpoint with a JSON-able object; it may note its reply
and tokens on the record."""


class _HttpError(Exception):
    """A request the server answers with an error status instead of a completion."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type_: str = "invalid_request_error",
        code: str = "bad_request",
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = _error_body(message, type_=type_, code=code, param=param)


def _error_body(message: str, *, type_: str, code: str, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


_UNAUTHORIZED = _error_body(
    "Wrong API Key", type_="invalid_request_error", code="wrong_api_key", param="api_key"
)


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def _head(status: int, headers: dict[str, str], *, keep_alive: bool) -> bytes:
    lines = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}", "server: cerebras-test-server"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    lines.append(f"connection: {'keep-alive' if keep_alive else 'close'}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


@dataclass(slots=True)
class _Request:
    method: str
    path: str
    version: str
    headers: dict[str, str]
    body: bytes
    arrived_at: float
    """When its head arrived: the service's time starts there, not after it parsed the body."""

    @property
    def keep_alive(self) -> bool:
        tokens = {t.strip().lower() for t in self.headers.get("connection", "").split(",")}
        if self.version == "HTTP/1.0":
            return "keep-alive" in tokens
        return "close" not in tokens


class _Connection:
    """One accepted socket.

    A pump task reads everything the client sends into our own buffer, so EOF or
    a reset is noticed at once even while a handler sleeps between tokens or stalls,
    without losing bytes of a following request.
    """

    def __init__(
        self,
        conn_id: int,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        headers: dict[str, str],
    ):
        self.id = conn_id
        self.headers = headers
        """Sent with every response on this connection."""
        self.reader = reader
        self.writer = writer
        self.buffer = bytearray()
        self.closed = asyncio.Event()
        self.closed_at: float | None = None
        self._data = asyncio.Event()
        self.pump = asyncio.create_task(self._pump())

    async def _pump(self) -> None:
        try:
            while chunk := await self.reader.read(_READ_SIZE):
                self.buffer += chunk
                self._data.set()
        except OSError:
            pass
        finally:
            self._hang_up()

    def _hang_up(self) -> None:
        if not self.closed.is_set():
            self.closed_at = time.monotonic()
            self.closed.set()
            self._data.set()

    async def _more(self) -> bool:
        if self.closed.is_set():
            return False
        self._data.clear()
        await self._data.wait()
        return True

    async def _read_until(self, sep: bytes, limit: int) -> bytes | None:
        while (end := self.buffer.find(sep)) < 0:
            if len(self.buffer) > limit:
                raise _HttpError(431, "request header fields too large")
            if not await self._more():
                return None
        end += len(sep)
        out = bytes(self.buffer[:end])
        del self.buffer[:end]
        return out

    async def _read_exactly(self, n: int) -> bytes | None:
        while len(self.buffer) < n:
            if not await self._more():
                return None
        out = bytes(self.buffer[:n])
        del self.buffer[:n]
        return out

    async def read_request(self) -> _Request | None:
        """The next request, or None when the client closed between or inside requests."""
        head = await self._read_until(b"\r\n\r\n", _MAX_HEAD)
        if head is None:
            return None
        arrived_at = time.monotonic()
        request_line, *header_lines = head[:-4].decode("latin-1").split("\r\n")
        parts = request_line.split(" ")
        if len(parts) != 3 or parts[2] not in ("HTTP/1.1", "HTTP/1.0"):
            raise _HttpError(400, f"malformed request line: {request_line[:100]!r}")
        method, target, version = parts
        headers: dict[str, str] = {}
        for line in header_lines:
            name, sep, value = line.partition(":")
            if not sep or not name or name != name.strip():
                raise _HttpError(400, f"malformed header line: {line[:100]!r}")
            key, value = name.lower(), value.strip()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        if "transfer-encoding" in headers:
            raise _HttpError(411, "request bodies must carry content-length")
        length_text = headers.get("content-length", "0")
        if not length_text.isdigit():
            raise _HttpError(400, "invalid content-length")
        if int(length_text) > _MAX_BODY:
            raise _HttpError(413, "request body too large")
        body = await self._read_exactly(int(length_text))
        if body is None:
            return None
        return _Request(method, target.partition("?")[0], version, headers, body, arrived_at)

    async def write(self, data: bytes) -> bool:
        """Write and drain at once so every chunk leaves promptly; False if the client left."""
        if self.closed.is_set():
            return False
        try:
            self.writer.write(data)
            await self.writer.drain()
        except OSError:
            self._hang_up()
            return False
        return True

    async def send_head(self, status: int, headers: dict[str, str], *, keep_alive: bool) -> bool:
        return await self.write(_head(status, self.headers | headers, keep_alive=keep_alive))

    async def send_json(
        self,
        status: int,
        obj: Any,
        *,
        keep_alive: bool,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
    ) -> bool:
        body = _dumps(obj) if raw is None else raw
        all_headers = {"content-type": "application/json", "content-length": str(len(body))}
        all_headers.update(self.headers)
        all_headers.update(headers or {})
        return await self.write(_head(status, all_headers, keep_alive=keep_alive) + body)

    async def closed_before(self, deadline: float) -> bool:
        """Sleep until the monotonic deadline; True (early) if the client goes away first."""
        delay = deadline - time.monotonic()
        if self.closed.is_set() or delay <= 0:
            return self.closed.is_set()
        try:
            await asyncio.wait_for(self.closed.wait(), delay)
        except TimeoutError:
            return False
        return True

    def reset(self) -> None:
        """Abort with an RST (zero linger) rather than a FIN, like a dropped upstream."""
        sock = self.writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.writer.transport.abort()

    async def close(self) -> None:
        self.pump.cancel()
        await asyncio.wait([self.pump])
        if self.writer.transport.get_write_buffer_size():
            self.writer.transport.abort()
        else:
            self.writer.close()
        with contextlib.suppress(OSError):
            await self.writer.wait_closed()


@dataclass(slots=True)
class _Spec:
    model: str
    stream: bool
    max_tokens: int | None
    stops: tuple[str, ...]
    prompt_tokens: int
    prediction: str | None = None


def _parse_spec(body: Any, *, chat: bool, engine: str | None = None) -> _Spec:
    """Validate the fields a completion needs, rejecting what the real API rejects. An
    engine route names the model in its path instead of the body."""
    if not isinstance(body, dict):
        raise _HttpError(400, "request body must be a JSON object")
    model = body.get("model", engine)
    if not isinstance(model, str) or not model:
        raise _HttpError(400, "'model' is required", param="model")
    if chat:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise _HttpError(400, "'messages' must be a non-empty list", param="messages")
        prompt_tokens = sum(
            len(tokenize(m["content"]))
            for m in messages
            if isinstance(m, dict) and isinstance(m.get("content"), str)
        )
    else:
        prompt = body.get("prompt")
        if isinstance(prompt, str):
            prompt_tokens = len(tokenize(prompt))
        elif isinstance(prompt, list) and prompt:
            prompt_tokens = len(prompt)
        else:
            raise _HttpError(400, "'prompt' must be a string or a non-empty list", param="prompt")
    limit = body.get("max_completion_tokens", body.get("max_tokens"))
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise _HttpError(400, "max tokens must be a non-negative integer", param="max_tokens")
    stop = body.get("stop")
    if stop is None:
        stops: tuple[str, ...] = ()
    elif isinstance(stop, str):
        stops = (stop,)
    elif isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        stops = tuple(stop)
    else:
        raise _HttpError(400, "'stop' must be a string or a list of strings", param="stop")
    return _Spec(model, bool(body.get("stream")), limit, stops, prompt_tokens, _prediction(body))


def _prediction(body: dict[str, Any]) -> str | None:
    """The predicted content of a Predicted Outputs request, or None without one."""
    prediction = body.get("prediction")
    if prediction is None:
        return None
    content = prediction.get("content") if isinstance(prediction, dict) else None
    if not isinstance(prediction, dict) or prediction.get("type") != "content":
        raise _HttpError(400, "'prediction' must be of type 'content'", param="prediction")
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    if not isinstance(content, str):
        raise _HttpError(400, "'prediction.content' must be text", param="prediction")
    return content


@dataclass(slots=True)
class _Generation:
    """One scripted completion: its tokens, and the JSON objects that carry them."""

    chat: bool
    model: str
    fingerprint: str | None
    tokens: list[str]
    finish_reason: str
    prompt_tokens: int
    started: float
    ttft: float
    gap: float
    prediction: str | None = None
    id: str = ""
    created: int = field(default_factory=lambda: int(time.time()))

    def __post_init__(self) -> None:
        self.id = f"{'chatcmpl' if self.chat else 'cmpl'}-{uuid.uuid4()}"

    def due(self, index: int) -> float:
        """Monotonic time token ``index`` is due: paced from the request, so no drift."""
        return self.started + self.ttft + index * self.gap

    def _envelope(self, obj: str, choice: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "choices": [choice], "created": self.created}
        out["model"] = self.model
        if self.fingerprint is not None:
            out["system_fingerprint"] = self.fingerprint
        out["object"] = obj
        return out

    def _stats(self, out: dict[str, Any]) -> dict[str, Any]:
        total = time.monotonic() - self.started
        completion = len(self.tokens)
        out["usage"] = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": completion,
            "total_tokens": self.prompt_tokens + completion,
            "prompt_tokens_details": {"cached_tokens": 0},
        }
        if self.prediction is not None:
            predicted = tokenize(self.prediction)
            matcher = difflib.SequenceMatcher(None, predicted, self.tokens, autojunk=False)
            accepted = sum(block.size for block in matcher.get_matching_blocks())
            out["usage"]["completion_tokens_details"] = {
                "accepted_prediction_tokens": accepted,
                "rejected_prediction_tokens": len(predicted) - accepted,
            }
        out["time_info"] = {
            "queue_time": 0.000_1,
            "prompt_time": min(self.ttft, total),
            "completion_time": max(total - self.ttft, 0.0),
            "total_time": total,
            "created": time.time(),
        }
        return out

    def chunk(self, index: int) -> dict[str, Any]:
        token = self.tokens[index]
        if not self.chat:
            choice = {"index": 0, "text": token, "finish_reason": None}
            return self._envelope("text_completion", choice)
        delta = {"role": "assistant", "content": token} if index == 0 else {"content": token}
        choice = {"index": 0, "delta": delta, "finish_reason": None}
        return self._envelope("chat.completion.chunk", choice)

    def final_chunk(self) -> dict[str, Any]:
        if self.chat:
            choice = {"index": 0, "delta": {}, "finish_reason": self.finish_reason}
            return self._stats(self._envelope("chat.completion.chunk", choice))
        choice = {"index": 0, "text": "", "finish_reason": self.finish_reason}
        return self._stats(self._envelope("text_completion", choice))

    def whole(self) -> dict[str, Any]:
        text = "".join(self.tokens)
        if self.chat:
            message = {"role": "assistant", "content": text}
            choice = {"index": 0, "message": message, "finish_reason": self.finish_reason}
            return self._stats(self._envelope("chat.completion", choice))
        choice = {"index": 0, "text": text, "finish_reason": self.finish_reason, "logprobs": None}
        return self._stats(self._envelope("text_completion", choice))


def _cut_at_stop(reply: str, stops: tuple[str, ...]) -> str:
    hits = [i for i in (reply.find(s) for s in stops if s) if i >= 0]
    return reply[: min(hits)] if hits else reply


class _SseWriter:
    """Frames SSE events as HTTP chunks (or raw bytes for HTTP/1.0 close-delimited bodies)."""

    def __init__(self, conn: _Connection, chunked: bool) -> None:
        self.conn = conn
        self.chunked = chunked

    async def send(self, payload: str, *, last: bool = False) -> bool:
        """Write one event; the last one carries the body terminator in the same segment."""
        data = f"data: {payload}\n\n".encode()
        if self.chunked:
            data = b"%x\r\n%b\r\n" % (len(data), data)
            if last:
                data += b"0\r\n\r\n"
        return await self.conn.write(data)


class CerebrasTestServer:
    """A Cerebras-compatible endpoint on loopback, served from its own thread and event loop."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        ttft: float = 0.0,
        tokens_per_second: float | None = None,
        default_reply: str = DEFAULT_REPLY,
        reply_fn: Callable[[dict[str, Any]], str] | None = None,
        models: list[str] | tuple[str, ...] = DEFAULT_MODELS,
        api_key: str | None = None,
        routes: dict[tuple[str, str], Route] | None = None,
        text_paths: dict[str, str] | None = None,
        response_headers: dict[str, str] | None = None,
    ) -> None:
        """The last three let a benchmark stand in for another vendor's API (a peer's
        server) with the same sockets and the same records of each request's time:
        `routes` answers other JSON endpoints, by (method, path), ahead of Cerebras' own and
        without its key check; `text_paths` maps more paths to the model they stand for, each
        answered as Cerebras' text completions (an engine route, whose body names no
        model); `response_headers` go with every response."""
        if host not in LOOPBACK_HOSTS:
            raise ValueError(f"refusing to bind {host!r}: only loopback addresses are allowed")
        self.host = "127.0.0.1" if host == "localhost" else host
        self._requested_port = port
        self._initial: dict[str, Any] = {
            "ttft": ttft,
            "tokens_per_second": tokens_per_second,
            "default_reply": default_reply,
            "reply_fn": reply_fn,
            "models": tuple(models),
            "api_key": api_key,
        }
        self.config = self._fresh_config()
        self._routes = dict(routes or {})
        self._engines = dict(text_paths or {})
        self._text_paths = frozenset((_TEXT_PATH, *self._engines))
        self._response_headers = dict(response_headers or {})
        self.requests: list[RecordedRequest] = []
        self.errors: list[BaseException] = []
        """Unexpected exceptions raised while serving; a healthy run leaves this empty."""
        self.connections_accepted = 0
        self.fingerprint = f"fp_{secrets.token_hex(5)}"
        self._conn_ids = itertools.count(1)
        self._live: dict[_Connection, asyncio.Task[Any]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._port: int | None = None
        self._stopping = False

    def _fresh_config(self) -> ServerConfig:
        return ServerConfig(**{**self._initial, "models": list(self._initial["models"])})

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("server is not running")
        return self._port

    @property
    def base_url(self) -> str:
        """Host root, as the SDK wants it: it appends ``/v1/...`` itself."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def completion_requests(self) -> list[RecordedRequest]:
        paths = self._text_paths | {_CHAT_PATH}
        return [r for r in list(self.requests) if r.method == "POST" and r.path in paths]

    def reset(self) -> None:
        """Forget records and put every knob, queue and fault back to the constructor's values."""
        fresh = self._fresh_config()
        for f in fields(ServerConfig):
            setattr(self.config, f.name, getattr(fresh, f.name))
        self.requests.clear()
        self.errors.clear()
        self.connections_accepted = 0

    def wait_for(
        self, predicate: Callable[[], T], timeout: float = 2.0, interval: float = 0.002
    ) -> T:
        """Poll until predicate is truthy and return its value, from a thread that is not ours."""
        deadline = time.monotonic() + timeout
        while not (value := predicate()):
            if time.monotonic() >= deadline:
                raise TimeoutError(f"condition not met within {timeout} s")
            time.sleep(interval)
        return value

    async def wait_for_async(
        self, predicate: Callable[[], T], timeout: float = 2.0, interval: float = 0.002
    ) -> T:
        """As `wait_for`, without blocking the caller's event loop."""
        deadline = time.monotonic() + timeout
        while not (value := predicate()):
            if time.monotonic() >= deadline:
                raise TimeoutError(f"condition not met within {timeout} s")
            await asyncio.sleep(interval)
        return value

    def start(self) -> CerebrasTestServer:
        """Listen on a background thread; returns once the port accepts connections."""
        if self._thread is not None:
            raise RuntimeError("server already started")
        self._stopping = False
        ready = threading.Event()
        failure: list[BaseException] = []
        thread = threading.Thread(
            target=self._run, args=(ready, failure), name=THREAD_NAME, daemon=True
        )
        thread.start()
        ready.wait()
        if failure:
            thread.join()
            raise failure[0]
        self._thread = thread
        return self

    def stop(self) -> None:
        """Abort every connection, close the listener and join the thread; idempotent."""
        thread, loop = self._thread, self._loop
        if thread is None or loop is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(_STOP_TIMEOUT)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(_STOP_TIMEOUT)
            self._thread = self._loop = self._server = None
            self._port = None

    def __enter__(self) -> CerebrasTestServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _run(self, ready: threading.Event, failure: list[BaseException]) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            try:
                self._server = loop.run_until_complete(
                    asyncio.start_server(self._accept, self.host, self._requested_port)
                )
            except BaseException as exc:
                failure.append(exc)
                return
            self._port = self._server.sockets[0].getsockname()[1]
            self._loop = loop
            ready.set()
            loop.run_forever()
        finally:
            try:
                _close_loop(loop)
            finally:
                ready.set()

    async def _shutdown(self) -> None:
        self._stopping = True
        if self._server is not None:
            # Stop accepting, then let accepts already under way attach (and be aborted by
            # _accept): closing the server beneath them leaks their sockets on Python 3.11.
            loop = asyncio.get_running_loop()
            for sock in self._server.sockets:
                with contextlib.suppress(NotImplementedError):
                    loop.remove_reader(sock.fileno())
            for _ in range(3):
                await asyncio.sleep(0)
            self._server.close()
        live = dict(self._live)
        for conn, task in live.items():
            conn.writer.transport.abort()
            task.cancel()
        await asyncio.gather(*live.values(), return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Register each connection synchronously, so stop() can never miss one."""
        if self._stopping:
            writer.transport.abort()
            return
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.connections_accepted += 1
        conn = _Connection(next(self._conn_ids), reader, writer, self._response_headers)
        self._live[conn] = asyncio.get_running_loop().create_task(self._serve(conn))

    async def _serve(self, conn: _Connection) -> None:
        try:
            while await self._serve_one(conn):
                pass
        except OSError:
            pass
        except Exception as exc:
            log.exception("test server failed serving a request")
            self.errors.append(exc)
        finally:
            self._live.pop(conn, None)
            await conn.close()

    async def _serve_one(self, conn: _Connection) -> bool:
        """Answer one request; True if the connection may carry another."""
        try:
            request = await conn.read_request()
        except _HttpError as exc:
            await conn.send_json(exc.status, exc.body, keep_alive=False)
            return False
        if request is None:
            return False
        body: Any = None
        json_error: str | None = None
        if request.body:
            try:
                body = json.loads(request.body)
            except ValueError as exc:
                json_error = str(exc)
        record = RecordedRequest(
            method=request.method,
            path=request.path,
            headers=request.headers,
            body=body,
            raw_body=request.body,
            received_at=request.arrived_at,
            connection_id=conn.id,
        )
        self.requests.append(record)
        try:
            reusable = await self._dispatch(conn, request, record, json_error)
        except _HttpError as exc:
            record.status = exc.status
            reusable = await conn.send_json(exc.status, exc.body, keep_alive=request.keep_alive)
        finally:
            record.completed_at = time.monotonic()
        return reusable and request.keep_alive and not conn.closed.is_set()

    async def _dispatch(
        self, conn: _Connection, request: _Request, record: RecordedRequest, json_error: str | None
    ) -> bool:
        config = self.config
        keep = request.keep_alive
        if (route := self._routes.get((request.method, request.path))) is not None:
            if json_error is not None:
                raise _HttpError(400, f"request body is not valid JSON: {json_error}")
            answer = route(record)
            record.status = 200
            return await conn.send_json(200, answer, keep_alive=keep)
        if config.api_key is not None and (
            request.headers.get("authorization") != f"Bearer {config.api_key}"
        ):
            record.status = 401
            return await conn.send_json(401, _UNAUTHORIZED, keep_alive=keep)
        method, path = request.method, request.path
        if method == "POST" and (path == _CHAT_PATH or path in self._text_paths):
            if json_error is not None:
                raise _HttpError(400, f"request body is not valid JSON: {json_error}")
            return await self._complete(
                conn, request, record, chat=path == _CHAT_PATH, engine=self._engines.get(path)
            )
        if method == "GET" and path in _WARMING_PATHS:
            record.status = 200
            return await conn.send_json(200, {"status": "ok"}, keep_alive=keep)
        if method == "GET" and path == "/v1/models":
            record.status = 200
            listing = {"object": "list", "data": [_model(m) for m in list(config.models)]}
            return await conn.send_json(200, listing, keep_alive=keep)
        if method == "GET" and path.startswith("/v1/models/"):
            model_id = path.removeprefix("/v1/models/")
            if model_id in config.models:
                record.status = 200
                return await conn.send_json(200, _model(model_id), keep_alive=keep)
            raise _HttpError(
                404,
                f"Model {model_id} does not exist or you do not have access to it.",
                type_="not_found_error",
                code="model_not_found",
                param="model",
            )
        raise _HttpError(
            404, f"no route for {method} {path}", type_="not_found_error", code="not_found"
        )

    async def _complete(
        self,
        conn: _Connection,
        request: _Request,
        record: RecordedRequest,
        *,
        chat: bool,
        engine: str | None = None,
    ) -> bool:
        config = self.config
        spec = _parse_spec(record.body, chat=chat, engine=engine)
        takes_prediction = config.prediction_models
        if spec.prediction is not None and (
            takes_prediction is not None and spec.model not in takes_prediction
        ):
            raise _HttpError(
                400, f"Predicted outputs are not supported by {spec.model}", param="prediction"
            )
        fault = record.fault = config.next_fault()
        if fault is not None and fault.kind in _ERROR_FAULTS:
            return await self._send_fault(conn, request, record, fault)
        if fault is not None and fault.kind in _HOSTILE_FAULTS:
            record.status = 200
            return await self._misbehave(conn, request, record, fault)
        try:
            reply = config.next_reply(record.body)
        except Exception as exc:
            raise _HttpError(
                500, f"reply_fn failed: {exc!r}", type_="server_error", code="internal_server_error"
            ) from exc
        record.reply = reply
        tokens = tokenize(_cut_at_stop(reply, spec.stops))
        finish_reason = "stop"
        if spec.max_tokens is not None and len(tokens) > spec.max_tokens:
            tokens, finish_reason = tokens[: spec.max_tokens], "length"
        tps = config.tokens_per_second
        no_fingerprint = fault is not None and fault.kind is FaultKind.NO_FINGERPRINT
        generation = _Generation(
            chat=chat,
            model=spec.model,
            fingerprint=None if no_fingerprint else self.fingerprint,
            tokens=tokens,
            finish_reason=finish_reason,
            prompt_tokens=spec.prompt_tokens,
            started=record.received_at,
            ttft=max(config.ttft, 0.0),
            gap=1.0 / tps if tps and tps > 0 else 0.0,
            prediction=spec.prediction,
        )
        record.status = 200
        if spec.stream:
            return await self._stream(conn, request, record, generation)
        return await self._whole(conn, request, record, generation)

    async def _send_fault(
        self, conn: _Connection, request: _Request, record: RecordedRequest, fault: Fault
    ) -> bool:
        keep = request.keep_alive
        if fault.kind is FaultKind.RATE_LIMIT:
            record.status = 429
            body = _error_body(
                "Requests per minute limit exceeded - too many requests sent.",
                type_="too_many_requests_error",
                code="request_quota_exceeded",
            )
            headers = {"retry-after": f"{fault.retry_after:g}"}
            return await conn.send_json(429, body, keep_alive=keep, headers=headers)
        if fault.kind is FaultKind.SERVER_ERROR:
            record.status = 500
            body = _error_body(
                "Internal server error", type_="server_error", code="internal_server_error"
            )
            return await conn.send_json(500, body, keep_alive=keep)
        record.status = 401
        return await conn.send_json(401, _UNAUTHORIZED, keep_alive=keep)

    async def _misbehave(
        self, conn: _Connection, request: _Request, record: RecordedRequest, fault: Fault
    ) -> bool:
        """A 200 that is not a proper answer: it goes on until the client hangs up (or for
        at most _HOSTILE_SECONDS), except the web page, which is whole."""
        if fault.kind is FaultKind.WEB_PAGE:
            headers = {"content-type": "text/html; charset=utf-8"}
            return await conn.send_json(
                200, None, keep_alive=request.keep_alive, headers=headers, raw=_WEB_PAGE
            )
        pieces: Iterator[bytes]
        events: Iterator[bytes]
        if fault.kind is FaultKind.SLOW_HEAD:
            first, pieces = b"HTTP/1.1 200 OK\r\nx-slow: ", itertools.repeat(b"a")
        elif fault.kind is FaultKind.HUGE_BODY:
            first = _head(
                200,
                conn.headers | {"content-type": "application/json", "content-length": str(2**30)},
                keep_alive=False,
            )
            pieces = itertools.repeat(b" " * _HOSTILE_PIECE)
        else:
            first = _head(
                200,
                conn.headers
                | {"content-type": "text/event-stream", "transfer-encoding": "chunked"},
                keep_alive=False,
            )
            if fault.kind is FaultKind.TRICKLE:
                events = itertools.cycle(_TRICKLE_ITEMS)
            else:
                line = b'data: {"choices":[{"index":0,"delta":{"content":"'
                events = itertools.chain([line], itertools.repeat(b"x" * _HOSTILE_PIECE))
            pieces = (b"%x\r\n%b\r\n" % (len(event), event) for event in events)
        ends = time.monotonic() + _HOSTILE_SECONDS
        if await conn.write(first):
            for piece in pieces:
                if time.monotonic() > ends or not await conn.write(piece):
                    break
                if fault.interval and await conn.closed_before(time.monotonic() + fault.interval):
                    break
        if conn.closed.is_set():
            self._note_hang_up(record, conn)
        return False

    def _note_hang_up(self, record: RecordedRequest, conn: _Connection) -> None:
        record.client_hung_up = True
        record.hung_up_at = conn.closed_at if conn.closed_at is not None else time.monotonic()

    async def _stream(
        self, conn: _Connection, request: _Request, record: RecordedRequest, gen: _Generation
    ) -> bool:
        chunked = request.version == "HTTP/1.1"
        keep = request.keep_alive and chunked
        headers = {"content-type": "text/event-stream", "cache-control": "no-cache"}
        if chunked:
            headers["transfer-encoding"] = "chunked"
        if not await conn.send_head(200, headers, keep_alive=keep):
            self._note_hang_up(record, conn)
            return False
        sse = _SseWriter(conn, chunked)
        fault = record.fault
        trigger = -1
        if fault is not None and fault.kind in _MID_STREAM_FAULTS:
            trigger = min(fault.n_tokens, len(gen.tokens))
        for index in range(len(gen.tokens) + 1):
            if index == trigger and fault is not None:
                if fault.kind is FaultKind.RESET_AFTER:
                    conn.reset()
                    return False
                if fault.kind is FaultKind.STALL_AFTER:
                    await conn.closed.wait()
                    self._note_hang_up(record, conn)
                    return False
                if not await sse.send("{not json"):
                    self._note_hang_up(record, conn)
                    return False
            if index == len(gen.tokens):
                break
            if await conn.closed_before(gen.due(index)):
                self._note_hang_up(record, conn)
                return False
            # Counted before the bytes leave so a client never sees more than is recorded.
            record.tokens_sent += 1
            if not await sse.send(json.dumps(gen.chunk(index), separators=(",", ":"))):
                record.tokens_sent -= 1
                self._note_hang_up(record, conn)
                return False
        if not await sse.send(json.dumps(gen.final_chunk(), separators=(",", ":"))):
            self._note_hang_up(record, conn)
            return False
        record.finished = True
        if not await sse.send("[DONE]", last=True):
            record.finished = False
            self._note_hang_up(record, conn)
            return False
        return keep

    async def _whole(
        self, conn: _Connection, request: _Request, record: RecordedRequest, gen: _Generation
    ) -> bool:
        kind = record.fault.kind if record.fault is not None else None
        if kind is FaultKind.RESET_AFTER:
            conn.reset()
            return False
        if kind is FaultKind.STALL_AFTER:
            await conn.closed.wait()
            self._note_hang_up(record, conn)
            return False
        if await conn.closed_before(gen.due(len(gen.tokens))):
            self._note_hang_up(record, conn)
            return False
        raw = b"{not json" if kind is FaultKind.MALFORMED_AFTER else None
        record.tokens_sent, record.finished = len(gen.tokens), True
        if not await conn.send_json(200, gen.whole(), keep_alive=request.keep_alive, raw=raw):
            record.tokens_sent, record.finished = 0, False
            self._note_hang_up(record, conn)
            return False
        return True


def _close_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what is left (a connection accepted mid-stop) and let its sockets close."""
    try:
        leftovers = asyncio.all_tasks(loop)
        for task in leftovers:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        asyncio.set_event_loop(None)
        loop.close()


def _model(model_id: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": MODEL_CREATED, "owned_by": "Cerebras"}


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Serve until SIGINT or SIGTERM, for demos and for clients in other processes."""
    parser = argparse.ArgumentParser(
        prog="python -m lsp_spark.testing.cerebras_server",
        description="Loopback server speaking the Cerebras inference API, with scripted replies.",
    )
    parser.add_argument("--host", default="127.0.0.1", choices=sorted(LOOPBACK_HOSTS))
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--ttft", type=float, default=0.0, help="seconds before the first token")
    parser.add_argument("--tps", type=float, default=0.0, help="tokens per second; 0 = no pacing")
    parser.add_argument("--reply", default=DEFAULT_REPLY, help="reply to every completion")
    parser.add_argument("--model", action="append", help="model id to list (repeatable)")
    parser.add_argument("--api-key", help="require 'Authorization: Bearer KEY'")
    args = parser.parse_args(argv)
    server = CerebrasTestServer(
        args.host,
        args.port,
        ttft=args.ttft,
        tokens_per_second=args.tps or None,
        default_reply=args.reply,
        models=args.model or DEFAULT_MODELS,
        api_key=args.api_key,
    )
    # Installed for SIGINT too: a shell starting us in the background leaves SIGINT ignored.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _interrupt)
    server.start()
    try:
        print(f"listening on {server.base_url}", flush=True)
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
