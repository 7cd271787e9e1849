"""Execution-scored hole filling on MBPP: does lsp-spark's ghost text make programs that pass?

Run: `python benchmarks/mbpp.py [--tiny | --full] [--data PATH] [--seed N] [--output PATH]`
(prints a table, writes benchmarks/results/mbpp.json, or PATH). The default is a seeded subset
(150 single-line and 40 multi-line holes from 100 problems) that takes under ten minutes on two
cores; `--full` fills every hole of every problem; `--tiny` fills 3 single-line holes and 1
multi-line hole, to check the benchmark still works, not to score anything.

Holes are cut in MBPP's reference solutions (Austin et al. 2021, CC BY 4.0; see
/work/shared/data/README.md), and only in problems whose reference solution passes its tests
here. A single-line hole is one non-blank line inside a function body, replaced by its leading
whitespace as an editor's auto-indent leaves it; a multi-line hole is the 2-6 line body of a
`def`/`for`/`while`/`if`/`with`/`try`, or a whole 2-6 line loop, replaced by one line with its
indentation. The cursor sits at the end of that whitespace, with the rest of the file below it.
A hole whose tests still pass when it is left empty (a comment, a docstring line, a redundant
statement) is dropped: there an empty suggestion would score a pass.

Two systems fill the same holes. lsp-spark: the real server over stdio with the embedded model;
its first inline completion item is applied over its range, as accepting it would. The raw
model: the same GGUF file through llama.cpp, greedy, prompted with the text before the cursor
only, stopped at the end of the line (single-line holes) or at a blank line or a new top-level
`def`/`class` (multi-line holes). Each filled program runs with its tests in a fresh interpreter
(`-I`, a temporary directory, 10 s, two at a time); pass@1 is the share of holes whose program
exits 0. The table also shows how often a system offers nothing, re-types the line below the
hole, breaks the syntax or (multi-line holes) runs more than two lines past the hole's length.

`benchmarks/humaneval.py` runs the same on HumanEval, a second set in a different style, so
that a change fitted to MBPP shows there.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import contextlib
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from holes import did_close, did_open, started_server, stats, warm_up  # noqa: E402
from lsprotocol import types  # noqa: E402
from pygls.exceptions import JsonRpcException  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402
from timing import add_size_options  # noqa: E402

from lsp_spark.backends.local import _load_llama, bundled_model_path  # noqa: E402
from lsp_spark.testing import isolated_environment  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "mbpp.jsonl"
SAMPLE = ROOT / "fixtures" / "mbpp" / "sample.jsonl"
"""Four MBPP problems in the repository, for `--tiny`: the test suite runs without `DATA`."""
DEFAULT_SEED = 2108
HoleKind = Literal["single", "multi"]
KINDS: tuple[HoleKind, ...] = ("single", "multi")
SYSTEMS = ("lsp-spark", "raw model")
REMOVED_LINES = range(2, 7)
"""How many lines a multi-line hole removes."""
BLOCK_OWNERS = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.If,
    ast.With,
    ast.AsyncWith,
    ast.Try,
)
LOOPS = (ast.For, ast.AsyncFor, ast.While)
RAW_STOPS: dict[HoleKind, list[str]] = {
    "single": ["\n"],
    "multi": ["\n\n", "\ndef ", "\nclass "],
}
RAW_MAX_TOKENS: dict[HoleKind, int] = {"single": 64, "multi": 160}
RAW_CONTEXT_TOKENS = 2048
THREADS = min(4, os.cpu_count() or 1)
"""Model threads for both systems, so neither gets more of the machine."""
RUNNERS = 2
"""Programs run at once: the machine has two cores."""
RUN_SECONDS = 10.0
CPU_SECONDS = int(RUN_SECONDS) + 1
"""The program's CPU limit, which the kernel enforces even if the benchmark dies first."""
RUN_MEMORY_BYTES = 2 << 30
"""A generated `while True: items.append(...)` must not take the machine's memory."""
LONG_MARGIN = 2
"""A multi-line suggestion more than this many lines past the hole's length runs on."""
PROGRESS_EVERY = 25
"""Holes between two progress lines: a full run takes hours."""
FILL_TIMEOUT = 180.0
"""Seconds one hole may take. A timeout scores as no suggestion, so it sits far above any
latency of a quiet machine: a busy one slows the model, and should not change the scores."""


