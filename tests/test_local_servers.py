"""lsp-spark against the model servers people run on their own machine, started for real on
127.0.0.1 with the embedded SmolLM2 GGUF: llama-cpp-python's OpenAI-compatible server on its
default flags (which abort the running request when another arrives). What cannot run here
(Ollama) is a loopback fake reproducing its documented requests and answers.

The language server is driven over stdio as Neovim drives it: per keystroke a didChange and
an inline-completion request, none cancelled. With next-edit predictions on, every keystroke
also asks for a prediction; the request budget (one request at a time for such a server)
keeps them from aborting each other.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_lsp import LanguageClient

from lsp_spark.backends.local import bundled_model_path
from lsp_spark.testing.cerebras_server import CerebrasTestServer
from tests.conftest import SERVER_ENV, StartSpark, inline, open_document, texts, type_text

MODEL = bundled_model_path()
SERVE = [sys.executable, "-m", "llama_cpp.server", "--n_threads", "1", "--n_threads_batch", "1"]
"""On its default flags for requests (`interrupt_requests` on: a request arriving aborts the
one running), on one thread: on two busy cores, threads that wait for each other at every
step of the prompt's evaluation make it ten times slower (about 700 ms a token)."""
STARTUP_GUARD = 120.0
"""Seconds the model server may take to load at most: a hang guard, not a measure."""
TROUBLE = ("cannot reach", "closed the connection", "timed out")
"""What the user must never be told while the server is up and lsp-spark asks politely."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return bool(reply.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


class ModelServer:
    def __init__(self, process: subprocess.Popen[bytes], base_url: str, log: Path) -> None:
        self.process = process
        self.base_url = base_url
        self.log = log


@pytest.fixture(scope="module")
def llama_cpp_python(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModelServer]:
    """`python -m llama_cpp.server --model <GGUF>` on its default flags, on a free port."""
    if MODEL is None:
        pytest.skip("the embedded model is not installed")
    pytest.importorskip("llama_cpp.server", reason="needs llama-cpp-python[server]")
    port = free_port()
    log = tmp_path_factory.mktemp("llama-cpp-python") / "server.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [*SERVE, "--model", str(MODEL), "--host", "127.0.0.1", "--port", str(port)],
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    base_url = f"http://127.0.0.1:{port}"
    try:
        give_up = time.monotonic() + STARTUP_GUARD
        while not answers(f"{base_url}/v1/models"):
            assert process.poll() is None, log.read_text(errors="replace")[-2000:]
            assert time.monotonic() < give_up, "the model server did not start"
            time.sleep(0.2)
        yield ModelServer(process, base_url, log)
    finally:
        process.terminate()
        process.wait(30)


CODE = "def add(a, b):\n    \n\n\nprint(add(1, 2))\n"
LINE = "return a"
"""Typed on the function's blank line, character by character."""


def options(server: ModelServer, mode: str) -> dict[str, Any]:
    """Defaults, but for the server and small requests (the model's work kept short)."""
    return {
        "backend": "openai",
        "baseUrl": server.base_url,
        "openaiMode": mode,
        "nextEdit": True,
        "maxTokens": 16,
        "contextTokens": 256,
        "nextEditMaxTokens": 24,
        "nextEditRegionLines": 6,
        # The model's speed on a busy machine is not what is tested: its time-outs would
        # hide what is (no request of lsp-spark's interrupts another).
        "requestTimeoutMs": 120000,
    }


