"""`lsp-spark demo`: drive the real server over stdio the way an editor does.

It opens a real file, waits as a user does until the server's backend is ready (its model
loaded), then blanks a line, types its first characters one keystroke at a time (a request
per keystroke, never cancelled, as Neovim does), and prints the ghost text the server offers
after the last keystroke, with its latency. How long the backend took to get ready is
printed on its own line: it is paid once per server, not per suggestion.
"""

from __future__ import annotations

import asyncio
import os
import re
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from lsp_spark.stats import STATS_METHOD

TYPED_CHARACTERS = 3
KEYSTROKE_GAP = 0.06
RESPONSE_TIMEOUT = 120.0
READY_POLL = 0.02
DIM, BOLD, RESET = "\033[2m", "\033[1m", "\033[0m"
ORACLE_MATCH_CHARS = 200
HOLE_LINE = re.compile(r"^(\s+)(return|raise|if|self|for)\b")


def default_fixture() -> Path:
    """The file the demo types into: package data, so an installed wheel has it too."""
    return Path(__file__).resolve().parent / "examples" / "inventory.py"


def pick_holes(lines: list[str], count: int) -> list[int]:
    """Indented statements spread over the file: the lines the demo will retype."""
    candidates = [index for index, line in enumerate(lines) if HOLE_LINE.match(line)]
    if len(candidates) <= count:
        return candidates
    step = len(candidates) / count
    return [candidates[int(position * step)] for position in range(count)]


@contextmanager
def loopback_backend(original: str) -> Iterator[dict[str, str]]:
    """The Cerebras-compatible test server, answering with the rest of the file's real line."""
    from lsp_spark.prompts.chat import HOLE
    from lsp_spark.testing.cerebras_server import CerebrasTestServer

    def reply(request: dict[str, Any]) -> str:
        content = request["messages"][-1]["content"]
        recent = content.split(HOLE, 1)[0][-ORACLE_MATCH_CHARS:]
        found = original.find(recent)
        if found < 0:
            return ""
        return original[found + len(recent) :].split("\n", 1)[0]

    server = CerebrasTestServer(
        ttft=0.08, tokens_per_second=1000, reply_fn=reply, api_key="loopback-demo-key"
    )
    server.start()
    try:
        yield {
            "LSP_SPARK_BACKEND": "cerebras",
            "CEREBRAS_API_KEY": "loopback-demo-key",
            "LSP_SPARK_BASE_URL": server.base_url,
            "LSP_SPARK_MODEL": "gpt-oss-120b",
        }
    finally:
        server.stop()


def _change(uri: str, version: int, line: int, start: int, end: int, text: str) -> Any:
    edit = types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(line, start), types.Position(line, end)), text=text
    )
    return types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[edit],
    )


async def run_demo(backend: str, file: Path | None, holes: int) -> int:
    path = (file or default_fixture()).resolve()
    if not path.is_file():
        print(f"lsp-spark demo: no such file {path}; pass --file", file=sys.stderr)
        return 2
    original = path.read_text(encoding="utf-8")
    environment = dict(os.environ)
    if backend == "loopback":
        with loopback_backend(original) as overrides:
            environment.update(overrides)
            return await _drive(path, original, holes, environment)
    if backend != "auto":
        environment["LSP_SPARK_BACKEND"] = backend
    return await _drive(path, original, holes, environment)


async def _drive(path: Path, original: str, holes: int, environment: dict[str, str]) -> int:
    client = LanguageClient("lsp-spark-demo", "1")
    messages: list[str] = []

    @client.feature(types.WINDOW_SHOW_MESSAGE)
    def show_message(params: types.ShowMessageParams) -> None:
        messages.append(params.message)
        print(f"  server says: {params.message}")

    await client.start_io(sys.executable, "-m", "lsp_spark", "serve", env=environment)
    stderr_lines: list[bytes] = []
    drain = asyncio.create_task(_drain(client, stderr_lines))
    try:
        return await _session(client, path, original, holes, messages)
    finally:
        drain.cancel()
        if client._server is not None and client._server.returncode is None:
            client._server.kill()
        await client.stop()


async def until_backend_prepared(client: LanguageClient) -> float:
    """Milliseconds until the server says its backend is ready (`backendPrepared`), waited
    for at most RESPONSE_TIMEOUT: after that the demo types anyway."""
    started = time.perf_counter()
    deadline = started + RESPONSE_TIMEOUT
    while time.perf_counter() < deadline:
        stats = await client.protocol.send_request_async(STATS_METHOD, None)
        if stats.backendPrepared:
            break
        await asyncio.sleep(READY_POLL)
    return (time.perf_counter() - started) * 1000


