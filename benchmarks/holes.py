"""Hole-filling evaluation, after llm-ls's testbed: how much each context source and filter helps.

Run: `python benchmarks/holes.py [--tiny] [--output PATH]` (prints a table, writes
benchmarks/results/holes.json, or PATH); `--tiny` fills two holes with the baseline
configuration only, to check the benchmark still gets answers, not to score them.
Holes are cut, with a seed, in standard-library modules of the running interpreter (code
nobody on this project wrote): line holes keep the indentation and the first two characters
of a statement inside a function, as if the user had just started typing it; block holes
leave one indented blank line after a `def`/`if`/`for` header whose 2-6 line body was
removed. The real server is started over stdio, once per configuration, and asked for an
inline completion at each hole. Configurations: everything on (baseline), each context
source off alone, all sources off, each post-processing filter off alone.

A 135M model scores low in absolute terms; the point of the table is the deltas against
the baseline. `recent_edits` cannot make a difference here: each document is opened already
cut, so the server has seen no edits.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import difflib
import importlib.util
import io
import json
import os
import random
import statistics
import sys
import sysconfig
import tempfile
import time
import tokenize
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lsprotocol import types  # noqa: E402
from pygls.exceptions import JsonRpcException  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402
from timing import add_size_options  # noqa: E402

from lsp_spark.demo import _drain, loopback_backend, until_backend_prepared  # noqa: E402
from lsp_spark.postprocess.filters import FILTERS  # noqa: E402
from lsp_spark.settings import CONTEXT_SOURCES  # noqa: E402
from lsp_spark.testing import isolated_environment  # noqa: E402

MODULES = (
    "json.decoder",
    "textwrap",
    "shlex",
    "csv",
    "difflib",
    "argparse",
    "email.utils",
    "http.cookies",
    "string",
    "fractions",
    "statistics",
    "heapq",
    "bisect",
    "calendar",
    "configparser",
)
DEFAULT_HOLES = 16
"""1.5-2 s a hole on two cores, times 18 configurations: 8-11 minutes; 40 would take 25."""
TINY_HOLES = 2
DEFAULT_SEED = 2024
BLOCK_SHARE = 1 / 3
TYPED_CHARACTERS = 2
MIN_LINE_CHARS = TYPED_CHARACTERS + 3
"""A line hole leaves at least three characters to guess."""
BODY_LINES = range(2, 7)
BLOCK_HEADERS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.If, ast.For, ast.AsyncFor)
SIBLINGS = 2
REQUEST_TIMEOUT = 300.0
"""A hang guard, not a pace: on a busy machine the embedded model's prompt evaluation, which
no deadline can cut short, alone takes tens of seconds; a hole past this scores 0."""
SHUTDOWN_TIMEOUT = 60.0
THREADS = min(4, os.cpu_count() or 1)
"""Every core (the server alone takes half, to spare the editor): more holes fit in the time,
and latencies are lower than a user would see."""
FILTER_NAMES = tuple(step.__name__ for step in FILTERS)
RESULTS = ROOT / "benchmarks" / "results" / "holes.json"
HoleKind = Literal["line", "block"]


@dataclass(frozen=True, slots=True)
class Hole:
    """Where to cut: `row` is the cursor's 0-based row, `end` the last removed row."""

    module: str
    kind: HoleKind
    row: int
    end: int


@dataclass(frozen=True, slots=True)
class Cut:
    """A hole applied to its file: the document the server sees and the text it should add."""

    hole: Hole
    path: Path
    text: str
    line: int
    character: int
    expected: str


@dataclass(frozen=True, slots=True)
class Configuration:
    name: str
    sources: tuple[str, ...]
    disabled_filters: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Fill:
    got: str
    latency_ms: float
    failure: str | None = None
    """Why there is no answer: a timeout or the server's error, scored as no suggestion."""