def plain(value: Any) -> Any:
    """A reply as dicts and lists (pygls hands an untyped one over as named tuples)."""
    if hasattr(value, "_asdict"):
        return {key: plain(item) for key, item in value._asdict().items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


async def stats(client: LanguageClient) -> dict[str, Any]:
    counted: dict[str, Any] = plain(await client.protocol.send_request_async("lspSpark/stats"))
    return counted


def troubles(client: LanguageClient) -> list[str]:
    told = [message.message for message in (*client.messages, *client.log_messages)]
    return [message for message in told if any(word in message.lower() for word in TROUBLE)]


async def type_like_neovim(client: LanguageClient, uri: str, row: int, text: str) -> list[Any]:
    """A didChange and an inline-completion request per keystroke, none cancelled; the
    answers, in the order the keystrokes were made."""
    asked = []
    column = 4
    for version, character in enumerate(text, start=2):
        type_text(client, uri, version, row, column, character)
        column += 1
        asked.append(asyncio.ensure_future(inline(client, uri, row, column)))
    return list(await asyncio.gather(*asked))


@pytest.mark.parametrize("mode", ["chat", "fim", "suffix"])
async def test_typing_a_line_interrupts_no_request(
    start_spark: StartSpark, llama_cpp_python: ModelServer, mode: str
) -> None:
    """Each keystroke asks for ghost text and a next edit; none of lsp-spark's requests is
    aborted by another of its own, and the user is told of no failure."""
    client = await start_spark(options(llama_cpp_python, mode))
    uri = open_document(client, CODE)
    answered = await type_like_neovim(client, uri, 1, LINE)
    assert all(answer is not None for answer in answered), "every keystroke is answered"
    # The prediction asked after the last keystroke runs to its end before stats are read.
    position = {"line": 1, "character": 4 + len(LINE)}
    await client.protocol.send_request_async(
        "textDocument/copilotInlineEdit",
        {"textDocument": {"uri": uri, "version": len(LINE) + 1}, "position": position},
    )
    counted = await stats(client)
    assert counted["upstreamRequests"] >= 1
    assert counted["upstreamErrors"] == 0, counted
    assert counted["nextEdit"]["predictions"] >= 1, "next edits were asked for and answered"
    assert counted["nextEdit"]["failed"] == 0, counted["nextEdit"]
    assert not troubles(client)
    assert counted["requestBudget"]["slots"] == 1
    told = [message.message for message in client.messages if "FIM" in message.message]
    if mode == "fim":
        # SmolLM2 has no FIM tokens: llama-cpp-python's tokenizer splits `<|fim_prefix|>`,
        # which is told once, and chat answers instead. (With a `suffix`, llama-cpp-python
        # 0.3.36 puts token 0 where the FIM tokens go, for any model, which nothing on the
        # wire shows.)
        assert len(told) == 1 and "'<|fim_prefix|>'" in told[0], told
        assert "chat mode" in told[0] and llama_cpp_python.base_url in told[0]
    else:
        assert not told, told


OLLAMA_COMPLETION_FIELDS = frozenset(
    {
        "model",
        "prompt",
        "frequency_penalty",
        "presence_penalty",
        "seed",
        "stop",
        "stream",
        "stream_options",
        "temperature",
        "top_p",
        "max_tokens",
        "suffix",
    }
)
"""The request fields of Ollama's OpenAI-compatible `/v1/completions`, as its document
"OpenAI compatibility" (github.com/ollama/ollama, docs/openai.md, "/v1/completions",
"Supported request fields") lists them; `prompt` is a string only. Its streamed answer is
the OpenAI `text_completion` chunk (`choices[0].text`), ended by `data: [DONE]`, which the
loopback server writes."""


class OllamaCompletions:
    """Answers `/v1/completions` as Ollama does for a FIM model given a `suffix`: the code
    between prompt and suffix. Requests that Ollama would not read as meant are noted."""

    def __init__(self, middle: str) -> None:
        self.middle = middle
        self.problems: list[str] = []

    def __call__(self, body: dict[str, Any]) -> str:
        unknown = set(body) - OLLAMA_COMPLETION_FIELDS
        if unknown:
            self.problems.append(f"fields Ollama does not take: {sorted(unknown)}")
        if not isinstance(body.get("prompt"), str):
            self.problems.append("the prompt is not a string")
        if not isinstance(body.get("suffix"), str):
            self.problems.append("no suffix: Ollama completes the prompt alone")
        return self.middle


async def test_suffix_mode_sends_the_code_after_the_cursor_as_ollama_reads_it(
    start_spark: StartSpark,
) -> None:
    ollama = OllamaCompletions("a + b")
    with CerebrasTestServer(models=["qwen2.5-coder:1.5b"], reply_fn=ollama) as server:
        client = await start_spark(
            {
                "backend": "openai",
                "baseUrl": server.base_url,
                "model": "qwen2.5-coder:1.5b",
                "openaiMode": "suffix",
                "nextEdit": False,
                "prefetch": False,
            }
        )
        uri = open_document(client, "def add(a, b):\n    return \n\n\nprint(add(1, 2))\n")
        answer = await inline(client, uri, 1, 11)
        assert answer is not None and texts(answer) == ["a + b"]
        (asked,) = [request for request in server.requests if request.path == "/v1/completions"]
        assert not ollama.problems, ollama.problems
        assert asked.body["prompt"].endswith("def add(a, b):\n    return ")
        assert asked.body["suffix"].startswith("\n\n\nprint(add(1, 2))")


async def test_infill_mode_on_a_server_without_infill_is_told_once_and_uses_chat(
    start_spark: StartSpark, llama_cpp_python: ModelServer
) -> None:
    """llama-cpp-python has no `/infill` (it answers 404): the user is told once, and ghost
    text comes from chat, for the request that found out and the ones after it."""
    client = await start_spark(options(llama_cpp_python, "infill") | {"nextEdit": False})
    uri = open_document(client, "def add(a, b):\n    return \n")
    for column in (11, 10):
        assert await inline(client, uri, 1, column) is not None
    counted = await stats(client)
    assert counted["upstreamErrors"] == 0, counted
    told = [message.message for message in client.messages if "/infill" in message.message]
    assert len(told) == 1 and "404" in told[0] and "chat mode" in told[0], told
    assert not troubles(client)


def test_doctor_probes_each_mode_of_llama_cpp_python(llama_cpp_python: ModelServer) -> None:
    """`lsp-spark doctor` names what each mode answered: llama-cpp-python has no `/infill`."""
    done = subprocess.run(
        [sys.executable, "-m", "lsp_spark", "doctor"],
        env=SERVER_ENV
        | {
            "LSP_SPARK_BACKEND": "openai",
            "LSP_SPARK_BASE_URL": llama_cpp_python.base_url,
            "LSP_SPARK_MODEL": str(MODEL),
        },
        capture_output=True,
        text=True,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "reachable: yes" in output, output
    for mode in ("chat", "fim", "suffix"):
        assert f"  {mode} (/v1/" in output, output
    assert "  infill (/infill): failed:" in output and "HTTP 404" in output, output
