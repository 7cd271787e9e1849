"""The one HTTP client to a hosted model: keep-alive HTTP/1.1 connections, a lean POST → SSE
reader, bounded GETs for JSON, and the one mapping of HTTP failures to what the server does.

llhttp (through httptools) parses responses in C, a request leaves in one write, and a
stream's events are read straight from what the event loop received: on the keystroke's path
the HTTP client is the largest cost the server pays (`python benchmarks/bench_http.py`
compares it with the Cerebras SDK, httpx and httpcore).

HTTP/1.1 rather than HTTP/2: stopping a stream early means closing its connection, so a spare
connection is opened in the background whenever one is closed, and no keystroke waits for a
TCP or TLS handshake.

A backend is not trusted to end what it starts: every exchange has one deadline for the whole
of it (connect, head, body), however steadily bytes trickle in, and every response is capped
in size, both in total and per event, so a backend that streams without end costs neither
memory nor a request that never finishes.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import ssl
import urllib.request
from collections.abc import AsyncGenerator
from typing import Any, cast
from urllib.parse import SplitResult, unquote, urlsplit

import certifi
import httptools

from lsp_spark.backends.base import BackendError, FailureKind

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 3.0
KEEPALIVE_EXPIRY = 120.0
"""Seconds an idle connection is trusted; servers drop theirs after about a minute, and the
engine re-warms before that."""
HAPPY_EYEBALLS_DELAY = 0.25
"""Seconds before an IPv4 attempt races a slow IPv6 one (RFC 8305)."""
DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_RESPONSE_BYTES = 16 * 1024 * 1024
"""The most a response may carry: far above the longest code action streamed with its
per-chunk JSON overhead, far below what would strain the editor's machine."""
MAX_EVENT_BYTES = 1024 * 1024
"""The longest line of an event stream; one event is one chunk of a few tokens."""


def status_failure(status: int, headers: dict[bytes, bytes], service: str) -> BackendError:
    """The few kinds of HTTP failure the server acts on differently."""
    if status == 407:
        return BackendError(
            FailureKind.AUTH,
            "The proxy asks for credentials (407): put them in the proxy's URL "
            "(HTTPS_PROXY=http://user:password@host:port).",
            status=status,
        )
    if status in (401, 403):
        return BackendError(
            FailureKind.AUTH, f"{service} rejected the API key ({status}).", status=status
        )
    if status == 429:
        try:
            wait: float | None = float(headers.get(b"retry-after", b""))
        except ValueError:
            wait = None
        return BackendError(
            FailureKind.RATE_LIMIT, f"{service} rate limit reached (429).", wait, status
        )
    kind = FailureKind.UNAVAILABLE if status >= 500 else FailureKind.BAD_RESPONSE
    return BackendError(kind, f"{service} answered HTTP {status}.", status=status)


def _proxy_for(url: str) -> str | None:
    """Honour HTTPS_PROXY / HTTP_PROXY / NO_PROXY as httpx and the SDKs would."""
    parts = urlsplit(url)
    if parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies().get(parts.scheme)


def _proxy_authorization(proxy: SplitResult) -> bytes:
    """The `proxy-authorization` header line for credentials in the proxy's URL (an
    authenticating corporate proxy answers 407 to every request without it)."""
    if proxy.username is None:
        return b""
    credentials = f"{unquote(proxy.username)}:{unquote(proxy.password or '')}"
    return b"proxy-authorization: Basic %s\r\n" % base64.b64encode(credentials.encode())


def _tls_context() -> ssl.SSLContext:
    """Mozilla's roots (certifi), plus the bundle SSL_CERT_FILE / SSL_CERT_DIR name (a
    company's own CA); verification is never turned off."""
    context = ssl.create_default_context(cafile=certifi.where())
    cafile, capath = os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
    if cafile or capath:
        try:
            context.load_verify_locations(cafile=cafile, capath=capath)
        except (OSError, ssl.SSLError) as error:
            log.warning("could not load SSL_CERT_FILE / SSL_CERT_DIR: %s", error)
    context.set_alpn_protocols(["http/1.1"])
    return context


