"""`openaiMode: infill`: llama.cpp's native `/infill`, its fallback to chat for a model
without FIM tokens, and `lsp-spark doctor`'s probe of each mode.

llama.cpp's `llama-server` is not built here, so a loopback fake reproduces what its document
"LLaMA.cpp HTTP Server" (github.com/ggml-org/llama.cpp, tools/server/README.md, sections
"POST /completion" and "POST /infill: For code infilling") describes: the request fields
`input_prefix`, `input_suffix`, `input_extra` (an array of `{"filename": string, "text":
string}` objects), `prompt` (added after the FIM_MID token), and `/completion`'s options;
the streamed answer as server-sent events `data: {"content": ..., "stop": false}`, the last
with `"stop": true` and no `[DONE]`; and for a model without FIM tokens the server's answer
to `/infill`: HTTP 501 with `{"error": {"code": 501, "message": "Infill is not supported by
this model: prefix token is missing. ...", "type": "not_supported_error"}}`.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from lsp_spark.backends.base import CompletionRequest
from lsp_spark.backends.openai_compat import OpenAICompatibleBackend, infill_text
from tests.conftest import SERVER_ENV, StartSpark, inline, open_document, texts

INFILL_FIELDS = frozenset({"input_prefix", "input_suffix", "input_extra", "prompt"})
COMPLETION_OPTIONS = frozenset(
    {"n_predict", "temperature", "cache_prompt", "t_max_predict_ms", "stream", "stop"}
)
"""The `/completion` options lsp-spark sends, each one the document lists."""
NO_FIM_TOKENS = (
    "Infill is not supported by this model: prefix token is missing. suffix token is "
    "missing. middle token is missing. "
)
KEY = "sk-the-infill-key"
MODEL = "qwen2.5-coder-1.5b.gguf"


class LlamaServer(ThreadingHTTPServer):
    """A loopback `llama-server`: `/infill`, `/v1/models`, `/v1/chat/completions` and
    `/v1/completions`, answering `middle` (or `chat_answer` for chat)."""

    daemon_threads = True

    def __init__(self, *, fim_tokens: bool, middle: str, chat_answer: str) -> None:
        super().__init__(("127.0.0.1", 0), LlamaHandler)
        self.fim_tokens = fim_tokens
        self.middle = middle
        self.chat_answer = chat_answer
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.problems: list[str] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]

    def check_infill(self, body: dict[str, Any]) -> None:
        """Notes what the document would not read as lsp-spark means it."""
        unknown = set(body) - INFILL_FIELDS - COMPLETION_OPTIONS
        if unknown:
            self.problems.append(f"fields /infill does not take: {sorted(unknown)}")
        for name in ("input_prefix", "input_suffix", "prompt"):
            if not isinstance(body.get(name), str):
                self.problems.append(f"{name} is not a string")
        extra = body.get("input_extra", [])
        if not isinstance(extra, list) or not all(
            isinstance(chunk, dict)
            and set(chunk) == {"filename", "text"}
            and all(isinstance(value, str) for value in chunk.values())
            for chunk in extra
        ):
            self.problems.append(f"input_extra is not a list of {{filename, text}}: {extra!r}")


class LlamaHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: LlamaServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test reads what was asked from `server.requests`."""

    def do_GET(self) -> None:
        if self.path == "/v1/models":
            self._json(200, {"object": "list", "data": [{"id": MODEL}]})
        else:
            self._json(404, {"error": {"code": 404, "message": "File Not Found"}})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.server.requests.append((self.path, body))
        if self.path == "/infill":
            self.server.check_infill(body)
            if not self.server.fim_tokens:
                error = {"code": 501, "message": NO_FIM_TOKENS, "type": "not_supported_error"}
                self._json(501, {"error": error})
                return
            self._events(
                [{"content": self.server.middle, "stop": False}, {"content": "", "stop": True}]
            )
        elif self.path == "/v1/chat/completions":
            delta = {"choices": [{"index": 0, "delta": {"content": self.server.chat_answer}}]}
            self._events([delta], done=True)
        elif self.path == "/v1/completions":
            self._events([{"choices": [{"index": 0, "text": self.server.middle}]}], done=True)
        else:
            self._json(404, {"error": {"code": 404, "message": "File Not Found"}})

    def _json(self, status: int, document: dict[str, Any]) -> None:
        content = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json; charset=utf-8")
        self.send_header("content-length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)

    def _events(self, payloads: list[dict[str, Any]], done: bool = False) -> None:
        """Server-sent events in chunked encoding, as llama-server streams them."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        events = [f"data: {json.dumps(payload)}\n\n" for payload in payloads]
        if done:
            events.append("data: [DONE]\n\n")
        for event in events:
            data = event.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.write(b"0\r\n\r\n")


def serve(*, fim_tokens: bool) -> Iterator[LlamaServer]:
    server = LlamaServer(fim_tokens=fim_tokens, middle="a + b", chat_answer="a - b")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def llama_server() -> Iterator[LlamaServer]:
    yield from serve(fim_tokens=True)


@pytest.fixture
def llama_server_without_fim() -> Iterator[LlamaServer]:
    yield from serve(fim_tokens=False)


GEOMETRY = "def area(width: float, height: float) -> float:\n    return width * height\n"
CODE = (
    "from geometry import area\n\n\ndef add(a, b):\n    return \n\n\nprint(add(1, 2), area(2, 3))\n"
)
ROW, COLUMN = 4, 11
SIGNATURE = "def area(width: float, height: float) -> float:"


def options(server: LlamaServer) -> dict[str, Any]:
    return {
        "backend": "openai",
        "baseUrl": server.base_url,
        "openaiMode": "infill",
        "nextEdit": False,
        "prefetch": False,
        "cache": False,
        "requestTimeoutMs": 6000,
    }


def last_infill(server: LlamaServer) -> dict[str, Any]:
    return [body for path, body in server.requests if path == "/infill"][-1]


async def test_infill_sends_the_cursor_line_as_prompt_and_related_code_as_input_extra(
    start_spark: StartSpark, llama_server: LlamaServer
) -> None:
    client = await start_spark(options(llama_server))
    open_document(client, GEOMETRY, uri="file:///work/geometry.py")
    uri = open_document(client, CODE)
    answer = await inline(client, uri, ROW, COLUMN)
    assert answer is not None and texts(answer) == ["a + b"]
    asked = last_infill(llama_server)
    assert asked["input_prefix"].endswith("def add(a, b):\n")
    assert asked["prompt"] == "    return "
    assert asked["input_suffix"].startswith("\n\n\nprint(add(1, 2), area(2, 3))")
    assert asked["cache_prompt"] is True and asked["stream"] is True
    assert asked["t_max_predict_ms"] == 3000, "half the request timeout"
    assert asked["n_predict"] >= 1
    # Other files' outlines are read once typing pauses: asked again until the definition
    # shows (bounded: a hang guard, not a measure of how soon).
    for _ in range(200):
        extra = last_infill(llama_server)["input_extra"]
        if any(SIGNATURE in chunk["text"] for chunk in extra):
            break
        await asyncio.sleep(0.05)
        await inline(client, uri, ROW, COLUMN)
    else:
        raise AssertionError(f"the definition never reached input_extra: {extra!r}")
    assert not llama_server.problems, llama_server.problems


async def test_a_model_without_fim_tokens_is_told_once_and_chat_answers(
    start_spark: StartSpark, llama_server_without_fim: LlamaServer
) -> None:
    server = llama_server_without_fim
    client = await start_spark(options(server))
    uri = open_document(client, CODE)
    first = await inline(client, uri, ROW, COLUMN)
    assert first is not None and texts(first) == ["a - b"], "chat answers that same request"
    second = await inline(client, uri, ROW, COLUMN - 1)
    assert second is not None
    asked = [path for path in server.paths() if path != "/v1/models"]
    assert asked == ["/infill", "/v1/chat/completions", "/v1/chat/completions"], asked
    told = [message.message for message in client.messages if "FIM" in message.message]
    assert len(told) == 1, told
    assert "no FIM tokens" in told[0] and "chat mode" in told[0]
    assert f"{server.base_url} answered HTTP 501" in told[0], "the message names where"


def doctor(server: LlamaServer) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "lsp_spark", "doctor"],
        env=SERVER_ENV
        | {
            "LSP_SPARK_BACKEND": "openai",
            "LSP_SPARK_BASE_URL": server.base_url,
            "LSP_SPARK_OPENAI_MODE": "infill",
            "LSP_SPARK_API_KEY": KEY,
            "LSP_SPARK_MODEL": MODEL,
        },
        capture_output=True,
        text=True,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert KEY not in output
    return output


def test_doctor_reports_what_each_mode_answered(llama_server: LlamaServer) -> None:
    output = doctor(llama_server)
    assert "openaiMode in use: infill" in output
    assert "  chat (/v1/chat/completions): answered 'a - b'" in output
    assert "  fim (/v1/completions, FIM tokens in the prompt): answered 'a + b'" in output
    assert "  suffix (/v1/completions with a suffix): answered 'a + b'" in output
    assert "  infill (/infill): answered 'a + b'" in output
    assert not llama_server.problems, llama_server.problems


def test_doctor_shows_infill_refused_for_a_model_without_fim_tokens(
    llama_server_without_fim: LlamaServer,
) -> None:
    output = doctor(llama_server_without_fim)
    assert "  infill (/infill): failed:" in output
    assert "HTTP 501" in output.split("  infill (/infill)")[1]
    assert "  chat (/v1/chat/completions): answered 'a - b'" in output


def test_the_infill_body_splits_the_prefix_at_the_cursor_line() -> None:
    backend = OpenAICompatibleBackend(
        base_url="http://127.0.0.1:9", model="m", mode="infill", timeout=2.0
    )
    request = CompletionRequest(
        prefix="x = 1\ny = ", suffix="\nz = 3\n", context="# util.py\nA = 1", stop=("\n\n",)
    )
    path, body = backend._body(request, "infill")
    assert path == "/infill"
    assert (body["input_prefix"], body["prompt"]) == ("x = 1\n", "y = ")
    assert body["input_extra"] == [{"filename": "related code", "text": "# util.py\nA = 1"}]
    assert body["t_max_predict_ms"] == 1000
    assert body["stop"] == ["\n\n"]
    no_context = backend._body(CompletionRequest(prefix="y = ", suffix=""), "infill")[1]
    assert (no_context["input_prefix"], no_context["input_extra"]) == ("", [])


def test_infill_text_reads_llama_cpp_events() -> None:
    assert infill_text({"content": "ab", "stop": False}) == "ab"
    assert infill_text({"content": None, "stop": True}) == ""
    assert infill_text({"choices": []}) == ""


async def test_fim_mode_is_kept_where_the_server_cannot_show_its_vocabulary(
    llama_server: LlamaServer,
) -> None:
    """llama-server has no `/extras/tokenize` (llama-cpp-python's): nothing is known, nothing
    changes, nothing is told."""
    backend = OpenAICompatibleBackend(base_url=llama_server.base_url, model=MODEL, mode="fim")
    told: list[str] = []
    backend.tell = told.append
    try:
        await backend.warm()
    finally:
        await backend.aclose()
    assert "/extras/tokenize" in llama_server.paths()
    assert (backend.mode, told) == ("fim", [])
