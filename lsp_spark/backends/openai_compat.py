"""Any OpenAI-compatible server (llama.cpp, vLLM, Ollama, LM Studio), over the same HTTP
client as Cerebras: chat; raw `/v1/completions` with FIM tokens for FIM-trained models;
`/v1/completions` with a `suffix`, where the server knows the model's FIM template itself
(Ollama, DeepSeek; llama-cpp-python 0.3.36 wraps the suffix in token 0 instead); or
llama.cpp's native `/infill`.

`/infill` is used as llama.cpp's server README ("LLaMA.cpp HTTP Server", section
"POST /infill: For code infilling", with the `/completion` options it accepts) documents it,
and as llama.vim and llama.vscode call it: `input_prefix` is the code before the cursor's
line, `prompt` the cursor's line up to the cursor ("added after the FIM_MID token"),
`input_suffix` the code after the cursor, `input_extra` an array of
`{"filename", "text"}` chunks placed before the FIM prefix (here the related code the context
builder rendered, one chunk), `cache_prompt` reuses the slot's evaluated prompt across
keystrokes, and `t_max_predict_ms` ends generation once that long has passed since the first
token and a newline is out. The stream is server-sent events of `{"content": ..., "stop": ...}`
objects, without a closing `[DONE]`.

FIM support is detected where the wire tells it: llama.cpp answers `/infill` with HTTP 501
("Infill is not supported by this model: prefix token is missing. ...") for a model without
FIM tokens, and a server without the endpoint answers 404; either way the user is told once
and the backend goes on in chat mode. In `fim` and `suffix` modes nothing on the wire tells:
a server answers 200 with whatever the model makes of FIM tokens it lacks (plain text to it).
For `fim` mode the vocabulary is checked where the server exposes its tokenizer
(llama-cpp-python's `/extras/tokenize`): a FIM prefix token that splits into several tokens
is one the model lacks, told once, and chat is used. Other servers' vocabularies, and the
FIM template a server applies in `suffix` mode, are not checked; `lsp-spark doctor` shows
what each mode answers.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Sequence
from typing import Any, Literal

from lsp_spark.backends.base import (
    Backend,
    BackendError,
    ChatUsage,
    CompletionRequest,
    Message,
)
from lsp_spark.backends.http import ApiClient, delta_text, model_ids
from lsp_spark.prompts.chat import chat_messages
from lsp_spark.prompts.fim import FIM_TEMPLATES

CHAT_PATH = "/v1/chat/completions"
COMPLETIONS_PATH = "/v1/completions"
MODELS_PATH = "/v1/models"
TOKENIZE_PATH = "/extras/tokenize"
"""llama-cpp-python's tokenizer endpoint; it parses special tokens (`special=True`), so a FIM
token the vocabulary has comes back as one token."""
INFILL_PATH = "/infill"
MAX_STOP_SEQUENCES = 4
PREDICT_SHARE_OF_TIMEOUT = 0.5
"""`/infill`'s `t_max_predict_ms` is this share of the request's timeout: generation stops in
time for its answer to arrive before lsp-spark gives up, the rest left to evaluating the
prompt (llama.cpp counts the limit from the first generated token)."""
NO_FIM_STATUSES = {
    501: "the model has no FIM tokens (llama.cpp: infill is not supported by this model)",
    404: "the server has no /infill endpoint (llama.cpp's llama-server has one)",
}
"""What an answer to `/infill` says about FIM support, by HTTP status."""
OpenAIMode = Literal["chat", "fim", "suffix", "infill"]
PROBE_REQUEST = CompletionRequest(
    prefix="def add(a, b):\n    return ", suffix="\n", language="python", max_tokens=4
)
"""The tiny completion `lsp-spark doctor` asks in each mode."""


class OpenAICompatibleBackend(Backend):
    name = "openai"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        mode: OpenAIMode = "chat",
        fim_template: str = "qwen",
        timeout: float = 8.0,
        actions_timeout: float = 120.0,
    ) -> None:
        super().__init__(model)
        self._mode = mode
        self._template = FIM_TEMPLATES[fim_template]
        self._timeout = timeout
        self._vocabulary_checked = False
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

    @property
    def mode(self) -> OpenAIMode:
        """The mode requests go out in: the configured one, or chat after FIM proved
        unsupported."""
        return self._mode

    def _infill_body(self, request: CompletionRequest) -> dict[str, Any]:
        line_start = request.prefix.rfind("\n") + 1
        body: dict[str, Any] = {
            "input_prefix": request.prefix[:line_start],
            "prompt": request.prefix[line_start:],
            "input_suffix": request.suffix,
            "input_extra": (
                [{"filename": "related code", "text": request.context}] if request.context else []
            ),
            "n_predict": request.max_tokens,
            "temperature": request.temperature,
            "cache_prompt": True,
            "t_max_predict_ms": max(1, round(self._timeout * 1000 * PREDICT_SHARE_OF_TIMEOUT)),
            "stream": True,
        }
        if request.stop:
            body["stop"] = list(request.stop[:MAX_STOP_SEQUENCES])
        return body

    def _body(self, request: CompletionRequest, mode: OpenAIMode) -> tuple[str, dict[str, Any]]:
        if mode == "infill":
            return INFILL_PATH, self._infill_body(request)
        body: dict[str, Any] = {
            "model": self.model,
            "stream": True,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "stream_options": {"include_usage": True},
        }
        if mode == "fim":
            body["prompt"] = self._template.render(request)
            body["stop"] = [*self._template.stop, *request.stop]
            return COMPLETIONS_PATH, body
        if mode == "suffix":
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

    async def _stream_in(
        self, request: CompletionRequest, mode: OpenAIMode, timeout: float
    ) -> AsyncGenerator[str, None]:
        path, body = self._body(request, mode)
        async with contextlib.aclosing(self._http.events(path, body, timeout)) as events:
            async for payload in events:
                if text := infill_text(payload) if mode == "infill" else delta_text(payload):
                    yield text

    async def stream(self, request: CompletionRequest) -> AsyncGenerator[str, None]:
        mode = self._mode
        try:
            async with contextlib.aclosing(self._stream_in(request, mode, self._timeout)) as texts:
                async for text in texts:
                    yield text
            return
        except BackendError as failure:
            # The status comes with the answer's head, before any text: the request can
            # still be made in chat mode.
            if mode != "infill" or (reason := NO_FIM_STATUSES.get(failure.status or 0)) is None:
                raise
            refusal = failure.args[0]
        if self._mode == "infill":
            self._mode = "chat"
            self.tell(
                f"lsp-spark: {refusal} For /infill that means {reason}; completions use chat "
                "mode instead."
            )
        async with contextlib.aclosing(self._stream_in(request, "chat", self._timeout)) as texts:
            async for text in texts:
                yield text

    async def probe(self, mode: OpenAIMode, timeout: float) -> str:
        """What a tiny completion in `mode` brings back (`lsp-spark doctor`); raises what
        failed."""
        pieces = []
        async with contextlib.aclosing(self._stream_in(PROBE_REQUEST, mode, timeout)) as texts:
            async for text in texts:
                pieces.append(text)
        return "".join(pieces)

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
        if self._mode == "fim" and not self._vocabulary_checked:
            self._vocabulary_checked = True
            await self._check_fim_vocabulary()

    async def _check_fim_vocabulary(self) -> None:
        """In fim mode, whether the model has the template's prefix token, where the server
        can tell (llama-cpp-python); a server without the endpoint leaves it unknown."""
        marker = self._template.prefix
        try:
            answer = await self._http.post_json(TOKENIZE_PATH, {"input": marker}, self._timeout)
        except BackendError:
            return
        tokens = answer.get("tokens") if isinstance(answer, dict) else None
        if isinstance(tokens, list) and len(tokens) > 1:
            self._mode = "chat"
            self.tell(
                f"lsp-spark: the model at {self._http.address} has no {marker!r} token (its "
                f"tokenizer splits it into {len(tokens)}): it lacks fimTemplate's FIM tokens; "
                "completions use chat mode instead."
            )

    async def list_models(self) -> list[str]:
        return model_ids(await self._http.get_json(MODELS_PATH, self._timeout))

    async def aclose(self) -> None:
        await self._http.aclose()


def infill_text(payload: dict[str, Any]) -> str:
    """The text of one event of llama.cpp's native stream (`/infill`, `/completion`)."""
    content = payload.get("content")
    return content if isinstance(content, str) else ""