class _Connection(asyncio.Protocol):
    """One keep-alive connection carrying one exchange at a time; llhttp parses what arrives
    and the one reader waiting is woken."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.status = 0
        self.headers: dict[bytes, bytes] = {}
        self.body = bytearray()
        self.body_size = 0
        self.headers_done = False
        self.complete = False
        self.keep_alive = False
        self.received_any = False
        self.closed = False
        self.failure: str | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.idle_since = loop.time()
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.received_any = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.failure = self.failure or "MalformedResponse"
            self.close()
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.headers_done and not self.complete and not self._length_known():
            self.complete = True  # A body delimited by the connection's end.
        elif exc is not None and self.failure is None:
            self.failure = type(exc).__name__
        self._wake()

    def on_status(self, _: bytes) -> None:
        self.status = self.parser.get_status_code()

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.lower()] = value

    def on_headers_complete(self) -> None:
        self.headers_done = True
        self.keep_alive = self.parser.should_keep_alive()

    def on_body(self, body: bytes) -> None:
        if self.failure is not None:
            return
        self.body_size += len(body)
        if self.body_size > MAX_RESPONSE_BYTES:
            self.failure = "ResponseTooLarge"
            self.body.clear()
            self.close()
            return
        self.body += body

    def on_message_complete(self) -> None:
        self.complete = True

    def _length_known(self) -> bool:
        return b"content-length" in self.headers or b"transfer-encoding" in self.headers

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    @property
    def usable(self) -> bool:
        return (
            not self.closed
            and self.failure is None
            and self.loop.time() - self.idle_since < KEEPALIVE_EXPIRY
        )

    def send(self, request: bytes) -> None:
        self.status, self.headers = 0, {}
        self.body.clear()
        self.body_size = 0
        self.headers_done = self.complete = self.received_any = False
        assert self.transport is not None
        self.transport.write(request)

    def take_body(self) -> bytes:
        data = bytes(self.body)
        self.body.clear()
        return data

    def expire_at(self, due: float) -> None:
        """The moment the exchange under way is given up, whatever arrives until then."""
        self.stop_timer()
        self._timer = self.loop.call_at(due, self._expire)

    async def progress(self) -> None:
        """Wait until something arrives, the connection ends, or the exchange's deadline
        passes (TimeoutError)."""
        if self._timer is None:
            raise TimeoutError
        self.waiter = self.loop.create_future()
        try:
            await self.waiter
        finally:
            self.waiter = None

    def _expire(self) -> None:
        self._timer = None
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(TimeoutError())

    def stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def close(self) -> None:
        self.closed = True
        self.stop_timer()
        if self.transport is not None:
            self.transport.close()


class ApiClient:
    """One API's base URL: POST a JSON body and yield the server-sent events' JSON payloads as
    they arrive, or GET a JSON document.

    A stream's body is read to its very end even after ``[DONE]``, so the connection can
    carry the next request; a caller that stops early closes the connection, which is what
    stops the tokens, and a spare is opened in the background.
    """

    def __init__(
        self,
        base_url: str,
        *,
        service: str,
        api_key: str | None,
        skip_malformed: bool,
        warm_path: str,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._skip_malformed = skip_malformed
        self._warm_path = warm_path
        parts = urlsplit(self.base_url)
        self._scheme = parts.scheme
        self._host = parts.hostname or ""
        self._port = parts.port or DEFAULT_PORTS.get(parts.scheme, 0)
        self._prefix = parts.path
        self._tls: ssl.SSLContext | None = None
        if parts.scheme == "https":
            self._tls = _tls_context()
        authority = parts.netloc.rsplit("@", 1)[-1] or self._host
        self.address = f"{parts.scheme}://{authority}{parts.path}"
        """The base URL as it may be shown: without any credentials in it."""
        self._service = f"{service} at {self.address}"
        """Who failed, as every message names it: the service and where it was asked."""
        fields = [
            f"host: {authority}",
            "content-type: application/json",
            "accept: text/event-stream, application/json",
            "user-agent: lsp-spark",
        ]
        if api_key:
            fields.append(f"authorization: Bearer {api_key}")
        self._fields = ("\r\n".join(fields) + "\r\n").encode()
        self._proxy = urlsplit(proxy) if (proxy := _proxy_for(self.base_url)) else None
        if self._proxy is not None and self._tls is None:
            # A plain-HTTP proxy sees every request, so each carries its credentials.
            self._fields += _proxy_authorization(self._proxy)
        self._idle: list[_Connection] = []
        self._open: set[_Connection] = set()
        self._spare: asyncio.Task[None] | None = None

    def _request(self, method: str, path: str, content: bytes = b"") -> bytes:
        target = self._prefix + path
        if self._proxy is not None and self._tls is None:
            target = self.base_url + path  # Absolute form, for a plain-HTTP proxy.
        length = b"content-length: %d\r\n" % len(content) if method == "POST" else b""
        return b"%s %s HTTP/1.1\r\n%s%s\r\n%s" % (
            method.encode(),
            target.encode(),
            self._fields,
            length,
            content,
        )

    async def events(
        self, path: str, body: dict[str, Any], timeout: float
    ) -> AsyncGenerator[dict[str, Any], None]:
        """The stream's payloads; `timeout` bounds the whole exchange, not the gaps."""
        request = self._request("POST", path, json.dumps(body, separators=(",", ":")).encode())
        connection = await self._exchange(request, timeout)
        reusable = False
        try:
            self._check_head(connection, path)
            pending = bytearray()
            seen_events = done = False
            while True:
                chunk = connection.take_body()
                if chunk and not done:
                    end = chunk.rfind(b"\n")
                    if end < 0:
                        pending += chunk
                    else:
                        lines = (bytes(pending) + chunk[:end] if pending else chunk[:end]).split(
                            b"\n"
                        )
                        pending = bytearray(chunk[end + 1 :])
                        data = [line[5:].strip() for line in lines if line.startswith(b"data:")]
                        seen_events = seen_events or bool(data)
                        if b"[DONE]" in data:
                            done = True
                            del data[data.index(b"[DONE]") :]
                        for payload in self._payloads(data):
                            yield payload
                    if len(pending) > MAX_EVENT_BYTES:
                        raise BackendError(
                            FailureKind.BAD_RESPONSE,
                            f"{self._service} sent an event longer than "
                            f"{MAX_EVENT_BYTES // 1024} KiB.",
                        )
                if connection.complete:
                    break
                await self._progress(connection)
            if not seen_events:
                raise self._not_the_api(connection, path, "no events")
            reusable = connection.keep_alive
        finally:
            self._release(connection, reusable)
            if not reusable and connection.status == 200 and connection.failure is None:
                self._open_spare()

    async def get_json(self, path: str, timeout: float) -> Any:
        """A JSON document, read whole (within the size cap) before it is parsed."""
        return await self._json_answer(self._request("GET", path), path, timeout)

    async def post_json(self, path: str, body: dict[str, Any], timeout: float) -> Any:
        """The JSON document a POST of `body` is answered with."""
        content = json.dumps(body, separators=(",", ":")).encode()
        return await self._json_answer(self._request("POST", path, content), path, timeout)

    async def _json_answer(self, request: bytes, path: str, timeout: float) -> Any:
        connection = await self._exchange(request, timeout)
        reusable = False
        try:
            while not connection.complete:
                await self._progress(connection)
            if connection.status != 200:
                raise status_failure(connection.status, connection.headers, self._service)
            try:
                document = json.loads(connection.take_body())
            except (ValueError, RecursionError):
                raise self._not_the_api(connection, path, "no JSON") from None
            reusable = connection.keep_alive
            return document
        finally:
            self._release(connection, reusable)

    def _check_head(self, connection: _Connection, path: str) -> None:
        if connection.status != 200:
            raise status_failure(connection.status, connection.headers, self._service)
        if connection.headers.get(b"content-type", b"").startswith(b"text/html"):
            raise self._not_the_api(connection, path, "a web page")

    def _not_the_api(self, connection: _Connection, path: str, what: str) -> BackendError:
        content_type = connection.headers.get(b"content-type", b"no content type").decode("latin-1")
        return BackendError(
            FailureKind.NOT_AN_API,
            f"{self._service} does not answer as the API does: {path} "
            f"returned {what} ({content_type}). Check baseUrl.",
        )

    def _payloads(self, data: list[bytes]) -> list[dict[str, Any]]:
        """The events' JSON payloads: what arrived together is parsed in one call."""
        if len(data) > 1:
            try:
                batch = json.loads(b"[" + b",".join(data) + b"]")
            except (ValueError, RecursionError):
                pass
            else:
                return [self._checked(payload) for payload in batch if isinstance(payload, dict)]
        return [payload for item in data if (payload := self._parse(item)) is not None]

    async def _exchange(self, request: bytes, timeout: float) -> _Connection:
        """Send `request` and wait for the response's head, the exchange's deadline armed.
        A reused connection the server had closed before answering anything is replaced
        once by a fresh one."""
        due = asyncio.get_running_loop().time() + timeout
        connection, reused = await self._acquire(timeout)
        connection.expire_at(due)
        connection.send(request)
        try:
            while not connection.headers_done:
                if reused and connection.closed and not connection.received_any:
                    self._release(connection, False)
                    remaining = due - connection.loop.time()
                    connection, reused = await self._connect(remaining), False
                    connection.expire_at(due)
                    connection.send(request)
                    continue
                await self._progress(connection)
        except BaseException:
            self._release(connection, False)
            raise
        return connection

    async def _progress(self, connection: _Connection) -> None:
        if connection.failure == "ResponseTooLarge":
            raise BackendError(
                FailureKind.BAD_RESPONSE,
                f"{self._service} sent more than {MAX_RESPONSE_BYTES // (1024 * 1024)} MiB.",
            )
        if connection.failure is not None:
            raise BackendError(
                FailureKind.UNAVAILABLE,
                f"{self._service} broke the connection ({connection.failure}) before its "
                "answer was complete.",
            )
        if connection.closed:
            # The server is up (it accepted the request): it gave up on it. Local servers
            # that serve one request at a time do so to start on another.
            raise BackendError(
                FailureKind.UNAVAILABLE,
                f"{self._service} closed the connection before its answer was complete "
                "(it dropped or aborted the request).",
            )
        try:
            await connection.progress()
        except TimeoutError:
            raise BackendError(
                FailureKind.TIMED_OUT,
                f"{self._service} timed out before its answer was complete.",
            ) from None

    async def _acquire(self, timeout: float) -> tuple[_Connection, bool]:
        """An idle connection (True: reused) or a new one."""
        while self._idle:
            connection = self._idle.pop()
            if connection.usable:
                return connection, True
            self._discard(connection)
        return await self._connect(timeout), False

    async def _connect(self, timeout: float) -> _Connection:
        if self._scheme not in DEFAULT_PORTS or not self._host:
            raise BackendError(
                FailureKind.MISCONFIGURED, f"Unsupported base URL for {self._service}."
            )
        loop = asyncio.get_running_loop()
        connection = _Connection(loop)
        try:
            async with asyncio.timeout(max(0.0, min(timeout, CONNECT_TIMEOUT))):
                if self._proxy is not None:
                    await self._connect_through_proxy(connection)
                else:
                    await loop.create_connection(
                        lambda: connection,
                        self._host,
                        self._port,
                        ssl=self._tls,
                        server_hostname=self._host if self._tls else None,
                        happy_eyeballs_delay=HAPPY_EYEBALLS_DELAY,
                    )
        except TimeoutError:
            connection.close()
            raise BackendError(
                FailureKind.UNAVAILABLE, f"{self._service} timed out: ConnectTimeout."
            ) from None
        except (OSError, ssl.SSLError) as error:
            connection.close()
            raise BackendError(
                FailureKind.UNAVAILABLE,
                f"Cannot reach {self._service}: {type(error).__name__}. Is it running, and is "
                "baseUrl right?",
            ) from None
        self._open.add(connection)
        return connection

    async def _connect_through_proxy(self, connection: _Connection) -> None:
        """Through an HTTP proxy: a CONNECT tunnel for HTTPS, plain requests otherwise. The
        caller's timeout bounds the whole of it."""
        loop = asyncio.get_running_loop()
        proxy = self._proxy
        assert proxy is not None
        await loop.create_connection(
            lambda: connection,
            proxy.hostname or "",
            proxy.port or DEFAULT_PORTS.get(proxy.scheme, 80),
        )
        if self._tls is None:
            return
        authority = f"{self._host}:{self._port}"
        connection.send(
            b"CONNECT %s HTTP/1.1\r\nhost: %s\r\n%s\r\n"
            % (authority.encode(), authority.encode(), _proxy_authorization(proxy))
        )
        connection.expire_at(loop.time() + CONNECT_TIMEOUT)
        while not connection.headers_done:
            if connection.closed:
                raise OSError("the proxy closed the connection")
            await connection.progress()
        connection.stop_timer()
        if connection.status == 407:
            raise status_failure(407, connection.headers, "The proxy")
        if connection.status != 200:
            raise OSError(f"the proxy refused the tunnel ({connection.status})")
        assert connection.transport is not None
        transport = await loop.start_tls(
            connection.transport, connection, self._tls, server_hostname=self._host
        )
        if transport is None:
            raise OSError("the tunnel closed during the TLS handshake")
        connection.transport = transport
        connection.parser = httptools.HttpResponseParser(connection)

    def _release(self, connection: _Connection, reusable: bool) -> None:
        """Back to the pool, or closed (which stops a stream still running)."""
        if reusable and connection.usable:
            connection.stop_timer()
            connection.idle_since = connection.loop.time()
            self._idle.append(connection)
        else:
            self._discard(connection)

    def _discard(self, connection: _Connection) -> None:
        connection.close()
        self._open.discard(connection)

    def _open_spare(self) -> None:
        """A stream was cut short and took its connection along: open the next one now."""
        if self._idle or (self._spare is not None and not self._spare.done()):
            return
        self._spare = asyncio.get_running_loop().create_task(self.warm())

    def _parse(self, data: bytes) -> dict[str, Any] | None:
        try:
            payload = json.loads(data)
        except (ValueError, RecursionError):
            if self._skip_malformed:
                log.debug("skipping a malformed stream chunk")
                return None
            raise BackendError(
                FailureKind.BAD_RESPONSE, f"{self._service} sent a malformed event."
            ) from None
        return self._checked(payload) if isinstance(payload, dict) else None

    def _checked(self, payload: dict[str, Any]) -> dict[str, Any]:
        if error := payload.get("error"):
            message = error.get("message") if isinstance(error, dict) else str(error)
            raise BackendError(FailureKind.UNAVAILABLE, f"{self._service} stream error: {message}")
        return payload

    async def warm(self) -> None:
        """Have a keep-alive connection open (TCP, TLS) before a keystroke needs one."""
        try:
            connection = await self._exchange(
                self._request("GET", self._warm_path), CONNECT_TIMEOUT
            )
        except BackendError as error:
            log.debug("warming %s failed: %s", self._service, error)
            return
        reusable = False
        try:
            while not connection.complete:
                connection.take_body()
                await self._progress(connection)
            reusable = connection.keep_alive
        except BackendError as error:
            log.debug("warming %s failed: %s", self._service, error)
        finally:
            self._release(connection, reusable)

    @property
    def connections(self) -> tuple[int, int]:
        """Open connections, and how many of them are in use (for stats and leak checks)."""
        live = [connection for connection in self._open if not connection.closed]
        return len(live), sum(1 for connection in live if connection not in self._idle)

    async def aclose(self) -> None:
        if self._spare is not None:
            self._spare.cancel()
        for connection in list(self._open):
            self._discard(connection)
        self._idle.clear()


# The OpenAI wire format, which Cerebras and OpenAI-compatible servers share.


def delta_text(payload: dict[str, Any]) -> str:
    """The text of a streamed chunk: a chat delta's content, or a text completion's text."""
    choices = payload.get("choices")
    if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
        return ""
    choice = choices[0]
    text = choice.get("text")
    if text is None:
        delta = choice.get("delta")
        text = delta.get("content") if isinstance(delta, dict) else None
    return text if isinstance(text, str) else ""


def model_ids(listing: Any) -> list[str]:
    """The ids of an OpenAI-style model list; a document of another shape is a bad response."""
    data = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(data, list):
        raise BackendError(FailureKind.BAD_RESPONSE, "The model list is not in the API's format.")
    return [entry["id"] for entry in data if isinstance(entry, dict) and "id" in entry]