@dataclass(frozen=True, slots=True)
class Size:
    name: str
    problems: int | None
    """Problems sampled for holes; None takes them all, and then every hole."""
    holes: dict[HoleKind, int]


TINY = Size("tiny", 4, {"single": 3, "multi": 1})
DEFAULT = Size("default", 100, {"single": 150, "multi": 40})
FULL = Size("full", None, {})


@dataclass(frozen=True, slots=True)
class Problem:
    task_id: int
    code: str
    """The reference solution, with `\\n` line breaks."""
    setup: str
    tests: tuple[str, ...]
    body_start: int = 0
    """The first row a hole may start on: rows above it are given (HumanEval's signature and
    docstring), not cut."""

    def program(self, code: str) -> str:
        """What runs to judge `code`: the setup, the code, then the asserts."""
        return self.setup + "\n" + code + "\n" + "\n".join(self.tests)


@dataclass(frozen=True)
class Hole:
    """Rows `first` to `last` (0-based) of the solution, replaced by the line `indent`."""

    problem: Problem
    kind: HoleKind
    first: int
    last: int
    indent: str

    @cached_property
    def prefix(self) -> str:
        """The document up to the cursor, which ends the auto-indented line."""
        return "\n".join([*self.problem.code.split("\n")[: self.first], self.indent])

    @cached_property
    def suffix(self) -> str:
        """The document after the cursor: the rest of the solution, from the next line."""
        return "".join("\n" + line for line in self.problem.code.split("\n")[self.last + 1 :])

    @property
    def document(self) -> str:
        return self.prefix + self.suffix

    @property
    def removed_lines(self) -> int:
        return self.last - self.first + 1


@dataclass(frozen=True, slots=True)
class Fill:
    suggestion: str
    code: str
    """The solution as the editor holds it once the suggestion is accepted."""
    latency_ms: float | None = None
    failure: str | None = None
    """Why the server gave no answer (a timeout, an error): scored as no suggestion."""


def normalise_line_breaks(code: str) -> str:
    return code.replace("\r\n", "\n").replace("\r", "\n")


def load_problems(path: Path) -> list[Problem]:
    problems = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            problems.append(
                Problem(
                    record["task_id"],
                    normalise_line_breaks(record["code"]),
                    record["test_setup_code"],
                    tuple(record["test_list"]),
                )
            )
    return problems


@dataclass(frozen=True, slots=True)
class Dataset:
    """A set of problems to cut holes in: its name (for files), its title (for people), the
    data by default and for `--tiny`, and how to read it."""

    name: str
    title: str
    data: Path
    sample: Path
    load: Callable[[Path], list[Problem]]


MBPP = Dataset("mbpp", "MBPP", DATA, SAMPLE, load_problems)


def leading_whitespace(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def first_row(node: ast.stmt) -> int:
    """The 1-based row a statement starts on, its decorators included."""
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])


def starts_its_line(lines: list[str], node: ast.stmt) -> bool:
    """Whether only indentation precedes the statement (not `if x: y`, not `a; b`)."""
    return not lines[node.lineno - 1][: node.col_offset].strip()


def single_line_holes(problem: Problem, tree: ast.Module) -> list[Hole]:
    """Every non-blank line indented deeper than the `def` whose body holds it."""
    lines = problem.code.split("\n")
    rows: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            depth = len(leading_whitespace(lines[node.lineno - 1]))
            for row in range(node.body[0].lineno - 1, node.end_lineno or node.lineno):
                line = lines[row]
                if line.strip() and len(leading_whitespace(line)) > depth:
                    rows.add(row)
    return [
        Hole(problem, "single", row, row, leading_whitespace(lines[row])) for row in sorted(rows)
    ]


