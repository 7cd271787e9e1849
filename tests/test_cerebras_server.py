"""The fake Cerebras endpoint must match the real wire format, or every test built on it lies."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cerebras.cloud.sdk import AsyncCerebras, AsyncStream, AuthenticationError, RateLimitError
from cerebras.cloud.sdk.types.chat.chat_completion import ChatChunkResponse, ChatCompletionResponse

from lsp_spark.testing.cerebras_server import (
    DEFAULT_MODELS,
    THREAD_NAME,
    CerebrasTestServer,
    Fault,
    RecordedRequest,
    tokenize,
)

MODEL = "llama3.1-8b"
REPLY = "def add(a, b):\n    return a + b\n"
LONG_REPLY = " ".join(f"word{i}" for i in range(40))
REPO_ROOT = Path(__file__).resolve().parents[1]
QUIET = 600.0
"""Seconds until the next token is due: far beyond GUARD, so what the server notices
meanwhile it noticed between tokens."""
GUARD = 60.0
"""Seconds to wait for something the server must see long before QUIET passes."""


@pytest.fixture
def server() -> Iterator[CerebrasTestServer]:
    with CerebrasTestServer() as srv:
        yield srv
    assert srv.errors == []


@pytest.fixture
async def http(server: CerebrasTestServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server.base_url, timeout=5.0) as client:
        yield client


@pytest.fixture
async def sdk(server: CerebrasTestServer) -> AsyncIterator[AsyncCerebras]:
    client = AsyncCerebras(
        api_key="k", base_url=server.base_url, warm_tcp_connection=False, max_retries=0
    )
    yield client
    await client.close()


def chat_body(**extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": [{"role": "user", "content": "add two numbers"}], **extra}


def text_body(**extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "prompt": "def add(a, b):", **extra}


async def sse_data(response: httpx.Response) -> list[str]:
    return [line[6:] async for line in response.aiter_lines() if line.startswith("data: ")]


async def stream_events(
    http: httpx.AsyncClient, path: str, body: dict[str, Any]
) -> tuple[httpx.Response, list[str]]:
    async with http.stream("POST", path, json={**body, "stream": True}) as response:
        return response, await sse_data(response)


def content_of(chunks: list[dict[str, Any]]) -> str:
    return "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)


def test_tokenize_round_trips_in_bpe_sized_pieces() -> None:
    text = "def compute_average(values: list[float]) -> float:\n    return sum(values) / 42\n"
    tokens = tokenize(text)
    assert "".join(tokens) == text
    assert 2.5 <= len(text) / len(tokens) <= 5
    assert tokenize("  hello world") == ["  ", "hello", " world"]


async def test_streamed_chat_has_the_cerebras_chunk_shape(
    server: CerebrasTestServer, http: httpx.AsyncClient
) -> None:
    server.config.queue_replies(REPLY)
    response, events = await stream_events(http, "/v1/chat/completions", chat_body())

    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["transfer-encoding"] == "chunked"
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    *content, final = chunks
    assert len(content) == len(tokenize(REPLY))
    assert content_of(content) == REPLY
    for i, chunk in enumerate(chunks):
        assert chunk["id"].startswith("chatcmpl-")
        assert chunk["id"] == chunks[0]["id"]
        assert chunk["object"] == "chat.completion.chunk"
        assert isinstance(chunk["created"], int)
        assert chunk["model"] == MODEL
        assert chunk["system_fingerprint"].startswith("fp_")
        [choice] = chunk["choices"]
        assert choice["index"] == 0
        if chunk is not final:
            assert choice["finish_reason"] is None
            assert ("role" in choice["delta"]) == (i == 0)
    assert content[0]["choices"][0]["delta"]["role"] == "assistant"
    assert final["choices"][0]["finish_reason"] == "stop"
    assert final["choices"][0]["delta"] == {}
    usage = final["usage"]
    assert usage["completion_tokens"] == len(content)
    assert usage["prompt_tokens"] == len(tokenize("add two numbers"))
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert {"queue_time", "prompt_time", "completion_time", "total_time"} <= set(final["time_info"])

    [record] = server.completion_requests
    assert record.method == "POST"
    assert record.body["stream"] is True
    assert record.headers["content-type"] == "application/json"
    assert record.reply == REPLY
    assert record.tokens_sent == len(content)
    assert record.finished
    assert not record.client_hung_up


async def test_keep_alive_reuses_one_connection_until_close_is_asked(
    server: CerebrasTestServer, http: httpx.AsyncClient
) -> None:
    for _ in range(2):
        _, events = await stream_events(http, "/v1/chat/completions", chat_body())
        assert events[-1] == "[DONE]"
    assert server.connections_accepted == 1
    assert {r.connection_id for r in server.requests} == {1}

    closing = await http.get("/v1/models", headers={"connection": "close"})
    assert closing.headers["connection"] == "close"
    await http.get("/v1/models")
    assert server.connections_accepted == 2


def test_pipelined_requests_on_a_raw_socket_are_both_answered(server: CerebrasTestServer) -> None:
    request = f"GET /v1/models HTTP/1.1\r\nhost: {server.base_url[7:]}\r\n\r\n".encode()
    last = request.replace(b"\r\n\r\n", b"\r\nconnection: close\r\n\r\n")
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(request + last)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    assert received.count(b"HTTP/1.1 200 OK") == 2
    assert len(server.requests) == 2
    assert server.connections_accepted == 1


def test_http_1_0_stream_is_close_delimited(server: CerebrasTestServer) -> None:
    server.config.queue_replies("a b c")
    body = json.dumps(chat_body(stream=True)).encode()
    head = f"POST /v1/chat/completions HTTP/1.0\r\ncontent-length: {len(body)}\r\n\r\n"
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(head.encode() + body)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head_bytes, _, payload = received.partition(b"\r\n\r\n")
    assert b"transfer-encoding" not in head_bytes.lower()
    assert b"connection: close" in head_bytes.lower()
    events = [line[6:] for line in payload.decode().split("\n\n") if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    assert content_of([json.loads(e) for e in events[:-2]]) == "a b c"


async def test_non_streamed_chat_and_text_completions(
    server: CerebrasTestServer, http: httpx.AsyncClient
) -> None:
    server.config.queue_replies("x + y", "return a")
    chat = (await http.post("/v1/chat/completions", json=chat_body())).json()
    assert chat["object"] == "chat.completion"
    assert chat["id"].startswith("chatcmpl-")
    assert chat["system_fingerprint"].startswith("fp_")
    assert chat["choices"][0]["message"] == {"role": "assistant", "content": "x + y"}
    assert chat["choices"][0]["finish_reason"] == "stop"
    assert chat["usage"]["completion_tokens"] == len(tokenize("x + y"))

    text = await http.post("/v1/completions", json=text_body(suffix="\n\nprint(add(1, 2))"))
    body = text.json()
    assert body["object"] == "text_completion"
    assert body["choices"][0]["text"] == "return a"
    assert body["choices"][0]["finish_reason"] == "stop"
    assert server.completion_requests[-1].suffix == "\n\nprint(add(1, 2))"
    assert server.completion_requests[-1].finished


async def test_streamed_text_completion(
    server: CerebrasTestServer, http: httpx.AsyncClient
) -> None:
    server.config.queue_replies(REPLY)
    _, events = await stream_events(http, "/v1/completions", text_body())
    assert events[-1] == "[DONE]"
    *content, final = [json.loads(e) for e in events[:-1]]
    assert all(c["object"] == "text_completion" for c in content)
    assert "".join(c["choices"][0]["text"] for c in content) == REPLY
    assert final["choices"][0]["finish_reason"] == "stop"
    assert final["usage"]["completion_tokens"] == len(content)


async def test_stop_sequences_cut_before_the_earliest_match(
    server: CerebrasTestServer, http: httpx.AsyncClient
) -> None:
    server.config.queue_replies(REPLY, REPLY)
    whole = await http.post("/v1/chat/completions", json=chat_body(stop=["\n    ", "("]))
    assert whole.json()["choices"][0]["message"]["content"] == "def add"
    assert whole.json()["choices"][0]["finish_reason"] == "stop"

    _, events = await stream_events(http, "/v1/completions", text_body(stop="+"))
    *content, final = [json.loads(e) for e in events[:-1]]
    assert "".join(c["choices"][0]["text"] for c in content) == "def add(a, b):\n    return a "
    assert final["choices"][0]["finish_reason"] == "stop"


async def test_max_tokens_truncates_with_finish_reason_length(
    server: CerebrasTestServer, http: httpx.AsyncClient
) -> None:
    server.config.queue_replies(REPLY, REPLY, REPLY)
    _, events = await stream_events(http, "/v1/chat/completions", chat_body(max_tokens=3))
    *content, final = [json.loads(e) for e in events[:-1]]
    assert content_of(content) == "".join(tokenize(REPLY)[:3])
    assert final["choices"][0]["finish_reason"] == "length"
    assert final["usage"]["completion_tokens"] == 3

    body = chat_body(max_completion_tokens=2)
    whole = (await http.post("/v1/chat/completions", json=body)).json()
    assert whole["choices"][0]["message"]["content"] == "def add"
    assert whole["choices"][0]["finish_reason"] == "length"

    enough = chat_body(max_tokens=len(tokenize(REPLY)))
    whole = (await http.post("/v1/chat/completions", json=enough)).json()
    assert whole["choices"][0]["finish_reason"] == "stop"


async def test_reply_sources_queue_then_function_then_default(
    server: CerebrasTestServer, http: httpx.AsyncClient
) -> None:
    server.config.default_reply = "default"
    server.config.queue_replies("queued")
    server.config.reply_fn = lambda body: f"fn:{body['messages'][-1]['content']}"

    async def reply() -> str:
        response = await http.post("/v1/chat/completions", json=chat_body())
        return response.json()["choices"][0]["message"]["content"]

    assert await reply() == "queued"
    assert await reply() == "fn:add two numbers"
    server.config.reply_fn = None
    assert await reply() == "default"


async def test_models_warming_unknown_routes_and_bad_json(
    server: CerebrasTestServer, http: httpx.AsyncClient
) -> None:
    server.config.models = ["a-model", "b-model"]
    models = (await http.get("/v1/models")).json()
    assert models["object"] == "list"
    assert [m["id"] for m in models["data"]] == ["a-model", "b-model"]
    assert all(m["object"] == "model" and m["owned_by"] == "Cerebras" for m in models["data"])
    assert (await http.get("/v1/models/b-model")).json()["id"] == "b-model"
    assert (await http.get("/v1/models/nope")).status_code == 404

    for path in ("/v1/tcp_warming", "/tcp_warming"):
        warm = await http.get(path)
        assert warm.status_code == 200
        assert warm.json()

    missing = await http.get("/v2/anything")
    assert missing.status_code == 404
    assert missing.json()["error"]["type"] == "not_found_error"

    bad = await http.post(
        "/v1/chat/completions",
        content=b"{not json",
        headers={"content-type": "application/json"},
    )
    assert bad.status_code == 400
    assert set(bad.json()["error"]) >= {"message", "type", "code"}
    assert (await http.post("/v1/chat/completions", json={"model": MODEL})).status_code == 400
    assert server.connections_accepted == 1


async def test_sdk_streams_chunks_that_concatenate_to_the_reply(
    server: CerebrasTestServer, sdk: AsyncCerebras
) -> None:
    server.config.queue_replies(REPLY)
    stream = await sdk.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "hi"}], stream=True
    )
    assert isinstance(stream, AsyncStream)
    pieces: list[str] = []
    usage = None
    async for chunk in stream:
        assert isinstance(chunk, ChatChunkResponse)
        assert chunk.choices
        assert chunk.choices[0].delta is not None
        pieces.append(chunk.choices[0].delta.content or "")
        usage = chunk.usage or usage
    assert "".join(pieces) == REPLY
    assert usage is not None
    assert usage.completion_tokens == len(tokenize(REPLY))
    assert server.completion_requests[0].headers["authorization"] == "Bearer k"


async def test_sdk_without_fingerprint_parses_chunks_as_completions_with_dict_delta(
    server: CerebrasTestServer, sdk: AsyncCerebras
) -> None:
    server.config.queue_replies(REPLY)
    server.config.queue_faults(Fault.no_fingerprint())
    stream = await sdk.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "hi"}], stream=True
    )
    assert isinstance(stream, AsyncStream)
    pieces: list[str] = []
    async for chunk in stream:
        # Without the fingerprint no union member validates, so the SDK builds the
        # non-streaming type and keeps the undeclared `delta` as a plain dict.
        assert isinstance(chunk, ChatCompletionResponse)
        delta = chunk.choices[0].delta  # type: ignore[attr-defined]
        assert isinstance(delta, dict)
        pieces.append(delta.get("content", ""))
    assert "".join(pieces) == REPLY


async def test_sdk_lists_configured_models_and_maps_errors(
    server: CerebrasTestServer, sdk: AsyncCerebras
) -> None:
    server.config.models = ["zeta", "qwen-3-coder-480b"]
    listing = await sdk.models.list()
    assert [m.id for m in listing.data] == ["zeta", "qwen-3-coder-480b"]

    server.config.queue_faults(Fault.rate_limit(retry_after=3), Fault.unauthorized())
    with pytest.raises(RateLimitError) as limited:
        await sdk.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "a"}])
    assert limited.value.response.headers["retry-after"] == "3"
    with pytest.raises(AuthenticationError):
        await sdk.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "b"}])


async def test_ttft_and_tokens_per_second_are_respected(
    server: CerebrasTestServer, http: httpx.AsyncClient
) -> None:
    server.config.ttft = 0.2
    started = time.monotonic()
    async with http.stream("POST", "/v1/chat/completions", json=chat_body(stream=True)) as resp:
        async for line in resp.aiter_lines():
            if line.startswith("data: "):
                first_chunk_at = time.monotonic()
                break
    assert first_chunk_at - started >= 0.18, "no token before the time to first token"

    server.config.ttft = 0.0
    server.config.tokens_per_second = 100
    reply = "".join(tokenize(LONG_REPLY)[:21])
    server.config.queue_replies(reply)
    started = time.monotonic()
    _, events = await stream_events(http, "/v1/chat/completions", chat_body())
    elapsed = time.monotonic() - started
    assert len(events) == 21 + 2
    assert elapsed >= 0.18, "20 gaps of 10 ms between 21 tokens"


async def test_rate_limit_and_server_error_faults(
    server: CerebrasTestServer, http: httpx.AsyncClient
) -> None:
    server.config.queue_replies("kept for the retry")
    server.config.queue_faults(Fault.rate_limit(retry_after=2), Fault.server_error())
    limited = await http.post("/v1/chat/completions", json=chat_body(stream=True))
    assert limited.status_code == 429
    assert limited.headers["retry-after"] == "2"
    assert limited.json()["error"]["type"] == "too_many_requests_error"
    failed = await http.post("/v1/chat/completions", json=chat_body(stream=True))
    assert failed.status_code == 500
    assert failed.json()["error"]["message"]
    ok = (await http.post("/v1/chat/completions", json=chat_body())).json()
    assert ok["choices"][0]["message"]["content"] == "kept for the retry"
    assert [r.status for r in server.completion_requests] == [429, 500, 200]


async def test_sticky_fault_applies_until_cleared(
    server: CerebrasTestServer, http: httpx.AsyncClient
) -> None:
    server.config.sticky_fault = Fault.server_error()
    for _ in range(3):
        assert (await http.post("/v1/completions", json=text_body())).status_code == 500
    server.config.sticky_fault = None
    assert (await http.post("/v1/completions", json=text_body())).status_code == 200


async def test_reset_mid_stream_is_a_read_error_after_n_tokens(
    server: CerebrasTestServer, http: httpx.AsyncClient
) -> None:
    server.config.queue_replies(LONG_REPLY)
    server.config.queue_faults(Fault.reset_after(3))
    received: list[str] = []
    with pytest.raises(httpx.ReadError):
        async with http.stream(
            "POST", "/v1/chat/completions", json=chat_body(stream=True)
        ) as response:
            async for line in response.aiter_lines():
                if line.startswith("data: "):
                    received.append(line)
    assert len(received) == 3
    record = server.completion_requests[0]
    assert record.tokens_sent == 3
    assert not record.finished
    assert not record.client_hung_up


async def test_stall_sends_nothing_more_and_records_the_hang_up(
    server: CerebrasTestServer, http: httpx.AsyncClient
) -> None:
    server.config.queue_replies(LONG_REPLY)
    server.config.queue_faults(Fault.stall_after(2))
    received: list[str] = []
    async with http.stream("POST", "/v1/chat/completions", json=chat_body(stream=True)) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                received.append(line)
            if len(received) == 2:
                break  # the rest of the reply would come at full speed, were it not stalled
    record = server.completion_requests[0]
    await server.wait_for_async(lambda: record.client_hung_up, timeout=GUARD)
    assert record.tokens_sent == 2, "a token was sent after the stall"
    assert not record.finished
    assert record.hung_up_at is not None and record.hung_up_at >= record.received_at


async def test_malformed_chunk_appears_and_the_stream_carries_on(
    server: CerebrasTestServer, http: httpx.AsyncClient
) -> None:
    server.config.queue_replies(REPLY)
    server.config.queue_faults(Fault.malformed_after(2))
    _, events = await stream_events(http, "/v1/chat/completions", chat_body())
    assert events[2] == "{not json"
    assert events[-1] == "[DONE]"
    good = [json.loads(e) for e in events[:-1] if e != "{not json"]
    assert content_of(good[:-1]) == REPLY
    assert server.completion_requests[0].finished


async def test_api_key_is_enforced(server: CerebrasTestServer, http: httpx.AsyncClient) -> None:
    server.config.api_key = "secret"
    for headers in ({}, {"authorization": "Bearer wrong"}):
        denied = await http.post("/v1/chat/completions", json=chat_body(), headers=headers)
        assert denied.status_code == 401
        assert denied.json()["error"]["code"] == "wrong_api_key"
    allowed = await http.post(
        "/v1/chat/completions", json=chat_body(), headers={"authorization": "Bearer secret"}
    )
    assert allowed.status_code == 200
    assert [r.status for r in server.completion_requests] == [401, 401, 200]


async def test_a_client_hang_up_is_noticed_while_the_next_token_is_not_yet_due(
    server: CerebrasTestServer, http: httpx.AsyncClient
) -> None:
    """The first token at once, the next one minutes later: the hang-up is seen between the
    two, not at the next write. (How soon after the close: benchmarks/replay.py.)"""
    server.config.tokens_per_second = 1 / QUIET
    server.config.queue_replies(LONG_REPLY)
    async with http.stream("POST", "/v1/chat/completions", json=chat_body(stream=True)) as resp:
        async for line in resp.aiter_lines():
            if line.startswith("data: "):
                break
    record = server.completion_requests[0]
    await server.wait_for_async(lambda: record.client_hung_up, timeout=GUARD)
    assert record.hung_up_at is not None
    assert record.tokens_sent == 1, "nothing was sent after the hang-up"
    assert not record.finished


@pytest.mark.parametrize("stream", [True, False])
async def test_a_hang_up_during_a_long_ttft_is_noticed_before_the_first_token(
    server: CerebrasTestServer, http: httpx.AsyncClient, stream: bool
) -> None:
    server.config.ttft = QUIET
    with pytest.raises(httpx.ReadTimeout):
        async with http.stream(
            "POST",
            "/v1/chat/completions",
            json=chat_body(stream=stream),
            timeout=httpx.Timeout(5.0, read=0.1),
        ) as response:
            await response.aread()
    record = server.completion_requests[0]
    await server.wait_for_async(lambda: record.client_hung_up, timeout=GUARD)
    assert record.hung_up_at is not None
    assert record.tokens_sent == 0


async def test_wait_for_times_out_and_returns_the_value(server: CerebrasTestServer) -> None:
    assert server.wait_for(lambda: 42) == 42
    with pytest.raises(TimeoutError):
        server.wait_for(lambda: server.completion_requests, timeout=0.05)
    with pytest.raises(TimeoutError):
        await server.wait_for_async(lambda: False, timeout=0.05)


def test_reset_restores_constructor_defaults() -> None:
    with CerebrasTestServer(ttft=0.01, default_reply="base", models=["m1"]) as custom:
        assert httpx.get(f"{custom.base_url}/v1/models", timeout=5).status_code == 200
        custom.config.queue_replies("queued")
        custom.config.queue_faults(Fault.server_error())
        custom.config.sticky_fault = Fault.server_error()
        custom.config.ttft = 5.0
        custom.config.models.append("m2")
        custom.reset()
        assert custom.requests == []
        assert custom.connections_accepted == 0
        assert not custom.config.replies
        assert not custom.config.faults
        assert custom.config.sticky_fault is None
        assert custom.config.ttft == 0.01
        assert custom.config.default_reply == "base"
        assert custom.config.models == ["m1"]
        response = httpx.post(f"{custom.base_url}/v1/chat/completions", json=chat_body())
        assert response.json()["choices"][0]["message"]["content"] == "base"
    assert CerebrasTestServer().config.models == list(DEFAULT_MODELS)


def test_extra_routes_answer_ahead_of_cerebras_and_are_recorded() -> None:
    """Another vendor's endpoint on the same path as Cerebras' text completions wins, needs
    no Cerebras key, and leaves the same timed record; other paths keep Cerebras' rules."""

    def tabby_completion(record: RecordedRequest) -> dict[str, Any]:
        record.reply = record.body["segments"]["prefix"].upper()
        return {"id": "c1", "choices": [{"index": 0, "text": record.reply}]}

    routes = {("POST", "/v1/completions"): tabby_completion}
    with CerebrasTestServer(api_key="secret", routes=routes) as custom:
        body = {"language": "python", "segments": {"prefix": "abc", "suffix": ""}}
        answer = httpx.post(f"{custom.base_url}/v1/completions", json=body, timeout=5)
        unrouted = httpx.get(f"{custom.base_url}/v1/models", timeout=5)
        broken = httpx.post(f"{custom.base_url}/v1/completions", content=b"{", timeout=5)
    assert answer.json() == {"id": "c1", "choices": [{"index": 0, "text": "ABC"}]}
    assert unrouted.status_code == 401
    assert broken.status_code == 400
    record = custom.requests[0]
    assert (record.status, record.reply) == (200, "ABC")
    assert record.completed_at is not None and record.completed_at >= record.received_at


