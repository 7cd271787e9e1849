"""What one streamed completion costs the server's CPU, by HTTP client.

Run: `python benchmarks/bench_http.py [--tiny] [--output PATH]` (prints a table, writes
benchmarks/results/http.json, or PATH; `--tiny` streams a thirtieth of the completions, to
check every client still gets them). The loopback Cerebras-compatible server runs in another
process (as the real service would), and each client streams the same chat completion from it:
the Cerebras SDK, plain httpx, httpcore (httpx's transport), and the server's own `ApiClient`
(llhttp through httptools). CPU time per completion is what the keystroke's path pays; wall
time includes the loopback's own work. Each is measured back to back and after 50 ms idle, as
between keystrokes: code that has not run for a while runs several times slower on this
machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from multiprocessing.connection import Connection
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpcore  # noqa: E402
import httpx  # noqa: E402
from cerebras.cloud.sdk import AsyncCerebras  # noqa: E402
from timing import add_size_options  # noqa: E402

from lsp_spark.backends.http import ApiClient  # noqa: E402
from lsp_spark.testing.cerebras_server import CerebrasTestServer  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "http.json"
KEY = "bench-http-key"
ROUNDS = 3
COMPLETIONS = 300
IDLE_COMPLETIONS = 90
IDLE = 0.05
WARM_UP = 20
TINY_SHARE = 30
"""--tiny divides the completions and the warm-up by this."""
BODY = {
    "model": "gpt-oss-120b",
    "messages": [
        {"role": "system", "content": "s" * 2000},
        {"role": "user", "content": "u" * 6000},
    ],
    "stream": True,
    "max_completion_tokens": 96,
    "temperature": 0,
}


def serve(pipe: Connection) -> None:
    with CerebrasTestServer(api_key=KEY, default_reply="total = price * quantity\n") as server:
        pipe.send(server.base_url)
        pipe.recv()


async def measure(base_url: str, share: int) -> dict[str, dict[str, float]]:
    """Each client's CPU and wall time per completion, with 1/`share` of the completions."""
    completions, idle_completions = COMPLETIONS // share, IDLE_COMPLETIONS // share
    sdk = AsyncCerebras(api_key=KEY, base_url=base_url, max_retries=0, warm_tcp_connection=False)
    plain = httpx.AsyncClient(base_url=base_url, headers={"authorization": f"Bearer {KEY}"})
    pool = httpcore.AsyncConnectionPool()
    ours = ApiClient(
        base_url,
        service="loopback",
        api_key=KEY,
        skip_malformed=False,
        warm_path="/v1/tcp_warming",
    )
    content = json.dumps(BODY).encode()
    headers = {"content-type": "application/json", "authorization": f"Bearer {KEY}"}

    # Each returns what it received (lines, chunks or events): a client that streams nothing
    # would be timed doing nothing.
    async def via_sdk() -> int:
        async with sdk.chat.completions.with_streaming_response.create(**BODY) as response:  # type: ignore[call-overload]
            return sum([1 async for _ in response.iter_lines()])

    async def via_httpx() -> int:
        async with plain.stream(
            "POST", "/v1/chat/completions", content=content, headers=headers
        ) as response:
            response.raise_for_status()
            return sum([1 async for _ in response.aiter_lines()])

    async def via_httpcore() -> int:
        async with pool.stream(
            "POST", base_url + "/v1/chat/completions", headers=headers, content=content
        ) as response:
            if response.status != 200:
                raise RuntimeError(f"httpcore: status {response.status}")
            return sum([1 async for _ in response.aiter_stream()])

    async def via_ours() -> int:
        return sum([1 async for _ in ours.events("/v1/chat/completions", BODY, 8.0)])

    clients: dict[str, Callable[[], Awaitable[int]]] = {
        "cerebras-cloud-sdk": via_sdk,
        "httpx": via_httpx,
        "httpcore": via_httpcore,
        "ApiClient (httptools)": via_ours,
    }
    samples: dict[str, dict[str, list[float]]] = {
        name: {"cpu": [], "wall": [], "idleCpu": [], "idleWall": [], "received": []}
        for name in clients
    }
    for _ in range(ROUNDS):
        for name, complete in clients.items():
            for _ in range(WARM_UP // share):
                await complete()
            for index in range((completions + idle_completions) // ROUNDS):
                idle = index % ((completions + idle_completions) // idle_completions) == 0
                if idle:
                    await asyncio.sleep(IDLE)
                started_cpu, started = time.process_time(), time.perf_counter()
                received = await complete()
                samples[name]["received"].append(received)
                cpu_key, wall_key = ("idleCpu", "idleWall") if idle else ("cpu", "wall")
                samples[name][cpu_key].append((time.process_time() - started_cpu) * 1000)
                samples[name][wall_key].append((time.perf_counter() - started) * 1000)
    await sdk.close()
    await plain.aclose()
    await pool.aclose()
    await ours.aclose()
    return {
        name: {
            "cpuMeanMs": statistics.mean(row["cpu"]),
            "wallP50Ms": statistics.median(row["wall"]),
            "idleCpuMeanMs": statistics.mean(row["idleCpu"]),
            "idleWallP50Ms": statistics.median(row["idleWall"]),
            "completions": len(row["cpu"]) + len(row["idleCpu"]),
            "emptyCompletions": row["received"].count(0),
        }
        for name, row in samples.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    add_size_options(parser, RESULTS, f"1/{TINY_SHARE} of the completions: checks only")
    arguments = parser.parse_args()
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    upstream = context.Process(target=serve, args=(theirs,), daemon=True)
    upstream.start()
    try:
        base_url = ours.recv()
        results = asyncio.run(measure(base_url, TINY_SHARE if arguments.tiny else 1))
    finally:
        ours.send(None)
        upstream.join(10)
    print(f"{'':32} {'back to back':>24} {'after 50 ms idle':>24}")
    print(f"{'client':32} {'CPU (ms)':>12}{'wall p50':>12} {'CPU (ms)':>12}{'wall p50':>12}")
    for name, row in results.items():
        print(
            f"{name:32} {row['cpuMeanMs']:>12.3f}{row['wallP50Ms']:>12.3f}"
            f" {row['idleCpuMeanMs']:>12.3f}{row['idleWallP50Ms']:>12.3f}"
        )
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    report = {"python": sys.version.split()[0], "results": results}
    arguments.output.write_text(json.dumps(report, indent=2))
    print(f"wrote {arguments.output}")


if __name__ == "__main__":
    main()
