"""Next-edit evaluation: does the server predict the edit that follows, and how soon?

Run: `python benchmarks/nextedit.py [--tiny] [--embedded-cases N] [--output PATH]` (prints
tables, writes benchmarks/results/nextedit.json, or PATH).

The cases are data (`fixtures/nextedit/cases/*.json`, cut from real code; sources and
licences in that folder's README): a file before the user's edit, the file after it, the
cursor, and the file after the edits that should follow. For each case the real server is
started over stdio (one process per run), the original file is opened, the user's edit is
sent as `didChange` hunks, and `textDocument/copilotInlineEdit` is asked at the cursor. The
first edit returned is applied (as an editor would, then sent back as a change) and the
server asked again, until it offers nothing (at most `MAX_STEPS` times).

Scores per case: exact match of the file after the walk with the expected file (the edits
all lie inside the editable region, so this is the region's exact match), and the share of
the lines the predictions wrote that the expected edit keeps.

Runs:
- the scripted reference model (lsp_spark.testing.nextedit_model), which answers exactly
  the expected edits for whatever region the server shows it. It must score 100%: it checks
  the pipeline (regions, prompts, parsing, diffs, positions, versions), in UTF-16 and UTF-8
  positions, with LF and with CRLF files. The loopback server is paced like the hosted
  model (TTFT 100 ms, 1,000 tokens/s), so the latencies are those a user would see: from
  the user's edit to the first next edit, and for each chained edit after accepting one.
- the embedded model (SmolLM2-135M), reported, on the first `--embedded-cases` cases of
  each language; it is far too small to predict edits well (so predictions are off for it
  by default).

`--tiny` runs the reference on two cases in two of the four variants.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from holes import started_server  # noqa: E402
from timing import add_size_options  # noqa: E402

from lsp_spark.testing import isolated_environment  # noqa: E402
from lsp_spark.testing.cerebras_server import CerebrasTestServer  # noqa: E402
from lsp_spark.testing.nextedit_model import is_next_edit_request, scripted_reply  # noqa: E402

CASES = ROOT / "fixtures" / "nextedit" / "cases"
RESULTS = Path(__file__).resolve().parent / "results" / "nextedit.json"
LANGUAGE_IDS = {"python": "py", "typescript": "ts", "go": "go", "rust": "rs"}
VARIANTS = (("utf-16", "\n"), ("utf-8", "\n"), ("utf-16", "\r\n"), ("utf-8", "\r\n"))
TINY_VARIANTS = (("utf-16", "\n"), ("utf-8", "\r\n"))
MAX_STEPS = 12
TTFT_SECONDS = 0.1
TOKENS_PER_SECOND = 1000
API_KEY = "nextedit-bench-key"
REQUEST_TIMEOUT = 120.0
EMBEDDED_CASES_PER_LANGUAGE = 4
EMBEDDED_MAX_TOKENS = 160


@dataclass(frozen=True)
class Case:
    id: str
    language: str
    kind: str
    original: str
    current: str
    expected: str
    cursor: tuple[int, int]
    """Line and UTF-16 column in `current`."""
    diagnostics: list[dict[str, Any]]

    @property
    def filename(self) -> str:
        return f"{self.id}.{LANGUAGE_IDS[self.language]}"


@dataclass
class Outcome:
    case: str
    exact: bool
    predicted_lines: int
    kept_lines: int
    first_ms: float | None
    chained_ms: list[float]
    steps: int


def load_cases() -> list[Case]:
    cases = []
    for path in sorted(CASES.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        cursor = data["cursor"]
        cases.append(
            Case(
                data["id"],
                data["language"],
                data["kind"],
                data["original"],
                data["current"],
                data["expected"],
                (cursor["line"], cursor["character"]),
                data.get("diagnostics") or [],
            )
        )
    return cases


def units(text: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    return len(text.encode("utf-16-le")) // 2


def column_of(line: str, count: int, encoding: str) -> int:
    """The code point column `count` code units of `encoding` into `line`."""
    column = 0
    while column < len(line) and count > 0:
        count -= units(line[column], encoding)
        column += 1
    return column


class Buffer:
    """The client's copy of a document, edited the way an editor edits it."""

    def __init__(self, text: str, eol: str, encoding: str) -> None:
        self.lines = text.split("\n")
        self.eol = eol
        self.encoding = encoding

    @property
    def text(self) -> str:
        return self.eol.join(self.lines)

    def position(self, row: int, column: int) -> dict[str, int]:
        return {"line": row, "character": units(self.lines[row][:column], self.encoding)}

    def replace(
        self, row: int, column: int, end_row: int, end_column: int, text: str
    ) -> dict[str, Any]:
        """Replace code point range; returns the LSP content change for it."""
        change = {
            "range": {
                "start": self.position(row, column),
                "end": self.position(end_row, end_column),
            },
            "text": text.replace("\n", self.eol),
        }
        head, tail = self.lines[row][:column], self.lines[end_row][end_column:]
        self.lines[row : end_row + 1] = (head + text + tail).split("\n")
        return change

    def apply(self, edit: dict[str, Any]) -> dict[str, Any]:
        """Apply a server edit (positions in this buffer's encoding); returns the change."""
        start, end = edit["range"]["start"], edit["range"]["end"]
        row, end_row = start["line"], end["line"]
        column = column_of(self.lines[row], start["character"], self.encoding)
        end_column = column_of(self.lines[end_row], end["character"], self.encoding)
        return self.replace(row, column, end_row, end_column, edit["text"].replace(self.eol, "\n"))


