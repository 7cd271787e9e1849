"""Cerebras: chat-based fill-in-the-middle streamed over one warm connection; the official SDK
for what is not per keystroke."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator, Sequence
from typing import Any

import httpx
from cerebras.cloud.sdk import (
    APIConnectionError,
    APIStatusError,
    AsyncCerebras,
    AuthenticationError,
    CerebrasError,
    RateLimitError,
)

from lsp_spark.backends.base import (
    Backend,
    BackendError,
    ChatUsage,
    CompletionRequest,
    FailureKind,
    Message,
)
from lsp_spark.backends.http import EventStreamClient
from lsp_spark.prompts.chat import chat_messages

log = logging.getLogger(__name__)

MAX_STOP_SEQUENCES = 4
# Reasoning tokens count against max_completion_tokens; leave room so the answer still fits.
REASONING_ALLOWANCE = {None: 0, "none": 0, "low": 160, "medium": 640, "high": 1536}
# A model that does not take `prediction` answers 400 (or 422) to a request carrying one.
PREDICTION_REFUSED = frozenset({400, 422})
CHAT_PATH = "/v1/chat/completions"
WARM_PATH = "/v1/tcp_warming"
"""The endpoint the SDK itself warms its connection with."""


def failure_from(error: Exception) -> BackendError:
    """Translate SDK and transport errors into the few kinds the server acts on."""
    if isinstance(error, BackendError):
        return error
    if isinstance(error, AuthenticationError):
        return BackendError(FailureKind.AUTH, "Cerebras rejected the API key (401).")
    if isinstance(error, RateLimitError):
        retry_after = _retry_after(error.response)
        return BackendError(
            FailureKind.RATE_LIMIT, "Cerebras rate limit reached (429).", retry_after
        )
    if isinstance(error, APIStatusError):
        kind = FailureKind.UNAVAILABLE if error.status_code >= 500 else FailureKind.BAD_RESPONSE
        return BackendError(kind, f"Cerebras answered HTTP {error.status_code}.")
    if isinstance(error, APIConnectionError | httpx.TransportError):
        return BackendError(
            FailureKind.UNAVAILABLE, f"Cannot reach Cerebras: {type(error).__name__}."
        )
    return BackendError(FailureKind.BAD_RESPONSE, f"Unexpected reply from Cerebras: {error}")


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return float(response.headers.get("retry-after", ""))
    except ValueError:
        return None


def _delta_text(payload: dict[str, Any]) -> str:
    choices = payload.get("choices") or []
    if not choices:
        return ""
    text = (choices[0].get("delta") or {}).get("content")
    return text if isinstance(text, str) else ""


class CerebrasBackend(Backend):
    name = "cerebras"

    def __init__(
        self,
        *,
        api_key: str,
        model: str,
        base_url: str,
        reasoning_effort: str | None = None,
        timeout: float = 8.0,
    ) -> None:
        super().__init__(model)
        self._reasoning_effort = reasoning_effort
        self._client = AsyncCerebras(
            api_key=api_key,
            base_url=base_url,
            max_retries=0,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 3.0)),
            warm_tcp_connection=False,
        )
        self._http = EventStreamClient(
            base_url,
            service="Cerebras",
            api_key=api_key,
            timeout=timeout,
            skip_malformed=False,
            warm_path=WARM_PATH,
        )
        self._without_prediction: set[str] = set()
        """Models that refused a prediction once; they are not sent one again."""

    async def stream(self, request: CompletionRequest) -> AsyncGenerator[str, None]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": chat_messages(request),
            "stream": True,
            "max_completion_tokens": request.max_tokens
            + REASONING_ALLOWANCE.get(self._reasoning_effort, 0),
            "temperature": request.temperature,
        }
        if request.stop:
            body["stop"] = list(request.stop[:MAX_STOP_SEQUENCES])
        if self._reasoning_effort:
            body["reasoning_effort"] = self._reasoning_effort
        async with contextlib.aclosing(self._http.events(CHAT_PATH, body)) as events:
            async for payload in events:
                self.last_usage.read(payload)
                if text := _delta_text(payload):
                    yield text

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        model: str | None = None,
        prediction: str | None = None,
        usage: ChatUsage | None = None,
    ) -> AsyncGenerator[str, None]:
        """A chat answer, with Predicted Outputs where the model takes them: a model that
        refuses the parameter is asked again once without it, and never sent one again."""
        model = model or self.model
        usage = usage if usage is not None else ChatUsage()
        body: dict[str, Any] = {
            "model": model,
            "messages": [dict(message) for message in messages],
            "stream": True,
            "max_completion_tokens": max_tokens
            + REASONING_ALLOWANCE.get(self._reasoning_effort, 0),
            "temperature": 0.0,
        }
        if self._reasoning_effort:
            body["reasoning_effort"] = self._reasoning_effort
        attempts = [body]
        if prediction is not None and model not in self._without_prediction:
            attempts.insert(0, dict(body, prediction={"type": "content", "content": prediction}))
        for attempt in attempts:
            usage.predicted = "prediction" in attempt
            try:
                async with contextlib.aclosing(self._chat(attempt, usage)) as deltas:
                    async for text in deltas:
                        yield text
            except BackendError as failure:
                if not usage.predicted or failure.status not in PREDICTION_REFUSED:
                    raise
                log.info("%s refused a prediction (HTTP %s); asking without", model, failure.status)
                continue
            if len(attempts) > 1 and not usage.predicted:
                self._without_prediction.add(model)
            return

    async def _chat(self, body: dict[str, Any], usage: ChatUsage) -> AsyncGenerator[str, None]:
        async with contextlib.aclosing(self._http.events(CHAT_PATH, body)) as events:
            async for payload in events:
                if reported := payload.get("usage"):
                    usage.record(reported)
                if text := _delta_text(payload):
                    yield text

    @property
    def connections(self) -> tuple[int, int]:
        return self._http.connections

    async def warm(self) -> None:
        """Open the keep-alive connection so the first keystroke pays no handshake."""
        await self._http.warm()

    async def list_models(self) -> list[str]:
        try:
            page = await self._client.models.list()
        except (CerebrasError, httpx.HTTPError) as error:
            raise failure_from(error) from None
        return [model.id for model in page.data]

    async def aclose(self) -> None:
        await self._http.aclose()
        await self._client.close()
