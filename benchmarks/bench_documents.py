"""Per-keystroke cost of the document store on a 5,000-line (~200 KB) file.

Run ``python benchmarks/bench_documents.py [--tiny] [--output PATH]``: prints p50/p95
microseconds per call and writes ``benchmarks/results/documents.json`` (or PATH); ``--tiny``
makes a hundredth of the calls, to check the benchmark still runs. pygls' own incremental
update is timed on the same file for comparison, since that is what the store replaces.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lsprotocol import types as lsp
from pygls.workspace import TextDocument
from timing import add_size_options, measure

from lsp_spark.documents import Document, PositionEncoding

LINES = 5000
CALLS = 20_000
TINY_CALLS = 200
UTF16 = PositionEncoding.UTF16
RESULTS = Path(__file__).resolve().parent / "results" / "documents.json"


def make_text(rng: random.Random) -> str:
    """Python-looking lines averaging ~40 bytes, one in twenty carrying non-ASCII text."""
    words = ["self", "value", "return", "if", "for", "in", "result", "=", "(", ")", "None", "x"]
    lines = []
    for i in range(LINES):
        indent = " " * 4 * rng.randint(0, 3)
        body = " ".join(rng.choices(words, k=rng.randint(2, 14)))
        comment = "  # 日本語のコメント 😀" if i % 20 == 0 else ""
        lines.append(f"{indent}{body}{comment}\n")
    return "".join(lines)


def middle_of(doc: Document, row: int) -> int:
    return len(doc.line(row).encode("utf-16-le")) // 4


def typing(doc: Document, row: int, char: str, calls: int) -> Iterator[Callable[[], object]]:
    """Type ``char`` then delete it, over and over, so the document stays the same size."""
    col = middle_of(doc, row)
    insert = partial(doc.apply_change, (row, col), (row, col), char, UTF16)
    delete = partial(doc.apply_change, (row, col), (row, col + 1), "", UTF16)
    for i in range(calls):
        yield delete if i % 2 else insert


def enter_and_join(doc: Document, row: int, calls: int) -> Iterator[Callable[[], object]]:
    """Split a line with Enter, then join it back: the edits that change the line count."""
    col = middle_of(doc, row)
    enter = partial(doc.apply_change, (row, col), (row, col), "\n", UTF16)
    join = partial(doc.apply_change, (row, col), (row + 1, 0), "", UTF16)
    for i in range(calls):
        yield join if i % 2 else enter


def lookups(
    rng: random.Random, doc: Document, lookup: Callable[[int], object], calls: int
) -> Iterator[Callable[[], object]]:
    size = len(doc.text)
    for _ in range(calls):
        yield partial(lookup, rng.randrange(size))


def keystroke(doc: Document, row: int, calls: int) -> Iterator[Callable[[], object]]:
    """What a didChange plus a completion request do: edit, then locate the cursor."""
    col = middle_of(doc, row)

    def step(typed: str, end: int) -> None:
        doc.apply_change((row, col), (row, end), typed, UTF16)
        offset = doc.offset_at(row, col + len(typed), UTF16)
        doc.position_at(offset, UTF16)
        doc.point_at(offset)

    for i in range(calls):
        yield partial(step, "", col + 1) if i % 2 else partial(step, "x", col)


def pygls_typing(text: str, row: int, calls: int) -> Iterator[Callable[[], object]]:
    doc = TextDocument("file:///bench.py", text)
    col = len(doc.lines[row]) // 2
    insert = lsp.TextDocumentContentChangePartial(
        range=lsp.Range(lsp.Position(row, col), lsp.Position(row, col)), text="x"
    )
    delete = lsp.TextDocumentContentChangePartial(
        range=lsp.Range(lsp.Position(row, col), lsp.Position(row, col + 1)), text=""
    )
    for i in range(calls // 20):
        yield partial(doc.apply_change, delete if i % 2 else insert)


def run(calls: int) -> tuple[dict[str, dict[str, float]], int]:
    rng = random.Random(20240611)
    text = make_text(rng)
    middle = LINES // 2
    non_ascii = middle - middle % 20
    doc = Document("file:///bench.py", "python", 1, text)
    cases: dict[str, Iterator[Callable[[], object]]] = {
        "apply_change: type 1 char, ASCII line": typing(doc, middle + 1, "x", calls),
        "apply_change: type 1 char, non-ASCII line": typing(doc, non_ascii, "語", calls),
        "apply_change: Enter / join lines": enter_and_join(doc, middle + 3, calls),
        "offset_at (random line, utf-16)": lookups(
            rng, doc, lambda o: doc.offset_at(o % LINES, o % 40, UTF16), calls
        ),
        "position_at (random offset, utf-16)": lookups(
            rng, doc, lambda o: doc.position_at(o, UTF16), calls
        ),
        "point_at (random offset)": lookups(rng, doc, doc.point_at, calls),
        "byte_offset_at (random offset)": lookups(rng, doc, doc.byte_offset_at, calls),
        "keystroke: edit + offset_at + position_at + point_at": keystroke(doc, middle + 5, calls),
        "pygls TextDocument.apply_change (for comparison)": pygls_typing(text, middle + 1, calls),
    }
    results = {name: measure(calls) for name, calls in cases.items()}
    assert doc.text == text, "the benchmark's edits should cancel out"
    return results, len(text.encode())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    add_size_options(parser, RESULTS, f"{TINY_CALLS} calls a case: checks, not figures")
    arguments = parser.parse_args()
    results, size = run(TINY_CALLS if arguments.tiny else CALLS)
    width = max(map(len, results))
    print(f"{LINES} lines, {size / 1000:.0f} KB, Python {platform.python_version()}")
    print(f"{'operation':<{width}}  {'p50 µs':>8}  {'p95 µs':>8}")
    for name, stats in results.items():
        print(f"{name:<{width}}  {stats['p50_us']:>8.2f}  {stats['p95_us']:>8.2f}")
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "document": {"lines": LINES, "bytes": size},
        "results": results,
    }
    arguments.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {arguments.output}")


if __name__ == "__main__":
    main()
