"""The real server process over stdio, against the loopback Cerebras-compatible server."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled

from lsp_spark.prompts.chat import HOLE
from lsp_spark.testing.cerebras_server import CerebrasTestServer, Fault, tokenize
from tests.conftest import (
    QUIET,
    SEEN,
    Hold,
    StartSpark,
    cerebras_options,
    eventually,
    inline,
    open_document,
    texts,
)


def sent_code(request) -> str:
    return request.body["messages"][-1]["content"]


async def test_initialize_advertises_ghost_text_completion_and_incremental_sync(
    start_spark: StartSpark,
) -> None:
    client = await start_spark({"backend": "openai", "baseUrl": "http://127.0.0.1:9"})
    capabilities = client.initialize_result.capabilities
    assert capabilities.inline_completion_provider is not None
    assert capabilities.completion_provider is not None
    sync = capabilities.text_document_sync
    assert getattr(sync, "change", sync) == types.TextDocumentSyncKind.Incremental
    assert capabilities.position_encoding == types.PositionEncodingKind.Utf16


async def test_utf8_is_negotiated_when_offered(start_spark: StartSpark) -> None:
    client = await start_spark(
        {"backend": "openai", "baseUrl": "http://127.0.0.1:9"}, encodings=["utf-8", "utf-16"]
    )
    assert client.initialize_result.capabilities.position_encoding == "utf-8"


async def test_inline_completion_fills_the_hole_through_chat(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.queue_replies("a + b\n")
    client = await start_spark(cerebras_options(cerebras))
    uri = open_document(client, "def add(a, b):\n    return \n\nprint(add(1, 2))\n")
    result = await inline(client, uri, 1, 11)
    assert [item.insert_text for item in result.items] == ["a + b"]
    request = cerebras.completion_requests[-1]
    assert request.body["model"] == "gpt-oss-120b"
    assert request.body["stream"] is True
    assert request.body["max_completion_tokens"] >= 1
    assert f"    return {HOLE}\n\nprint(add(1, 2))" in sent_code(request)


async def test_asking_explicitly_cycles_through_distinct_sampled_alternatives(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    """Typing shows the greedy suggestion alone; the cycle keys (triggerKind Invoked) get it
    first and then alternatives sampled at `alternativesTemperature`, without duplicates."""
    sampled = iter(["a - b", "a - b", "a * b"])

    def reply(body: dict) -> str:
        return "a + b" if body["temperature"] == 0 else next(sampled, "a + b")

    cerebras.config.reply_fn = reply
    client = await start_spark(
        cerebras_options(cerebras, alternatives=3, alternativesTemperature=0.9)
    )
    uri = open_document(client, "def add(a, b):\n    return \n")
    assert texts(await inline(client, uri, 1, 11)) == ["a + b"]
    invoked = await inline(client, uri, 1, 11, types.InlineCompletionTriggerKind.Invoked)
    assert texts(invoked) == ["a + b", "a - b", "a * b"]
    temperatures = [request.body["temperature"] for request in cerebras.completion_requests]
    assert temperatures == [0, 0.9, 0.9, 0.9], "the first suggestion was not asked again"
    assert all(item.command.command == "lspSpark.accepted" for item in invoked.items)


async def test_suggestion_replaces_an_auto_inserted_bracket(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.queue_replies("total, count)")
    client = await start_spark(cerebras_options(cerebras))
    uri = open_document(client, "result = divide()\n")
    result = await inline(client, uri, 0, 16)
    item = result.items[0]
    assert item.insert_text == "total, count)"
    assert item.range == types.Range(types.Position(0, 16), types.Position(0, 17))


async def test_positions_count_utf16_units_before_the_cursor(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.queue_replies("done')")
    client = await start_spark(cerebras_options(cerebras))
    line = "print('😀 中文 "
    uri = open_document(client, line + ")\n")
    utf16_column = len(line.encode("utf-16-le")) // 2
    result = await inline(client, uri, 0, utf16_column)
    assert f"\n{line}{HOLE})\n" in sent_code(cerebras.completion_requests[-1])
    assert result.items[0].range.start == types.Position(0, utf16_column)
    assert result.items[0].range.end == types.Position(0, utf16_column + 1)


async def test_positions_count_utf8_bytes_when_negotiated(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.queue_replies("x")
    client = await start_spark(cerebras_options(cerebras), encodings=["utf-8"])
    line = "s = '😀中' + "
    uri = open_document(client, line + "\n")
    byte_column = len(line.encode())
    result = await inline(client, uri, 0, byte_column)
    assert f"{line}{HOLE}" in sent_code(cerebras.completion_requests[-1])
    assert result.items[0].range.start == types.Position(0, byte_column)


async def test_incremental_changes_reach_the_prompt(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.queue_replies("1")
    client = await start_spark(cerebras_options(cerebras))
    uri = open_document(client, "x = \n")
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(types.Position(0, 0), types.Position(0, 1)), text="total"
                )
            ],
        )
    )
    await inline(client, uri, 0, 8)
    assert f"total = {HOLE}" in sent_code(cerebras.completion_requests[-1])


async def test_completion_fallback_returns_one_item_with_a_text_edit(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.queue_replies("range(10):")
    client = await start_spark(cerebras_options(cerebras, completionDeadlineMs=5000))
    uri = open_document(client, "for i in \n")
    result = await client.text_document_completion_async(
        types.CompletionParams(types.TextDocumentIdentifier(uri), types.Position(0, 9))
    )
    assert result.is_incomplete is False
    [item] = result.items
    assert item.text_edit.new_text == "range(10):"
    assert item.text_edit.range == types.Range(types.Position(0, 9), types.Position(0, 9))


async def test_a_completion_item_replaces_the_word_typed_before_the_cursor(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    """Clients filter their menu by the word before the cursor (`ré`): the item's filter
    text and its edit start there, counted in UTF-8 bytes when that is negotiated."""
    cerebras.config.queue_replies("sult")
    client = await start_spark(
        cerebras_options(cerebras, completionDeadlineMs=5000), encodings=["utf-8"]
    )
    before_word = "s = '😀'; "
    line = before_word + "ré"
    uri = open_document(client, line + "\n")
    word_start, cursor = len(before_word.encode()), len(line.encode())
    result = await client.text_document_completion_async(
        types.CompletionParams(types.TextDocumentIdentifier(uri), types.Position(0, cursor))
    )
    [item] = result.items
    assert item.filter_text == item.label == "résult"
    assert item.text_edit.new_text == "résult"
    assert item.text_edit.range == types.Range(
        types.Position(0, word_start), types.Position(0, cursor)
    )


async def test_a_completion_item_is_plain_text_inserted_as_is(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    """Not a snippet, which clients would parse (dropping `\\` and `$5`) and re-indent: its
    later lines carry their own indentation."""
    suggestion = 'path.split("\\\\") + ["$5"]'
    cerebras.config.queue_replies(suggestion)
    client = await start_spark(cerebras_options(cerebras, completionDeadlineMs=5000))
    uri = open_document(client, "def parts(path):\n    return \n")
    result = await client.text_document_completion_async(
        types.CompletionParams(types.TextDocumentIdentifier(uri), types.Position(1, 11))
    )
    [item] = result.items
    assert item.text_edit.new_text == suggestion
    assert item.kind == types.CompletionItemKind.Text
    assert item.insert_text_format == types.InsertTextFormat.PlainText
    assert item.insert_text_mode == types.InsertTextMode.AsIs


async def test_completion_fallback_never_waits_past_its_deadline(
    start_spark: StartSpark, cerebras: CerebrasTestServer, hold: Hold
) -> None:
    """The model's answer is held until the test ends: only the deadline can answer."""
    hold(cerebras, "range(10):")
    client = await start_spark(
        cerebras_options(cerebras, completionDeadlineMs=100, requestTimeoutMs=120000)
    )
    uri = open_document(client, "for i in \n")
    asked = client.text_document_completion_async(
        types.CompletionParams(types.TextDocumentIdentifier(uri), types.Position(0, 9))
    )
    result = await asyncio.wait_for(asked, SEEN)
    assert result.is_incomplete is True
    assert result.items == ()


