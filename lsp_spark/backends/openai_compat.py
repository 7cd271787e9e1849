"""Any OpenAI-compatible server (llama.cpp, vLLM, Ollama, LM Studio), over the same HTTP
client as Cerebras: chat; raw `/v1/completions` with FIM tokens for FIM-trained models; or
`/v1/completions` with a `suffix`, where the server knows the model's FIM template itself
(Ollama, DeepSeek; llama-cpp-python 0.3.36 wraps the suffix in token 0 instead)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Sequence
from typing import Any, Literal

from lsp_spark.backends.base import Backend, ChatUsage, CompletionRequest, Message
from lsp_spark.backends.http import ApiClient, delta_text, model_ids
from lsp_spark.prompts.chat import chat_messages
from lsp_spark.prompts.fim import FIM_TEMPLATES

CHAT_PATH = "/v1/chat/completions"
COMPLETIONS_PATH = "/v1/completions"
MODELS_PATH = "/v1/models"
MAX_STOP_SEQUENCES = 4


class OpenAICompatibleBackend(Backend):
    name = "openai"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        mode: Literal["chat", "fim", "suffix"] = "chat",
        fim_template: str = "qwen",
        timeout: float = 8.0,
        actions_timeout: float = 120.0,
    ) -> None:
        super().__init__(model)
        self._mode = mode
        self._template = FIM_TEMPLATES[fim_template]
        self._timeout = timeout
        self._actions_timeout = actions_timeout
        # Servers of this kind vary in what else they put in a stream: a chunk that is not
        # JSON is skipped rather than costing the whole suggestion.
        self._http = ApiClient(
            base_url,
            service="the OpenAI-compatible server",
            api_key=api_key,
            skip_malformed=True,
            warm_path=MODELS_PATH,
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
            return COMPLETIONS_PATH, body
        if self._mode == "suffix":
            context = f"{request.context}\n" if request.context else ""
            body["prompt"] = context + request.prefix
            body["suffix"] = request.suffix
            if request.stop:
                body["stop"] = list(request.stop[:MAX_STOP_SEQUENCES])
            return COMPLETIONS_PATH, body
        body["messages"] = chat_messages(request)
        if request.stop:
            body["stop"] = list(request.stop[:MAX_STOP_SEQUENCES])
        return CHAT_PATH, body

    async def stream(self, request: CompletionRequest) -> AsyncGenerator[str, None]:
        path, body = self._body(request)
        async with contextlib.aclosing(self._http.events(path, body, self._timeout)) as events:
            async for payload in events:
                if text := delta_text(payload):
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
        events = self._http.events(CHAT_PATH, body, self._actions_timeout)
        async with contextlib.aclosing(events):
            async for payload in events:
                if usage is not None and isinstance(reported := payload.get("usage"), dict):
                    usage.record(reported)
                if text := delta_text(payload):
                    yield text

    @property
    def connections(self) -> tuple[int, int]:
        return self._http.connections

    async def warm(self) -> None:
        await self._http.warm()

    async def list_models(self) -> list[str]:
        return model_ids(await self._http.get_json(MODELS_PATH, self._timeout))

    async def aclose(self) -> None:
        await self._http.aclose()
