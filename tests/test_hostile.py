"""Hostile backends on 127.0.0.1: answers that trickle without end, an event line or a body
that never ends, a web page where the API should be, a head that never completes, a reset
mid-stream. Each request ends, the next one works, and memory stays bounded."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from lsprotocol import types

from lsp_spark.backends import BackendError, FailureKind
from lsp_spark.backends.http import ApiClient
from lsp_spark.stats import STATS_METHOD
from lsp_spark.testing.cerebras_server import CerebrasTestServer, Fault
from tests.conftest import (
    TEST_KEY,
    StartSpark,
    cerebras_options,
    eventually,
    inline,
    open_document,
    texts,
)

CHAT = "/v1/chat/completions"
BODY = {"model": "gpt-oss-120b", "messages": [{"role": "user", "content": "x"}], "stream": True}
TIMEOUT = 1.0


def client(server: CerebrasTestServer) -> ApiClient:
    return ApiClient(
        server.base_url,
        service="loopback",
        api_key=TEST_KEY,
        skip_malformed=False,
        warm_path="/v1/tcp_warming",
    )


async def text_of(http: ApiClient) -> str:
    pieces = []
    async with contextlib.aclosing(http.events(CHAT, BODY, TIMEOUT)) as events:
        async for payload in events:
            for choice in payload.get("choices") or []:
                pieces.append(choice.get("delta", {}).get("content") or "")
    return "".join(pieces)


@pytest.mark.parametrize(
    ("fault", "kind", "says"),
    [
        (Fault.trickle(0.05), FailureKind.TIMED_OUT, "timed out"),
        (Fault.slow_head(0.05), FailureKind.TIMED_OUT, "timed out"),
        (Fault.endless_event(), FailureKind.BAD_RESPONSE, "event longer than"),
        (Fault.huge_body(), FailureKind.BAD_RESPONSE, "event longer than"),
        (Fault.web_page(), FailureKind.NOT_AN_API, "does not answer as the API does"),
        (Fault.reset_after(1), FailureKind.UNAVAILABLE, "broke the connection"),
    ],
    ids=["trickle", "slow-head", "endless-event", "huge-body", "web-page", "reset"],
)
async def test_a_hostile_answer_ends_the_request_and_the_next_one_works(
    cerebras: CerebrasTestServer, fault: Fault, kind: FailureKind, says: str
) -> None:
    cerebras.config.queue_faults(fault)
    cerebras.config.default_reply = "after all"
    http = client(cerebras)
    try:
        with pytest.raises(BackendError, match=says) as raised:
            await text_of(http)
        assert raised.value.kind is kind
        assert await text_of(http) == "after all"
    finally:
        await http.aclose()
    if fault.kind.value != "web_page":
        hostile = cerebras.completion_requests[0]
        assert await eventually(cerebras, lambda: hostile.completed_at is not None)


async def test_a_web_page_is_named_with_the_address_but_never_the_credentials(
    cerebras: CerebrasTestServer,
) -> None:
    cerebras.config.queue_faults(Fault.web_page())
    base = cerebras.base_url.replace("http://", "http://user:hunter2@")
    http = ApiClient(
        base, service="loopback", api_key=TEST_KEY, skip_malformed=False, warm_path="/"
    )
    try:
        with pytest.raises(BackendError) as raised:
            await text_of(http)
    finally:
        await http.aclose()
    assert cerebras.base_url in str(raised.value)
    assert "hunter2" not in str(raised.value)


async def test_a_json_document_past_the_size_cap_is_refused() -> None:
    """A GET for JSON is read whole before parsing, so only the cap stops a huge body."""
    huge = {("GET", "/huge"): lambda _: " " * (17 * 1024 * 1024)}
    with CerebrasTestServer(api_key=TEST_KEY, routes=huge) as server:
        http = client(server)
        try:
            with pytest.raises(BackendError, match="more than 16 MiB"):
                await http.get_json("/huge", 10.0)
            assert "gpt-oss-120b" in str(await http.get_json("/v1/models", TIMEOUT))
        finally:
            await http.aclose()


def told(client: object, fragment: str) -> list[str]:
    return [m.message for m in client.messages if fragment in m.message]  # type: ignore[attr-defined]


def peak_rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1])


async def test_a_trickling_backend_is_cut_at_the_request_deadline_and_told_once(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    """`requestTimeoutMs` bounds the whole request: a stream that is never silent for long
    still ends there, and the user hears of it once for the burst, not once per keystroke."""
    cerebras.config.sticky_fault = Fault.trickle(0.05)
    client = await start_spark(cerebras_options(cerebras, requestTimeoutMs=500))
    uri = open_document(client, "x = \n")
    for _ in range(3):
        assert (await inline(client, uri, 0, 4)).items == ()
    assert len(cerebras.completion_requests) >= 2
    assert await eventually(
        cerebras, lambda: all(r.client_hung_up for r in cerebras.completion_requests)
    )
    assert len(told(client, "timed out")) == 1
    cerebras.config.sticky_fault = None
    cerebras.config.queue_replies("1")
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings=cerebras_options(cerebras))
    )
    assert [item.insert_text for item in (await inline(client, uri, 0, 4)).items] == ["1"]


@pytest.mark.parametrize(
    "fault", [Fault.endless_event(), Fault.huge_body()], ids=["endless-event", "huge-body"]
)
async def test_an_endless_answer_costs_the_server_little_memory(
    start_spark: StartSpark, cerebras: CerebrasTestServer, fault: Fault
) -> None:
    cerebras.config.queue_faults(fault)
    cerebras.config.default_reply = "1"
    client = await start_spark(cerebras_options(cerebras))
    pid = client._server.pid  # type: ignore[union-attr]
    uri = open_document(client, "x = \n")
    before = peak_rss_kib(pid)
    assert (await inline(client, uri, 0, 4)).items == ()
    grown = peak_rss_kib(pid) - before
    assert grown < 64 * 1024, f"peak memory grew by {grown} KiB"
    hostile = cerebras.completion_requests[0]
    assert await eventually(cerebras, lambda: hostile.client_hung_up)
    assert [item.insert_text for item in (await inline(client, uri, 0, 4)).items] == ["1"]


async def test_a_base_url_that_is_a_web_page_gets_one_message_naming_it(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.sticky_fault = Fault.web_page()
    client = await start_spark(cerebras_options(cerebras))
    uri = open_document(client, "x = \n")
    for _ in range(4):
        assert (await inline(client, uri, 0, 4)).items == ()
    messages = told(client, "does not answer as the API does")
    assert len(messages) == 1
    assert cerebras.base_url in messages[0]


async def test_an_explicit_request_to_a_trickling_backend_asks_nothing_past_its_one_deadline(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    """The cycle keys' request (triggerKind Invoked) has one `requestTimeoutMs` for the
    suggestion and its alternatives: once the suggestion's stream used it up, no
    alternative is asked (each used to get a deadline of its own, twice the wait)."""
    cerebras.config.sticky_fault = Fault.trickle(0.05)
    client = await start_spark(cerebras_options(cerebras, requestTimeoutMs=500, alternatives=2))
    uri = open_document(client, "x = \n")
    assert (await inline(client, uri, 0, 4, types.InlineCompletionTriggerKind.Invoked)).items == ()
    stats = await client.protocol.send_request_async(STATS_METHOD, None)
    assert stats.upstreamRequests == 1, "an alternative was asked after the deadline"
    assert stats.streamCloses.deadline == 1
    assert len(cerebras.completion_requests) == 1
    assert await eventually(cerebras, lambda: cerebras.completion_requests[0].client_hung_up)
    assert len(told(client, "timed out")) == 1


async def test_an_alternative_that_trickles_is_cut_at_the_request_deadline(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    """The suggestion comes at once (from memory), the alternative trickles: its stream is
    closed when the request's deadline passes (`deadline`), which comes before the one the
    backend arms for that stream alone (it would close as `failed`), and the suggestion is
    still answered."""
    cerebras.config.queue_replies("1")
    client = await start_spark(cerebras_options(cerebras, requestTimeoutMs=500, alternatives=2))
    uri = open_document(client, "x = \n")
    assert texts(await inline(client, uri, 0, 4)) == ["1"]
    cerebras.config.sticky_fault = Fault.trickle(0.05)
    invoked = await inline(client, uri, 0, 4, types.InlineCompletionTriggerKind.Invoked)
    assert texts(invoked) == ["1"]
    stats = await client.protocol.send_request_async(STATS_METHOD, None)
    assert stats.streamCloses._asdict() == {"deadline": 1}
    assert len(cerebras.completion_requests) == 2, "an alternative was asked after the deadline"
    alternative = cerebras.completion_requests[1]
    assert alternative.body["temperature"] > 0
    assert await eventually(cerebras, lambda: alternative.client_hung_up)
