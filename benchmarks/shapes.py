"""File shapes that used to make a keystroke cost seconds: what each keystroke costs now.

Run: `python benchmarks/shapes.py [--tiny] [--output PATH]` (prints a table, writes
benchmarks/results/shapes.json). Each shape gets a fresh server process over stdio, backed by
the loopback Cerebras test server, and is typed into one character at a time: a `didChange`,
then a ghost-text request and an `lspSpark/stats` request sent together. Measured per
keystroke: the round trip of the ghost-text request (p50/p95) and of `lspSpark/stats` (the
event loop's responsiveness meanwhile); per shape, the server's resident memory (VmRSS,
VmHWM from /proc) once typing ends.

Shapes:
  unclosed call    `helper(x, …` typed one character at a time in the middle of a 16,000-line
                   and a 50,000-line Python file: the unclosed call makes tree-sitter nest
                   the rest of the file;
  elsewhere        the same keystrokes at the end of the same file, where they nest nothing;
  open documents   1,000 open 20 KB Python files, then keystrokes in one of them (the first
                   keystroke's round trip is reported on its own);
  long line        one 5 MB line, typed into in its middle.
Typing starts 2 s after the files are opened (the user reads first; at once with
`--tiny`). `--tiny` runs every shape at a few hundred lines or documents: a check that each
keystroke is answered, whose figures mean nothing. The bar is printed beside the figures:
under 50 ms per keystroke (p95), the unclosed call no dearer than typing elsewhere.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lsprotocol import types  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402
from timing import add_size_options  # noqa: E402

from lsp_spark.testing import isolated_environment  # noqa: E402
from lsp_spark.testing.cerebras_server import CerebrasTestServer  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "shapes.json"
KEY = "bench-shapes-key"
REPLY = "0)"
"""What the loopback model answers: nothing the keystrokes type, so no keystroke is served
from memory and every one asks upstream."""
TYPED = "helper(x, alpha, beta, gamma, delta"
TYPED_TINY = "helper(x"
BAR_MS = 50.0
READING_SECONDS = 2.0
"""Between opening and typing: past the server's pause before a costly parse (1 s)."""
SAFETY = 600.0
"""Seconds after which an unanswered request ends the run (a hang, not a figure)."""


@dataclass(frozen=True)
class Shape:
    name: str
    documents: list[tuple[str, str, str]]
    """(uri, language, text) of each document opened."""
    uri: str
    """The document typed into."""
    row: int
    column: int
    typed: str


def python_file(lines: int, seed: int = 0) -> str:
    """Functions of four lines each (plus a blank), calling each other: plain code."""
    chunks = []
    for index in range(lines // 5):
        chunks.append(
            f"def step_{seed}_{index}(value, other):\n"
            f"    total = helper(value, other) + {index}\n"
            "    # keep the running total\n"
            "    return total * 2\n\n"
        )
    return "".join(chunks)


def with_blank_line_in_the_middle(text: str) -> tuple[str, int]:
    """The text with an indented blank line inside a function body in its middle (after a
    `total = ...` line), and that line's row: the keystrokes go after its indent."""
    rows = text.split("\n")
    row = len(rows) // 2
    while not rows[row].startswith("    total"):
        row += 1
    rows.insert(row + 1, "    ")
    return "\n".join(rows), row + 1


BYTES_PER_LINE = 24
"""About what `python_file` writes per line."""


def shapes(tiny: bool) -> list[Shape]:
    typed = TYPED_TINY if tiny else TYPED
    found = []
    for lines in (400, 1000) if tiny else (16000, 50000):
        label = f"{lines:,} lines"
        uri = f"file:///shapes/lines_{lines}.py"
        text, row = with_blank_line_in_the_middle(python_file(lines))
        found.append(Shape(f"unclosed call, {label}", [(uri, "python", text)], uri, row, 4, typed))
        end = text.count("\n") + 1
        found.append(
            Shape(f"elsewhere, {label}", [(uri, "python", text + "\n")], uri, end, 0, typed)
        )
    count, kib = (20, 20) if tiny else (1000, 20)
    many = []
    for index in range(count):
        text, row = with_blank_line_in_the_middle(
            python_file(kib * 1024 // BYTES_PER_LINE, seed=index)
        )
        many.append((f"file:///shapes/many/module_{index}.py", "python", text))
    typed_in = many[count // 2]
    found.append(
        Shape(
            f"{count:,} open documents of {kib} KB",
            many,
            typed_in[0],
            with_blank_line_in_the_middle(python_file(kib * 1024 // BYTES_PER_LINE))[1],
            4,
            typed,
        )
    )
    size = 200_000 if tiny else 5_000_000
    statement = "var a=[1,2,3];"
    line = statement * (size // len(statement))
    uri = "file:///shapes/long_line.js"
    found.append(
        Shape(
            f"one {size / 1e6:g} MB line",
            [(uri, "javascript", line + "\n")],
            uri,
            0,
            len(line) // 2 // len(statement) * len(statement),
            typed,
        )
    )
    return found


def memory_mib(pid: int) -> dict[str, float]:
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = round(int(value.split()[0]) / 1024, 1)
    return found


def percentile(samples: list[float], share: float) -> float | None:
    if not samples:
        return None
    ordered = sorted(samples)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * share))], 2)


async def timed(request: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    answer = await asyncio.wait_for(request, SAFETY)
    return answer, (time.perf_counter() - started) * 1000


async def type_into(client: LanguageClient, shape: Shape) -> dict[str, Any]:
    ghost: list[float] = []
    stats: list[float] = []
    answered = 0
    version = 1
    column = shape.column
    for char in shape.typed:
        version += 1
        position = types.Position(shape.row, column)
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=shape.uri, version=version),
                content_changes=[
                    types.TextDocumentContentChangePartial(
                        range=types.Range(position, position), text=char
                    )
                ],
            )
        )
        column += 1
        completion = client.text_document_inline_completion_async(
            types.InlineCompletionParams(
                text_document=types.TextDocumentIdentifier(shape.uri),
                position=types.Position(shape.row, column),
                context=types.InlineCompletionContext(
                    trigger_kind=types.InlineCompletionTriggerKind.Automatic
                ),
            )
        )
        probe = client.protocol.send_request_async("lspSpark/stats", None)
        (answer, ghost_ms), (_, stats_ms) = await asyncio.gather(timed(completion), timed(probe))
        ghost.append(ghost_ms)
        stats.append(stats_ms)
        answered += answer is not None
    return {
        "keystrokes": len(shape.typed),
        "answered": answered,
        "firstKeystrokeMs": round(ghost[0], 2),
        "ghostP50Ms": percentile(ghost, 0.5),
        "ghostP95Ms": percentile(ghost, 0.95),
        "ghostMaxMs": round(max(ghost), 2),
        "statsP50Ms": percentile(stats, 0.5),
        "statsP95Ms": percentile(stats, 0.95),
    }


