"""Shared fixtures: the real server over stdio, and the Cerebras-compatible loopback server."""

from __future__ import annotations

import asyncio
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import asdict
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from tree_sitter import Tree

from lsp_spark.backends.local import WORKER_THREAD_NAME, LocalBackend
from lsp_spark.documents import ByteEdit
from lsp_spark.testing import isolated_environment
from lsp_spark.testing.cerebras_server import CerebrasTestServer

TEST_KEY = "test-key-not-a-secret"
SERVER_COMMAND = [sys.executable, "-m", "lsp_spark", "serve"]
# The user's own key, settings and config file must never leak into a test run.
EMPTY_CONFIG_HOME = tempfile.mkdtemp(prefix="lsp-spark-test-config-")
SERVER_ENV = isolated_environment(EMPTY_CONFIG_HOME)

StartSpark = Callable[..., Awaitable[LanguageClient]]


def edit_tree(tree: Tree, edit: ByteEdit) -> None:
    """Record a document's edit on a bare tree-sitter tree (which takes only positions)."""
    positions = asdict(edit)
    del positions["blank_after_code"]
    tree.edit(**positions)


@pytest.fixture
def cerebras() -> Iterator[CerebrasTestServer]:
    with CerebrasTestServer(api_key=TEST_KEY, models=["gpt-oss-120b", "qwen-3.8-27b"]) as server:
        yield server


def cerebras_options(server: CerebrasTestServer, **extra: Any) -> dict[str, Any]:
    """Settings for the loopback server; prefetching and next-edit predictions are off
    unless a test is about them, so that counts of upstream requests mean what they say
    (and scripted replies go to the requests they were written for)."""
    return {
        "backend": "cerebras",
        "apiKey": TEST_KEY,
        "baseUrl": server.base_url,
        "debounceMs": 0,
        "prefetch": False,
        "nextEdit": False,
        **extra,
    }


def capabilities(encodings: list[str] | None = None) -> types.ClientCapabilities:
    caps = client_capabilities("visual-studio-code")
    if encodings is not None:
        caps.general = types.GeneralClientCapabilities(position_encodings=encodings)
    return caps


@pytest_asyncio.fixture
async def start_spark() -> AsyncIterator[StartSpark]:
    """Start real server processes; each is shut down (shutdown + exit) afterwards."""
    started: list[LanguageClient] = []

    async def start(
        options: dict[str, Any] | None = None,
        encodings: list[str] | None = None,
        env: dict[str, str] | None = None,
        args: list[str] | None = None,
    ) -> LanguageClient:
        config = ClientServerConfig(
            server_command=[*SERVER_COMMAND, *(args or [])], server_env=SERVER_ENV | (env or {})
        )
        client = await config.start()
        assert isinstance(client, LanguageClient)
        started.append(client)
        client.initialize_result = await client.initialize_session(  # type: ignore[attr-defined]
            types.InitializeParams(
                capabilities=capabilities(encodings), initialization_options=options
            )
        )
        return client

    yield start
    for client in started:
        if client._server is not None and client._server.returncode is None:
            await client.shutdown_session()
        await client.stop()


QUIET = 600.0
"""Seconds between a loopback stream's tokens (or before its first) in tests of what happens
meanwhile: far beyond any wait of theirs, so what the server saw it saw before that token."""
SEEN = 60.0
"""Seconds to wait for something that must happen long before QUIET passes (a hang-up, an
answer): a guard against hanging, not a measure of how soon. Far above what it takes on a
machine whose cores other work keeps busy (under pytest-timeout's 120 s for a whole test)."""


async def eventually(
    server: CerebrasTestServer, condition: Callable[[], bool], timeout: float = SEEN
) -> bool:
    """Wait, without blocking the event loop, for the test server to see something."""
    return await asyncio.to_thread(server.wait_for, condition, timeout)


HOLD_GUARD = 60.0
"""Seconds a held reply waits for its release at most: a hang guard, never reached when the
test releases it (or ends, which releases it too)."""


class HeldReply:
    """The loopback server's completions answered with `reply` only once the test releases
    them: the server's thread waits in `reply_fn` (every other request to it waits too), so
    what the test has the language server do first cannot be raced by the model's answer."""

    def __init__(self, server: CerebrasTestServer, reply: str) -> None:
        self.reply = reply
        self._released = threading.Event()
        server.config.reply_fn = self._answer

    def _answer(self, body: Any) -> str:
        self._released.wait(HOLD_GUARD)
        return self.reply

    def release(self) -> None:
        self._released.set()


