"""The hot path to a hosted model: one keep-alive connection pool and a lean POST → SSE reader.

Streaming one completion through the Cerebras SDK costs several times the CPU of httpcore
(httpx's own transport), and per keystroke that difference is the whole overhead budget
(`python benchmarks/bench_http.py`). So completions go through httpcore directly; the SDK
keeps the calls that are not per keystroke (listing models).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import urllib.request
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import httpcore

from lsp_spark.backends.base import BackendError, FailureKind

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 3.0


def status_failure(status: int, headers: dict[bytes, bytes], service: str) -> BackendError:
    """The few kinds of HTTP failure the server acts on differently."""
    if status in (401, 403):
        return BackendError(
            FailureKind.AUTH, f"{service} rejected the API key ({status}).", status=status
        )
    if status == 429:
        try:
            retry_after: float | None = float(headers.get(b"retry-after", b"").decode())
        except ValueError:
            retry_after = None
        return BackendError(
            FailureKind.RATE_LIMIT, f"{service} rate limit reached (429).", retry_after, status
        )
    kind = FailureKind.UNAVAILABLE if status >= 500 else FailureKind.BAD_RESPONSE
    return BackendError(kind, f"{service} answered HTTP {status}.", status=status)


def _proxy_for(url: str) -> str | None:
    """Honour HTTPS_PROXY / HTTP_PROXY / NO_PROXY as httpx and the SDK would."""
    parts = urlsplit(url)
    if parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies().get(parts.scheme)


class EventStreamClient:
    """POST a JSON body, yield the server-sent events' JSON payloads as they arrive.

    The body is read to its very end even after ``[DONE]``, so the connection returns to the
    pool; a caller that stops early closes the connection, which is what stops the tokens.
    """

    def __init__(
        self,
        base_url: str,
        *,
        service: str,
        api_key: str | None,
        timeout: float,
        skip_malformed: bool,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._service = service
        self._skip_malformed = skip_malformed
        parts = urlsplit(self.base_url)
        host = (parts.netloc.rsplit("@", 1)[-1] or "localhost").encode()
        self._headers = [
            (b"host", host),
            (b"content-type", b"application/json"),
            (b"accept", b"text/event-stream"),
            (b"user-agent", b"lsp-spark"),
        ]
        if api_key:
            self._headers.append((b"authorization", f"Bearer {api_key}".encode()))
        self._timeouts = {
            "connect": min(timeout, CONNECT_TIMEOUT),
            "read": timeout,
            "write": timeout,
            "pool": timeout,
        }
        proxy = _proxy_for(self.base_url)
        self._pool: httpcore.AsyncConnectionPool = (
            httpcore.AsyncHTTPProxy(proxy_url=proxy, http2=True)
            if proxy
            else httpcore.AsyncConnectionPool(http2=True, keepalive_expiry=120.0)
        )

    async def events(self, path: str, body: dict[str, Any]) -> AsyncGenerator[dict[str, Any], None]:
        content = json.dumps(body, separators=(",", ":")).encode()
        try:
            async with self._response(path, content) as response:
                if response.status != 200:
                    raise status_failure(response.status, dict(response.headers), self._service)
                pending = b""
                done = False
                async for chunk in response.aiter_stream():
                    if done:
                        continue
                    lines = (pending + chunk).split(b"\n")
                    pending = lines.pop()
                    for line in lines:
                        if not line.startswith(b"data:"):
                            continue
                        data = line[5:].strip()
                        if data == b"[DONE]":
                            done = True
                            break
                        payload = self._parse(data)
                        if payload is not None:
                            yield payload
        except httpcore.TimeoutException as error:
            raise BackendError(
                FailureKind.UNAVAILABLE, f"{self._service} timed out: {type(error).__name__}."
            ) from None
        except (httpcore.NetworkError, httpcore.ProtocolError, httpcore.ProxyError) as error:
            raise BackendError(
                FailureKind.UNAVAILABLE, f"Cannot reach {self._service}: {type(error).__name__}."
            ) from None
        except httpcore.UnsupportedProtocol:
            raise BackendError(
                FailureKind.MISCONFIGURED, f"Unsupported base URL for {self._service}."
            ) from None

    @contextlib.asynccontextmanager
    async def _response(self, path: str, content: bytes) -> AsyncIterator[httpcore.Response]:
        """httpcore's own `stream`, except that closing the response is shielded: a second
        cancellation arriving while the first closes it (an editor's `$/cancelRequest` and
        then the next keystroke) would otherwise leave the connection marked in use for
        good, and after ten of them the pool has none left."""
        request = httpcore.Request(
            "POST",
            self.base_url + path,
            headers=[*self._headers, (b"content-length", str(len(content)).encode())],
            content=content,
            extensions={"timeout": self._timeouts},
        )
        response = await self._pool.handle_async_request(request)
        try:
            yield response
        finally:
            await asyncio.shield(response.aclose())

    def _parse(self, data: bytes) -> dict[str, Any] | None:
        try:
            payload = json.loads(data)
        except json.JSONDecodeError:
            if self._skip_malformed:
                log.debug("skipping a malformed stream chunk")
                return None
            raise BackendError(
                FailureKind.BAD_RESPONSE, f"{self._service} sent a malformed event."
            ) from None
        if not isinstance(payload, dict):
            return None
        if error := payload.get("error"):
            message = error.get("message") if isinstance(error, dict) else str(error)
            raise BackendError(FailureKind.UNAVAILABLE, f"{self._service} stream error: {message}")
        return payload

    async def warm(self, path: str) -> None:
        """Open the keep-alive connection (TCP, TLS, HTTP/2) before a keystroke needs it."""
        try:
            await self._pool.request(
                "GET",
                self.base_url + path,
                headers=self._headers,
                extensions={"timeout": {**self._timeouts, "read": CONNECT_TIMEOUT}},
            )
        except (httpcore.TimeoutException, httpcore.NetworkError, httpcore.ProtocolError) as error:
            log.debug("warming %s failed: %s", self._service, type(error).__name__)
        except httpcore.UnsupportedProtocol:
            log.debug("warming %s failed: unsupported base URL", self._service)

    @property
    def connections(self) -> tuple[int, int]:
        """Open connections, and how many of them are in use (for stats and leak checks)."""
        pool = self._pool.connections
        return len(pool), sum(1 for connection in pool if not connection.is_idle())

    async def aclose(self) -> None:
        await self._pool.aclose()