def multi_line_holes(problem: Problem, tree: ast.Module) -> list[Hole]:
    """Block bodies of 2-6 lines, and whole loops of 2-6 lines, each removed down to one
    indented line; a loop that is a whole body cuts the same hole once."""
    lines = problem.code.split("\n")
    spans: set[tuple[int, int]] = set()
    for node in ast.walk(tree):
        if isinstance(node, BLOCK_OWNERS):
            body_first, body_last = node.body[0], node.body[-1]
            if body_first.lineno > node.lineno and starts_its_line(lines, body_first):
                spans.add((first_row(body_first) - 1, (body_last.end_lineno or 0) - 1))
        if isinstance(node, LOOPS) and starts_its_line(lines, node):
            spans.add((node.lineno - 1, (node.end_lineno or 0) - 1))
    return [
        Hole(problem, "multi", first, last, leading_whitespace(lines[first]))
        for first, last in sorted(spans)
        if last - first + 1 in REMOVED_LINES
    ]


def candidate_holes(problem: Problem) -> list[Hole]:
    tree = ast.parse(problem.code)
    holes = single_line_holes(problem, tree) + multi_line_holes(problem, tree)
    return [hole for hole in holes if hole.first >= problem.body_start]


def passes(program: str) -> bool:
    """Whether the program exits 0 in a fresh, isolated interpreter within the time limit."""
    with tempfile.TemporaryDirectory(prefix="lsp-spark-mbpp-run-") as folder:
        script = Path(folder) / "program.py"
        script.write_text(program, encoding="utf-8")
        process = subprocess.Popen(
            [sys.executable, "-I", str(script)],
            cwd=folder,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        with contextlib.suppress(ProcessLookupError):
            limit = (RUN_MEMORY_BYTES, RUN_MEMORY_BYTES)
            resource.prlimit(process.pid, resource.RLIMIT_AS, limit)
            resource.prlimit(process.pid, resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS + 1))
        try:
            return process.wait(timeout=RUN_SECONDS) == 0
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            return False


def run_all(programs: Sequence[str]) -> list[bool]:
    with ThreadPoolExecutor(max_workers=RUNNERS) as pool:
        return list(pool.map(passes, programs))


def spread(holes: list[Hole], count: int, rng: random.Random) -> list[Hole]:
    """A seeded sample that takes every problem's first hole before any problem's second, so
    problems with long solutions do not make up the set."""
    taken: Counter[int] = Counter()
    ranked = []
    for hole in rng.sample(holes, len(holes)):
        ranked.append((taken[hole.problem.task_id], hole))
        taken[hole.problem.task_id] += 1
    ranked.sort(key=lambda pair: pair[0])
    return [hole for _, hole in ranked[:count]]


def choose_holes(
    problems: list[Problem], size: Size, seed: int
) -> tuple[list[Hole], dict[str, Any]]:
    """The holes to fill, and what was dropped on the way: problems whose reference fails
    here, and holes whose tests pass with the hole left empty."""
    rng = random.Random(seed)
    if size.problems is not None:
        problems = rng.sample(problems, min(size.problems, len(problems)))
    reference_passes = run_all([problem.program(problem.code) for problem in problems])
    usable = [problem for problem, ok in zip(problems, reference_passes, strict=True) if ok]
    candidates = [hole for problem in usable for hole in candidate_holes(problem)]
    empty_passes = run_all([hole.problem.program(hole.document) for hole in candidates])
    meaningful = [hole for hole, ok in zip(candidates, empty_passes, strict=True) if not ok]
    chosen: list[Hole] = []
    for kind in KINDS:
        pool = [hole for hole in meaningful if hole.kind == kind]
        chosen += pool if size.problems is None else spread(pool, size.holes[kind], rng)
    chosen.sort(key=lambda hole: (hole.problem.task_id, hole.first, hole.kind))
    dropped = {
        "problemsSampled": len(problems),
        "referenceFails": sorted(p.task_id for p in problems if p not in usable),
        "candidateHoles": len(candidates),
        "holesPassingEmpty": sum(empty_passes),
    }
    return chosen, dropped


