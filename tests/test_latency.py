"""The latency engine end to end: answers from memory, prefetch, debounce, warm connections."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from lsprotocol import types

from lsp_spark.testing.cerebras_server import CerebrasTestServer
from tests.conftest import (
    StartSpark,
    cerebras_options,
    delete_before,
    eventually,
    inline,
    open_document,
    type_text,
)


def texts(result) -> list[str]:
    return [item.insert_text for item in result.items]


async def closes(client) -> list[str]:
    """Why the server closed upstream streams early, oldest first (from `lspSpark/stats`)."""
    stats = await client.protocol.send_request_async("lspSpark/stats", None)
    return [reason for _, reason in stats.recentStreamCloses]


async def test_typing_through_a_suggestion_is_answered_from_memory(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.queue_replies("range(10):")
    client = await start_spark(cerebras_options(cerebras))
    uri = open_document(client, "for i in \n")
    assert texts(await inline(client, uri, 0, 9)) == ["range(10):"]
    type_text(client, uri, 2, 0, 9, "r")
    assert texts(await inline(client, uri, 0, 10)) == ["ange(10):"]
    type_text(client, uri, 3, 0, 10, "a")
    assert texts(await inline(client, uri, 0, 11)) == ["nge(10):"]
    delete_before(client, uri, 4, 0, 11)
    assert texts(await inline(client, uri, 0, 10)) == ["ange(10):"]
    delete_before(client, uri, 5, 0, 10)
    assert texts(await inline(client, uri, 0, 9)) == ["range(10):"]
    assert len(cerebras.completion_requests) == 1
    stats = await client.protocol.send_request_async("lspSpark/stats", None)
    assert stats.typeThroughHits == 3, "two keystrokes, then a backspace to a typed state"
    assert stats.cacheHits == 4


async def test_typing_something_else_asks_again(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.queue_replies("range(10):", "items:")
    client = await start_spark(cerebras_options(cerebras))
    uri = open_document(client, "for i in \n")
    await inline(client, uri, 0, 9)
    type_text(client, uri, 2, 0, 9, "i")
    assert texts(await inline(client, uri, 0, 10)) == ["items:"]
    assert len(cerebras.completion_requests) == 2


async def test_a_cache_hit_is_never_debounced(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.queue_replies("range(10):")
    client = await start_spark(cerebras_options(cerebras, debounceMs=800))
    uri = open_document(client, "for i in \n")
    started = time.monotonic()
    await inline(client, uri, 0, 9)
    first = time.monotonic() - started
    started = time.monotonic()
    assert texts(await inline(client, uri, 0, 9)) == ["range(10):"]
    second = time.monotonic() - started
    assert first >= 0.8
    assert second < first / 4


async def test_without_the_cache_every_request_goes_upstream(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.queue_replies("range(10):", "range(10):")
    client = await start_spark(cerebras_options(cerebras, cache=False))
    uri = open_document(client, "for i in \n")
    await inline(client, uri, 0, 9)
    await inline(client, uri, 0, 9)
    assert len(cerebras.completion_requests) == 2


async def test_accepting_makes_the_continuation_instant(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.queue_replies("total = 0", "\n    for item in items:")
    client = await start_spark(cerebras_options(cerebras, prefetch=True))
    uri = open_document(client, "def add(items):\n    \n")
    [item] = (await inline(client, uri, 1, 4)).items
    assert item.insert_text == "total = 0"
    cerebras.config.ttft = 0.2
    type_text(client, uri, 2, 1, 4, "total = 0")
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=item.command.command, arguments=item.command.arguments)
    )
    assert (await inline(client, uri, 1, 13)).items == ()
    assert len(cerebras.completion_requests) == 2
    prefetch = cerebras.completion_requests[1]
    assert prefetch.finished
    assert "    total = 0<CURSOR>" in prefetch.body["messages"][-1]["content"]
    type_text(client, uri, 3, 1, 13, "\n    ")
    result = await inline(client, uri, 2, 4)
    assert texts(result) == ["for item in items:"]
    assert len(cerebras.completion_requests) == 2
    stats = await client.protocol.send_request_async("lspSpark/stats", None)
    assert stats.prefetchHits == 2, "the accepted line (nothing to add) and the next line"
    assert stats.accepted == 1


async def test_a_stream_closed_early_is_followed_by_a_fresh_warm_connection(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.tokens_per_second = 100
    cerebras.config.queue_replies("".join(f"step({n})\n    " for n in range(60)))
    client = await start_spark(cerebras_options(cerebras, maxLines=2))
    uri = open_document(client, "def run():\n    \n")
    await asyncio.sleep(0.3)
    warmings = sum(request.path.endswith("tcp_warming") for request in cerebras.requests)
    await inline(client, uri, 1, 4)
    upstream = cerebras.completion_requests[-1]
    assert await eventually(cerebras, lambda: upstream.client_hung_up)
    assert await eventually(
        cerebras,
        lambda: sum(r.path.endswith("tcp_warming") for r in cerebras.requests) > warmings,
    )
    assert await closes(client) == ["earlyStop"]


async def test_debug_logs_break_each_request_down(
    start_spark: StartSpark, cerebras: CerebrasTestServer, tmp_path: Path
) -> None:
    log_file = tmp_path / "server.log"
    cerebras.config.queue_replies("range(10):")
    client = await start_spark(
        cerebras_options(cerebras, logLevel="debug"), args=["--log-file", str(log_file)]
    )
    uri = open_document(client, "for i in \n")
    await inline(client, uri, 0, 9)
    await client.shutdown_session()
    logged = log_file.read_text()
    assert "completion: context" in logged
    assert "first token" in logged and "tokens/s" in logged
    assert "post-processing" in logged


async def test_a_keystroke_that_extends_a_request_in_flight_rides_on_it(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.ttft = 0.3
    cerebras.config.queue_replies("range(10):")
    client = await start_spark(cerebras_options(cerebras))
    uri = open_document(client, "for i in \n")
    first = asyncio.ensure_future(inline(client, uri, 0, 9))
    assert await eventually(cerebras, lambda: len(cerebras.completion_requests) == 1)
    type_text(client, uri, 2, 0, 9, "r")
    second = await inline(client, uri, 0, 10)
    assert texts(second) == ["ange(10):"]
    assert texts(await first) == ["range(10):"]
    assert len(cerebras.completion_requests) == 1
    assert not cerebras.completion_requests[0].client_hung_up


async def test_a_keystroke_the_stream_contradicts_closes_it_and_asks_again(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.ttft = 0.3
    cerebras.config.tokens_per_second = 20
    cerebras.config.queue_replies("range(10): # count to ten", "tems:")
    client = await start_spark(cerebras_options(cerebras))
    uri = open_document(client, "for i in \n")
    first = asyncio.ensure_future(inline(client, uri, 0, 9))
    assert await eventually(cerebras, lambda: len(cerebras.completion_requests) == 1)
    type_text(client, uri, 2, 0, 9, "i")
    assert texts(await inline(client, uri, 0, 10)) == ["tems:"]
    assert (await first).items == (), "its answer no longer fits the line"
    assert len(cerebras.completion_requests) == 2
    stream = cerebras.completion_requests[0]
    assert stream.client_hung_up and stream.tokens_sent <= 2, "closed at the first token"
    assert "contradicted" in await closes(client)


async def test_a_keystroke_the_stream_agrees_with_rides_on_it(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.ttft = 0.3
    cerebras.config.tokens_per_second = 20
    cerebras.config.queue_replies("range(10):")
    client = await start_spark(cerebras_options(cerebras))
    uri = open_document(client, "for i in \n")
    first = asyncio.ensure_future(inline(client, uri, 0, 9))
    assert await eventually(cerebras, lambda: len(cerebras.completion_requests) == 1)
    type_text(client, uri, 2, 0, 9, "r")
    assert texts(await inline(client, uri, 0, 10)) == ["ange(10):"]
    assert texts(await first) == ["range(10):"]
    assert len(cerebras.completion_requests) == 1


async def test_moving_elsewhere_supersedes_the_request_in_flight(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.ttft = 0.3
    cerebras.config.queue_replies("range(10):", "pass")
    client = await start_spark(cerebras_options(cerebras))
    uri = open_document(client, "for i in \nx = \n")
    first = asyncio.ensure_future(inline(client, uri, 0, 9))
    assert await eventually(cerebras, lambda: len(cerebras.completion_requests) == 1)
    assert texts(await inline(client, uri, 1, 4)) == ["pass"]
    assert (await first).items == ()
    assert cerebras.completion_requests[0].client_hung_up
    assert "cancelled" in await closes(client)
