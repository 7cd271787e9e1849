"""Cerebras through its official SDK: one client per process, chat-based fill-in-the-middle."""

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
    omit,
)

from lsp_spark.backends.base import Backend, BackendError, CompletionRequest, FailureKind
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


def delta_text(chunk: Any) -> str:
    """The content of a streamed chunk.

    A chunk without `system_fingerprint` is parsed by the SDK as the non-streaming
    type, and its `delta` then arrives as a plain dict.
    """
    choices = getattr(chunk, "choices", None) or []
    if not choices:
        return ""
    delta = getattr(choices[0], "delta", None)
    if delta is None:
        extra = getattr(choices[0], "model_extra", None) or {}
        delta = extra.get("delta")
    if isinstance(delta, dict):
        return delta.get("content") or ""
    return getattr(delta, "content", None) or ""


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

    async def stream(self, request: CompletionRequest) -> AsyncGenerator[str, None]:
        try:
            response = await self._client.chat.completions.create(
                model=self.model,
                messages=chat_messages(request),  # type: ignore[arg-type]
                stream=True,
                max_completion_tokens=request.max_tokens
                + REASONING_ALLOWANCE.get(self._reasoning_effort, 0),
                stop=list(request.stop[:MAX_STOP_SEQUENCES]) or omit,
                temperature=request.temperature,
                reasoning_effort=self._reasoning_effort or omit,  # type: ignore[arg-type]
            )
        except (CerebrasError, httpx.HTTPError) as error:
            raise failure_from(error) from None
        try:
            async for chunk in response:  # type: ignore[union-attr]
                usage = getattr(chunk, "usage", None)
                if usage is not None:
                    self.last_usage.prompt_tokens = getattr(usage, "prompt_tokens", 0) or 0
                    self.last_usage.completion_tokens = getattr(usage, "completion_tokens", 0) or 0
                text = delta_text(chunk)
                if text:
                    yield text
        except (CerebrasError, httpx.HTTPError, ValueError) as error:
            raise failure_from(error) from None
        finally:
            await response.close()  # type: ignore[union-attr]

    async def warm(self) -> None:
        """Open the keep-alive connection so the first keystroke pays no handshake."""
        try:
            await self._client.get("/v1/tcp_warming", cast_to=str, options={"timeout": 3.0})
        except (CerebrasError, httpx.HTTPError) as error:
            log.debug("warming the Cerebras connection failed: %s", type(error).__name__)

    async def list_models(self) -> list[str]:
        try:
            page = await self._client.models.list()
        except (CerebrasError, httpx.HTTPError) as error:
            raise failure_from(error) from None
        return [model.id for model in page.data]

    async def aclose(self) -> None:
        await self._client.close()