def offset_at(text: str, line: int, character: int) -> int:
    """The string index of an LSP position (UTF-16 code units, the default encoding)."""
    rows = text.split("\n")
    before = sum(len(row) + 1 for row in rows[:line])
    units = rows[line].encode("utf-16-le")[: 2 * character] if line < len(rows) else b""
    return before + len(units.decode("utf-16-le", errors="ignore"))


def accept(document: str, cursor: int, item: types.InlineCompletionItem) -> tuple[str, str]:
    """The item's text, and the buffer after accepting it: the text over the item's range,
    or at the cursor if it has none."""
    text = item.insert_text if isinstance(item.insert_text, str) else item.insert_text.value
    start = end = cursor
    if item.range is not None:
        start = offset_at(document, item.range.start.line, item.range.start.character)
        end = offset_at(document, item.range.end.line, item.range.end.character)
    return text, document[:start] + text + document[end:]


async def server_fill(client: LanguageClient, path: Path, hole: Hole) -> Fill:
    """Open the cut solution, let the server read it (a stats round trip), ask for ghost
    text at the cursor, close it. A timeout or an error counts as no suggestion."""
    document = hole.document
    did_open(client, path, document)
    await stats(client)
    sent = time.perf_counter()
    request = client.protocol.send_request_async(
        types.TEXT_DOCUMENT_INLINE_COMPLETION,
        types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(path.as_uri()),
            position=types.Position(hole.first, len(hole.indent)),
            context=types.InlineCompletionContext(
                trigger_kind=types.InlineCompletionTriggerKind.Automatic
            ),
        ),
    )
    try:
        result = await asyncio.wait_for(request, FILL_TIMEOUT)
        failure = None
    except (TimeoutError, JsonRpcException) as error:
        result, failure = None, repr(error)
    latency_ms = (time.perf_counter() - sent) * 1000
    did_close(client, path)
    items = result.items if result else []
    if not items:
        return Fill("", document, latency_ms, failure)
    suggestion, code = accept(document, len(hole.prefix), items[0])
    return Fill(suggestion, code, latency_ms)


async def lsp_spark_fills(holes: list[Hole], name: str) -> tuple[list[Fill], str, list[str]]:
    """Start the server with the embedded model, fill every hole, always stop it; returns the
    fills, the model's name and what the server told the user."""
    settings = {"backend": "local", "localThreads": THREADS, "debounceMs": 0}
    messages: list[str] = []
    with tempfile.TemporaryDirectory(prefix="lsp-spark-mbpp-") as home:
        folder = Path(home)
        environment = isolated_environment(home)
        async with started_server("lsp-spark-mbpp", environment, settings, messages) as client:
            await warm_up(client, folder)
            fills = []
            for index, hole in enumerate(holes):
                if client._server is None or client._server.returncode is not None:
                    raise RuntimeError(f"the server exited before hole {index}")
                path = folder / f"{name}_{hole.problem.task_id}_{index}.py"
                fills.append(await server_fill(client, path, hole))
                if (index + 1) % PROGRESS_EVERY == 0:
                    print(f"  lsp-spark: {index + 1}/{len(holes)} holes", flush=True)
            model = (await stats(client)).model
    return fills, model, messages


def raw_model_fills(holes: list[Hole]) -> list[Fill]:
    """The bundled model on its own: greedy, prompted with the text before the cursor, from
    the weights the server runs (loaded as the server loads them)."""
    model = _load_llama(bundled_model_path(), RAW_CONTEXT_TOKENS, THREADS, THREADS, eight_bit=True)
    fills = []
    for hole in holes:
        answer: Any = model.create_completion(
            hole.prefix,
            max_tokens=RAW_MAX_TOKENS[hole.kind],
            temperature=0.0,
            stop=RAW_STOPS[hole.kind],
        )
        text: str = answer["choices"][0]["text"]
        fills.append(Fill(text, hole.prefix + text + hole.suffix))
    return fills