async def warm_up(client: LanguageClient) -> None:
    """One request in a small file first: the first keystroke measured is not the server's
    first request (whose modules load, and whose connection to the backend opens)."""
    uri = "file:///shapes/warm_up.py"
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, "x = \n"))
    )
    await asyncio.wait_for(
        client.text_document_inline_completion_async(
            types.InlineCompletionParams(
                text_document=types.TextDocumentIdentifier(uri),
                position=types.Position(0, 4),
                context=types.InlineCompletionContext(
                    trigger_kind=types.InlineCompletionTriggerKind.Automatic
                ),
            )
        ),
        SAFETY,
    )
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri))
    )


async def one_shape(shape: Shape, config_home: str, reading: float) -> dict[str, Any]:
    with CerebrasTestServer(api_key=KEY) as upstream:
        upstream.config.default_reply = REPLY
        client = LanguageClient("shapes-benchmark", "1")
        await client.start_io(
            sys.executable, "-m", "lsp_spark", "serve", env=isolated_environment(config_home)
        )
        try:
            await client.initialize_async(
                types.InitializeParams(
                    capabilities=types.ClientCapabilities(),
                    initialization_options={
                        "backend": "cerebras",
                        "apiKey": KEY,
                        "baseUrl": upstream.base_url,
                        "debounceMs": 0,
                        "prefetch": False,
                        "nextEdit": False,
                    },
                )
            )
            client.initialized(types.InitializedParams())
            await warm_up(client)
            opened = time.perf_counter()
            for uri, language, text in shape.documents:
                client.text_document_did_open(
                    types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, language, 1, text))
                )
            # Every didOpen has been read once this answer arrives.
            await asyncio.wait_for(
                client.protocol.send_request_async("lspSpark/stats", None), SAFETY
            )
            opened_ms = (time.perf_counter() - opened) * 1000
            # The user reads the file before typing: long enough for its outline and tree.
            await asyncio.sleep(reading)
            pid = client._server.pid  # type: ignore[union-attr]
            typing = await type_into(client, shape)
            return {
                "documents": len(shape.documents),
                "bytes": sum(len(text.encode()) for _, _, text in shape.documents),
                "openedMs": round(opened_ms, 1),
                **typing,
                **memory_mib(pid),
                "upstreamRequests": len(upstream.requests),
            }
        finally:
            await asyncio.wait_for(client.shutdown_async(None), SAFETY)
            client.exit(None)
            await client.stop()


def table(rows: dict[str, dict[str, Any]]) -> str:
    lines = [
        f"| shape | keystrokes answered | ghost text p50 / p95 / max (p95 < {BAR_MS:g} ms) "
        "| first keystroke | stats p50 / p95 | RSS / peak |",
        "|---|---|---|---|---|---|",
    ]
    for name, row in rows.items():
        lines.append(
            f"| {name} | {row['answered']}/{row['keystrokes']} "
            f"| {row['ghostP50Ms']} / {row['ghostP95Ms']} / {row['ghostMaxMs']} ms "
            f"| {row['firstKeystrokeMs']} ms | {row['statsP50Ms']} / {row['statsP95Ms']} ms "
            f"| {row['VmRSS']} / {row['VmHWM']} MiB |"
        )
    return "\n".join(lines)


async def benchmark(tiny: bool) -> dict[str, dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="lsp-spark-shapes-") as config_home:
        rows = {}
        for shape in shapes(tiny):
            rows[shape.name] = await one_shape(shape, config_home, 0.0 if tiny else READING_SECONDS)
            print(f"{shape.name}: {rows[shape.name]}", file=sys.stderr, flush=True)
        return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    add_size_options(parser, RESULTS, "a few hundred lines and documents: checks, not figures")
    arguments = parser.parse_args()
    rows = asyncio.run(benchmark(arguments.tiny))
    print(table(rows))
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    arguments.output.write_text(
        json.dumps(
            {"barMs": BAR_MS, "typed": TYPED_TINY if arguments.tiny else TYPED, "shapes": rows},
            indent=2,
        )
        + "\n"
    )
    unanswered = [name for name, row in rows.items() if row["answered"] != row["keystrokes"]]
    if unanswered:
        print(f"keystrokes went unanswered: {', '.join(unanswered)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
