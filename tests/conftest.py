"""Shared fixtures: the real server over stdio, and the Cerebras-compatible loopback server."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import asdict
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from tree_sitter import Tree

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
    """Settings for the loopback server; prefetching is off unless a test is about it,
    so that counts of upstream requests mean what they say."""
    return {
        "backend": "cerebras",
        "apiKey": TEST_KEY,
        "baseUrl": server.base_url,
        "debounceMs": 0,
        "prefetch": False,
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


async def eventually(
    server: CerebrasTestServer, condition: Callable[[], bool], timeout: float = 2.0
) -> bool:
    """Wait, without blocking the event loop, for the test server to see something."""
    return await asyncio.to_thread(server.wait_for, condition, timeout)


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


async def inline(client: LanguageClient, uri: str, line: int, character: int) -> Any:
    return await client.text_document_inline_completion_async(
        types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri),
            position=types.Position(line, character),
            context=types.InlineCompletionContext(
                trigger_kind=types.InlineCompletionTriggerKind.Automatic
            ),
        )
    )
