"""Next edits after a whole-file change: does the next keystroke still get a quick answer?

Run: `python benchmarks/nextedit_scale.py [--tiny] [--output PATH]` (prints a table, writes
benchmarks/results/nextedit_scale.json, or PATH).

Editors send one change covering the whole file for a substitution over it (Neovim's
`:%s`), a formatter's reformat or a reload. Next edits keep the user's recent edits as
diffs for their prompt; this drives the real server over stdio, next edits on (debounce 0,
so every keystroke starts a prediction at once, the worst case), against the loopback
Cerebras server, through three shapes:

- `substitution`: a 1,800-line Python file and `:%s/value/amount/g`, which changes most of
  its lines (blank lines and a few others stay);
- `repeated`: a 3,000-line file of one block repeated, with the same substitution;
- `argparse reformat`: the standard library's `argparse.py` re-indented from four spaces
  to two, as a formatter would.

One server; per shape, the file is opened and typed into at its middle row (`KEYSTROKES`
characters), then the whole-file change is sent and the same row typed into again. Each
keystroke is a `didChange`, then, 10 ms later (the prediction it started under way), an
`lspSpark/stats` round trip (how long anything the user asks waits behind the server's own
work), then a `textDocument/inlineCompletion` at the cursor; both are timed, p50 and p95
before and after the change. The history's size after the last keystroke comes from the
stats' `nextEdit.historyRows`.

`--tiny` runs a tenth of each file and three keystrokes a phase; `--shape NAME` (repeatable)
runs only those shapes, `--keystrokes N` types N characters a phase.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from holes import started_server  # noqa: E402
from lsprotocol import types  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402
from timing import add_size_options  # noqa: E402

from lsp_spark.testing import isolated_environment  # noqa: E402
from lsp_spark.testing.cerebras_server import CerebrasTestServer  # noqa: E402
from lsp_spark.testing.nextedit_model import is_next_edit_request  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "nextedit_scale.json"
API_KEY = "nextedit-scale-key"
KEYSTROKES = 20
TINY_KEYSTROKES = 3
TINY_SHARE = 10
"""`--tiny` keeps one line in this many of each file."""
REQUEST_TIMEOUT = 600.0
"""Far above any answer: the code this measures once took minutes per keystroke."""
COMPLETION = "total = 0"
PAUSE_SECONDS = 0.01
"""Between a keystroke and the requests timed after it: long enough for the prediction the
keystroke started to be under way, so the requests wait behind whatever it does."""
TTFT_SECONDS = 0.02


@dataclass(frozen=True)
class Shape:
    name: str
    text: str
    changed: str
    """The whole file after the change the editor sends as one."""


def _function(index: int) -> list[str]:
    return [
        f"def scale_{index}(value, factor):",
        f'    """Scale value {index} by factor."""',
        "    if factor is None:",
        "        return value",
        "    value = value * factor",
        "    return value",
        "",
    ]


def _rows(count: int, block: Callable[[int], list[str]]) -> list[str]:
    rows: list[str] = []
    index = 0
    while len(rows) < count:
        rows.extend(block(index))
        index += 1
    return rows[:count]


def _substituted(text: str) -> str:
    return text.replace("value", "amount")


def _reindented(text: str) -> str:
    """Each line's leading four-space steps made two-space ones."""
    lines = []
    for line in text.split("\n"):
        body = line.lstrip(" ")
        steps = (len(line) - len(body)) // 4
        lines.append("  " * steps + " " * ((len(line) - len(body)) % 4) + body)
    return "\n".join(lines)


def shapes(tiny: bool) -> list[Shape]:
    share = TINY_SHARE if tiny else 1
    functions = "\n".join(_rows(1800 // share, _function)) + "\n"
    repeated = "\n".join(_rows(3000 // share, lambda _: _function(0))) + "\n"
    library = Path(argparse.__file__).read_text(encoding="utf-8")
    rows = library.split("\n")
    library = "\n".join(rows[: len(rows) // share]) + "\n"
    return [
        Shape("substitution", functions, _substituted(functions)),
        Shape("repeated", repeated, _substituted(repeated)),
        Shape("argparse reformat", library, _reindented(library)),
    ]


def utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


@dataclass
class Phase:
    stats_ms: list[float]
    completion_ms: list[float]
    completions_answered: int

    def summary(self) -> dict[str, Any]:
        return {
            "keystrokes": len(self.stats_ms),
            "statsAnswered": len(self.stats_ms),
            "completionsAnswered": self.completions_answered,
            "statsMs": _percentiles(self.stats_ms),
            "completionMs": _percentiles(self.completion_ms),
        }


def _percentiles(samples: list[float]) -> dict[str, float | None]:
    if not samples:
        return {"p50": None, "p95": None}
    ordered = sorted(samples)
    return {
        "p50": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, len(ordered) * 95 // 100)],
    }


class Editor:
    """The client's copy of one document, typed into the way an editor reports typing."""

    def __init__(self, client: LanguageClient, uri: str, text: str) -> None:
        self.client = client
        self.uri = uri
        self.lines = text.split("\n")
        self.version = 1
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, text))
        )

    def replace_all(self, text: str) -> None:
        """One change carrying the whole new text, as `:%s`, a formatter or a reload sends."""
        self.version += 1
        self.lines = text.split("\n")
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=self.uri, version=self.version),
                [types.TextDocumentContentChangeWholeDocument(text)],
            )
        )

    def type_at(self, row: int, character: str) -> types.Position:
        """`character` typed at the end of `row`; the cursor after it."""
        end = types.Position(row, utf16_length(self.lines[row]))
        self.version += 1
        self.lines[row] += character
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=self.uri, version=self.version),
                [types.TextDocumentContentChangePartial(types.Range(end, end), character)],
            )
        )
        return types.Position(row, utf16_length(self.lines[row]))


