"""`Backend.chat`, the call code actions and reviews make, against the loopback server and the
embedded model."""

from __future__ import annotations

import contextlib

import pytest

from lsp_spark.backends.base import Backend, BackendError, ChatUsage, FailureKind
from lsp_spark.backends.cerebras import CerebrasBackend
from lsp_spark.backends.local import LocalBackend, local_backend_available
from lsp_spark.backends.openai_compat import OpenAICompatibleBackend
from lsp_spark.testing.cerebras_server import CerebrasTestServer, Fault
from tests.conftest import QUIET, SEEN, TEST_KEY, HeldWorker, eventually, local_idle

MESSAGES = [
    {"role": "system", "content": "You edit code."},
    {"role": "user", "content": "Rename x to total:\n```python\nx = 1\n```"},
]
ORIGINAL = "```python\nx = 1\n```"
REWRITE = "```python\ntotal = 1\n```"


def cerebras_backend(server: CerebrasTestServer) -> CerebrasBackend:
    return CerebrasBackend(api_key=TEST_KEY, model="gpt-oss-120b", base_url=server.base_url)


async def chat(backend: Backend, **options: object) -> str:
    return "".join([delta async for delta in backend.chat(MESSAGES, **options)])  # type: ignore[arg-type]


async def test_cerebras_chat_sends_the_prediction_and_reports_its_tokens(
    cerebras: CerebrasTestServer,
) -> None:
    cerebras.config.queue_replies(REWRITE)
    backend = cerebras_backend(cerebras)
    usage = ChatUsage()
    try:
        text = await chat(
            backend, max_tokens=300, model="qwen-3.8-27b", prediction=ORIGINAL, usage=usage
        )
    finally:
        await backend.aclose()
    assert text == REWRITE
    body = cerebras.completion_requests[-1].body
    assert body["model"] == "qwen-3.8-27b"
    assert body["prediction"] == {"type": "content", "content": ORIGINAL}
    assert body["max_completion_tokens"] >= 300
    assert body["messages"] == MESSAGES
    assert usage.predicted and usage.completion_tokens > 0
    assert usage.accepted_prediction_tokens > 0 and usage.rejected_prediction_tokens > 0


async def test_cerebras_chat_retries_without_a_refused_prediction_and_remembers(
    cerebras: CerebrasTestServer,
) -> None:
    cerebras.config.prediction_models = ["qwen-3.8-27b"]
    cerebras.config.queue_replies(REWRITE, REWRITE, REWRITE)
    backend = cerebras_backend(cerebras)
    usage = ChatUsage()
    try:
        assert await chat(backend, max_tokens=50, prediction=ORIGINAL, usage=usage) == REWRITE
        assert not usage.predicted
        assert await chat(backend, max_tokens=50, prediction=ORIGINAL) == REWRITE
        assert await chat(backend, max_tokens=50, model="qwen-3.8-27b", prediction=ORIGINAL)
    finally:
        await backend.aclose()
    sent = cerebras.completion_requests
    assert [(r.status, "prediction" in r.body) for r in sent] == [
        (400, True),
        (200, False),
        (200, False),
        (200, True),
    ], "a model that took no prediction is not sent one again; another model still is"


async def test_cerebras_chat_failures_other_than_the_prediction_are_not_retried(
    cerebras: CerebrasTestServer,
) -> None:
    cerebras.config.queue_faults(Fault.rate_limit(retry_after=2))
    backend = cerebras_backend(cerebras)
    try:
        with pytest.raises(BackendError) as raised:
            await chat(backend, max_tokens=50, prediction=ORIGINAL)
    finally:
        await backend.aclose()
    assert raised.value.kind is FailureKind.RATE_LIMIT and raised.value.status == 429
    assert len(cerebras.completion_requests) == 1


async def test_closing_a_chat_hangs_up_on_the_server(cerebras: CerebrasTestServer) -> None:
    cerebras.config.tokens_per_second = 1 / QUIET  # the first token at once, the next not
    cerebras.config.queue_replies(" word" * 100)
    backend = cerebras_backend(cerebras)
    try:
        async with contextlib.aclosing(
            backend.chat(MESSAGES, max_tokens=300, prediction=ORIGINAL)
        ) as deltas:
            async for _ in deltas:
                break
        upstream = cerebras.completion_requests[-1]
        assert await eventually(cerebras, lambda: upstream.client_hung_up, SEEN)
    finally:
        await backend.aclose()
    assert upstream.tokens_sent == 1, "hung up before the next token"


async def test_openai_chat_is_plain_chat_without_a_prediction(
    cerebras: CerebrasTestServer,
) -> None:
    cerebras.config.queue_replies(REWRITE)
    backend = OpenAICompatibleBackend(
        base_url=cerebras.base_url, model="m", api_key=TEST_KEY, mode="fim"
    )
    usage = ChatUsage()
    try:
        text = await chat(backend, max_tokens=77, model="big", prediction=ORIGINAL, usage=usage)
    finally:
        await backend.aclose()
    assert text == REWRITE
    request = cerebras.completion_requests[-1]
    assert request.path == "/v1/chat/completions", "chat even when completions use FIM"
    assert request.body["model"] == "big" and request.body["max_tokens"] == 77
    assert "prediction" not in request.body
    assert usage.completion_tokens > 0


@pytest.mark.skipif(not local_backend_available(), reason="the embedded model is not installed")
async def test_the_embedded_model_chats_and_stops_when_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    backend = LocalBackend()
    try:
        usage = ChatUsage()
        text = await chat(backend, max_tokens=24, usage=usage)
        assert text.strip()
        assert 0 < usage.completion_tokens <= 24
        HeldWorker(backend, monkeypatch)
        async with contextlib.aclosing(backend.chat(MESSAGES, max_tokens=400)) as deltas:
            async for _ in deltas:
                at_close = backend.tokens_generated
                break
        await local_idle(backend)
        assert backend.tokens_generated == at_close, "a token was generated after the close"
    finally:
        await backend.aclose()
