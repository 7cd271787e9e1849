"""Cerebras: chat-based fill-in-the-middle streamed over one warm connection; the official SDK
for what is not per keystroke."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
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

from lsp_spark.backends.base import Backend, BackendError, CompletionRequest, FailureKind
from lsp_spark.backends.http import EventStreamClient
from lsp_spark.prompts.chat import chat_messages

log = logging.getLogger(__name__)

MAX_STOP_SEQUENCES = 4
# Reasoning tokens count against max_completion_tokens; leave room so the answer still fits.
REASONING_ALLOWANCE = {None: 0, "none": 0, "low": 160, "medium": 640, "high": 1536}


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
            base_url, service="Cerebras", api_key=api_key, timeout=timeout, skip_malformed=False
        )

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
        async for payload in self._http.events("/v1/chat/completions", body):
            if usage := payload.get("usage"):
                self.last_usage.prompt_tokens = usage.get("prompt_tokens") or 0
                self.last_usage.completion_tokens = usage.get("completion_tokens") or 0
            choices = payload.get("choices") or []
            if choices and (text := (choices[0].get("delta") or {}).get("content")):
                yield text

    async def warm(self) -> None:
        """Open the keep-alive connection so the first keystroke pays no handshake."""
        await self._http.warm("/v1/tcp_warming")

    async def list_models(self) -> list[str]:
        try:
            page = await self._client.models.list()
        except (CerebrasError, httpx.HTTPError) as error:
            raise failure_from(error) from None
        return [model.id for model in page.data]

    async def aclose(self) -> None:
        await self._http.aclose()
        await self._client.close()