def user_edits(buffer: Buffer, target: str) -> list[dict[str, Any]]:
    """The changes that turn the buffer into `target`, line hunks from the bottom up (so each
    change's positions hold when it arrives) — how an editor reports the user's edit."""
    changes = []
    new = target.split("\n")
    matcher = difflib.SequenceMatcher(None, buffer.lines, new, autojunk=False)
    for tag, i1, i2, j1, j2 in reversed(matcher.get_opcodes()):
        if tag == "equal":
            continue
        if i1 < i2:
            end_row, end_column = i2 - 1, len(buffer.lines[i2 - 1])
            text = "\n".join(new[j1:j2])
            if j1 == j2:  # deletion: take the lines with a neighbouring break
                if i2 < len(buffer.lines):
                    end_row, end_column, text = i2, 0, ""
                elif i1 > 0:
                    changes.append(
                        buffer.replace(i1 - 1, len(buffer.lines[i1 - 1]), end_row, end_column, "")
                    )
                    continue
            changes.append(buffer.replace(i1, 0, end_row, end_column, text))
        else:
            changes.append(
                buffer.replace(i1, 0, i1, 0, "".join(line + "\n" for line in new[j1:j2]))
            )
    return changes


def added_lines(before: str, after: str) -> Counter[str]:
    matcher = difflib.SequenceMatcher(None, before.split("\n"), after.split("\n"), autojunk=False)
    added: Counter[str] = Counter()
    lines = after.split("\n")
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            added.update(lines[j1:j2])
    return added


async def ask(
    client: Any, uri: str, version: int, position: dict[str, int]
) -> list[dict[str, Any]]:
    result = await asyncio.wait_for(
        client.protocol.send_request_async(
            "textDocument/copilotInlineEdit",
            {"textDocument": {"uri": uri, "version": version}, "position": position},
        ),
        REQUEST_TIMEOUT,
    )
    return [_plain(edit) for edit in result.edits]