async def test_cancel_request_closes_the_upstream_stream(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    """The hang-up reaches the model before its next token (how soon after the cancel:
    benchmarks/replay.py, tokens after cancel)."""
    cerebras.config.tokens_per_second = 1 / QUIET  # the first token at once, the next not
    cerebras.config.queue_replies(" ".join(["word"] * 200))
    client = await start_spark(
        cerebras_options(cerebras, maxTokens=400, maxLines=200, requestTimeoutMs=120000)
    )
    uri = open_document(client, "def f():\n    \n")
    request = asyncio.ensure_future(
        client.protocol.send_request_async(
            types.TEXT_DOCUMENT_INLINE_COMPLETION,
            types.InlineCompletionParams(
                text_document=types.TextDocumentIdentifier(uri),
                position=types.Position(1, 4),
                context=types.InlineCompletionContext(types.InlineCompletionTriggerKind.Invoked),
            ),
            msg_id="to-cancel",
        )
    )
    assert await eventually(
        cerebras,
        lambda: (
            bool(cerebras.completion_requests) and cerebras.completion_requests[-1].tokens_sent >= 1
        ),
        5.0,
    )
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="to-cancel"))
    with pytest.raises(JsonRpcRequestCancelled):
        await request
    upstream = cerebras.completion_requests[-1]
    assert await eventually(cerebras, lambda: upstream.client_hung_up, SEEN)
    assert upstream.tokens_sent == 1, "no token after the cancel"
    assert not upstream.finished
    stats = await client.protocol.send_request_async("lspSpark/stats", None)
    assert [reason for _, reason in stats.recentStreamCloses] == ["cancelled"]