def non_blank_lines(text: str) -> list[str]:
    return [line.strip() for line in text.split("\n") if line.strip()]


def retypes_next_line(hole: Hole, fill: Fill) -> bool:
    """Whether the suggestion ends with the line that already follows the hole."""
    ours, below = non_blank_lines(fill.suggestion), non_blank_lines(hole.suffix)
    return bool(ours and below) and ours[-1] == below[0]


def parses(code: str) -> bool:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return True


def runs_long(hole: Hole, fill: Fill) -> bool:
    return len(fill.suggestion.rstrip().split("\n")) > hole.removed_lines + LONG_MARGIN


def share(flags: Sequence[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None


def metrics(
    kind: HoleKind, holes: list[Hole], fills: list[Fill], passed: list[bool]
) -> dict[str, Any]:
    """The scores of one system on one kind of hole. Re-typing, breaking the syntax and
    running long are shares of the suggestions shown, so silence neither helps nor hurts."""
    shown = [(h, f) for h, f in zip(holes, fills, strict=True) if f.suggestion.strip()]
    latencies = [fill.latency_ms for fill in fills if fill.latency_ms is not None]
    return {
        "holes": len(holes),
        "passAt1": share(passed),
        "empty": share([not fill.suggestion.strip() for fill in fills]),
        "duplicateSuffix": share([retypes_next_line(h, f) for h, f in shown]),
        "unparsable": share([not parses(f.code) for _, f in shown]),
        "tooLong": share([runs_long(h, f) for h, f in shown]) if kind == "multi" else None,
        "medianLatencyMs": statistics.median(latencies) if latencies else None,
        "failures": sum(fill.failure is not None for fill in fills),
    }


def scores(
    holes: list[Hole], fills: dict[str, list[Fill]], passed: dict[str, list[bool]]
) -> dict[str, dict[str, dict[str, Any]]]:
    """Metrics by system, then by kind of hole."""
    table: dict[str, dict[str, dict[str, Any]]] = {}
    for system in SYSTEMS:
        table[system] = {}
        for kind in KINDS:
            rows = [index for index, hole in enumerate(holes) if hole.kind == kind]
            table[system][kind] = metrics(
                kind,
                [holes[index] for index in rows],
                [fills[system][index] for index in rows],
                [passed[system][index] for index in rows],
            )
    return table


def ratio(table: dict[str, dict[str, dict[str, Any]]], kind: HoleKind) -> float | None:
    ours, raw = table["lsp-spark"][kind]["passAt1"], table["raw model"][kind]["passAt1"]
    return ours / raw if ours is not None and raw else None


def cell(value: float | None, render: Callable[[float], str], width: int) -> str:
    return (render(value) if value is not None else "-").rjust(width)


def print_table(table: dict[str, dict[str, dict[str, Any]]]) -> None:
    print(
        f"{'system':<11}{'holes':<8}{'n':>5}{'pass@1':>8}{'empty':>7}{'dup':>7}"
        f"{'unparsable':>11}{'long':>7}{'p50 ms':>8}"
    )
    percent = "{:.1%}".format
    for system in SYSTEMS:
        for kind in KINDS:
            row = table[system][kind]
            print(
                f"{system:<11}{kind:<8}{row['holes']:>5}{cell(row['passAt1'], percent, 8)}"
                f"{cell(row['empty'], percent, 7)}{cell(row['duplicateSuffix'], percent, 7)}"
                f"{cell(row['unparsable'], percent, 11)}{cell(row['tooLong'], percent, 7)}"
                f"{cell(row['medianLatencyMs'], '{:.0f}'.format, 8)}"
            )
    for kind in KINDS:
        print(
            f"lsp-spark pass@1 / raw pass@1, {kind}: {cell(ratio(table, kind), '{:.2f}'.format, 0)}"
        )


def fill_record(fill: Fill, passed: bool) -> dict[str, Any]:
    latency = round(fill.latency_ms, 1) if fill.latency_ms is not None else None
    return {
        "suggestion": fill.suggestion,
        "passed": passed,
        "latencyMs": latency,
        "failure": fill.failure,
    }


def evaluate(dataset: Dataset, arguments: argparse.Namespace, size: Size) -> dict[str, Any]:
    problems = dataset.load(arguments.data)
    started = time.perf_counter()
    holes, dropped = choose_holes(problems, size, arguments.seed)
    print(f"{len(holes)} holes chosen ({time.perf_counter() - started:.0f} s)", flush=True)
    fills: dict[str, list[Fill]] = {}
    fills["lsp-spark"], model, messages = asyncio.run(lsp_spark_fills(holes, dataset.name))
    for message in messages:
        print(f"  server says: {message}", flush=True)
    print(f"lsp-spark filled them ({time.perf_counter() - started:.0f} s)", flush=True)
    fills["raw model"] = raw_model_fills(holes)
    print(f"the raw model filled them ({time.perf_counter() - started:.0f} s)", flush=True)
    passed = {
        system: run_all([h.problem.program(f.code) for h, f in zip(holes, found, strict=True)])
        for system, found in fills.items()
    }
    table = scores(holes, fills, passed)
    return {
        "python": sys.version.split()[0],
        "data": str(arguments.data),
        "size": size.name,
        "seed": arguments.seed,
        "model": model,
        "threads": THREADS,
        **dropped,
        "holeCount": {kind: sum(hole.kind == kind for hole in holes) for kind in KINDS},
        "scores": table,
        "passRatio": {kind: ratio(table, kind) for kind in KINDS},
        "messages": messages,
        "holes": [
            {
                "taskId": hole.problem.task_id,
                "kind": hole.kind,
                "lines": [hole.first + 1, hole.last + 1],
                **{
                    system: fill_record(fills[system][index], passed[system][index])
                    for system in SYSTEMS
                },
            }
            for index, hole in enumerate(holes)
        ],
    }


def main(dataset: Dataset) -> None:
    parser = argparse.ArgumentParser(
        description=f"Execution-scored hole filling on {dataset.title}"
    )
    results = ROOT / "benchmarks" / "results" / f"{dataset.name}.json"
    add_size_options(parser, results, "3 single-line and 1 multi-line hole: checks, not scores")
    parser.add_argument("--full", action="store_true", help="every hole of every problem")
    parser.add_argument(
        "--data",
        type=Path,
        help=f"the problems (default {dataset.data}; with --tiny, {dataset.sample})",
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="which problems and holes")
    arguments = parser.parse_args()
    if arguments.tiny and arguments.full:
        parser.error("--tiny and --full exclude each other")
    size = TINY if arguments.tiny else FULL if arguments.full else DEFAULT
    if arguments.data is None:
        arguments.data = dataset.sample if arguments.tiny else dataset.data
    started = time.perf_counter()
    report = evaluate(dataset, arguments, size)
    report["runtimeSeconds"] = round(time.perf_counter() - started, 1)
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    arguments.output.write_text(json.dumps(report, indent=2) + "\n")
    print()
    print_table(report["scores"])
    print(
        f"\n{dataset.title}, {size.name} set, seed {report['seed']}, model {report['model']}, "
        f"{report['runtimeSeconds']:.0f} s. pass@1 and empty: shares of all holes; dup (re-types "
        "the line below), unparsable and long (over the hole's lines + 2): shares of the "
        "suggestions shown; p50: median request latency.\n"
        f"JSON in {arguments.output}"
    )


if __name__ == "__main__":
    main(MBPP)
