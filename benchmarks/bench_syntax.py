"""Per-keystroke cost of the syntax layer on 5,000-line Python and Go files.

Run ``python benchmarks/bench_syntax.py [--tiny] [--output PATH]``: prints p50/p95
milliseconds and writes ``benchmarks/results/syntax.json`` (or PATH); ``--tiny`` replays at
10 rows and parses twice, to check the benchmark still runs. The Python file is real
standard-library source; the Go file is generated (one hand-written handler repeated under
varied names), as no Go source is installed to borrow. Keystrokes are replayed at 400 rows
through each file in three ways: inside identifiers (the text stays valid), at line ends
(mostly syntax errors) and as a new statement typed on a fresh line; each is undone, so the
file ends as it began.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import inspect
import json
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from timing import add_size_options, time_each
from tree_sitter import Node, Parser

from lsp_spark.documents import Document, Position, PositionEncoding
from lsp_spark.syntax.outline import cursor_region, definitions, enclosing_scopes, imports
from lsp_spark.syntax.trees import SyntaxStore, SyntaxTree

LINES = 5000
POSITIONS = 400
TINY_POSITIONS = 10
TYPED = "abc"
STATEMENT = "x = f(1)"
# Keystrokes typing STATEMENT as (offset in the statement, inserted text): `(` brings its `)`,
# which is then typed over, as editors with auto-pairs do.
STATEMENT_KEYS = ((0, "x"), (1, " "), (2, "="), (3, " "), (4, "f"), (5, "()"), (6, "1"))
FULL_PARSES = 20
TINY_FULL_PARSES = 2
UTF16 = PositionEncoding.UTF16
RESULTS = Path(__file__).resolve().parent / "results" / "syntax.json"
STDLIB_MODULES = (
    "argparse",
    "dataclasses",
    "asyncio.base_events",
    "asyncio.tasks",
    "asyncio.streams",
    "logging",
    "typing",
    "inspect",
    "pathlib",
    "subprocess",
)
GO_HEADER = """package orders

import (
\t"encoding/json"
\t"fmt"
\t"net/http"
\t"sync"
)

// Server keeps orders in memory and serves them over HTTP.
type Server struct {
\tmu     sync.Mutex
\torders map[string]Order
}

type Order struct {
\tID    string `json:"id"`
\tItems []Item `json:"items"`
}