async def test_a_newer_request_supersedes_the_older_stream(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.tokens_per_second = 10
    cerebras.config.queue_replies(" ".join(["slow"] * 200), "fast")
    client = await start_spark(cerebras_options(cerebras, maxTokens=400, maxLines=200))
    uri = open_document(client, "def f():\n    \n")
    first = asyncio.ensure_future(inline(client, uri, 1, 4))
    assert await eventually(
        cerebras,
        lambda: (
            len(cerebras.completion_requests) == 1
            and cerebras.completion_requests[0].tokens_sent >= 1
        ),
        5.0,
    )
    cerebras.config.tokens_per_second = None
    second = await inline(client, uri, 1, 4)
    assert [item.insert_text for item in second.items] == ["fast"]
    assert (await first).items == ()
    assert await eventually(cerebras, lambda: cerebras.completion_requests[0].client_hung_up)


async def test_the_stream_is_closed_once_the_suggestion_is_complete(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    """Four lines, then a stall: a stream that never ends by itself, so the answer and the
    hang-up can only come from the server seeing the suggestion complete."""
    four_lines = "".join(f"step({n})\n    " for n in range(4))
    cerebras.config.queue_replies("".join(f"step({n})\n    " for n in range(60)))
    cerebras.config.queue_faults(Fault.stall_after(len(tokenize(four_lines))))
    client = await start_spark(
        cerebras_options(cerebras, maxTokens=400, maxLines=3, requestTimeoutMs=120000)
    )
    uri = open_document(client, "def run():\n    \n")
    result = await asyncio.wait_for(inline(client, uri, 1, 4), SEEN)
    assert result.items[0].insert_text == "step(0)\n    step(1)\n    step(2)"
    upstream = cerebras.completion_requests[-1]
    assert await eventually(cerebras, lambda: upstream.client_hung_up, SEEN)
    stats = await client.protocol.send_request_async("lspSpark/stats", None)
    assert [reason for _, reason in stats.recentStreamCloses] == ["earlyStop"]


async def test_single_line_requests_ask_the_provider_to_stop_at_the_newline(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.queue_replies("x, y)\nprint('more')\n")
    client = await start_spark(cerebras_options(cerebras))
    uri = open_document(client, "point = make()\n")
    result = await inline(client, uri, 0, 13)
    assert result.items[0].insert_text == "x, y)"
    assert cerebras.completion_requests[-1].body["stop"] == ["\n"]


@pytest.mark.parametrize(
    ("text", "misfit", "header"),
    [
        (
            "def multiply(x, y):\n    \n        return -multiply(x, -y)\n",
            "return x * y",
            "if y < 0:",
        ),
        (
            "def gcd(a, b):\n    \n        return b\n    elif a == 1:\n        return 1\n",
            "while a >= b:",
            "if a == 0:",
        ),
    ],
    ids=["a-statement-would-strand-the-body", "an-elif-follows-the-body"],
)
async def test_above_deeper_code_only_a_header_that_fits_is_shown(
    start_spark: StartSpark, cerebras: CerebrasTestServer, text: str, misfit: str, header: str
) -> None:
    cerebras.config.queue_replies(misfit + "\n", header + "\n")
    client = await start_spark(cerebras_options(cerebras))
    dropped = await inline(client, open_document(client, text, "file:///tmp/a.py"), 1, 4)
    assert not (dropped.items if dropped else [])
    shown = await inline(client, open_document(client, text, "file:///tmp/b.py"), 1, 4)
    assert [item.insert_text for item in shown.items] == [header]


async def test_settings_change_switches_the_model(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    options = cerebras_options(cerebras, maxTokens=7)
    client = await start_spark(options)
    uri = open_document(client, "x = \n")
    await inline(client, uri, 0, 4)
    del options["maxTokens"]
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"lspSpark": options | {"model": "qwen-3.8-27b"}, "pylsp": {"plugins": {}}}
        )
    )
    await inline(client, uri, 0, 4)
    assert [r.body["model"] for r in cerebras.completion_requests] == [
        "gpt-oss-120b",
        "qwen-3.8-27b",
    ]
    limits = [r.body["max_completion_tokens"] for r in cerebras.completion_requests]
    assert limits[1] > limits[0], "a setting removed in the editor goes back to its default"
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"pylsp": {"plugins": {}}})
    )
    await inline(client, uri, 0, 4)
    assert not [m for m in client.messages if "ignored settings" in m.message], (
        "other servers' sections are not ours to complain about"
    )