async def stats(client: LanguageClient) -> dict[str, Any]:
    answer = await asyncio.wait_for(
        client.protocol.send_request_async("lspSpark/stats", None), REQUEST_TIMEOUT
    )
    return _plain(answer)


def _plain(value: Any) -> Any:
    if hasattr(value, "_asdict"):
        return {key: _plain(item) for key, item in value._asdict().items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


async def complete(client: LanguageClient, uri: str, position: types.Position) -> bool:
    """One automatic inline completion; whether it brought ghost text."""
    result = await asyncio.wait_for(
        client.protocol.send_request_async(
            types.TEXT_DOCUMENT_INLINE_COMPLETION,
            types.InlineCompletionParams(
                text_document=types.TextDocumentIdentifier(uri),
                position=position,
                context=types.InlineCompletionContext(
                    trigger_kind=types.InlineCompletionTriggerKind.Automatic
                ),
            ),
        ),
        REQUEST_TIMEOUT,
    )
    items = result.items if isinstance(result, types.InlineCompletionList) else result
    return bool(items)


async def typing(client: LanguageClient, editor: Editor, keystrokes: int) -> Phase:
    """Type at the end of the middle row, timing what each keystroke's requests wait."""
    phase = Phase([], [], 0)
    row = len(editor.lines) // 2
    for index in range(keystrokes):
        position = editor.type_at(row, "abcdefghij"[index % 10])
        await asyncio.sleep(PAUSE_SECONDS)
        started = time.perf_counter()
        await stats(client)
        phase.stats_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        answered = await complete(client, editor.uri, position)
        phase.completion_ms.append((time.perf_counter() - started) * 1000)
        phase.completions_answered += answered
    return phase


async def run_shape(
    client: LanguageClient, shape: Shape, keystrokes: int, folder: Path
) -> dict[str, Any]:
    """Type into the file, send the whole-file change, type again; close the file (which
    clears its history) so the next shape starts afresh."""
    uri = (folder / f"{shape.name.replace(' ', '_')}.py").as_uri()
    predictions = (await stats(client))["nextEdit"]["predictions"]
    editor = Editor(client, uri, shape.text)
    row = len(editor.lines) // 2
    await complete(client, uri, types.Position(row, 0))
    before = await typing(client, editor, keystrokes)
    editor.replace_all(shape.changed)
    after = await typing(client, editor, keystrokes)
    final = await stats(client)
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri))
    )
    return {
        "shape": shape.name,
        "lines": shape.text.count("\n"),
        "linesChanged": sum(
            old != new
            for old, new in zip(shape.text.split("\n"), shape.changed.split("\n"), strict=True)
        ),
        "before": before.summary(),
        "after": after.summary(),
        "historyRows": final["nextEdit"]["historyRows"],
        "predictions": final["nextEdit"]["predictions"] - predictions,
    }


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def reply(request: dict[str, Any]) -> str:
    """No next edit (the history's cost is what is measured), a short completion."""
    return "<none/>" if is_next_edit_request(request) else COMPLETION


async def main_async(args: argparse.Namespace) -> int:
    keystrokes = args.keystrokes or (TINY_KEYSTROKES if args.tiny else KEYSTROKES)
    chosen = [shape for shape in shapes(args.tiny) if not args.shape or shape.name in args.shape]
    rows = []
    with tempfile.TemporaryDirectory() as home:
        environment = isolated_environment(home)
        with CerebrasTestServer(ttft=TTFT_SECONDS, reply_fn=reply, api_key=API_KEY) as loopback:
            backend = {"backend": "cerebras", "apiKey": API_KEY, "baseUrl": loopback.base_url}
            settings = {**backend, "nextEdit": True, "nextEditDebounceMs": 0}
            messages: list[str] = []
            async with started_server(
                "lsp-spark-nextedit-scale", environment, settings, messages
            ) as client:
                for shape in chosen:
                    rows.append(await run_shape(client, shape, keystrokes, Path(home)))
            errors = [repr(error) for error in loopback.errors]
    print(f"next edits after a whole-file change: {keystrokes} keystrokes before and after")
    header = ("shape", "lines", "changed", "stats p50/p95", "after", "completion p50/p95", "after")
    print("{:<18} {:>6} {:>7} {:>15} {:>15} {:>19} {:>15}".format(*header))
    for row in rows:
        cells = [row["shape"], row["lines"], row["linesChanged"]]
        for key in ("statsMs", "completionMs"):
            for phase in ("before", "after"):
                figures = row[phase][key]
                cells.append(f"{_ms(figures['p50'])}/{_ms(figures['p95'])}")
        print("{:<18} {:>6} {:>7} {:>15} {:>15} {:>19} {:>15}".format(*cells))
    print(
        "milliseconds per keystroke, from sending the request to its answer; before and "
        f"after the whole-file change; next-edit debounce 0, loopback TTFT "
        f"{TTFT_SECONDS * 1000:.0f} ms; history rows after: "
        + ", ".join(f"{row['shape']} {row['historyRows']}" for row in rows)
    )
    report = {
        "benchmark": "nextedit_scale",
        "tiny": args.tiny,
        "keystrokes": keystrokes,
        "python": sys.version.split()[0],
        "shapes": rows,
        "loopbackErrors": errors,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.output}")
    return 1 if errors else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_size_options(parser, RESULTS, "a tenth of each file, three keystrokes a phase")
    parser.add_argument(
        "--shape",
        action="append",
        choices=[shape.name for shape in shapes(tiny=True)],
        help="run only this shape (repeatable); all three by default",
    )
    parser.add_argument("--keystrokes", type=int, help="keystrokes a phase")
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
