"""Cerebras: chat-based fill-in-the-middle streamed over one warm connection.

Cerebras' `/v1/completions` ignores `suffix`, so fill-in-the-middle goes through a chat
prompt; edits carry the code they rewrite as a Predicted Output.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator, Sequence
from typing import Any

from lsp_spark.backends.base import (
    Backend,
    BackendError,
    ChatUsage,
    CompletionRequest,
    Message,
)
from lsp_spark.backends.http import ApiClient, delta_text, model_ids
from lsp_spark.prompts.chat import chat_messages

log = logging.getLogger(__name__)

MAX_STOP_SEQUENCES = 4
# Reasoning tokens count against max_completion_tokens; leave room so the answer still fits.
REASONING_ALLOWANCE = {None: 0, "none": 0, "low": 160, "medium": 640, "high": 1536}
# A model that does not take `prediction` answers 400 (or 422) to a request carrying one.
PREDICTION_REFUSED = frozenset({400, 422})
CHAT_PATH = "/v1/chat/completions"
MODELS_PATH = "/v1/models"
WARM_PATH = "/v1/tcp_warming"
"""The endpoint Cerebras' own SDK warms its connection with."""


class CerebrasBackend(Backend):
    name = "cerebras"
    concurrent_requests = 8
    """Ghost text, its alternatives and prefetch, a next edit and a code action side by side."""

    def __init__(
        self,
        *,
        api_key: str | None,
        model: str,
        base_url: str,
        reasoning_effort: str | None = None,
        timeout: float = 8.0,
        actions_timeout: float = 120.0,
    ) -> None:
        super().__init__(model)
        self._reasoning_effort = reasoning_effort
        self._timeout = timeout
        self._actions_timeout = actions_timeout
        self._http = ApiClient(
            base_url,
            service="Cerebras",
            api_key=api_key,
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
        async with contextlib.aclosing(self._http.events(CHAT_PATH, body, self._timeout)) as events:
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
        events = self._http.events(CHAT_PATH, body, self._actions_timeout)
        async with contextlib.aclosing(events):
            async for payload in events:
                if isinstance(reported := payload.get("usage"), dict):
                    usage.record(reported)
                if text := delta_text(payload):
                    yield text

    @property
    def connections(self) -> tuple[int, int]:
        return self._http.connections

    async def warm(self) -> None:
        """Open the keep-alive connection so the first keystroke pays no handshake."""
        await self._http.warm()

    async def list_models(self) -> list[str]:
        return model_ids(await self._http.get_json(MODELS_PATH, self._timeout))

    async def aclose(self) -> None:
        await self._http.aclose()
