"""The latency engine end to end: answers from memory, prefetch, debounce, warm connections."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsprotocol import types

from lsp_spark.testing.cerebras_server import CerebrasTestServer, Fault, tokenize
from tests.conftest import (
    SEEN,
    StartSpark,
    cerebras_options,
    delete_before,
    eventually,
    inline,
    open_document,
    texts,
    type_text,
)


async def backend_prepared(client, cerebras: CerebrasTestServer) -> None:
    """Until the backend's preparation (a warm-up, then the model list) is over and its
    connection is back in the pool, idle (`lspSpark/stats`)."""
    assert await eventually(
        cerebras, lambda: any(r.path == "/v1/models" and r.completed_at for r in cerebras.requests)
    )
    for _ in range(500):
        stats = await client.protocol.send_request_async("lspSpark/stats", None)
        if stats.activeConnections == 0:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"a connection stayed in use: {stats}")


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
    """A request that must ask the model waits out the debounce (the longest there is); a
    cache hit asked right behind it is answered while that one still waits."""
    cerebras.config.queue_replies("range(10):", "1")
    client = await start_spark(cerebras_options(cerebras, debounceMs=2000))
    uri = open_document(client, "for i in \n")
    other = open_document(client, "x = \n", uri="file:///work/other.py")
    await inline(client, uri, 0, 9)
    waiting = asyncio.wrap_future(
        client.protocol.send_request(  # sent now, ahead of the cache hit
            types.TEXT_DOCUMENT_INLINE_COMPLETION,
            types.InlineCompletionParams(
                text_document=types.TextDocumentIdentifier(other),
                position=types.Position(0, 4),
                context=types.InlineCompletionContext(types.InlineCompletionTriggerKind.Automatic),
            ),
        )
    )
    assert texts(await inline(client, uri, 0, 9)) == ["range(10):"]
    assert len(cerebras.completion_requests) == 1, "the hit went before the debounced request"
    assert not waiting.done()
    assert texts(await waiting) == ["1"]
    assert len(cerebras.completion_requests) == 2
    stats = await client.protocol.send_request_async("lspSpark/stats", None)
    assert stats.cacheHits == 1


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
    """Three lines, then a stall: only the server seeing the suggestion complete ends it.
    The request goes out on the connection warmed at start, so none is left warm after."""
    three_lines = "".join(f"step({n})\n    " for n in range(3))
    cerebras.config.queue_replies("".join(f"step({n})\n    " for n in range(60)))
    cerebras.config.queue_faults(Fault.stall_after(len(tokenize(three_lines))))
    client = await start_spark(cerebras_options(cerebras, maxLines=2, requestTimeoutMs=120000))
    uri = open_document(client, "def run():\n    \n")

    def warmings() -> int:
        return sum(request.path.endswith("tcp_warming") for request in cerebras.requests)

    await backend_prepared(client, cerebras)
    assert warmings() == 1, "warmed at start"
    await asyncio.wait_for(inline(client, uri, 1, 4), SEEN)
    upstream = cerebras.completion_requests[-1]
    assert await eventually(cerebras, lambda: upstream.client_hung_up, SEEN)
    assert await eventually(cerebras, lambda: warmings() == 2, SEEN)
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
    """The keystroke lands before the first token (0.3 s), or on a busy machine before the
    second, 2 s later: the stream is closed at the token that follows it, not run on."""
    cerebras.config.ttft = 0.3
    cerebras.config.tokens_per_second = 0.5
    cerebras.config.queue_replies("range(10): # count to ten", "tems")  # one token: at once
    client = await start_spark(cerebras_options(cerebras))
    uri = open_document(client, "for i in \n")
    first = asyncio.ensure_future(inline(client, uri, 0, 9))
    assert await eventually(cerebras, lambda: len(cerebras.completion_requests) == 1)
    type_text(client, uri, 2, 0, 9, "i")
    assert texts(await inline(client, uri, 0, 10)) == ["tems"]
    assert (await first).items == (), "its answer no longer fits the line"
    assert len(cerebras.completion_requests) == 2
    stream = cerebras.completion_requests[0]
    assert await eventually(cerebras, lambda: stream.client_hung_up, SEEN)
    assert stream.tokens_sent <= 2, "closed at the first token after the keystroke"
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
    cerebras.config.queue_faults(Fault.stall_after(0))  # in flight until superseded
    cerebras.config.queue_replies("range(10):", "pass")
    client = await start_spark(cerebras_options(cerebras))
    uri = open_document(client, "for i in \nx = \n")
    first = asyncio.ensure_future(inline(client, uri, 0, 9))
    assert await eventually(cerebras, lambda: len(cerebras.completion_requests) == 1)
    assert texts(await inline(client, uri, 1, 4)) == ["pass"]
    assert (await first).items == ()
    assert await eventually(cerebras, lambda: cerebras.completion_requests[0].client_hung_up)
    assert "cancelled" in await closes(client)