def module_path(name: str) -> Path | None:
    """The module's source file, if it is pure Python in this interpreter's standard library."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    path = Path(spec.origin).resolve()
    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    return path if path.is_relative_to(stdlib) else None


def function_statement_rows(tree: ast.Module) -> set[int]:
    """1-based rows where a statement inside a function body starts (docstrings and nested
    definitions excluded: they are not what a user types a line at a time)."""
    rows: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for statement in node.body:
            for inner in ast.walk(statement):
                if not isinstance(inner, ast.stmt) or isinstance(
                    inner, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
                ):
                    continue
                if isinstance(inner, ast.Expr) and isinstance(inner.value, ast.Constant):
                    continue
                rows.add(inner.lineno)
    return rows


def single_line_rows(source: str) -> set[int]:
    """1-based rows holding one whole logical line with no comment, so the rest of the row
    is exactly what is left to type."""
    rows: set[int] = set()
    first: int | None = None
    commented = False
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in (tokenize.INDENT, tokenize.DEDENT, tokenize.NL, tokenize.ENDMARKER):
            continue
        if token.type == tokenize.COMMENT:
            commented = commented or first is not None
        elif token.type == tokenize.NEWLINE:
            if first == token.start[0] and not commented:
                rows.add(first)
            first, commented = None, False
        elif first is None:
            first = token.start[0]
    return rows


def candidate_holes(module: str, source: str) -> dict[HoleKind, list[Hole]]:
    tree = ast.parse(source)
    lines = source.split("\n")
    rows = sorted(function_statement_rows(tree) & single_line_rows(source))
    line_holes = [
        Hole(module, "line", row - 1, row - 1)
        for row in rows
        if len(lines[row - 1].strip()) >= MIN_LINE_CHARS
    ]
    block_holes: list[Hole] = []
    for node in ast.walk(tree):
        if not isinstance(node, BLOCK_HEADERS):
            continue
        first, last = node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno
        header = lines[node.lineno - 1].rstrip()
        if first == node.lineno + 1 and header.endswith(":") and last - first + 1 in BODY_LINES:
            block_holes.append(Hole(module, "block", first - 1, last - 1))
    return {"line": line_holes, "block": sorted(block_holes, key=lambda hole: hole.row)}


def spread(pools: list[list[Hole]], count: int, rng: random.Random) -> list[Hole]:
    """Take holes from each file in turn, so the big modules do not make up the whole set."""
    shuffled = [rng.sample(pool, len(pool)) for pool in pools if pool]
    rng.shuffle(shuffled)
    chosen: list[Hole] = []
    while len(chosen) < count and any(shuffled):
        for pool in shuffled:
            if pool and len(chosen) < count:
                chosen.append(pool.pop())
    return chosen


def pick_holes(sources: dict[str, str], count: int, seed: int) -> list[Hole]:
    rng = random.Random(seed)
    candidates = {module: candidate_holes(module, text) for module, text in sources.items()}
    blocks = round(count * BLOCK_SHARE)
    chosen = spread([found["block"] for found in candidates.values()], blocks, rng)
    chosen += spread([found["line"] for found in candidates.values()], count - len(chosen), rng)
    order = {module: index for index, module in enumerate(sources)}
    return sorted(chosen, key=lambda hole: (order[hole.module], hole.row))


def utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def cut_hole(hole: Hole, path: Path, source: str) -> Cut:
    lines = source.split("\n")
    target = lines[hole.row]
    indent = target[: len(target) - len(target.lstrip())]
    if hole.kind == "line":
        typed = indent + target.strip()[:TYPED_CHARACTERS]
        expected = target.strip()[TYPED_CHARACTERS:]
    else:
        typed = indent
        expected = "\n".join([target.strip(), *lines[hole.row + 1 : hole.end + 1]])
    text = "\n".join([*lines[: hole.row], typed, *lines[hole.end + 1 :]])
    return Cut(hole, path, text, hole.row, utf16_length(typed), expected)


def siblings(module: str, path: Path, source: str) -> list[Path]:
    """Up to two pure-Python standard-library modules this one imports, those in its own
    package first: the files a user is likely to have open next to it."""
    package = module.rpartition(".")[0]
    found: dict[Path, None] = {}
    for node in ast.parse(source).body:
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            base = importlib.util.resolve_name(base, package) if node.level else base
            names = [f"{base}.{alias.name}" for alias in node.names] + [base]
        for name in names:
            other = module_path(name)
            if other is not None and other != path:
                found.setdefault(other, None)
    return sorted(found, key=lambda other: other.parent != path.parent)[:SIBLINGS]


def configurations(which: str) -> list[Configuration]:
    everything = tuple(CONTEXT_SOURCES)
    chosen = [Configuration("baseline", everything)]
    if which in ("all", "sources"):
        chosen += [
            Configuration(f"-{name}", tuple(s for s in everything if s != name))
            for name in everything
        ]
        chosen.append(Configuration("-all sources", ()))
    if which in ("all", "filters"):
        chosen += [Configuration(f"-{name}", everything, (name,)) for name in FILTER_NAMES]
    return chosen


def normalise(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.split("\n")).rstrip()


@contextmanager
def backend_environment(backend: str, originals: str) -> Iterator[dict[str, str]]:
    """Extra variables for the server: none for the embedded model; for `loopback`, the demo's
    test server, which answers with the rest of the original line (a pipeline check)."""
    if backend == "local":
        yield {}
        return
    with loopback_backend(originals) as overrides:
        yield overrides


def did_open(client: LanguageClient, path: Path, text: str) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(path.as_uri(), "python", 1, text))
    )


def did_close(client: LanguageClient, path: Path) -> None:
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(path.as_uri()))
    )


async def stats(client: LanguageClient) -> Any:
    return await asyncio.wait_for(
        client.protocol.send_request_async("lspSpark/stats", None), REQUEST_TIMEOUT
    )


async def ask(client: LanguageClient, path: Path, line: int, character: int) -> Fill:
    """One inline completion; a timeout or a failed request counts as no suggestion."""
    sent = time.perf_counter()
    request = client.protocol.send_request_async(
        types.TEXT_DOCUMENT_INLINE_COMPLETION,
        types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(path.as_uri()),
            position=types.Position(line, character),
            context=types.InlineCompletionContext(
                trigger_kind=types.InlineCompletionTriggerKind.Automatic
            ),
        ),
    )
    try:
        result = await asyncio.wait_for(request, REQUEST_TIMEOUT)
    except TimeoutError:
        return Fill("", REQUEST_TIMEOUT * 1000, "timeout")
    except JsonRpcException as error:
        return Fill("", (time.perf_counter() - sent) * 1000, f"server error: {error}")
    latency = (time.perf_counter() - sent) * 1000
    items = result.items if result else []
    text = items[0].insert_text if items else ""
    return Fill(text if isinstance(text, str) else text.value, latency)


async def fill_hole(client: LanguageClient, cut: Cut, related: list[tuple[Path, str]]) -> Fill:
    """Open the siblings and the cut file, wait until the server has read them (the stats
    round trip lets its outline refresh run, as time would in an editor), ask, close all."""
    for path, text in related:
        did_open(client, path, text)
    did_open(client, cut.path, cut.text)
    await stats(client)
    try:
        return await ask(client, cut.path, cut.line, cut.character)
    finally:
        for path in [cut.path, *(path for path, _ in related)]:
            did_close(client, path)


async def warm_up(client: LanguageClient, directory: Path) -> None:
    """Wait until the server says its backend is ready (loading the model, converting it on
    a first run: on a busy machine longer than a hole's timeout), then one throwaway
    request, so neither is charged to the first hole."""
    await until_backend_prepared(client)
    path = directory / "warm_up.py"
    text = "def add(a, b):\n    ret"
    did_open(client, path, text)
    await ask(client, path, 1, 7)
    did_close(client, path)


@asynccontextmanager
async def started_server(
    name: str,
    environment: dict[str, str],
    options: dict[str, Any],
    messages: list[str],
    encodings: list[str] | None = None,
) -> AsyncIterator[LanguageClient]:
    """The real server over stdio, initialized with `options` (and offered the position
    `encodings`), what it tells the user collected in `messages`; shut down at the end of
    the block, and killed if it will not go."""
    client = LanguageClient(name, "1")

    @client.feature(types.WINDOW_SHOW_MESSAGE)
    def show_message(params: types.ShowMessageParams) -> None:
        messages.append(params.message)

    await client.start_io(sys.executable, "-m", "lsp_spark", "serve", env=environment)
    drain = asyncio.create_task(_drain(client, []))
    try:
        await asyncio.wait_for(
            client.initialize_async(
                types.InitializeParams(
                    capabilities=types.ClientCapabilities(
                        general=types.GeneralClientCapabilities(position_encodings=encodings)
                        if encodings
                        else None
                    ),
                    process_id=os.getpid(),
                    initialization_options=options,
                )
            ),
            REQUEST_TIMEOUT,
        )
        client.initialized(types.InitializedParams())
        yield client
        await asyncio.wait_for(client.shutdown_async(None), SHUTDOWN_TIMEOUT)
        client.exit(None)
        await asyncio.wait_for(client._server.wait(), SHUTDOWN_TIMEOUT)  # type: ignore[union-attr]
    finally:
        drain.cancel()
        if client._server is not None and client._server.returncode is None:
            client._server.kill()
        await client.stop()


async def run_configuration(
    configuration: Configuration,
    cuts: list[Cut],
    related: dict[str, list[tuple[Path, str]]],
    environment: dict[str, str],
    settings: dict[str, Any],
) -> dict[str, Any]:
    """Start one server with this configuration, fill every hole, and always stop it."""
    options = {
        **settings,
        "contextSources": list(configuration.sources),
        "disabledFilters": list(configuration.disabled_filters),
    }
    messages: list[str] = []
    async with started_server("lsp-spark-holes", environment, options, messages) as client:
        await warm_up(client, Path(environment["XDG_CONFIG_HOME"]))
        before = await stats(client)
        fills: list[Fill] = []
        for cut in cuts:
            if client._server is None or client._server.returncode is not None:
                raise RuntimeError(f"the server exited during {configuration.name}")
            fills.append(await fill_hole(client, cut, related[cut.hole.module]))
        after = await stats(client)
    return {
        "name": configuration.name,
        "contextSources": list(configuration.sources),
        "disabledFilters": list(configuration.disabled_filters),
        "model": after.model,
        "tokensReceived": after.tokensReceived - before.tokensReceived,
        "messages": messages,
        **score(cuts, fills),
    }


def matches(cut: Cut, fill: Fill) -> tuple[bool, float]:
    """Exact match and edit similarity, trailing whitespace aside."""
    expected, got = normalise(cut.expected), normalise(fill.got)
    return expected == got, difflib.SequenceMatcher(None, expected, got).ratio()


def summary(cuts: list[Cut], fills: list[Fill]) -> dict[str, Any]:
    scored = [matches(cut, fill) for cut, fill in zip(cuts, fills, strict=True)]
    shown = [fill.got.count("\n") + 1 for fill in fills if fill.got.strip()]
    count = max(len(cuts), 1)
    return {
        "holes": len(cuts),
        "exactMatch": sum(exact for exact, _ in scored) / count,
        "similarity": sum(similarity for _, similarity in scored) / count,
        "nonEmpty": len(shown) / count,
        "meanLines": statistics.fmean(shown) if shown else 0.0,
        "meanLatencyMs": statistics.fmean(fill.latency_ms for fill in fills) if fills else 0.0,
        "failures": sum(fill.failure is not None for fill in fills),
    }


def score(cuts: list[Cut], fills: list[Fill]) -> dict[str, Any]:
    by_kind = {}
    for kind in ("line", "block"):
        pairs = [
            (cut, fill) for cut, fill in zip(cuts, fills, strict=True) if cut.hole.kind == kind
        ]
        by_kind[kind] = summary([cut for cut, _ in pairs], [fill for _, fill in pairs])
    return {
        **summary(cuts, fills),
        "byKind": by_kind,
        "fills": [
            {
                "got": fill.got,
                "exact": matches(cut, fill)[0],
                "latencyMs": round(fill.latency_ms, 1),
                "failure": fill.failure,
            }
            for cut, fill in zip(cuts, fills, strict=True)
        ],
    }


def print_table(results: list[dict[str, Any]]) -> None:
    base = results[0]
    print(
        f"{'configuration':<32}{'exact':>7}{'Δ':>7}{'similar':>9}{'Δ':>7}"
        f"{'shown':>7}{'lines':>7}{'ms':>7}{'tokens':>8}"
    )
    for row in results:
        print(
            f"{row['name']:<32}{row['exactMatch']:>7.1%}"
            f"{(row['exactMatch'] - base['exactMatch']) * 100:>+7.1f}"
            f"{row['similarity']:>9.3f}{row['similarity'] - base['similarity']:>+7.3f}"
            f"{row['nonEmpty']:>7.0%}{row['meanLines']:>7.2f}{row['meanLatencyMs']:>7.0f}"
            f"{row['tokensReceived']:>8}"
        )


async def evaluate(arguments: argparse.Namespace) -> dict[str, Any]:
    paths = {name: path for name in MODULES if (path := module_path(name)) is not None}
    sources = {name: path.read_text(encoding="utf-8") for name, path in paths.items()}
    holes = pick_holes(sources, arguments.holes, arguments.seed)
    cuts = [cut_hole(hole, paths[hole.module], sources[hole.module]) for hole in holes]
    related = {
        name: [(other, other.read_text(encoding="utf-8")) for other in siblings(name, path, text)]
        for name, path, text in ((name, paths[name], sources[name]) for name in paths)
    }
    results: list[dict[str, Any]] = []
    with (
        tempfile.TemporaryDirectory(prefix="lsp-spark-holes-") as config_home,
        backend_environment(arguments.backend, "\n".join(sources.values())) as overrides,
    ):
        environment = {**isolated_environment(config_home), **overrides}
        settings: dict[str, Any] = {"debounceMs": 0}
        if arguments.backend == "local":
            settings |= {"backend": "local", "localThreads": arguments.threads}
        for configuration in configurations(arguments.configs):
            started = time.perf_counter()
            result = await run_configuration(configuration, cuts, related, environment, settings)
            results.append(result)
            print(
                f"  {configuration.name:<30} exact {result['exactMatch']:6.1%}  "
                f"similarity {result['similarity']:.3f}  "
                f"({time.perf_counter() - started:.0f} s)",
                flush=True,
            )
            for message in result["messages"]:
                print(f"    server says: {message}", flush=True)
            failures = [fill["failure"] for fill in result["fills"] if fill["failure"]]
            if failures:
                print(f"    {len(failures)} holes got no answer, e.g. {failures[0]}", flush=True)
    return {
        "python": sys.version.split()[0],
        "backend": arguments.backend,
        "threads": arguments.threads,
        "seed": arguments.seed,
        "holeCount": len(cuts),
        "files": [str(paths[name]) for name in paths],
        "siblings": {name: [str(path) for path, _ in found] for name, found in related.items()},
        "holes": [
            {
                "module": cut.hole.module,
                "kind": cut.hole.kind,
                "line": cut.line + 1,
                "typed": cut.text.split("\n")[cut.line].strip(),
                "expected": cut.expected,
            }
            for cut in cuts
        ],
        "configurations": results,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--holes", type=int, default=DEFAULT_HOLES, help="how many holes")
    add_size_options(
        parser,
        RESULTS,
        f"{TINY_HOLES} holes, baseline only: checks that holes are answered, in seconds",
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="which holes")
    parser.add_argument(
        "--configs", choices=("all", "sources", "filters", "baseline"), default="all"
    )
    parser.add_argument(
        "--backend",
        choices=("local", "loopback"),
        default="local",
        help="'loopback' answers with the original line: checks the pipeline, not a model",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=THREADS,
        help="model threads (the server's own default is half the cores, to spare the editor)",
    )
    arguments = parser.parse_args()
    if arguments.tiny:
        arguments.holes, arguments.configs = TINY_HOLES, "baseline"
    started = time.perf_counter()
    report = asyncio.run(evaluate(arguments))
    report["runtimeSeconds"] = round(time.perf_counter() - started, 1)
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    arguments.output.write_text(json.dumps(report, indent=2) + "\n")
    blocks = sum(hole["kind"] == "block" for hole in report["holes"])
    caveat = (
        "the oracle answers only the first line of a block"
        if arguments.backend == "loopback"
        else "a small model scores low, so read the deltas"
    )
    print()
    print_table(report["configurations"])
    print(
        f"\n{report['holeCount'] - blocks} line and {blocks} block holes in "
        f"{len(report['files'])} standard-library files, seed {report['seed']}, "
        f"backend {report['backend']} ({report['configurations'][0]['model']}), "
        f"{report['runtimeSeconds']:.0f} s.\n"
        "exact, similar: means over all holes (no suggestion or a timeout scores 0); "
        "shown: holes with a suggestion; lines: mean lines of those; ms: mean latency; "
        f"tokens: streamed in all. Δ: against baseline; {caveat}.\n"
        f"JSON in {arguments.output}"
    )


if __name__ == "__main__":
    main()
