"""Hostile backends: how long a request lasts, and what it costs the server, when the backend
misbehaves instead of answering.

Run: `python benchmarks/hostile.py [--tiny] [--output PATH]` (prints a table, writes
benchmarks/results/hostile.json). For each misbehaviour of the loopback Cerebras test server
(a stream that trickles without end, an event line that never ends, a body announced as
1 GiB, a web page where the API should be, a response head that never completes, a reset
mid-stream) one real server process over stdio gets a ghost-text request on a document with
`requestTimeoutMs` as configured. Measured: the time until the request is answered, the
growth of the server's peak resident memory, the round trip of `lspSpark/stats` while the
backend misbehaves (other work stays fast), whether the next request, to a backend that
behaves again, gets its suggestion, and what the user was told. The bars are printed next
to the figures: answered within `requestTimeoutMs` plus a second, peak memory growth under
64 MiB.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lsprotocol import types  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402
from timing import add_size_options  # noqa: E402

from lsp_spark.testing import isolated_environment  # noqa: E402
from lsp_spark.testing.cerebras_server import CerebrasTestServer, Fault  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "hostile.json"
KEY = "bench-hostile-key"
FAULTS = {
    "trickle": Fault.trickle(0.2),
    "endless event": Fault.endless_event(),
    "1 GiB body": Fault.huge_body(),
    "web page": Fault.web_page(),
    "head never ends": Fault.slow_head(0.2),
    "reset mid-stream": Fault.reset_after(2),
}
STATS_EVERY = 0.05
"""Seconds between `lspSpark/stats` probes while a hostile request is open."""
ANSWER_MARGIN = 1.0
MEMORY_BAR_MIB = 64
SAFETY = 60.0
"""Seconds after which a request that has not been answered counts as never answered."""


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc")


def inline_params(uri: str) -> types.InlineCompletionParams:
    return types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri),
        position=types.Position(0, 4),
        context=types.InlineCompletionContext(
            trigger_kind=types.InlineCompletionTriggerKind.Automatic
        ),
    )


async def one_fault(fault: Fault, timeout_ms: int, config_home: str) -> dict[str, Any]:
    with CerebrasTestServer(api_key=KEY) as upstream:
        client = LanguageClient("hostile-benchmark", "1")
        told: list[str] = []
        client.feature(types.WINDOW_SHOW_MESSAGE)(lambda params: told.append(params.message))
        await client.start_io(
            sys.executable, "-m", "lsp_spark", "serve", env=isolated_environment(config_home)
        )
        try:
            return await measure(client, upstream, fault, timeout_ms) | {"messages": told}
        finally:
            await asyncio.wait_for(client.shutdown_async(None), SAFETY)
            client.exit(None)
            await client.stop()


async def measure(
    client: LanguageClient, upstream: CerebrasTestServer, fault: Fault, timeout_ms: int
) -> dict[str, Any]:
    options = {
        "backend": "cerebras",
        "apiKey": KEY,
        "baseUrl": upstream.base_url,
        "debounceMs": 0,
        "prefetch": False,
        "requestTimeoutMs": timeout_ms,
    }
    await client.initialize_async(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(), initialization_options=options
        )
    )
    client.initialized(types.InitializedParams())
    uri = "file:///hostile/example.py"
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, "x = \n"))
    )
    await client.protocol.send_request_async("lspSpark/stats", None)
    pid = client._server.pid  # type: ignore[union-attr]
    before = peak_rss_mib(pid)
    upstream.config.queue_faults(fault)
    sent = time.monotonic()
    hostile = asyncio.ensure_future(
        asyncio.wait_for(client.text_document_inline_completion_async(inline_params(uri)), SAFETY)
    )
    probes: list[float] = []
    while not hostile.done() and time.monotonic() - sent < SAFETY:
        probe = time.monotonic()
        await client.protocol.send_request_async("lspSpark/stats", None)
        probes.append((time.monotonic() - probe) * 1000)
        await asyncio.wait({hostile}, timeout=STATS_EVERY)
    answer = await hostile
    answered_s = time.monotonic() - sent
    grown = peak_rss_mib(pid) - before
    upstream.config.queue_replies("1")
    after = await client.text_document_inline_completion_async(inline_params(uri))
    items = after.items if isinstance(after, types.InlineCompletionList) else after or []
    return {
        "answeredSeconds": round(answered_s, 3),
        "answerItems": len(answer.items) if isinstance(answer, types.InlineCompletionList) else 0,
        "peakMemoryGrowthMiB": round(grown, 1),
        "statsProbes": len(probes),
        "statsP50Ms": round(statistics.median(probes), 2) if probes else None,
        "statsMaxMs": round(max(probes), 2) if probes else None,
        "nextRequestWorks": [item.insert_text for item in items] == ["1"],
        "withinDeadline": answered_s <= timeout_ms / 1000 + ANSWER_MARGIN,
        "withinMemoryBar": grown < MEMORY_BAR_MIB,
    }


def table(rows: dict[str, dict[str, Any]], timeout_ms: int) -> str:
    bar = f"≤ {timeout_ms / 1000 + ANSWER_MARGIN:g} s"
    lines = [
        f"| backend | answered after ({bar}) | peak memory growth (< {MEMORY_BAR_MIB} MiB) "
        "| stats p50 / max meanwhile | next request works | messages |",
        "|---|---|---|---|---|---|",
    ]
    for name, row in rows.items():
        stats = (
            f"{row['statsP50Ms']} / {row['statsMaxMs']} ms ({row['statsProbes']})"
            if row["statsProbes"]
            else "answered before a probe"
        )
        lines.append(
            f"| {name} | {row['answeredSeconds']:.2f} s | {row['peakMemoryGrowthMiB']:.1f} MiB "
            f"| {stats} | {'yes' if row['nextRequestWorks'] else 'NO'} | {len(row['messages'])} |"
        )
    return "\n".join(lines)


async def benchmark(timeout_ms: int) -> dict[str, dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="lsp-spark-hostile-") as config_home:
        return {
            name: await one_fault(fault, timeout_ms, config_home) for name, fault in FAULTS.items()
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    add_size_options(parser, RESULTS, "a 500 ms request deadline: checks, not figures")
    arguments = parser.parse_args()
    timeout_ms = 500 if arguments.tiny else 8000
    rows = asyncio.run(benchmark(timeout_ms))
    print(table(rows, timeout_ms))
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    arguments.output.write_text(
        json.dumps({"requestTimeoutMs": timeout_ms, "backends": rows}, indent=2) + "\n"
    )
    failed = [name for name, row in rows.items() if not row["nextRequestWorks"]]
    if failed:
        print(f"the request after a hostile answer failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