async def _drain(client: LanguageClient, sink: list[bytes]) -> None:
    """Keep the server's stderr pipe empty so it can never block on logging."""
    stream = client._server.stderr if client._server else None
    while stream is not None and (line := await stream.readline()):
        sink.append(line)


async def _session(
    client: LanguageClient, path: Path, original: str, holes: int, messages: list[str]
) -> int:
    uri = path.as_uri()
    await client.initialize_async(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(
                general=types.GeneralClientCapabilities(
                    position_encodings=[types.PositionEncodingKind.Utf16]
                )
            ),
            process_id=os.getpid(),
        )
    )
    client.initialized(types.InitializedParams())
    lines = original.split("\n")
    chosen = pick_holes(lines, holes)
    if not chosen:
        print("lsp-spark demo: found no indented statements to retype in that file")
        return 2
    first = chosen[0]
    indent = len(lines[first]) - len(lines[first].lstrip())
    blanked = [*lines[:first], lines[first][:indent], *lines[first + 1 :]]
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri, "python", 1, "\n".join(blanked))
        )
    )
    ready_ms = await until_backend_prepared(client)
    version = 1
    shown = 0
    latencies: list[float] = []
    column = indent
    started = time.perf_counter()
    for number, row in enumerate(chosen):
        target = lines[row]
        indent = len(target) - len(target.lstrip())
        if number:
            previous = chosen[number - 1]
            version += 1
            client.text_document_did_change(
                _change(uri, version, previous, 0, column, lines[previous])
            )
            version += 1
            client.text_document_did_change(_change(uri, version, row, indent, len(target), ""))
        pending: list[asyncio.Future[Any]] = []
        column = indent
        for character in target[indent : indent + TYPED_CHARACTERS]:
            version += 1
            client.text_document_did_change(_change(uri, version, row, column, column, character))
            column += 1
            sent = time.perf_counter()
            pending.append(
                client.protocol.send_request_async(
                    types.TEXT_DOCUMENT_INLINE_COMPLETION,
                    types.InlineCompletionParams(
                        text_document=types.TextDocumentIdentifier(uri),
                        position=types.Position(row, column),
                        context=types.InlineCompletionContext(
                            trigger_kind=types.InlineCompletionTriggerKind.Automatic
                        ),
                    ),
                )
            )
            await asyncio.sleep(KEYSTROKE_GAP)
        result = await asyncio.wait_for(pending[-1], RESPONSE_TIMEOUT)
        latency = (time.perf_counter() - sent) * 1000
        latencies.append(latency)
        typed = target[indent:column]
        items = result.items if result else []
        ghost = items[0].insert_text if items else ""
        ghost_text = ghost if isinstance(ghost, str) else ghost.value
        shown += bool(ghost_text)
        first_line = ghost_text.split("\n", 1)[0]
        extra = f" (+{ghost_text.count(chr(10))} lines)" if "\n" in ghost_text else ""
        print(
            f"line {row + 1:>3}  {BOLD}{' ' * indent}{typed}{RESET}{DIM}{first_line}{RESET}{extra}"
            f"   {latency:7.1f} ms"
        )
    stats = await client.protocol.send_request_async(STATS_METHOD, None)
    elapsed = time.perf_counter() - started
    print(
        f"\nbackend {stats.backend} ({stats.model}): {shown}/{len(chosen)} holes got ghost text, "
        f"median {statistics.median(latencies):.0f} ms after the last keystroke "
        f"({stats.latencyMs.p50 or 0:.0f} ms per upstream request, counted from the keystroke "
        f"that sent it), {stats.upstreamRequests} upstream requests for {stats.requests} "
        f"keystroke requests ({stats.superseded} superseded), {elapsed:.1f} s in all"
    )
    if stats.firstTokenMs.p50 is not None:
        print(
            f"where the time goes, per upstream request (medians): {stats.firstTokenMs.p50:.0f} ms "
            f"until its first text arrived (for the embedded model, mostly evaluating the new "
            f"part of the prompt); the rest is generating the suggestion"
        )
    print(
        f"before the first keystroke: the backend was ready {ready_ms:.0f} ms after the file "
        f"opened (for the embedded model, loading it)"
    )
    await client.shutdown_async(None)
    client.exit(None)
    return 0 if shown else 1
