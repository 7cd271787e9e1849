"""Faults from the backend, driven through the loopback server: the server stays up, says
so once, and the next keystroke works as soon as the backend does."""

from __future__ import annotations

import asyncio
import socket

import pytest
from lsprotocol import types

from lsp_spark.testing.cerebras_server import CerebrasTestServer, Fault
from tests.conftest import (
    SEEN,
    StartSpark,
    cerebras_options,
    eventually,
    inline,
    open_document,
    texts,
)


def told(client: object, fragment: str) -> list[str]:
    return [m.message for m in client.messages if fragment in m.message]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "fault",
    [Fault.server_error(), Fault.reset_after(0), Fault.malformed_after(0)],
    ids=["500", "reset-mid-stream", "malformed-event"],
)
async def test_one_failed_stream_costs_only_its_own_keystroke(
    start_spark: StartSpark, cerebras: CerebrasTestServer, fault: Fault
) -> None:
    cerebras.config.queue_faults(fault)
    cerebras.config.default_reply = "1"
    client = await start_spark(cerebras_options(cerebras))
    uri = open_document(client, "x = \n")
    assert texts(await inline(client, uri, 0, 4)) == []
    assert texts(await inline(client, uri, 0, 4)) == ["1"], "the next keystroke works at once"
    assert len(cerebras.completion_requests) == 2
    assert not [m for m in client.messages if m.type == types.MessageType.Error]


async def test_a_stalled_stream_ends_at_the_request_deadline(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.queue_faults(Fault.stall_after(1))
    cerebras.config.queue_replies("a b c d e f", "1")
    client = await start_spark(cerebras_options(cerebras, requestTimeoutMs=300))
    uri = open_document(client, "x = \n")
    # The stall never ends by itself: only the deadline can answer (the wait is a guard).
    assert texts(await asyncio.wait_for(inline(client, uri, 0, 4), SEEN)) == []
    # The test server notices the hang-up on its own thread, a moment after the answer.
    assert await eventually(cerebras, lambda: cerebras.completion_requests[0].client_hung_up)
    assert texts(await inline(client, uri, 0, 4)) == ["1"]


async def test_a_rejected_key_is_told_once_and_not_retried_until_settings_change(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.sticky_fault = Fault.unauthorized()
    options = cerebras_options(cerebras)
    client = await start_spark(options)
    uri = open_document(client, "x = \n")
    for _ in range(4):
        assert texts(await inline(client, uri, 0, 4)) == []
    assert len(cerebras.completion_requests) == 1
    assert len(told(client, "API key")) == 1
    cerebras.config.sticky_fault = None
    cerebras.config.queue_replies("1")
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"lspSpark": options | {"maxTokens": 50}})
    )
    assert texts(await inline(client, uri, 0, 4)) == ["1"]


async def test_an_unreachable_backend_degrades_with_backoff_and_one_message(
    start_spark: StartSpark,
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    client = await start_spark(
        {
            "backend": "cerebras",
            "apiKey": "test-key-not-a-secret",
            "baseUrl": f"http://127.0.0.1:{closed_port}",
            "debounceMs": 0,
            "prefetch": False,
        }
    )
    uri = open_document(client, "x = \n")
    for _ in range(10):
        assert texts(await inline(client, uri, 0, 4)) == []
    stats = await client.protocol.send_request_async("lspSpark/stats", None)
    assert 2 <= stats.upstreamErrors <= 3, "after two failures in a row, asking waits"
    assert len(told(client, "Cannot reach")) == 1


async def test_a_missing_key_is_told_once_when_the_editor_pushes_the_same_settings_again(
    start_spark: StartSpark,
) -> None:
    """Editors push their settings again after `initialized`: the same settings change
    nothing, so what the user was told is not told again."""
    settings = {"backend": "cerebras", "debounceMs": 0, "prefetch": False}
    client = await start_spark(settings)
    uri = open_document(client, "x = \n")
    assert texts(await inline(client, uri, 0, 4)) == []
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"lspSpark": settings})
    )
    for _ in range(3):
        assert texts(await inline(client, uri, 0, 4)) == []
    await client.protocol.send_request_async("lspSpark/stats", None)
    assert len(told(client, "needs an API key")) == 1, told(client, "")
