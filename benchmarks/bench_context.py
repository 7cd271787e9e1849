"""Per-keystroke cost of the syntax-aware context, and prompt size against a naive window.

Run: `python benchmarks/bench_context.py [--tiny] [--output PATH]` (prints a table, writes
benchmarks/results/context.json, or PATH; `--tiny` takes 20 samples, to check it still
runs). On a 5,000+ line file made of standard-library source, each sample types one
character at a code line and measures: the edit (text and tree), the lazy incremental
reparse, and building the context (cursor window cut at statement boundaries, completion
mode, enclosing scopes, imports, definitions, recent edits). Targets: p95 under 1 ms for
the reparse and for the context build.
"""

from __future__ import annotations

import argparse
import inspect
import json
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from timing import add_size_options  # noqa: E402

from lsp_spark.context.budget import Budget  # noqa: E402
from lsp_spark.context.builder import ContextBuilder, ContextOptions  # noqa: E402
from lsp_spark.documents import PositionEncoding  # noqa: E402
from lsp_spark.workspace import Workspace  # noqa: E402

SAMPLES = 400
TINY_SAMPLES = 20
TARGET_LINES = 5000
BUDGET_TOKENS = 2048
URI = "file:///bench/big.py"
RESULTS = ROOT / "benchmarks" / "results" / "context.json"


def standard_library_source() -> str:
    import argparse, asyncio.base_events, difflib, email.message, http.client  # noqa: E401, I001
    import inspect as inspect_module, json.decoder, logging, textwrap, typing, zipfile  # noqa: E401

    modules = [
        asyncio.base_events,
        http.client,
        argparse,
        difflib,
        email.message,
        inspect_module,
        json.decoder,
        logging,
        textwrap,
        typing,
        zipfile,
    ]
    parts: list[str] = []
    lines = 0
    for module in modules:
        source = inspect.getsource(module)
        parts.append(source)
        lines += source.count("\n")
        if lines >= TARGET_LINES:
            break
    return "\n".join(parts)


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50": round(statistics.median(ordered), 4),
        "p95": round(ordered[int(len(ordered) * 0.95) - 1], 4),
        "max": round(ordered[-1], 4),
    }


def naive_tokens(lines: list[str], row: int, budget: Budget) -> int:
    """N whole lines before and after the cursor, N as large as the same budget allows."""
    room = budget.tokens
    before = after = 0
    while room > 0 and (row - before > 0 or row + after + 1 < len(lines)):
        if row - before > 0:
            room -= budget.count(lines[row - before - 1] + "\n")
            before += 1
        if row + after + 1 < len(lines):
            room -= budget.count(lines[row + after + 1] + "\n")
            after += 1
    text = "\n".join(lines[row - before : row + after + 1])
    return budget.count(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    add_size_options(parser, RESULTS, f"{TINY_SAMPLES} samples: checks, not figures")
    arguments = parser.parse_args()
    text = standard_library_source()
    lines = text.split("\n")
    workspace = Workspace()
    document = workspace.open(URI, "python", 1, text)
    workspace.refresh_outline(URI)
    contexts = ContextBuilder(workspace)
    budget = Budget(BUDGET_TOKENS)
    options = ContextOptions(budget=budget, max_lines=12)
    candidates = [
        row for row, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#")
    ]
    random.seed(7)
    rows = sorted(random.sample(candidates, TINY_SAMPLES if arguments.tiny else SAMPLES))
    edit_ms: list[float] = []
    reparse_ms: list[float] = []
    context_ms: list[float] = []
    ours: list[int] = []
    naive: list[int] = []
    sources: dict[str, int] = {}
    version = 1
    for row in rows:
        line = document.line(row)
        column = len(line)
        version += 1
        started = time.perf_counter()
        workspace.change(
            URI, version, [((row, column), (row, column), " ")], PositionEncoding.UTF32
        )
        edited = time.perf_counter()
        syntax = workspace.tree(URI)
        assert syntax is not None
        _ = syntax.tree
        reparsed = time.perf_counter()
        built = contexts.build(document, row, column + 1, options)
        done = time.perf_counter()
        edit_ms.append((edited - started) * 1000)
        reparse_ms.append((reparsed - edited) * 1000)
        context_ms.append((done - reparsed) * 1000)
        if built is not None:
            prompt = built.related + built.window.prefix + built.window.suffix
            ours.append(budget.count(prompt))
            naive.append(naive_tokens(lines, row, budget))
            for source in built.sources:
                sources[source] = sources.get(source, 0) + 1
        version += 1
        workspace.change(
            URI, version, [((row, column), (row, column + 1), "")], PositionEncoding.UTF32
        )
        _ = syntax.tree
    results = {
        "file_lines": len(lines),
        "samples": len(rows),
        "edit_ms": percentiles(edit_ms),
        "reparse_ms": percentiles(reparse_ms),
        "context_build_ms": percentiles(context_ms),
        "prompt_tokens_median": statistics.median(ours) if ours else None,
        "naive_window_tokens_median": statistics.median(naive) if naive else None,
        "requests_with_source": {
            name: count / max(len(ours), 1) for name, count in sources.items()
        },
        "suggestion_skipped_share": 1 - len(ours) / len(rows),
        "budget_tokens": BUDGET_TOKENS,
        "targets": {"reparse_p95_ms": 1.0, "context_build_p95_ms": 1.0},
    }
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    arguments.output.write_text(json.dumps(results, indent=2) + "\n")
    print(f"{'measure':<34}{'p50':>10}{'p95':>10}{'target p95':>12}")
    for label, key, target in (
        ("edit (text + tree.edit), ms", "edit_ms", ""),
        ("incremental reparse, ms", "reparse_ms", "< 1"),
        ("context build, ms", "context_build_ms", "< 1"),
    ):
        print(f"{label:<34}{results[key]['p50']:>10}{results[key]['p95']:>10}{target:>12}")
    print(
        f"\nprompt tokens per request (median): {results['prompt_tokens_median']} "
        f"vs naive N-lines window of the same {BUDGET_TOKENS}-token budget: "
        f"{results['naive_window_tokens_median']}"
    )
    print("share of requests using each related-code source:")
    for name, share in sorted(results["requests_with_source"].items()):
        print(f"  {name:<14}{share:.0%}")
    print(f"no suggestion wanted here: {results['suggestion_skipped_share']:.0%}")
    print(f"({len(lines)} lines, {len(rows)} keystrokes; JSON in {arguments.output})")


if __name__ == "__main__":
    main()
