"""The keystroke path's HTTP client against real sockets on 127.0.0.1: the loopback Cerebras
server, and small servers that close, terminate TLS or act as a proxy in front of it."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import trustme

from lsp_spark.backends import BackendError, FailureKind
from lsp_spark.backends.http import ApiClient
from lsp_spark.testing.cerebras_server import CerebrasTestServer
from tests.conftest import QUIET, TEST_KEY, eventually

CHAT = "/v1/chat/completions"
BODY = {"model": "gpt-oss-120b", "messages": [{"role": "user", "content": "x"}], "stream": True}
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def client(base_url: str) -> ApiClient:
    return ApiClient(
        base_url,
        service="loopback",
        api_key=TEST_KEY,
        skip_malformed=False,
        warm_path="/v1/tcp_warming",
    )


async def text_of(http: ApiClient, timeout: float = 3.0) -> str:
    return "".join(
        [
            payload["choices"][0]["delta"].get("content", "")
            async for payload in http.events(CHAT, BODY, timeout)
            if payload["choices"]
        ]
    )


@contextlib.asynccontextmanager
async def serving(handler: Handler, tls: ssl.SSLContext | None = None) -> AsyncIterator[int]:
    server = await asyncio.start_server(handler, "127.0.0.1", 0, ssl=tls)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(server.wait_closed(), 2.0)


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.close()


async def splice(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int, first: bytes = b""
) -> None:
    """Connect to `port` on loopback and carry bytes both ways, `first` ahead of the rest."""
    upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", port)
    upstream_writer.write(first)
    await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))


async def test_events_stream_and_the_connection_is_kept(cerebras: CerebrasTestServer) -> None:
    cerebras.config.queue_replies("a + b", "c + d")
    http = client(cerebras.base_url)
    try:
        assert await text_of(http) == "a + b"
        assert await text_of(http) == "c + d"
        assert http.connections == (1, 0)
    finally:
        await http.aclose()
    assert cerebras.connections_accepted == 1
    assert cerebras.completion_requests[0].headers["authorization"] == f"Bearer {TEST_KEY}"


async def test_a_stream_cut_short_closes_its_connection_and_a_spare_is_opened(
    cerebras: CerebrasTestServer,
) -> None:
    cerebras.config.tokens_per_second = 1 / QUIET  # cut short: its end is minutes away
    cerebras.config.queue_replies("one two three four five six seven eight nine ten")
    http = client(cerebras.base_url)
    try:
        async with contextlib.aclosing(http.events(CHAT, BODY, 3.0)) as events:
            async for _ in events:
                break
        assert await eventually(cerebras, lambda: cerebras.completion_requests[0].client_hung_up)
        assert await eventually(
            cerebras, lambda: any(r.path.endswith("tcp_warming") for r in cerebras.requests)
        )
        assert await eventually(cerebras, lambda: cerebras.connections_accepted == 2)
        cerebras.config.tokens_per_second = None
        assert await text_of(http) == cerebras.config.default_reply
        assert cerebras.connections_accepted == 2, "the next request takes the spare"
    finally:
        await http.aclose()


async def test_a_request_the_server_hangs_up_on_unanswered_goes_out_again() -> None:
    """A server may close an idle keep-alive connection just as a request is sent on it;
    that request goes out again on a fresh connection instead of failing the keystroke."""
    answer = b'data: {"choices":[{"delta":{"content":"ok"}}]}\n\ndata: [DONE]\n\n'
    head = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(answer)
    connections: list[int] = []

    async def answer_once_then_hang_up(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        connections.append(1)
        await reader.readuntil(b"\r\n\r\n")
        writer.write(head + answer)
        await writer.drain()
        with contextlib.suppress(asyncio.IncompleteReadError):
            await reader.readuntil(b"\r\n\r\n")
        writer.close()

    async with serving(answer_once_then_hang_up) as port:
        http = client(f"http://127.0.0.1:{port}")
        try:
            assert await text_of(http) == "ok"
            assert await text_of(http) == "ok"
        finally:
            await http.aclose()
    assert len(connections) == 2


async def test_a_stall_times_out_and_a_refused_connection_is_unavailable(
    cerebras: CerebrasTestServer,
) -> None:
    async def stall(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()

    async with serving(stall) as port:
        http = ApiClient(
            f"http://127.0.0.1:{port}",
            service="loopback",
            api_key=None,
            skip_malformed=False,
            warm_path="/",
        )
        with pytest.raises(BackendError, match="timed out") as stalled:
            await text_of(http, timeout=0.2)
        await http.aclose()
    assert stalled.value.kind is FailureKind.TIMED_OUT
    http = client(f"http://127.0.0.1:{port}")
    with pytest.raises(BackendError, match="Cannot reach") as refused:
        await text_of(http)
    assert refused.value.kind is FailureKind.UNAVAILABLE
    await http.aclose()


@pytest.fixture
def authority() -> trustme.CA:
    return trustme.CA()


@contextlib.asynccontextmanager
async def tls_in_front_of(server: CerebrasTestServer, authority: trustme.CA) -> AsyncIterator[int]:
    """A TLS terminator on loopback, its certificate from `authority`, before `server`."""
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(served)

    async def terminate(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await splice(reader, writer, server.port)

    async with serving(terminate, served) as port:
        yield port


async def test_https_verifies_the_certificate_against_the_trusted_roots(
    cerebras: CerebrasTestServer, authority: trustme.CA, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    async with tls_in_front_of(cerebras, authority) as port:
        monkeypatch.delenv("SSL_CERT_DIR", raising=False)
        monkeypatch.delenv("SSL_CERT_FILE", raising=False)
        untrusted = client(f"https://127.0.0.1:{port}")
        with pytest.raises(BackendError, match="SSLCertVerificationError"):
            await text_of(untrusted)
        await untrusted.aclose()
        bundle = tmp_path / "company-ca.pem"
        authority.cert_pem.write_to_path(str(bundle))
        monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
        cerebras.config.queue_replies("over tls")
        trusted = client(f"https://127.0.0.1:{port}")
        try:
            assert await text_of(trusted) == "over tls"
        finally:
            await trusted.aclose()


async def test_https_goes_through_a_connect_tunnel_and_http_through_the_proxy(
    cerebras: CerebrasTestServer, authority: trustme.CA, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    bundle = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(bundle))
    seen: list[bytes] = []

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        line = head.split(b"\r\n", 1)[0]
        seen.append(line)
        method, target, _ = line.split(b" ")
        if method == b"CONNECT":
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await splice(reader, writer, int(target.rsplit(b":", 1)[1]))
            return
        origin = b"/" + target.split(b"/", 3)[3]
        await splice(reader, writer, cerebras.port, head.replace(target, origin, 1))

    for name in ("NO_PROXY", "no_proxy", "HTTP_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    async with tls_in_front_of(cerebras, authority) as tls_port, serving(proxy) as proxy_port:
        monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy_port}")
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy_port}")
        for base_url in (f"https://127.0.0.1:{tls_port}", cerebras.base_url):
            cerebras.config.queue_replies("via proxy")
            http = client(base_url)
            try:
                assert await text_of(http) == "via proxy"
            finally:
                await http.aclose()
    assert seen[0] == f"CONNECT 127.0.0.1:{tls_port} HTTP/1.1".encode()
    assert seen[1] == f"POST {cerebras.base_url}{CHAT} HTTP/1.1".encode()


async def test_error_payloads_and_statuses_keep_their_meaning(
    cerebras: CerebrasTestServer,
) -> None:
    error = json.dumps({"error": {"message": "overloaded"}}).encode()

    async def error_event(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        body = b"data: " + error + b"\n\n"
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
        await writer.drain()
        await reader.read()

    async with serving(error_event) as port:
        http = client(f"http://127.0.0.1:{port}")
        with pytest.raises(BackendError, match="overloaded"):
            await text_of(http)
        await http.aclose()
    http = client(cerebras.base_url + "/nowhere")
    with pytest.raises(BackendError, match="HTTP 404") as missing:
        await text_of(http)
    assert missing.value.kind is FailureKind.BAD_RESPONSE
    await http.aclose()


async def test_credentials_in_the_proxy_url_authenticate_both_proxy_forms(
    cerebras: CerebrasTestServer, authority: trustme.CA, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    """An authenticating proxy answers 407 to a request without `Proxy-Authorization`; the
    credentials in HTTPS_PROXY / HTTP_PROXY (percent-encoded) go with the tunnel's CONNECT
    and with every plain-HTTP request, and never to the origin."""
    bundle = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(bundle))
    expected = b"Basic " + base64.b64encode(b"alice:p@ss word")

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        fields = dict(line.split(b": ", 1) for line in head.split(b"\r\n")[1:] if b": " in line)
        method, target, _ = head.split(b"\r\n", 1)[0].split(b" ")
        if fields.get(b"proxy-authorization") != expected:
            writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\ncontent-length: 0\r\n\r\n")
            await writer.drain()
            writer.close()
            return
        if method == b"CONNECT":
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await splice(reader, writer, int(target.rsplit(b":", 1)[1]))
            return
        # Proxy-Authorization is for the proxy alone: it does not pass it on.
        forwarded = b"\r\n".join(
            line for line in head.split(b"\r\n") if not line.startswith(b"proxy-authorization")
        )
        origin = b"/" + target.split(b"/", 3)[3]
        await splice(reader, writer, cerebras.port, forwarded.replace(target, origin, 1))

    for name in ("NO_PROXY", "no_proxy", "HTTP_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    async with tls_in_front_of(cerebras, authority) as tls_port, serving(proxy) as proxy_port:
        for credentials in ("", "alice:p%40ss%20word@"):
            proxy_url = f"http://{credentials}127.0.0.1:{proxy_port}"
            monkeypatch.setenv("HTTPS_PROXY", proxy_url)
            monkeypatch.setenv("HTTP_PROXY", proxy_url)
            for base_url in (f"https://127.0.0.1:{tls_port}", cerebras.base_url):
                cerebras.config.queue_replies("via proxy")
                http = client(base_url)
                try:
                    if credentials:
                        assert await text_of(http) == "via proxy"
                    else:
                        with pytest.raises(BackendError, match=r"credentials \(407\)"):
                            await text_of(http)
                finally:
                    await http.aclose()
    assert all("proxy-authorization" not in r.headers for r in cerebras.requests)