Hold = Callable[[CerebrasTestServer, str], HeldReply]


@pytest.fixture
def hold() -> Iterator[Hold]:
    """Hold a loopback server's replies (see `HeldReply`); all are released when the test
    ends. Ask for it after the server's fixture, so it is torn down (released) first."""
    held: list[HeldReply] = []

    def start(server: CerebrasTestServer, reply: str) -> HeldReply:
        held.append(HeldReply(server, reply))
        return held[-1]

    yield start
    for reply in held:
        reply.release()


class HeldWorker:
    """A LocalBackend's next worker thread, held after each piece of text it emits until its
    stream is closed, as if the model were slow: what the test does between two tokens is not
    raced by the model, and while it is held no token is generated. Later workers run free;
    `another_started` is set when the first of them starts."""

    def __init__(self, backend: LocalBackend, monkeypatch: pytest.MonkeyPatch) -> None:
        self.another_started = threading.Event()
        self._claimed = False
        self._lock = threading.Lock()
        work = backend._work

        def held_work(job: Any, cancel: threading.Event, emit: Callable[[Any], None]) -> None:
            with self._lock:
                first, self._claimed = not self._claimed, True
            if not first:
                self.another_started.set()
                work(job, cancel, emit)
                return

            def emit_then_wait(item: Any) -> None:
                emit(item)
                if isinstance(item, str):
                    cancel.wait()

            work(job, cancel, emit_then_wait)

        monkeypatch.setattr(backend, "_work", held_work)


async def local_idle(backend: LocalBackend, timeout: float = HOLD_GUARD) -> None:
    """Until every worker thread has ended (bounded: a hang guard, not a measure of how soon)."""
    for thread in threading.enumerate():
        if thread.name == WORKER_THREAD_NAME:
            await asyncio.to_thread(thread.join, timeout)
    assert not backend.generating, "a worker thread is still generating"


class LoopClock:
    """The running event loop's clock, moved on by the test: a timer comes due when the test
    says, not when a busy machine gets round to it. Real time still flows beneath it, so the
    periods a test moves through are minutes long, far beyond any pause between two steps."""

    def __init__(self) -> None:
        self.offset = 0.0

    def time(self) -> float:
        return time.monotonic() + self.offset

    async def advance(self, seconds: float) -> None:
        """Move the clock on and let the loop run what came due: a timer due now runs on the
        loop's next turn, behind the task that moved the clock."""
        self.offset += seconds
        for _ in range(3):
            await asyncio.sleep(0)


@pytest_asyncio.fixture
async def loop_clock(monkeypatch: pytest.MonkeyPatch) -> LoopClock:
    """The test's event loop on a `LoopClock` (asyncio schedules every timer by `loop.time`)."""
    clock = LoopClock()
    monkeypatch.setattr(asyncio.get_running_loop(), "time", clock.time)
    return clock


def open_document(
    client: LanguageClient,
    text: str,
    uri: str = "file:///work/example.py",
    language: str = "python",
) -> str:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, language, 1, text))
    )
    return uri


def edit_text(
    client: LanguageClient,
    uri: str,
    version: int,
    start: tuple[int, int],
    end: tuple[int, int],
    text: str,
) -> None:
    """One incremental change, as an editor sends it for a keystroke or an accepted suggestion."""
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(types.Position(*start), types.Position(*end)), text=text
                )
            ],
        )
    )


def type_text(
    client: LanguageClient, uri: str, version: int, line: int, character: int, text: str
) -> None:
    edit_text(client, uri, version, (line, character), (line, character), text)


def delete_before(
    client: LanguageClient, uri: str, version: int, line: int, character: int
) -> None:
    """Backspace."""
    edit_text(client, uri, version, (line, character - 1), (line, character), "")


async def inline(
    client: LanguageClient,
    uri: str,
    line: int,
    character: int,
    trigger: types.InlineCompletionTriggerKind = types.InlineCompletionTriggerKind.Automatic,
) -> Any:
    return await client.text_document_inline_completion_async(
        types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri),
            position=types.Position(line, character),
            context=types.InlineCompletionContext(trigger_kind=trigger),
        )
    )


def texts(result: Any) -> list[str]:
    """The texts of an `InlineCompletionList`'s items."""
    return [item.insert_text for item in result.items]
