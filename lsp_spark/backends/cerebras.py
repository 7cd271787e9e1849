"""Cerebras through its official SDK: one client per process, chat-based fill-in-the-middle."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator

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
        """Read the SSE body to its very end, so the connection goes back to the pool.

        The SDK's own stream stops at `[DONE]` before the chunked body's terminator and
        httpx then drops the connection: every request would pay a new TCP/TLS handshake.
        Parsing the events here also skips building a pydantic object per token.
        """
        try:
            async with (
                self._client.chat.completions.with_streaming_response.create(
                    model=self.model,
                    messages=chat_messages(request),  # type: ignore[arg-type]
                    stream=True,
                    max_completion_tokens=request.max_tokens
                    + REASONING_ALLOWANCE.get(self._reasoning_effort, 0),
                    stop=list(request.stop[:MAX_STOP_SEQUENCES]) or omit,
                    temperature=request.temperature,
                    reasoning_effort=self._reasoning_effort or omit,  # type: ignore[arg-type]
                ) as response
            ):
                async for line in response.iter_lines():
                    text = self._event_text(line)
                    if text:
                        yield text
        except (CerebrasError, httpx.HTTPError) as error:
            raise failure_from(error) from None

    def _event_text(self, line: str) -> str:
        if not line.startswith("data:"):
            return ""
        data = line[5:].strip()
        if data == "[DONE]":
            return ""
        try:
            payload = json.loads(data)
        except json.JSONDecodeError:
            raise BackendError(
                FailureKind.BAD_RESPONSE, "Cerebras sent a malformed event."
            ) from None
        if error := payload.get("error"):
            message = error.get("message") if isinstance(error, dict) else str(error)
            raise BackendError(FailureKind.UNAVAILABLE, f"Cerebras stream error: {message}")
        if usage := payload.get("usage"):
            self.last_usage.prompt_tokens = usage.get("prompt_tokens") or 0
            self.last_usage.completion_tokens = usage.get("completion_tokens") or 0
        choices = payload.get("choices") or []
        if not choices:
            return ""
        delta = choices[0].get("delta") or {}
        return delta.get("content") or ""

    async def warm(self) -> None:
        """Open the keep-alive connection so the first keystroke pays no handshake.

        Touching the chat resource also builds the SDK's lazily imported request path now
        (about 25 ms) rather than on the first keystroke.
        """
        _ = self._client.chat.completions.with_streaming_response
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