async def test_invalid_settings_give_one_message_and_keep_working(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.queue_replies("1", "2")
    client = await start_spark(cerebras_options(cerebras, maxTokens="many", colour="red"))
    uri = open_document(client, "x = \n")
    assert (await inline(client, uri, 0, 4)).items[0].insert_text == "1"
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"lspSpark": cerebras_options(cerebras, colour="red")}
        )
    )
    assert (await inline(client, uri, 0, 4)).items[0].insert_text == "1"
    warnings = [m.message for m in client.messages if "ignored settings" in m.message]
    assert len(warnings) == 1
    assert "maxTokens" in warnings[0] and "colour" in warnings[0]


async def test_bad_requests_get_empty_answers_not_crashes(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.queue_replies("pass")
    client = await start_spark(cerebras_options(cerebras))
    unknown = await inline(client, "file:///never/opened.py", 0, 0)
    assert unknown.items == ()
    empty = open_document(client, "", uri="file:///work/empty.py")
    await inline(client, empty, 0, 0)
    uri = open_document(client, "x = 1\n")
    past_end = await inline(client, uri, 99, 99)
    assert past_end is not None
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri="file:///nope.py", version=3),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text="y")],
        )
    )
    assert (await inline(client, uri, 0, 5)) is not None


async def test_no_key_gives_empty_results_and_a_single_message(start_spark: StartSpark) -> None:
    client = await start_spark({"backend": "cerebras"})
    uri = open_document(client, "x = \n")
    for _ in range(4):
        assert (await inline(client, uri, 0, 4)).items == ()
    about_key = [m for m in client.messages if "API key" in m.message]
    assert len(about_key) == 1


async def test_stats_request_reports_what_happened(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.queue_replies("1")
    client = await start_spark(cerebras_options(cerebras))
    uri = open_document(client, "x = \n")
    await inline(client, uri, 0, 4)
    await inline(client, uri, 0, 4)
    stats = await client.protocol.send_request_async("lspSpark/stats", None)
    assert stats.backend == "cerebras"
    assert stats.upstreamRequests == 1
    assert stats.cacheHits == 1
    command = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="lspSpark.stats")
    )
    assert command["requests"] == 2