def test_text_paths_stream_text_completions_and_every_response_has_the_headers() -> None:
    engine = "/v1/engines/some-model/completions"
    headers = {"x-github-request-id": "loopback"}
    with CerebrasTestServer(text_paths={engine: "some-model"}, response_headers=headers) as custom:
        base = custom.base_url
        body = {"prompt": "def add(a, b):", "stream": True}
        streamed = httpx.post(f"{base}{engine}", json=body, timeout=5)
        models = httpx.get(f"{base}/v1/models", timeout=5)
        missing = httpx.get(f"{base}/v1/engines/other/completions", timeout=5)
    events = [line for line in streamed.text.splitlines() if line.startswith("data: ")]
    chunks = [json.loads(line.removeprefix("data: ")) for line in events[:-1]]
    assert "".join(chunk["choices"][0]["text"] for chunk in chunks) == REPLY
    assert events[-1] == "data: [DONE]"
    assert [r.headers.get("x-github-request-id") for r in (streamed, models, missing)] == [
        "loopback"
    ] * 3
    assert missing.status_code == 404
    assert [r.path for r in custom.completion_requests] == [engine]
    assert chunks[0]["model"] == "some-model"


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "::", "example.com"])
def test_refuses_non_loopback_hosts(host: str) -> None:
    with pytest.raises(ValueError, match="loopback"):
        CerebrasTestServer(host=host)


