"""`serve --tcp`: only the client that presents the token is served, one at a time.

A real server process on a port the system picks, its token in a runtime directory of the
test's; clients are bare sockets, so a connection can send what a stock client would not
(no `initialize`, a wrong token) and see every byte the server sends back.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from lsp_spark import tcp_token
from lsp_spark.stats import STATS_METHOD
from lsp_spark.testing.cerebras_server import CerebrasTestServer
from lsp_spark.transport import MAX_WAITING, UNADMITTED_BYTES
from tests.conftest import (
    QUIET,
    SEEN,
    SERVER_COMMAND,
    SERVER_ENV,
    TEST_KEY,
    cerebras_options,
    eventually,
)

GUARD = 60.0
"""Seconds any read waits at most: a guard against hanging, never what a test asserts."""
LISTENING = re.compile(rb"listening on 127\.0\.0\.1:(\d+)")
URI = "file:///work/tcp.py"
INLINE = "textDocument/inlineCompletion"
TEXT = "def mul(a, b):\n    return \n\n\ndef add(a, b):\n    return \n"


class Peer:
    """One bare TCP connection to the server."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def connect(cls, port: int) -> Peer:
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    async def send(self, message: dict[str, Any]) -> None:
        await self.send_bytes(json.dumps(message).encode())

    async def send_bytes(self, body: bytes) -> None:
        """Written if the server still reads; a connection it closed takes nothing."""
        try:
            self.writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            await self.writer.drain()
        except ConnectionError:
            pass

    async def initialize(self, options: dict[str, Any], request_id: Any = "init") -> None:
        await self.send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "initialize",
                "params": {"capabilities": {}, "initializationOptions": options},
            }
        )

    async def next(self) -> dict[str, Any] | None:
        """The next message, or None once the server has closed the connection."""
        try:
            header = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), GUARD)
            length = int(re.search(rb"Content-Length: (\d+)", header).group(1))  # type: ignore[union-attr]
            body = await asyncio.wait_for(self.reader.readexactly(length), GUARD)
        except (asyncio.IncompleteReadError, ConnectionError):
            return None
        message: dict[str, Any] = json.loads(body)
        return message

    async def answer(self, request_id: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The answer to one request, and what came before it; the server's own requests
        get an empty result so that it never waits on us."""
        before: list[dict[str, Any]] = []
        while (message := await self.next()) is not None:
            if "method" in message and "id" in message:
                await self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            elif message.get("id") == request_id:
                return message, before
            before.append(message)
        raise EOFError(f"the connection closed before the answer to {request_id!r}")

    async def rest(self) -> list[dict[str, Any]]:
        """Everything the server sends until it closes the connection."""
        seen: list[dict[str, Any]] = []
        while (message := await self.next()) is not None:
            seen.append(message)
        return seen

    async def leave(self) -> None:
        """Close our side and wait until the server has closed its own (the socket closes
        only once the server has let the connection go)."""
        self.writer.write_eof()
        await self.rest()
        self.writer.close()


@dataclass
class Listening:
    process: asyncio.subprocess.Process
    port: int
    token: str
    token_file: Path
    log: bytearray = field(default_factory=bytearray)


@pytest_asyncio.fixture
async def tcp_server(tmp_path: Path) -> AsyncIterator[Listening]:
    """The server on `--tcp 127.0.0.1:0`, with its token written where it says."""
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    process = await asyncio.create_subprocess_exec(
        *SERVER_COMMAND,
        "--tcp",
        "127.0.0.1:0",
        env=SERVER_ENV | {"XDG_RUNTIME_DIR": str(runtime)},
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    log = bytearray()
    while (found := LISTENING.search(log)) is None:
        line = await asyncio.wait_for(process.stderr.readline(), GUARD)
        assert line, f"the server exited before it listened: {log.decode()}"
        log += line
    port = int(found.group(1))
    token_file = runtime / "lsp-spark" / f"tcp-{port}.token"
    listening = Listening(process, port, token_file.read_text().strip(), token_file, log)

    async def keep_reading(stream: asyncio.StreamReader) -> None:
        while line := await stream.readline():
            listening.log += line

    reading = asyncio.create_task(keep_reading(process.stderr))
    try:
        yield listening
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()
        await reading


async def admitted(server: Listening, cerebras: CerebrasTestServer) -> Peer:
    """A client with the token, initialized, with one document open."""
    client = await Peer.connect(server.port)
    # No request ends on its own while a test holds its stream (QUIET): only cancelling does.
    options = cerebras_options(cerebras, requestTimeoutMs=120_000)
    await client.initialize({**options, tcp_token.OPTION: server.token})
    answer, _ = await client.answer("init")
    assert "capabilities" in answer.get("result", {}), answer
    await client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    document = {"uri": URI, "languageId": "python", "version": 1, "text": TEXT}
    await client.send(
        {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": document}}
    )
    return client


def told(before: list[dict[str, Any]]) -> list[str]:
    """What the server showed the user (a setting it did not know, say)."""
    return [
        message["params"]["message"]
        for message in before
        if message.get("method") == "window/showMessage"
    ]


def inline_request(request_id: str, line: int) -> dict[str, Any]:
    params = {
        "textDocument": {"uri": URI},
        "position": {"line": line, "character": 11},
        "context": {"triggerKind": 2},
    }
    return {"jsonrpc": "2.0", "id": request_id, "method": INLINE, "params": params}


async def suggestion(
    client: Peer, request_id: str, line: int = 1
) -> tuple[str, list[dict[str, Any]]]:
    """The suggestion after `return ` on `line`."""
    await client.send(inline_request(request_id, line))
    answer, before = await client.answer(request_id)
    return answer["result"]["items"][0]["insertText"], before


async def take_over(port: int, thief: CerebrasTestServer) -> dict[str, Any] | None:
    """What a second process gets first for pointing the session at its own server (None:
    the connection closed)."""
    intruder = await Peer.connect(port)
    settings = {"lspSpark": {"baseUrl": thief.base_url, "apiKey": TEST_KEY}}
    await intruder.send(
        {
            "jsonrpc": "2.0",
            "method": "workspace/didChangeConfiguration",
            "params": {"settings": settings},
        }
    )
    await intruder.send({"jsonrpc": "2.0", "id": "steal", "method": STATS_METHOD})
    return await intruder.next()


async def test_the_client_with_the_token_is_served_and_a_second_connection_gets_nothing(
    tcp_server: Listening, cerebras: CerebrasTestServer
) -> None:
    assert stat.S_IMODE(tcp_server.token_file.stat().st_mode) == 0o600
    with CerebrasTestServer(api_key=TEST_KEY) as thief:
        client = await admitted(tcp_server, cerebras)
        cerebras.config.queue_replies("a * b")
        text, before = await suggestion(client, "first")
        assert text == "a * b"
        assert told(before) == []

        assert await take_over(tcp_server.port, thief) is None
        second = await Peer.connect(tcp_server.port)
        await second.initialize({**cerebras_options(thief), tcp_token.OPTION: tcp_server.token})
        assert await second.next() is None, "not even the token admits a second client"

        cerebras.config.queue_replies("a + b")
        text, before = await suggestion(client, "second", line=5)
        assert text == "a + b"
        assert len(cerebras.completion_requests) == 2
        assert thief.requests == []
        assert told(before) == []

        await client.send({"jsonrpc": "2.0", "id": "bye", "method": "shutdown"})
        await client.answer("bye")
        await client.send({"jsonrpc": "2.0", "method": "exit"})
        assert await asyncio.wait_for(tcp_server.process.wait(), GUARD) == 0
    assert tcp_server.token.encode() not in tcp_server.log
    assert not tcp_server.token_file.exists()


async def refused(peer: Peer, request_id: Any) -> str:
    """The one error answer a refused connection gets before it is closed: its message."""
    answer = await peer.next()
    assert answer is not None and answer.get("id") == request_id and "error" in answer, answer
    assert await peer.next() is None, "the connection is closed after the answer"
    message: str = answer["error"]["message"]
    return message


async def test_a_connection_without_the_token_gets_one_error_and_changes_nothing(
    tcp_server: Listening, cerebras: CerebrasTestServer
) -> None:
    with CerebrasTestServer(api_key=TEST_KEY) as thief:
        stranger = await Peer.connect(tcp_server.port)
        await stranger.initialize(cerebras_options(thief), request_id=1)
        assert "without the token" in await refused(stranger, 1)

        guesser = await Peer.connect(tcp_server.port)
        wrong = "x" * len(tcp_server.token)
        await guesser.initialize({"lspSpark": {**cerebras_options(thief), "tcpToken": wrong}})
        assert "wrong token" in await refused(guesser, "init")

        skipper = await Peer.connect(tcp_server.port)
        await skipper.send({"jsonrpc": "2.0", "id": 5, "method": STATS_METHOD})
        await skipper.send({"jsonrpc": "2.0", "id": 6, "method": STATS_METHOD})
        assert "must be initialize" in await refused(skipper, 5)

        assert await take_over(tcp_server.port, thief) is None

        flooder = await Peer.connect(tcp_server.port)
        padding = "x" * UNADMITTED_BYTES
        await flooder.initialize({tcp_token.OPTION: tcp_server.token, "padding": padding})
        assert await flooder.next() is None

        idle = [await Peer.connect(tcp_server.port) for _ in range(MAX_WAITING + 1)]
        assert await idle[0].next() is None, "the oldest of too many idle connections closes"
        for peer in idle[1:]:
            peer.writer.close()

        client = await admitted(tcp_server, cerebras)
        cerebras.config.queue_replies("a * b")
        assert (await suggestion(client, "first"))[0] == "a * b"
        assert thief.requests == []
    assert tcp_server.token.encode() not in tcp_server.log


async def test_a_client_that_leaves_frees_the_place_for_the_next(
    tcp_server: Listening, cerebras: CerebrasTestServer
) -> None:
    first = await admitted(tcp_server, cerebras)
    cerebras.config.queue_replies("a * b")
    assert (await suggestion(first, "first"))[0] == "a * b"
    cerebras.config.tokens_per_second = 1 / QUIET  # the first token at once, the next not
    cerebras.config.queue_replies("a - b - a - b")
    await first.send(inline_request("again", line=5))
    assert await eventually(cerebras, lambda: len(cerebras.completion_requests) == 2, SEEN)
    await first.leave()
    assert await eventually(cerebras, lambda: cerebras.completion_requests[1].client_hung_up, SEEN)
    cerebras.config.tokens_per_second = None

    second = await admitted(tcp_server, cerebras)
    cerebras.config.queue_replies("a + b")
    assert (await suggestion(second, "again"))[0] == "a + b"
    await second.send({"jsonrpc": "2.0", "id": "bye", "method": "shutdown"})
    await second.answer("bye")
    await second.send({"jsonrpc": "2.0", "method": "exit"})
    assert await asyncio.wait_for(tcp_server.process.wait(), GUARD) == 0


def serve(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SERVER_COMMAND, *args],
        env=SERVER_ENV | (env or {}),
        capture_output=True,
        text=True,
        timeout=GUARD,
        check=False,
    )


def test_tcp_on_a_non_loopback_host_needs_allow_remote() -> None:
    done = serve("--tcp", "0.0.0.0:0")
    assert done.returncode == 2
    assert "--tcp 0.0.0.0: not a loopback address" in done.stderr
    assert "--allow-remote" in done.stderr


def test_a_token_file_others_can_read_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "token"
    shared.write_text("s" * 32)
    shared.chmod(0o644)
    done = serve("--tcp", "127.0.0.1:0", "--token-file", str(shared))
    assert done.returncode == 2
    assert f"{shared}: others can read or write it (mode 0o644); chmod 600 it" in done.stderr


def test_a_token_comes_from_the_file_then_the_environment_then_is_made(tmp_path: Path) -> None:
    given = tmp_path / "given"
    given.write_text("g" * 20 + "\n")
    given.chmod(0o600)
    environ = {tcp_token.ENVIRONMENT_VARIABLE: "e" * 20}
    assert tcp_token.obtain(given, environ) == tcp_token.TcpToken("g" * 20, publishes=False)
    assert environ == {}, "the environment's token is not passed on to children"

    environ = {tcp_token.ENVIRONMENT_VARIABLE: "e" * 20}
    assert tcp_token.obtain(None, environ) == tcp_token.TcpToken("e" * 20, publishes=False)

    with pytest.raises(tcp_token.TokenError, match="at least 16 characters"):
        tcp_token.obtain(None, {tcp_token.ENVIRONMENT_VARIABLE: "short"})

    wanted = tmp_path / "made" / "token"
    made = tcp_token.obtain(wanted, {})
    assert made.publishes and len(made.value) >= tcp_token.SHORTEST
    assert made.publish(2087) == wanted
    assert wanted.read_text() == made.value + "\n"
    assert stat.S_IMODE(wanted.stat().st_mode) == 0o600
    assert stat.S_IMODE(wanted.parent.stat().st_mode) == 0o700
    made.withdraw()
    assert not wanted.exists()


def test_a_token_is_not_written_into_a_folder_others_can_change(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(tcp_token.TokenError, match="others could replace the token file"):
        tcp_token.write_private(shared / "token", "t" * 20)
    assert os.listdir(shared) == []
