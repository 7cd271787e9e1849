"""What a pause costs: the keystroke path's own stages, back to back and after pauses.

Run ``python benchmarks/bench_cold.py [--tiny] [--output PATH]``: prints median microseconds
per stage and writes ``benchmarks/results/cold.json`` (or PATH); ``--tiny`` takes 5 samples
per condition, to check the stages still run. One character is typed into a function of
textwrap per sample, then the stages the server runs for it are timed in this process (no
pipes, no model): the edit, the context build, redaction with the prompt's JSON, and
post-processing of a two-line suggestion. Samples are taken back to back, after a sleep (the gap a
typist leaves between keys is 60 ms or more) and after spinning on the CPU for as long. A
plain Python workload that is not lsp-spark's (JSON and dict work of a similar size) is timed
the same way, as a control.

It shows how much of the replay's overhead is the machine's rather than the code's: here
the same work takes several times longer once the process has paused for a few
milliseconds, whatever the work is (the control too).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import textwrap
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from timing import add_size_options  # noqa: E402

from lsp_spark.backends.base import CompletionRequest  # noqa: E402
from lsp_spark.context.budget import Budget  # noqa: E402
from lsp_spark.context.builder import ContextBuilder, ContextOptions  # noqa: E402
from lsp_spark.documents import PositionEncoding  # noqa: E402
from lsp_spark.postprocess import SuggestionStream  # noqa: E402
from lsp_spark.privacy.redaction import redact_request  # noqa: E402
from lsp_spark.prompts.chat import chat_messages  # noqa: E402
from lsp_spark.workspace import Workspace  # noqa: E402

URI = "file:///bench/textwrap.py"
FUNCTION = "\n\ndef summarise(text, width=70):\n    "
TYPED = "lines = wrap(text, width)\n    result = shorten(' '.join(lines), width)\n    "
DELTAS = ("return", " dedent", "(result", ")\n", "    ", "# done", "\n")
SAMPLES = 150
TINY_SAMPLES = 5
PAUSES_MS = (2.0, 20.0, 100.0)
RESULTS = ROOT / "benchmarks" / "results" / "cold.json"
STAGES = ("edit", "context", "redaction + prompt JSON", "post-processing", "control")
OURS = STAGES[:-1]
TOTAL = "lsp-spark's stages together"
CONTROL_MESSAGE = json.dumps(
    {
        "jsonrpc": "2.0",
        "method": "textDocument/didChange",
        "params": {
            "textDocument": {"uri": URI, "version": 1},
            "contentChanges": [
                {"range": {"start": {"line": n, "character": 4}, "end": {"line": n}}, "text": "x"}
                for n in range(40)
            ],
        },
    }
)


def control() -> None:
    """Work of the same kind and size as a keystroke's, in no way lsp-spark's."""
    message = json.loads(CONTROL_MESSAGE)
    changes = message["params"]["contentChanges"]
    rows = {change["range"]["start"]["line"]: change["text"] for change in changes}
    json.dumps(sorted(rows.items()))


class Typist:
    """Types TYPED into a function at the end of textwrap, one character per sample."""

    def __init__(self) -> None:
        text = Path(textwrap.__file__).read_text(encoding="utf-8") + FUNCTION
        self.workspace = Workspace()
        self.document = self.workspace.open(URI, "python", 1, text)
        self.contexts = ContextBuilder(self.workspace)
        self.row = text.count("\n")
        self.column = 4
        self.version = 1
        self.options = ContextOptions(budget=Budget(2048), max_lines=8)

    def keystroke(self) -> dict[str, float]:
        """One typed character, and each stage's time for it in microseconds."""
        clock = time.perf_counter
        char = TYPED[self.version % len(TYPED)]
        self.version += 1
        times: dict[str, float] = {}
        start = clock()
        position = (self.row, self.column)
        change = (position, position, char)
        self.workspace.change(URI, self.version, [change], PositionEncoding.UTF16)
        self.row, self.column = (self.row + 1, 0) if char == "\n" else (self.row, self.column + 1)
        edited = clock()
        built = self.contexts.build(self.document, self.row, self.column, self.options)
        context_done = clock()
        if built is None:
            raise RuntimeError("no context at the cursor")
        request, _ = redact_request(
            CompletionRequest(
                prefix=built.window.prefix,
                suffix=built.window.suffix,
                language="python",
                filename="textwrap.py",
                context=built.related,
            )
        )
        json.dumps({"model": "m", "messages": chat_messages(request)}).encode()
        prompt_done = clock()
        stream = SuggestionStream(built.cursor)
        for delta in DELTAS:
            if stream.feed(delta):
                break
        stream.suggestion()
        post_done = clock()
        control()
        control_done = clock()
        for stage, begin, end in zip(
            STAGES,
            (start, edited, context_done, prompt_done, post_done),
            (edited, context_done, prompt_done, post_done, control_done),
            strict=True,
        ):
            times[stage] = (end - begin) * 1e6
        return times


def spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


async def run_condition(
    typist: Typist, pause: Callable[[], object], count: int
) -> dict[str, float]:
    samples: dict[str, list[float]] = {stage: [] for stage in (*STAGES, TOTAL)}
    for _ in range(count):
        waited = pause()
        if asyncio.iscoroutine(waited):
            await waited
        times = typist.keystroke()
        times[TOTAL] = sum(times[stage] for stage in OURS)
        for stage, value in times.items():
            samples[stage].append(value)
    return {stage: statistics.median(values) for stage, values in samples.items()}


async def conditions(count: int) -> dict[str, dict[str, float]]:
    """Median µs per stage under each condition, `count` keystrokes each."""
    typist = Typist()
    await asyncio.sleep(0.5)  # the outline refresh after opening, off the samples
    for _ in range(count):
        typist.keystroke()  # warm up: every code path taken once
    pauses: dict[str, Callable[[], object]] = {"back to back": lambda: None}
    for pause_ms in PAUSES_MS:
        pauses[f"after {pause_ms:g} ms asleep"] = partial(asyncio.sleep, pause_ms / 1000)
    pauses[f"after {PAUSES_MS[0]:g} ms spinning"] = partial(spin, PAUSES_MS[0] / 1000)
    return {name: await run_condition(typist, pause, count) for name, pause in pauses.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    add_size_options(parser, RESULTS, f"{TINY_SAMPLES} samples: checks, not figures")
    arguments = parser.parse_args()
    count = TINY_SAMPLES if arguments.tiny else SAMPLES
    results = asyncio.run(conditions(count))
    hot = results["back to back"]
    slowest = f"after {PAUSES_MS[-1]:g} ms asleep"
    width = max(map(len, (*STAGES, TOTAL)))
    print(f"median µs per keystroke, {count} keystrokes per condition")
    print(f"{'stage':<{width}}  " + "  ".join(f"{name:>18}" for name in results) + "  ratio")
    for stage in (*OURS, TOTAL, STAGES[-1]):
        cells = "  ".join(f"{results[name][stage]:>18.1f}" for name in results)
        print(f"{stage:<{width}}  {cells}  {results[slowest][stage] / hot[stage]:>5.1f}")
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "samples": count,
        "medianMicroseconds": results,
    }
    arguments.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"ratio: {slowest} over back to back\nwrote {arguments.output}")


if __name__ == "__main__":
    main()
