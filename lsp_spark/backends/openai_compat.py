"""Any OpenAI-compatible server (llama.cpp, vLLM, Ollama, LM Studio) over plain httpx."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncGenerator, Sequence
from typing import Any, Literal

import httpx

from lsp_spark.backends.base import (
    Backend,
    BackendError,
    ChatUsage,
    CompletionRequest,
    FailureKind,
    Message,
)
from lsp_spark.prompts.chat import chat_messages
from lsp_spark.prompts.fim import FIM_TEMPLATES

log = logging.getLogger(__name__)


def _status_failure(response: httpx.Response) -> BackendError:
    status = response.status_code
    if status in (401, 403):
        return BackendError(FailureKind.AUTH, f"The server refused the API key ({status}).")
    if status == 429:
        try:
            retry_after: float | None = float(response.headers.get("retry-after", ""))
        except ValueError:
            retry_after = None
        return BackendError(FailureKind.RATE_LIMIT, "Rate limit reached (429).", retry_after)
    kind = FailureKind.UNAVAILABLE if status >= 500 else FailureKind.BAD_RESPONSE
    return BackendError(kind, f"The server answered HTTP {status}.")


def _chunk_text(payload: dict[str, Any]) -> str:
    choices = payload.get("choices") or []
    if not choices:
        return ""
    choice = choices[0]
    if "text" in choice:
        return choice.get("text") or ""
    delta = choice.get("delta") or {}
    return delta.get("content") or ""


class OpenAICompatibleBackend(Backend):
    name = "openai"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        mode: Literal["chat", "fim"] = "chat",
        fim_template: str = "qwen",
        timeout: float = 8.0,
    ) -> None:
        super().__init__(model)
        self._mode = mode
        self._template = FIM_TEMPLATES[fim_template]
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            headers=headers,
            http2=True,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 3.0)),
        )

    def _body(self, request: CompletionRequest) -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = {
            "model": self.model,
            "stream": True,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "stream_options": {"include_usage": True},
        }
        if self._mode == "fim":
            body["prompt"] = self._template.render(request)
            body["stop"] = [*self._template.stop, *request.stop]
            return "/v1/completions", body
        body["messages"] = chat_messages(request)
        if request.stop:
            body["stop"] = list(request.stop[:4])
        return "/v1/chat/completions", body

    async def stream(self, request: CompletionRequest) -> AsyncGenerator[str, None]:
        path, body = self._body(request)
        async with contextlib.aclosing(self._events(path, body)) as events:
            async for payload in events:
                self.last_usage.read(payload)
                if text := _chunk_text(payload):
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
        """A plain chat answer: servers of this kind rarely take a prediction, and some
        refuse unknown parameters, so none is sent."""
        body: dict[str, Any] = {
            "model": model or self.model,
            "messages": [dict(message) for message in messages],
            "stream": True,
            "max_tokens": max_tokens,
            "temperature": 0.0,
            "stream_options": {"include_usage": True},
        }
        async with contextlib.aclosing(self._events("/v1/chat/completions", body)) as events:
            async for payload in events:
                if usage is not None and (reported := payload.get("usage")):
                    usage.record(reported)
                if text := _chunk_text(payload):
                    yield text

    async def _events(
        self, path: str, body: dict[str, Any]
    ) -> AsyncGenerator[dict[str, Any], None]:
        try:
            async with self._client.stream("POST", path, json=body) as response:
                if response.status_code != 200:
                    raise _status_failure(response)
                async for line in response.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        return
                    try:
                        payload = json.loads(data)
                    except json.JSONDecodeError:
                        log.debug("skipping a malformed stream chunk")
                        continue
                    if isinstance(payload, dict):
                        yield payload
        except httpx.HTTPError as error:
            raise BackendError(
                FailureKind.UNAVAILABLE,
                f"Cannot reach {self._client.base_url}: {type(error).__name__}.",
            ) from None

    async def warm(self) -> None:
        try:
            await self._client.get("/v1/models", timeout=3.0)
        except httpx.HTTPError as error:
            log.debug("warming %s failed: %s", self._client.base_url, type(error).__name__)

    async def list_models(self) -> list[str]:
        try:
            response = await self._client.get("/v1/models")
        except httpx.HTTPError as error:
            raise BackendError(FailureKind.UNAVAILABLE, type(error).__name__) from None
        if response.status_code != 200:
            raise _status_failure(response)
        return [entry["id"] for entry in response.json().get("data", []) if "id" in entry]

    async def aclose(self) -> None:
        await self._client.aclose()