def _plain(value: Any) -> Any:
    if hasattr(value, "_asdict"):
        return {key: _plain(item) for key, item in value._asdict().items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def notify(client: Any, method: str, params: dict[str, Any]) -> None:
    """Send a standard notification given as plain JSON (the client wants its typed form)."""
    params_type = client.protocol.get_message_type(method).__attrs_attrs__.params.type
    client.protocol.notify(method, client.protocol._converter.structure(params, params_type))


def send_change(client: Any, uri: str, version: int, changes: list[dict[str, Any]]) -> None:
    notify(
        client,
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": version}, "contentChanges": changes},
    )


async def run_case(client: Any, case: Case, eol: str, encoding: str) -> Outcome:
    uri = f"file:///nextedit-bench/{case.filename}"
    buffer = Buffer(case.original, eol, encoding)
    notify(
        client,
        "textDocument/didOpen",
        {
            "textDocument": {
                "uri": uri,
                "languageId": case.language,
                "version": 1,
                "text": buffer.text,
            }
        },
    )
    if case.diagnostics:
        client.protocol.notify(
            "lspSpark/diagnostics", {"uri": uri, "diagnostics": case.diagnostics}
        )
    version = 1
    for change in user_edits(buffer, case.current):
        version += 1
        send_change(client, uri, version, [change])
    row, utf16_column = case.cursor
    position = buffer.position(row, column_of(buffer.lines[row], utf16_column, "utf-16"))
    first_ms: float | None = None
    chained: list[float] = []
    steps = 0
    started = time.perf_counter()
    edits = await ask(client, uri, version, position)
    if edits:
        first_ms = (time.perf_counter() - started) * 1000
    while edits and steps < MAX_STEPS:
        steps += 1
        edit = edits[0]
        if edit["textDocument"]["version"] != version:
            break
        version += 1
        send_change(client, uri, version, [buffer.apply(edit)])
        end = edit["range"]["start"]
        position = {"line": end["line"], "character": end["character"]}
        started = time.perf_counter()
        edits = await ask(client, uri, version, position)
        if edits:
            chained.append((time.perf_counter() - started) * 1000)
    notify(client, "textDocument/didClose", {"textDocument": {"uri": uri}})
    final = "\n".join(buffer.lines)
    predicted = added_lines(case.current, final)
    expected = added_lines(case.current, case.expected)
    return Outcome(
        case.id,
        final == case.expected,
        sum(predicted.values()),
        sum((predicted & expected).values()),
        first_ms,
        chained,
        steps,
    )


async def run(
    cases: list[Case], eol: str, encoding: str, backend: dict[str, Any], environment: dict[str, str]
) -> tuple[list[Outcome], dict[str, Any]]:
    messages: list[str] = []
    settings = {"nextEdit": True, **backend}
    async with started_server(
        "lsp-spark-nextedit", environment, settings, messages, [encoding]
    ) as client:
        outcomes = [await run_case(client, case, eol, encoding) for case in cases]
        stats = _plain(await client.protocol.send_request_async("lspSpark/stats", None))
    return outcomes, stats["nextEdit"]


def summary(name: str, outcomes: list[Outcome], stats: dict[str, Any]) -> dict[str, Any]:
    firsts = [o.first_ms for o in outcomes if o.first_ms is not None]
    chained = [ms for o in outcomes for ms in o.chained_ms]
    predicted = sum(o.predicted_lines for o in outcomes)
    return {
        "run": name,
        "cases": len(outcomes),
        "exact": sum(o.exact for o in outcomes) / len(outcomes) if outcomes else 0.0,
        "keptLineShare": sum(o.kept_lines for o in outcomes) / predicted if predicted else None,
        "firstEditMsP50": statistics.median(firsts) if firsts else None,
        "chainedEditMsP50": statistics.median(chained) if chained else None,
        "outputTokensPerPrediction": stats.get("outputTokensPerPrediction"),
        "predictions": stats.get("predictions"),
        "failures": [o.case for o in outcomes if not o.exact],
    }


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


async def main_async(args: argparse.Namespace) -> int:
    cases = load_cases()
    if not cases:
        print(f"no cases in {CASES}", file=sys.stderr)
        return 2
    if args.tiny:
        cases = cases[:2]
    rows = []
    by_id = {case.filename: case for case in cases}

    def reply(request: dict[str, Any]) -> str:
        if not is_next_edit_request(request):
            return ""
        content = request["messages"][-1]["content"]
        name = next(name for name in by_id if f"region of {name} " in content)
        return scripted_reply(request, by_id[name].expected)

    with tempfile.TemporaryDirectory() as home:
        environment = isolated_environment(home)
        with CerebrasTestServer(
            ttft=TTFT_SECONDS, tokens_per_second=TOKENS_PER_SECOND, reply_fn=reply, api_key=API_KEY
        ) as loopback:
            backend = {"backend": "cerebras", "apiKey": API_KEY, "baseUrl": loopback.base_url}
            for encoding, eol in TINY_VARIANTS if args.tiny else VARIANTS:
                name = f"reference {encoding} {'CRLF' if eol == chr(13) + chr(10) else 'LF'}"
                outcomes, stats = await run(cases, eol, encoding, backend, environment)
                rows.append(summary(name, outcomes, stats))
        if not args.tiny and args.embedded_cases:
            chosen = [
                case
                for language in LANGUAGE_IDS
                for case in [c for c in cases if c.language == language][: args.embedded_cases]
            ]
            local = {"backend": "local", "nextEditMaxTokens": EMBEDDED_MAX_TOKENS}
            outcomes, stats = await run(chosen, "\n", "utf-16", local, environment)
            rows.append(summary("embedded SmolLM2-135M", outcomes, stats))
    languages = ", ".join(sorted({case.language for case in cases}))
    print(f"next-edit evaluation: {len(cases)} cases ({languages})")
    header = ("run", "cases", "exact", "kept", "first p50", "chained p50", "tokens/pred")
    print("{:<24} {:>5} {:>6} {:>6} {:>10} {:>12} {:>12}".format(*header))
    for row in rows:
        tokens = row["outputTokensPerPrediction"]
        cells = (
            row["run"],
            row["cases"],
            _pct(row["exact"]),
            _pct(row["keptLineShare"]),
            _ms(row["firstEditMsP50"]),
            _ms(row["chainedEditMsP50"]),
            "-" if tokens is None else f"{tokens:.0f}",
        )
        print("{:<24} {:>5} {:>6} {:>6} {:>10} {:>12} {:>12}".format(*cells))
    print(
        f"milliseconds; loopback TTFT {TTFT_SECONDS * 1000:.0f} ms at {TOKENS_PER_SECOND} "
        "tokens/s. first: from the user's edit to the first next edit; chained: after "
        "accepting one"
    )
    for row in rows:
        if row["failures"] and row["run"].startswith("reference"):
            print(f"{row['run']}: not exact: {', '.join(row['failures'])}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({"runs": rows}, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    add_size_options(parser, RESULTS, "two cases, reference model, two variants")
    parser.add_argument(
        "--embedded-cases",
        type=int,
        default=EMBEDDED_CASES_PER_LANGUAGE,
        help="cases per language for the embedded model (0: skip it)",
    )
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
