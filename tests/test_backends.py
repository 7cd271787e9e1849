"""Cerebras and OpenAI-compatible backends against the real loopback HTTP server."""

from __future__ import annotations

import contextlib

import pytest

from lsp_spark.backends import BackendError, CompletionRequest, FailureKind, create_backend
from lsp_spark.backends.cerebras import CerebrasBackend
from lsp_spark.backends.openai_compat import OpenAICompatibleBackend
from lsp_spark.settings import Settings
from lsp_spark.testing.cerebras_server import CerebrasTestServer, Fault
from tests.conftest import QUIET, SEEN, TEST_KEY, eventually

REQUEST = CompletionRequest(prefix="def add(a, b):\n    return ", suffix="\n", language="python")


def cerebras_backend(server: CerebrasTestServer, **options: object) -> CerebrasBackend:
    return CerebrasBackend(
        api_key=TEST_KEY, model="gpt-oss-120b", base_url=server.base_url, **options
    )


async def collect(backend, request: CompletionRequest = REQUEST) -> str:
    try:
        return "".join([delta async for delta in backend.stream(request)])
    finally:
        await backend.aclose()


async def test_cerebras_streams_the_reply(cerebras: CerebrasTestServer) -> None:
    cerebras.config.queue_replies("a + b")
    backend = cerebras_backend(cerebras)
    assert await collect(backend) == "a + b"
    assert cerebras.completion_requests[-1].headers["authorization"] == f"Bearer {TEST_KEY}"


async def test_cerebras_survives_chunks_without_a_fingerprint(cerebras: CerebrasTestServer) -> None:
    cerebras.config.queue_replies("a + b")
    cerebras.config.queue_faults(Fault.no_fingerprint())
    assert await collect(cerebras_backend(cerebras)) == "a + b"


async def test_cerebras_sends_reasoning_effort_and_room_for_reasoning(
    cerebras: CerebrasTestServer,
) -> None:
    await collect(cerebras_backend(cerebras, reasoning_effort="low"))
    body = cerebras.completion_requests[-1].body
    assert body["reasoning_effort"] == "low"
    assert body["max_completion_tokens"] > REQUEST.max_tokens
    await collect(cerebras_backend(cerebras, reasoning_effort="none"))
    assert cerebras.completion_requests[-1].body["max_completion_tokens"] == REQUEST.max_tokens


@pytest.mark.parametrize(
    ("fault", "kind"),
    [
        (Fault.rate_limit(retry_after=7), FailureKind.RATE_LIMIT),
        (Fault.unauthorized(), FailureKind.AUTH),
        (Fault.server_error(), FailureKind.UNAVAILABLE),
        (Fault.reset_after(2), FailureKind.UNAVAILABLE),
        (Fault.malformed_after(2), FailureKind.BAD_RESPONSE),
    ],
)
async def test_cerebras_failures_have_a_kind(
    cerebras: CerebrasTestServer, fault: Fault, kind: FailureKind
) -> None:
    cerebras.config.queue_replies("one two three four five")
    cerebras.config.queue_faults(fault)
    with pytest.raises(BackendError) as raised:
        await collect(cerebras_backend(cerebras))
    assert raised.value.kind is kind
    assert TEST_KEY not in str(raised.value)
    if kind is FailureKind.RATE_LIMIT:
        assert raised.value.retry_after == 7


async def test_closing_the_stream_hangs_up_on_the_server(cerebras: CerebrasTestServer) -> None:
    cerebras.config.tokens_per_second = 1 / QUIET  # the first token at once, the next not
    cerebras.config.queue_replies(" word" * 100)
    backend = cerebras_backend(cerebras)
    async with contextlib.aclosing(backend.stream(REQUEST)) as deltas:
        async for _ in deltas:
            break
    upstream = cerebras.completion_requests[-1]
    assert await eventually(cerebras, lambda: upstream.client_hung_up, SEEN)
    assert upstream.tokens_sent == 1, "hung up before the next token"
    await backend.aclose()


async def test_cerebras_completions_reuse_the_warm_connection(
    cerebras: CerebrasTestServer,
) -> None:
    backend = cerebras_backend(cerebras)
    await backend.warm()
    warming = [request for request in cerebras.requests if request.path.endswith("tcp_warming")]
    assert len(warming) == 1
    assert await backend.list_models() == ["gpt-oss-120b", "qwen-3.8-27b"]
    for _ in range(3):
        assert "".join([delta async for delta in backend.stream(REQUEST)])
    await backend.aclose()
    assert len(cerebras.completion_requests) == 3
    assert {request.connection_id for request in cerebras.completion_requests} == {
        warming[0].connection_id
    }, "each completion must reuse the warm connection"


async def test_openai_chat_mode(cerebras: CerebrasTestServer) -> None:
    cerebras.config.queue_replies("a + b")
    backend = OpenAICompatibleBackend(base_url=cerebras.base_url, model="m", api_key=TEST_KEY)
    assert await collect(backend) == "a + b"
    assert cerebras.completion_requests[-1].path == "/v1/chat/completions"


async def test_openai_fim_mode_renders_the_model_family_template(
    cerebras: CerebrasTestServer,
) -> None:
    cerebras.config.queue_replies("a + b")
    backend = OpenAICompatibleBackend(
        base_url=cerebras.base_url, model="m", api_key=TEST_KEY, mode="fim", fim_template="qwen"
    )
    assert await collect(backend) == "a + b"
    request = cerebras.completion_requests[-1]
    assert request.path == "/v1/completions"
    assert request.body["prompt"].endswith(
        "<|fim_prefix|>def add(a, b):\n    return <|fim_suffix|>\n<|fim_middle|>"
    )
    assert "<|endoftext|>" in request.body["stop"]


async def test_openai_skips_a_malformed_chunk(cerebras: CerebrasTestServer) -> None:
    cerebras.config.queue_replies("one two three")
    cerebras.config.queue_faults(Fault.malformed_after(1))
    backend = OpenAICompatibleBackend(base_url=cerebras.base_url, model="m", api_key=TEST_KEY)
    assert await collect(backend) == "one two three"


async def test_openai_rate_limit(cerebras: CerebrasTestServer) -> None:
    cerebras.config.queue_faults(Fault.rate_limit(retry_after=3))
    backend = OpenAICompatibleBackend(base_url=cerebras.base_url, model="m", api_key=TEST_KEY)
    with pytest.raises(BackendError) as raised:
        await collect(backend)
    assert raised.value.kind is FailureKind.RATE_LIMIT and raised.value.retry_after == 3


async def test_auto_picks_cerebras_with_a_key_and_accepts_a_v1_base_url() -> None:
    backend = create_backend(
        Settings(api_key=TEST_KEY, base_url="http://127.0.0.1:9/v1")  # type: ignore[arg-type]
    )
    try:
        assert backend.name == "cerebras"
        assert str(backend._http.base_url).rstrip("/") == "http://127.0.0.1:9"
    finally:
        await backend.aclose()


def test_cerebras_without_a_key_is_a_clear_configuration_error() -> None:
    with pytest.raises(BackendError) as raised:
        create_backend(Settings(backend="cerebras"))
    assert raised.value.kind is FailureKind.MISCONFIGURED
    assert "CEREBRAS_API_KEY" in str(raised.value)