type Item struct {
\tSKU      string `json:"sku"`
\tQuantity int    `json:"quantity"`
}
"""
GO_HANDLER = """
// handle{name} decodes an order, checks every item and stores it.
func (s *Server) handle{name}(w http.ResponseWriter, r *http.Request) error {{
\tvar order Order
\tif err := json.NewDecoder(r.Body).Decode(&order); err != nil {{
\t\thttp.Error(w, fmt.Sprintf("{name}: bad order: %v", err), http.StatusBadRequest)
\t\treturn err
\t}}
\tfor i, item := range order.Items {{
\t\tif item.Quantity <= 0 {{
\t\t\treturn fmt.Errorf("{name}: item %d of %s has quantity %d", i, order.ID, item.Quantity)
\t\t}}
\t}}
\ts.mu.Lock()
\tdefer s.mu.Unlock()
\ts.orders[order.ID] = order
\tw.WriteHeader(http.StatusCreated)
\treturn nil
}}
"""
GO_NAMES = ("Create", "Update", "Import", "Replay", "Restore", "Merge", "Split", "Retry")


def python_source() -> tuple[str, str]:
    """Whole standard-library modules, concatenated until there are enough lines."""
    parts, used = [], []
    for name in STDLIB_MODULES:
        parts.append(Path(inspect.getsourcefile(importlib.import_module(name)) or "").read_text())
        used.append(name)
        if sum(part.count("\n") for part in parts) >= LINES:
            break
    return "".join(parts), "standard library: " + ", ".join(used)


def go_source() -> tuple[str, str]:
    parts = [GO_HEADER]
    index = 0
    while sum(part.count("\n") for part in parts) < LINES:
        name = f"{GO_NAMES[index % len(GO_NAMES)]}{index // len(GO_NAMES)}"
        parts.append(GO_HANDLER.format(name=name))
        index += 1
    return "".join(parts), f"generated: one handler repeated {index} times with varied names"


def percentiles(samples: list[int]) -> dict[str, float]:
    samples = sorted(samples)
    return {
        "p50_ms": samples[len(samples) // 2] / 1e6,
        "p95_ms": samples[len(samples) * 95 // 100] / 1e6,
        "mean_ms": statistics.fmean(samples) / 1e6,
        "max_ms": samples[-1] / 1e6,
        "calls": len(samples),
    }


def timed(calls: Iterator[Callable[[], object]]) -> dict[str, float]:
    return percentiles(time_each(calls))


def cursor_rows(document: Document, positions: int) -> Iterator[tuple[int, str]]:
    """Evenly spaced non-blank rows through the file, with their text."""
    step = document.line_count // positions
    for row in range(0, step * positions, step):
        while not document.line(row).strip():
            row += 1
        yield row, document.line(row)


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


Stroke = tuple[Position, Position, str]


def inside_identifiers(document: Document, positions: int) -> Iterator[Stroke]:
    """Type three characters into the first identifier on the row, then delete them."""
    for row, line in cursor_rows(document, positions):
        word = re.search(r"[A-Za-z_]{2,}", line)
        if word is None:
            continue
        column = utf16_len(line[: word.start() + 1])
        yield from type_then_delete((row, column), TYPED)


def at_line_ends(document: Document, positions: int) -> Iterator[Stroke]:
    """Append three characters to the row (mostly a syntax error), then delete them."""
    for row, line in cursor_rows(document, positions):
        yield from type_then_delete((row, utf16_len(line.rstrip())), TYPED)


def new_statements(document: Document, positions: int) -> Iterator[Stroke]:
    """Enter, indented as an editor would (as deep as the next line, if that is deeper), then a
    statement typed key by key, then the whole line undone in one change."""
    for row, line in cursor_rows(document, positions):
        end = (row, utf16_len(line.rstrip()))
        indent = max(indentation(line), indentation(next_code_line(document, row)), key=len)
        yield end, end, "\n" + indent
        for offset, keys in STATEMENT_KEYS:
            cursor = (row + 1, utf16_len(indent) + offset)
            yield cursor, cursor, keys
        yield end, (row + 1, utf16_len(indent + STATEMENT)), ""


def indentation(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def next_code_line(document: Document, row: int) -> str:
    for following in range(row + 1, document.line_count):
        if document.line(following).strip():
            return document.line(following)
    return ""


def type_then_delete(position: Position, text: str) -> Iterator[Stroke]:
    row, column = position
    for index, char in enumerate(text):
        yield (row, column + index), (row, column + index), char
    for index in range(len(text), 0, -1):
        yield (row, column + index - 1), (row, column + index), ""


def typing(syntax: SyntaxTree, strokes: Iterator[Stroke]) -> dict[str, list[int]]:
    """Replay keystrokes; per keystroke: edit + reparse, the reparse alone, and the lookups."""
    document = syntax.document
    clock = time.perf_counter_ns
    samples: dict[str, list[int]] = {"keystroke": [], "reparse": [], "lookup": []}
    syntax.tree  # noqa: B018 - the first full parse is not a keystroke
    gc.collect()
    gc.disable()
    try:
        for start, end, text in list(strokes):
            begin = clock()
            syntax.edit(document.apply_change(start, end, text, UTF16))
            parse_begin = clock()
            syntax.tree  # noqa: B018
            done = clock()
            samples["keystroke"].append(done - begin)
            samples["reparse"].append(done - parse_begin)
            cursor = document.offset_at(start[0], start[1], UTF16) + len(text)
            byte_offset = document.byte_offset_at(cursor)
            begin = clock()
            enclosing_scopes(syntax, byte_offset)
            cursor_region(syntax, byte_offset)
            samples["lookup"].append(clock() - begin)
    finally:
        gc.enable()
    return samples


def walk_up_scopes(syntax: SyntaxTree, byte_offset: int, scope_types: frozenset[str]) -> list[Node]:
    """The alternative to the scopes query: walk parents checking node types."""
    node: Node | None = syntax.tree.root_node.descendant_for_byte_range(byte_offset, byte_offset)
    found = []
    while node is not None:
        if node.type in scope_types:
            found.append(node)
        node = node.parent
    return found[::-1]


def whole_file_outline(syntax: SyntaxTree) -> None:
    """What a new tree version costs the first caller of ``imports`` and ``definitions``.

    An empty edit makes a new version (its reparse is next to free) so the caches miss.
    """
    syntax.edit(syntax.document.apply_change((0, 0), (0, 0), "", UTF16))
    imports(syntax)
    definitions(syntax)


def bench(
    language_id: str, text: str, scope_types: frozenset[str], positions: int, full_parses: int
) -> dict[str, dict[str, float]]:
    document = Document(f"file:///bench.{language_id}", language_id, 1, text)
    syntax = SyntaxStore().open(document)
    assert syntax is not None
    modes = {
        "typing inside identifiers": inside_identifiers,
        "typing at line ends (mostly errors)": at_line_ends,
        "Enter + a new statement (auto-paired)": new_statements,
    }
    results: dict[str, dict[str, float]] = {}
    keystrokes: list[int] = []
    lookups: list[int] = []
    for mode, strokes in modes.items():
        samples = typing(syntax, strokes(document, positions))
        assert document.text == text, "every mode undoes its typing"
        results[f"reparse: {mode}"] = percentiles(samples["reparse"])
        keystrokes += samples["keystroke"]
        lookups += samples["lookup"]
    results["keystroke: apply_change + edit + reparse (all modes)"] = percentiles(keystrokes)
    results["enclosing_scopes + cursor_region after each keystroke"] = percentiles(lookups)
    offsets = [
        document.byte_offset_at(document.offset_at(row, utf16_len(line) // 2, UTF16))
        for row, line in cursor_rows(document, positions)
    ]
    parser = Parser(syntax.language)
    source = text.encode()
    results |= {
        "enclosing_scopes alone": timed(
            partial(enclosing_scopes, syntax, b) for b in offsets for _ in range(5)
        ),
        "cursor_region alone": timed(
            partial(cursor_region, syntax, b) for b in offsets for _ in range(5)
        ),
        "walk-up alternative (node types only, no headers)": timed(
            partial(walk_up_scopes, syntax, b, scope_types) for b in offsets for _ in range(5)
        ),
        "imports + definitions, whole file, uncached": timed(
            partial(whole_file_outline, syntax) for _ in range(full_parses)
        ),
        "full parse from bytes (for comparison)": timed(
            partial(parser.parse, source) for _ in range(full_parses)
        ),
        "full parse from the document's blocks": timed(
            partial(parser.parse, document.utf8) for _ in range(full_parses)
        ),
    }
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    add_size_options(
        parser,
        RESULTS,
        f"{TINY_POSITIONS} rows, {TINY_FULL_PARSES} full parses: checks, not figures",
    )
    arguments = parser.parse_args()
    positions = TINY_POSITIONS if arguments.tiny else POSITIONS
    full_parses = TINY_FULL_PARSES if arguments.tiny else FULL_PARSES
    report: dict[str, object] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "files": {},
        "results": {},
    }
    cases = {
        "python": (python_source(), frozenset({"function_definition", "class_definition"})),
        "go": (
            go_source(),
            frozenset({"function_declaration", "method_declaration", "type_declaration"}),
        ),
    }
    for language_id, ((text, origin), scope_types) in cases.items():
        lines = text.count("\n")
        size = len(text.encode())
        results = bench(language_id, text, scope_types, positions, full_parses)
        report["files"][language_id] = {"lines": lines, "bytes": size, "source": origin}  # type: ignore[index]
        report["results"][language_id] = results  # type: ignore[index]
        width = max(map(len, results))
        print(f"\n{language_id}: {lines} lines, {size / 1000:.0f} KB, {origin}")
        print(f"{'operation':<{width}}  {'p50 ms':>8}  {'p95 ms':>8}  {'max ms':>8}")
        for name, stats in results.items():
            print(
                f"{name:<{width}}  {stats['p50_ms']:>8.3f}  {stats['p95_ms']:>8.3f}"
                f"  {stats['max_ms']:>8.3f}"
            )
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    arguments.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {arguments.output}")


if __name__ == "__main__":
    main()