async def test_a_late_fallback_answer_is_served_when_asked_again(
    start_spark: StartSpark, cerebras: CerebrasTestServer, hold: Hold
) -> None:
    """The model answers only after the first ask has gone back empty; asking again (until
    the answer has landed: each ask rides on the request in flight or reads the cache) gets
    it without a second upstream request."""
    held = hold(cerebras, "range(3):")
    client = await start_spark(cerebras_options(cerebras, completionDeadlineMs=50))
    uri = open_document(client, "for i in \n")
    params = types.CompletionParams(types.TextDocumentIdentifier(uri), types.Position(0, 9))
    first = await client.text_document_completion_async(params)
    assert first.is_incomplete is True
    held.release()
    assert await eventually(cerebras, lambda: cerebras.completion_requests[-1].finished, SEEN)
    for _ in range(200):
        second = await client.text_document_completion_async(params)
        if second.items or not second.is_incomplete:
            break
        await asyncio.sleep(0.05)
    assert [item.text_edit.new_text for item in second.items] == ["range(3):"]
    assert len(cerebras.completion_requests) == 1


async def test_rate_limit_is_told_once_and_honoured(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.queue_faults(Fault.rate_limit(retry_after=30))
    client = await start_spark(cerebras_options(cerebras))
    uri = open_document(client, "x = \n")
    for _ in range(5):
        assert (await inline(client, uri, 0, 4)).items == ()
    assert len(cerebras.completion_requests) == 1
    told = [message for message in client.messages if "rate limit" in message.message]
    assert len(told) == 1


async def test_the_embedded_model_gives_ghost_text_with_no_network(start_spark: StartSpark) -> None:
    client = await start_spark({"backend": "local", "debounceMs": 0})
    uri = open_document(client, "def area(width, height):\n    ret\n")
    result = await inline(client, uri, 1, 7)
    assert result.items
    assert result.items[0].insert_text.startswith("urn")
    stats = await client.protocol.send_request_async("lspSpark/stats", None)
    assert stats.backend == "local"


async def test_an_unknown_model_is_reported_once_in_the_background(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    client = await start_spark(cerebras_options(cerebras, model="no-such-model"))
    await client.wait_for_notification(types.WINDOW_SHOW_MESSAGE)
    [message] = [m.message for m in client.messages if "no-such-model" in m.message]
    assert "gpt-oss-120b" in message


async def test_a_cancelled_request_superseded_at_once_gives_its_connection_back(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    """Rounds of `$/cancelRequest` plus the next keystroke on a streaming request leave the
    server answering: a connection leaked per round would exhaust the pool of ten (the
    race behind that leak is pinned down in test_scheduler)."""
    cerebras.config.tokens_per_second = 50
    cerebras.config.default_reply = " word" * 100
    client = await start_spark(cerebras_options(cerebras, cache=False, maxTokens=400))
    uri = open_document(client, "x = \n")
    for round_ in range(12):
        request = asyncio.ensure_future(
            client.protocol.send_request_async(
                types.TEXT_DOCUMENT_INLINE_COMPLETION,
                types.InlineCompletionParams(
                    text_document=types.TextDocumentIdentifier(uri),
                    position=types.Position(0, 4),
                    context=types.InlineCompletionContext(
                        types.InlineCompletionTriggerKind.Automatic
                    ),
                ),
                msg_id=f"round-{round_}",
            )
        )
        assert await eventually(
            cerebras,
            lambda n=round_ + 1: (
                len(cerebras.completion_requests) == 2 * n - 1
                and cerebras.completion_requests[-1].tokens_sent >= 1
            ),
            5.0,
        )
        client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=f"round-{round_}"))
        superseding = asyncio.ensure_future(inline(client, uri, 0, 3))
        with pytest.raises(JsonRpcRequestCancelled):
            await request
        await superseding
    cerebras.config.tokens_per_second = None
    cerebras.config.default_reply = "1"
    assert [item.insert_text for item in (await inline(client, uri, 0, 4)).items] == ["1"]