def test_localhost_binds_ipv4_loopback() -> None:
    with CerebrasTestServer(host="localhost") as srv:
        assert srv.base_url == f"http://127.0.0.1:{srv.port}"
        assert httpx.get(f"{srv.base_url}/v1/models", timeout=5).status_code == 200


async def test_stop_aborts_open_streams_and_leaves_no_thread() -> None:
    srv = CerebrasTestServer().start()
    port = srv.port
    srv.config.queue_faults(Fault.stall_after(1))
    async with (
        httpx.AsyncClient(base_url=srv.base_url, timeout=5.0) as client,
        client.stream("POST", "/v1/chat/completions", json=chat_body(stream=True)) as response,
    ):
        assert response.status_code == 200
        srv.stop()  # raises TimeoutError if the stalled stream held it up
        with pytest.raises(httpx.TransportError):
            await response.aread()
    srv.stop()
    assert not [t for t in threading.enumerate() if t.name == THREAD_NAME]
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        pass
    with pytest.raises(RuntimeError):
        _ = srv.base_url


def test_start_on_a_busy_port_raises_and_leaves_no_thread(server: CerebrasTestServer) -> None:
    with pytest.raises(OSError):
        CerebrasTestServer(port=server.port).start()
    assert len([t for t in threading.enumerate() if t.name == THREAD_NAME]) == 1


def test_command_line_serves_until_sigterm() -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lsp_spark.testing.cerebras_server",
            "--port",
            "0",
            "--ttft",
            "0.01",
            "--tps",
            "1000",
            "--reply",
            "hello from the cli",
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("listening on http://127.0.0.1:")
        base_url = line.removeprefix("listening on ")
        response = httpx.post(f"{base_url}/v1/chat/completions", json=chat_body(), timeout=5)
        assert response.json()["choices"][0]["message"]["content"] == "hello from the cli"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=5) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
