"""A document's session: ghost text and completion items scheduled alike, and a keystroke
that waited on a request the backend failed answers at once instead of asking again."""

from __future__ import annotations

import asyncio
from typing import Any

from lsprotocol import types

from lsp_spark.testing.cerebras_server import CerebrasTestServer, Fault
from tests.conftest import (
    Hold,
    StartSpark,
    cerebras_options,
    eventually,
    inline,
    open_document,
    texts,
    type_text,
)


async def completion(client: Any, uri: str, line: int, character: int) -> Any:
    return await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri),
            position=types.Position(line, character),
        )
    )


async def test_a_keystroke_that_waited_on_a_failed_request_does_not_ask_again(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    """Each keystroke then waits for one request's deadline at most, not one after another."""
    cerebras.config.queue_faults(Fault.stall_after(0))
    client = await start_spark(cerebras_options(cerebras, requestTimeoutMs=500))
    uri = open_document(client, "for i in \n")
    first = asyncio.ensure_future(inline(client, uri, 0, 9))
    assert await eventually(cerebras, lambda: len(cerebras.completion_requests) == 1)
    type_text(client, uri, 2, 0, 9, "r")
    assert texts(await inline(client, uri, 0, 10)) == []
    assert texts(await first) == []
    assert len(cerebras.completion_requests) == 1
    cerebras.config.queue_replies("ange(10):")
    assert texts(await inline(client, uri, 0, 10)) == ["ange(10):"], "the next keystroke asks"


async def test_completion_items_ride_on_the_request_in_flight_as_ghost_text_does(
    start_spark: StartSpark, cerebras: CerebrasTestServer, hold: Hold
) -> None:
    held = hold(cerebras, "range(10):")
    client = await start_spark(cerebras_options(cerebras, completionDeadlineMs=10000))
    uri = open_document(client, "for i in \n")
    first = asyncio.ensure_future(completion(client, uri, 0, 9))
    assert await eventually(cerebras, lambda: len(cerebras.completion_requests) == 1)
    type_text(client, uri, 2, 0, 9, "r")
    pending = asyncio.ensure_future(completion(client, uri, 0, 10))
    await client.protocol.send_request_async("lspSpark/stats", None)  # read in order: it rides
    held.release()
    second = await pending
    assert [item.text_edit.new_text for item in second.items] == ["range(10):"], "with the r"
    assert [item.text_edit.new_text for item in (await first).items] == ["range(10):"]
    assert len(cerebras.completion_requests) == 1


async def test_no_request_bookkeeping_outlives_its_message(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    """Notifications handled asynchronously (settings, initialized) and commands leave
    nothing behind in the server's table of pending requests."""
    client = await start_spark(cerebras_options(cerebras))
    for _ in range(3):
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings=cerebras_options(cerebras))
        )
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="lspSpark.stats")
    )
    pending = -1
    for _ in range(50):
        stats = await client.protocol.send_request_async("lspSpark/stats", None)
        pending = stats.pendingRequests
        if pending == 0:
            break
    assert pending == 0
