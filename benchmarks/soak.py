"""Soak: tens of thousands of completion requests through one server process, to find leaks.

Run: `python benchmarks/soak.py [--requests N] [--quick | --tiny] [--output PATH]` (prints a
table, writes benchmarks/results/soak.json, or PATH). Not part of the test run: it takes
minutes; `--tiny` (100 requests after a warm-up of 20) takes seconds, and checks that the soak
still measures rather than measuring anything. A single server process over stdio gets 20 open
documents (standard-library files of the running interpreter) and four typists who type in them
at once, each at its own pace with bursts, never waiting for an answer before the next
keystroke (as Neovim does), cancelling some requests (as VS Code does), accepting some right
suggestions, switching documents, closing and reopening them, and asking for `lspSpark/stats`
now and then. The backend is the loopback Cerebras-compatible test server, with a TTFT of 30 ms
and 2,000 tokens/s so requests overlap and supersede each other, answering with the file's real
continuation; a small share of its streams fail (500, reset, stall) so the error paths run too.

Completion requests are sent and read as plain JSON (replay's lean protocol), as an editor
does. Measured: requests answered, errors (other than RequestCancelled for a request we
cancelled), timeouts; latency p50/p95 of the requests served, per window of requests, to show
drift; the server's resident memory after a warm-up, per window and after a final idle, and its
growth per 1,000 requests answered; and what is left open at the end: sockets (from /proc),
threads, and asyncio tasks if `lspSpark/stats` reports them. The first 500 requests are a
warm-up, left out of the figures (but not of the check below). The numbers are printed next to their
targets, and none of them is judged unless the soak really measured, which it states by its
exit status: it exits 1, saying why on stderr, unless every completion request (warm-up
included) got a result, or RequestCancelled for one it cancelled itself, every accept command
and `lspSpark/stats` request got its result, nothing failed on the client's side (a message
pygls could not send or read, an answer this script could not read), and the run was whole (no
failure, no time limit hit). An idle server's figures look as good as a healthy one's: only the
exit status tells them apart.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import math
import os
import random
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lsprotocol import types  # noqa: E402
from pygls.exceptions import JsonRpcException, JsonRpcRequestCancelled, PyglsError  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402
from replay import (  # noqa: E402
    LeanProtocol,
    Oracle,
    Trace,
    end_position,
    first_item,
    initialize,
    item_text,
    key_text,
    neighbour,
    percentile,
    pick_trace,
    plain,
    request_params,
    resident_mib,
    utf16_length,
)

from lsp_spark.demo import _change, _drain  # noqa: E402
from lsp_spark.testing import isolated_environment  # noqa: E402
from lsp_spark.testing.cerebras_server import CerebrasTestServer, Fault, RecordedRequest  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "soak.json"
API_KEY = "soak-benchmark-key"
SEED = 2025
MODULES = (
    "textwrap",
    "shlex",
    "json.decoder",
    "heapq",
    "calendar",
    "csv",
    "difflib",
    "fnmatch",
    "fractions",
    "glob",
    "gzip",
    "ipaddress",
    "pprint",
    "queue",
    "sched",
    "statistics",
    "base64",
    "colorsys",
    "configparser",
    "tokenize",
)
TRACE_CHARS = 600
"""About how much each document has left to type; typed to the end, it is closed and reopened."""

TTFT = 0.03
TOKENS_PER_SECOND = 2000.0
REQUEST_TIMEOUT_MS = 1000
"""The server's upstream timeout: short, so a stalled stream fails within the soak."""

TYPISTS = 4
MEAN_GAP = 0.085
GAP_SPREAD = 0.5
BURST_CHANCE = 0.04
BURST_KEYS = (3, 8)
BURST_GAP = (0.008, 0.025)
"""Fast runs of keys, so requests for one document overlap and supersede each other."""
PAUSE_AFTER_NEWLINE = 0.15
PAUSE = (0.2, 0.6)
TYPO_RATE = 0.03
ACCEPT_CHANCE = 0.5
"""Chance of taking a suggestion that is exactly what comes next, at the next keystroke."""
CANCEL_CHANCE = 0.12
CANCEL_AFTER = (0.0, 0.06)
SWITCH_CHANCE = 0.04
REOPEN_CHANCE = 0.15
"""Chance that a document left behind by a switch is closed and opened again."""
STATS_EVERY = 97
FAULT_CHANCE = 0.006
"""Per completion request sent: queue one fault for the next upstream completion."""

METHOD = types.TEXT_DOCUMENT_INLINE_COMPLETION
WARMUP = 500
TINY_WARMUP = 20
WINDOW = 1000
FULL_REQUESTS = 20_000
QUICK_REQUESTS = 2_000
TINY_REQUESTS = 100
MIN_RATE = 20.0
"""Requests per second below which the typists give up: bounds each phase (warm-up, soak) at
its requests / MIN_RATE."""
PHASE_FLOOR = 10.0
"""Seconds a phase gets at least, so that a tiny run's thinking pauses are not slowness."""
WARM_WAIT = 1.0
REQUEST_TIMEOUT = 10.0
SHUTDOWN_TIMEOUT = 5.0
FINAL_IDLE = 2.0
CLOSE_WAIT = 2.0
"""How long sockets get to close after `shutdown` before they count as left open."""
END_MARGIN = 60.0
POOL_CONNECTIONS = 10
"""httpcore's default pool size: idle keep-alive connections the server may hold by design."""
SWITCH_INTERVAL = 0.001

TARGET_GROWTH_MIB = 10.0
TCP_STATES = {
    "01": "ESTABLISHED",
    "02": "SYN_SENT",
    "03": "SYN_RECV",
    "04": "FIN_WAIT1",
    "05": "FIN_WAIT2",
    "06": "TIME_WAIT",
    "07": "CLOSE",
    "08": "CLOSE_WAIT",
    "09": "LAST_ACK",
    "0A": "LISTEN",
    "0B": "CLOSING",
}


@dataclass(slots=True)
class Request:
    """One inline completion request and what came of it."""

    sent: float
    arrived: float | None = None
    outcome: str = ""
    """"served" (a result), "cancelled" (RequestCancelled after our $/cancelRequest), "error"
    (an error answer, or one this script could not send or read); "" while unanswered."""
    text: bool = False
    cancel_asked: bool = False
    error: str | None = None

    @property
    def latency_ms(self) -> float | None:
        return None if self.arrived is None else (self.arrived - self.sent) * 1000


@dataclass(slots=True)
class Offer:
    """A suggestion that is exactly what comes next, for the document state it answered."""

    item: dict[str, Any]
    text: str
    generation: int
    version: int


@dataclass
class Doc:
    """One open document: the text before a traced region, and how much of it is typed."""

    trace: Trace
    uri: str
    generation: int = 0
    version: int = 1
    position: int = 0
    line: int = 0
    character: int = 0
    typo: str | None = None
    offer: Offer | None = None
    busy: bool = False

    def restart(self) -> None:
        self.generation += 1
        self.version, self.position, self.typo, self.offer = 1, 0, None, None
        self.line, self.character = end_position(self.trace.before)


@dataclass(slots=True)
class Sample:
    """The server process seen from outside at one moment."""

    requests: int
    answered: int
    seconds: float
    rss_mib: float | None
    fds: int | None
    threads: int | None
    tcp: int
    upstream: int
    """Completion requests the loopback server has received so far."""
    streaming: int
    """Of them, still being answered (a stalled stream stays so until the client leaves)."""


@dataclass
class Upstream:
    """Completions the test server handled, harvested as they finish so records don't pile up."""

    completions: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    hung_up: int = 0
    tokens: int = 0

    def harvest(self, server: CerebrasTestServer, everything: bool = False) -> None:
        """Count and drop the finished records at the front of the list: deleting a prefix is
        one operation under the GIL, so the server thread's appends are never lost."""
        records = server.requests
        done = 0
        for record in list(records):
            if record.completed_at is None and not everything:
                break
            done += 1
            self.add(record)
        del records[:done]

    def add(self, record: RecordedRequest) -> None:
        if not record.path.endswith("completions"):
            return
        self.completions += 1
        self.statuses[record.status or 0] += 1
        if record.fault is not None:
            self.faults[record.fault.kind.value] += 1
        self.hung_up += record.client_hung_up
        self.tokens += record.tokens_sent


ANSWERED = ("served", "cancelled")
"""Outcomes that answer a request: a result, or RequestCancelled for one the soak cancelled."""


class SoakClient(LanguageClient):
    """Speaks replay's lean protocol, and keeps what pygls catches on the client's side (a
    message it could not send or read, a handler that raised) instead of only logging it: each
    is an error of the run."""

    def __init__(self) -> None:
        super().__init__("lsp-spark-soak", "1", protocol_cls=LeanProtocol)
        self.errors: list[str] = []

    def report_server_error(
        self, error: Exception, source: type[PyglsError] | type[JsonRpcException]
    ) -> None:
        self.errors.append(f"client: {error!r}")


class Soak:
    """Drives one server process: typists, cancellations, accepts, stats, faults, samples."""

    def __init__(
        self,
        client: SoakClient,
        pid: int,
        upstream: CerebrasTestServer,
        docs: list[Doc],
        window: int,
    ) -> None:
        self.client = client
        self.protocol = cast(LeanProtocol, client.protocol)
        self.pid = pid
        self.upstream = upstream
        self.docs = docs
        self.window = window
        self.deadline = math.inf
        self.rng = random.Random(SEED)
        self.loop = asyncio.get_running_loop()
        self.pending: set[concurrent.futures.Future[Any]] = set()
        self.warmup: list[Request] = []
        self.requests: list[Request] = []
        self.measuring = False
        self.goal = 0
        self.started = time.monotonic()
        self.samples: list[Sample] = []
        self.start_sample: Sample | None = None
        self.harvested = Upstream()
        self.accepts = 0
        self.command_errors: list[str] = []
        self.stats_sent = 0
        self.stats_errors: list[str] = []
        self.faults: Counter[str] = Counter()
        self.switches = 0
        self.reopens = 0
        self.truncated = False

    @property
    def batch(self) -> list[Request]:
        return self.requests if self.measuring else self.warmup

    def open(self, doc: Doc) -> None:
        doc.restart()
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(doc.uri, "python", doc.version, doc.trace.before)
            )
        )

    def reopen(self, doc: Doc) -> None:
        self.reopens += 1
        self.client.text_document_did_close(
            types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(doc.uri))
        )
        self.open(doc)

    async def run(self, goal: int) -> None:
        """Type until `goal` requests of this phase were sent (or its time ran out)."""
        self.goal = goal
        self.deadline = time.monotonic() + max(goal / MIN_RATE, PHASE_FLOOR)
        docs = iter(self.rng.sample(self.docs, TYPISTS))
        await asyncio.gather(*(self.type(next(docs)) for _ in range(TYPISTS)))

    async def type(self, doc: Doc) -> None:
        doc.busy = True
        burst = 0
        while len(self.batch) < self.goal:
            if time.monotonic() > self.deadline:
                self.truncated = True
                break
            if burst:
                burst -= 1
                gap = self.rng.uniform(*BURST_GAP)
            else:
                gap = self.gap(doc)
                if self.rng.random() < BURST_CHANCE:
                    burst = self.rng.randint(*BURST_KEYS)
            await asyncio.sleep(gap)
            if len(self.batch) >= self.goal:
                break
            if self.rng.random() < SWITCH_CHANCE:
                doc = self.switch(doc)
            offer = doc.offer
            if (
                offer is not None
                and (offer.generation, offer.version) == (doc.generation, doc.version)
                and self.rng.random() < ACCEPT_CHANCE
            ):
                self.accept(doc, offer)
            else:
                self.press(doc)
        doc.busy = False

    def gap(self, doc: Doc) -> float:
        """Log-normal inter-key gap, with a thinking pause now and then after a line end."""
        previous = doc.trace.region[doc.position - 1] if doc.position else "\n"
        if previous == "\n" and self.rng.random() < PAUSE_AFTER_NEWLINE:
            return self.rng.uniform(*PAUSE)
        mu = math.log(MEAN_GAP) - GAP_SPREAD**2 / 2
        return self.rng.lognormvariate(mu, GAP_SPREAD)

    def switch(self, doc: Doc) -> Doc:
        """Go to another document nobody is typing in; sometimes close the one left behind."""
        self.switches += 1
        doc.busy = False
        if self.rng.random() < REOPEN_CHANCE:
            self.reopen(doc)
        chosen = self.rng.choice([other for other in self.docs if not other.busy])
        chosen.busy = True
        return chosen

    def press(self, doc: Doc) -> None:
        region = doc.trace.region
        if doc.typo is not None:
            width = utf16_length(doc.typo)
            doc.typo = None
            doc.character -= width
            self.edit(doc, doc.line, doc.character, doc.character + width, "")
        elif doc.position >= len(region):
            self.reopen(doc)
        elif region[doc.position].isalnum() and self.rng.random() < TYPO_RATE:
            doc.typo = neighbour(region[doc.position].lower(), self.rng)
            self.insert(doc, doc.typo)
        else:
            text = key_text(region, doc.position)
            doc.position += len(text)
            self.insert(doc, text)
        self.request(doc)

    def insert(self, doc: Doc, text: str) -> None:
        """Type at the cursor, which is always at the end of the document."""
        line, character = doc.line, doc.character
        lines, last = end_position(text)
        doc.line += lines
        doc.character = last if lines else character + last
        self.edit(doc, line, character, character, text)

    def edit(self, doc: Doc, line: int, start: int, end: int, text: str) -> None:
        doc.version += 1
        doc.offer = None
        self.client.text_document_did_change(_change(doc.uri, doc.version, line, start, end, text))

    def accept(self, doc: Doc, offer: Offer) -> None:
        """Tab: one edit inserting the suggestion, its command, and the next request."""
        self.accepts += 1
        doc.position += len(offer.text)
        self.insert(doc, offer.text)
        if (command := offer.item.get("command")) is not None:
            future = self.client.protocol.send_request(
                types.WORKSPACE_EXECUTE_COMMAND,
                types.ExecuteCommandParams(
                    command=command["command"], arguments=command.get("arguments")
                ),
            )
            self.track(future, partial(self.failed, self.command_errors))
        self.request(doc)

    def request(self, doc: Doc) -> None:
        batch = self.batch
        record = Request(time.monotonic())
        batch.append(record)
        try:
            msg_id = self.protocol.request_raw(
                METHOD,
                request_params(METHOD, doc.uri, doc.line, doc.character),
                partial(self.answered, record, doc, doc.generation, doc.version),
            )
        except Exception as error:
            record.outcome, record.error = "error", f"client: not sent: {error!r}"
        else:
            if self.rng.random() < CANCEL_CHANCE:
                delay = self.rng.uniform(*CANCEL_AFTER)
                self.loop.call_later(delay, self.cancel, msg_id, record)
        if self.rng.random() < FAULT_CHANCE:
            self.inject_fault()
        if len(batch) % STATS_EVERY == 0:
            self.ask_stats()
        if self.measuring and len(batch) % self.window == 0:
            self.harvested.harvest(self.upstream)
            self.samples.append(self.sample(len(batch)))

    def track(
        self,
        future: concurrent.futures.Future[Any],
        callback: Callable[[concurrent.futures.Future[Any]], object],
    ) -> None:
        """Keep the future until it is answered; the callback runs where pygls reads the
        response, so arrival times are not delayed by a turn of the event loop."""
        self.pending.add(future)
        future.add_done_callback(self.pending.discard)
        future.add_done_callback(callback)

    def cancel(self, msg_id: str, record: Request) -> None:
        if not self.protocol.waiting_for(msg_id):
            return
        record.cancel_asked = True
        self.client.cancel_request(types.CancelParams(id=msg_id))

    def answered(
        self,
        record: Request,
        doc: Doc,
        generation: int,
        version: int,
        arrived: float,
        response: dict[str, Any],
    ) -> None:
        """Runs where the response is parsed, so arrival times are not delayed by a turn of the
        event loop; an answer this script cannot read is the request's error, not a log line."""
        record.arrived = arrived
        try:
            self.read(record, doc, generation, version, response)
        except Exception as error:
            record.outcome, record.error = "error", f"client: unreadable answer: {error!r}"

    def read(
        self, record: Request, doc: Doc, generation: int, version: int, response: dict[str, Any]
    ) -> None:
        if (error := response.get("error")) is not None:
            cancelled = error["code"] == JsonRpcRequestCancelled.CODE
            if cancelled and record.cancel_asked:
                record.outcome = "cancelled"
                return
            record.outcome = "error"
            record.error = (
                "RequestCancelled without a $/cancelRequest"
                if cancelled
                else f"server: {error['code']} {error['message']}"
            )
            return
        if "result" not in response:
            raise ValueError(f"a response with neither result nor error: {response!r}")
        record.outcome = "served"
        item = first_item(response["result"])
        if item is None:
            return
        text = item_text(item)
        record.text = bool(text)
        cursor = {"line": doc.line, "character": doc.character}
        span = item.get("range")
        if (
            text
            and (generation, version) == (doc.generation, doc.version)
            and doc.typo is None
            and doc.trace.region.startswith(text, doc.position)
            and (span is None or span["start"] == span["end"] == cursor)
        ):
            doc.offer = Offer(item, text, generation, version)

    def failed(self, sink: list[str], future: concurrent.futures.Future[Any]) -> None:
        if future.cancelled():
            sink.append("cancelled")
        elif (error := future.exception()) is not None:
            sink.append(repr(error))

    def ask_stats(self) -> None:
        self.stats_sent += 1
        future = self.client.protocol.send_request("lspSpark/stats", None)
        self.track(future, partial(self.failed, self.stats_errors))

    def inject_fault(self) -> None:
        """A 500, or a stream that resets or stalls after a few tokens."""
        tokens = self.rng.randint(0, 3)
        fault = self.rng.choice(
            [Fault.server_error(), Fault.reset_after(tokens), Fault.stall_after(tokens)]
        )
        self.faults[fault.kind.value] += 1
        self.upstream.config.queue_faults(fault)

    def sample(self, requests: int) -> Sample:
        status = proc_status(self.pid)
        listed = [r for r in list(self.upstream.requests) if r.path.endswith("completions")]
        return Sample(
            requests,
            sum(1 for r in self.requests if r.outcome in ANSWERED),
            time.monotonic() - self.started,
            resident_mib(self.pid),
            count_fds(self.pid),
            int(status["Threads"]) if "Threads" in status else None,
            open_sockets(self.pid, self.upstream.port)["serverTcp"],
            self.harvested.completions + len(listed),
            sum(1 for r in listed if r.completed_at is None),
        )

    async def settle(self, timeout: float) -> None:
        """Wait (bounded) for the answers still on their way."""
        deadline = time.monotonic() + timeout
        while (self.pending or self.protocol.waiting) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)


def proc_status(pid: int) -> dict[str, str]:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)


def count_fds(pid: int) -> int | None:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def socket_inodes(pid: int) -> set[int]:
    """Inodes of the sockets a process holds: its fds that link to `socket:[inode]`."""
    found: set[int] = set()
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return found
    for name in names:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            continue
        if target.startswith("socket:["):
            found.add(int(target[8:-1]))
    return found


@dataclass(frozen=True, slots=True)
class TcpSocket:
    local_port: int
    remote_port: int
    state: str
    inode: int


def tcp_sockets() -> list[TcpSocket]:
    """TCP sockets of this network namespace, IPv4 and IPv6."""
    found: list[TcpSocket] = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, remote, state, inode = fields[1], fields[2], fields[3], int(fields[9])
            found.append(TcpSocket(port_of(local), port_of(remote), state, inode))
    return found


def port_of(address: str) -> int:
    return int(address.rsplit(":", 1)[1], 16)


def unix_inodes() -> set[int]:
    """Inodes of this namespace's Unix sockets (asyncio's self-pipe is a pair of them)."""
    lines = Path("/proc/net/unix").read_text().splitlines()[1:]
    return {int(fields[6]) for line in lines if len(fields := line.split()) > 6}


def open_sockets(pid: int, port: int) -> dict[str, int]:
    """Sockets the server holds (TCP, of them to the loopback server, Unix), and connections
    the loopback server still has open on its side."""
    held = socket_inodes(pid)
    table = tcp_sockets()
    tcp = {s.inode for s in table} & held
    unix = unix_inodes()
    return {
        "serverTcp": len(tcp),
        "serverToUpstream": sum(1 for s in table if s.inode in tcp and s.remote_port == port),
        "serverUnix": len(held & unix),
        "serverOther": len(held - tcp - unix),
        "upstreamSide": sum(
            1 for s in table if s.local_port == port and s.state not in ("0A", "06")
        ),
    }


def tcp_states(pid: int) -> dict[str, int]:
    """The server's TCP sockets by state: an idle keep-alive connection is ESTABLISHED, one
    the peer has closed but the server has not is CLOSE_WAIT."""
    held = socket_inodes(pid)
    states = Counter(TCP_STATES.get(s.state, s.state) for s in tcp_sockets() if s.inode in held)
    return dict(states)


async def sockets_closed(pid: int, port: int) -> dict[str, int]:
    """Sockets still open once they have had CLOSE_WAIT seconds to close."""
    deadline = time.monotonic() + CLOSE_WAIT
    while connected(found := open_sockets(pid, port)) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return found


def connected(sockets: dict[str, int]) -> int:
    """TCP connections open at either end."""
    return sockets["serverTcp"] + sockets["upstreamSide"]


class MultiOracle:
    """The test server's model for all documents: the real continuation in whichever file
    the prompt comes from."""

    def __init__(self, traces: list[Trace]) -> None:
        self.oracles = [Oracle(trace) for trace in traces]

    def reply(self, body: dict[str, Any]) -> str:
        for oracle in self.oracles:
            if text := oracle.reply(body):
                return text
        return ""


async def soak(requests: int, window: int, warmup: int) -> dict[str, Any]:
    """One server process and one test server for the whole run; both always stopped."""
    rng = random.Random(SEED)
    traces = [pick_trace(module, TRACE_CHARS, rng) for module in MODULES]
    upstream = CerebrasTestServer(
        ttft=TTFT,
        tokens_per_second=TOKENS_PER_SECOND,
        reply_fn=MultiOracle(traces).reply,
        api_key=API_KEY,
    )
    budget = (warmup + requests) / MIN_RATE + 2 * PHASE_FLOOR
    result: dict[str, Any] = {}
    await asyncio.to_thread(upstream.start)
    try:
        with tempfile.TemporaryDirectory(prefix="lsp-spark-soak-") as config_home:
            environment = isolated_environment(config_home)
            folder = Path(config_home)
            docs = [Doc(trace, (folder / f"{trace.module}.py").as_uri()) for trace in traces]
            options = {
                "backend": "cerebras",
                "apiKey": API_KEY,
                "baseUrl": upstream.base_url,
                "requestTimeoutMs": REQUEST_TIMEOUT_MS,
            }
            await asyncio.wait_for(
                drive(result, upstream, docs, options, environment, requests, window, warmup),
                budget + END_MARGIN,
            )
    except Exception as error:
        result["failure"] = f"{type(error).__name__}: {error}"
    finally:
        await asyncio.to_thread(upstream.stop)
        harvested: Upstream = result.get("harvested") or Upstream()
        harvested.harvest(upstream, everything=True)
        start: Sample | None = result.get("start")
        result["upstream"] = {
            "completions": harvested.completions,
            "completionsAfterWarmup": harvested.completions - start.upstream if start else None,
            "statuses": dict(harvested.statuses),
            "faultsHit": dict(harvested.faults),
            "closedByServer": harvested.hung_up,
            "tokensSent": harvested.tokens,
            "connectionsAccepted": upstream.connections_accepted,
            "testServerErrors": [repr(error) for error in upstream.errors],
        }
    return result


async def drive(
    result: dict[str, Any],
    upstream: CerebrasTestServer,
    docs: list[Doc],
    options: dict[str, Any],
    environment: dict[str, str],
    requests: int,
    window: int,
    warmup: int,
) -> None:
    """Start the server, warm it up, soak it, look at what it holds, stop it."""
    client = SoakClient()
    messages: Counter[str] = Counter()

    @client.feature(types.WINDOW_SHOW_MESSAGE)
    def show_message(params: types.ShowMessageParams) -> None:
        messages[params.message] += 1

    await client.start_io(sys.executable, "-m", "lsp_spark", "serve", env=environment)
    stderr: list[bytes] = []
    drain = asyncio.create_task(_drain(client, stderr))
    process = client._server
    assert process is not None
    port = upstream.port
    try:
        await initialize(client, options)
        await asyncio.sleep(WARM_WAIT)
        run = Soak(client, process.pid, upstream, docs, window)
        result["harvested"] = run.harvested
        result["soak"] = run
        for doc in docs:
            run.open(doc)
        await run.run(warmup)
        await run.settle(REQUEST_TIMEOUT)
        await asyncio.sleep(FINAL_IDLE)
        run.measuring = True
        run.started = time.monotonic()
        result["start"] = run.start_sample = run.sample(0)
        result["socketsStart"] = open_sockets(process.pid, port)
        result["statsStart"] = await ask_stats(client)
        await run.run(requests)
        result["typingSeconds"] = time.monotonic() - run.started
        await run.settle(REQUEST_TIMEOUT)
        result["otherUnanswered"] = len(run.pending)
        await asyncio.sleep(FINAL_IDLE)
        result["end"] = run.sample(len(run.requests))
        result["socketsIdle"] = open_sockets(process.pid, port)
        result["tcpStatesIdle"] = tcp_states(process.pid)
        result["stats"] = await ask_stats(client)
        await asyncio.wait_for(client.shutdown_async(None), SHUTDOWN_TIMEOUT)
        result["socketsAfterShutdown"] = await sockets_closed(process.pid, port)
        result["threadsAfterShutdown"] = proc_status(process.pid).get("Threads")
        client.exit(None)
        await asyncio.wait_for(process.wait(), SHUTDOWN_TIMEOUT)
        result["exitCode"] = process.returncode
    finally:
        result["messages"] = dict(messages)
        result["clientErrors"] = client.errors
        result["stderr"] = stderr
        drain.cancel()
        if process.returncode is None:
            process.kill()
        await client.stop()


async def ask_stats(client: LanguageClient) -> dict[str, Any]:
    request = client.protocol.send_request_async("lspSpark/stats", None)
    return plain(await asyncio.wait_for(request, REQUEST_TIMEOUT))


def rise(start: dict[str, Any], end: dict[str, Any], key: str) -> int | None:
    """How much a server-reported count rose between warm-up and the end; None if the server
    does not report it."""
    if not isinstance(end.get(key), int):
        return None
    return end[key] - start.get(key, 0)


def window_rows(run: Soak, samples: list[Sample]) -> list[dict[str, Any]]:
    """Per window of requests: how they went, and the server's memory when it ended."""
    rows = []
    previous = run.start_sample
    for index, sample in enumerate(samples):
        part = run.requests[index * run.window : (index + 1) * run.window]
        served = [r.latency_ms for r in part if r.outcome == "served" and r.latency_ms is not None]
        rows.append(
            {
                "requests": sample.requests,
                "seconds": round(sample.seconds, 1),
                "answered": sum(1 for r in part if r.outcome in ANSWERED),
                "served": len(served),
                "cancelled": sum(1 for r in part if r.outcome == "cancelled"),
                "errors": sum(1 for r in part if r.outcome == "error"),
                "withText": sum(1 for r in part if r.text),
                "upstream": sample.upstream - previous.upstream if previous else None,
                "streaming": sample.streaming,
                "p50Ms": rounded(percentile(served, 0.5)),
                "p95Ms": rounded(percentile(served, 0.95)),
                "rssMiB": rounded(sample.rss_mib),
                "fds": sample.fds,
                "tcp": sample.tcp,
            }
        )
        previous = sample
    return rows


def rounded(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


def log_levels(stderr: list[bytes]) -> Counter[str]:
    """Lines the server logged, by level (its format is `time name LEVEL message`)."""
    levels: Counter[str] = Counter()
    for raw in stderr:
        words = raw.decode(errors="replace").split()
        if "Traceback" in words[:1]:
            levels["traceback"] += 1
        for level in ("ERROR", "CRITICAL", "WARNING"):
            if level in words[:4]:
                levels[level.lower()] += 1
    return levels


def summarise(result: dict[str, Any], seconds: float) -> dict[str, Any]:
    run: Soak | None = result.get("soak")
    warmup = run.warmup if run else []
    requests = run.requests if run else []
    served = [r.latency_ms for r in requests if r.outcome == "served" and r.latency_ms is not None]
    timeouts = sum(
        1 for r in requests if r.arrived is None or (r.latency_ms or 0) > REQUEST_TIMEOUT * 1000
    )
    errors = [
        *(r.error or "" for r in (*warmup, *requests) if r.outcome == "error"),
        *result.get("clientErrors", []),
        *(f"accept command: {error}" for error in (run.command_errors if run else [])),
        *(f"lspSpark/stats: {error}" for error in (run.stats_errors if run else [])),
    ]
    answered = sum(1 for r in requests if r.outcome in ANSWERED)
    windows = window_rows(run, run.samples) if run else []
    start: Sample | None = result.get("start")
    end: Sample | None = result.get("end")
    samples = [*(run.samples if run else []), *([end] if end else [])]
    growth = (
        end.rss_mib - start.rss_mib
        if start and end and start.rss_mib is not None and end.rss_mib is not None
        else None
    )
    trend = [(s.answered, s.rss_mib) for s in samples if s.rss_mib is not None]
    slope = (
        statistics.linear_regression([x for x, _ in trend], [y for _, y in trend]).slope * 1000
        if len(trend) >= 3 and len({x for x, _ in trend}) > 1
        else None
    )
    stats: dict[str, Any] = result.get("stats") or {}
    stats_start: dict[str, Any] = result.get("statsStart") or {}
    begun = result.get("socketsStart") or {}
    idle = result.get("socketsIdle") or {}
    closed = result.get("socketsAfterShutdown") or {}
    local = ("serverUnix", "serverOther")
    extra = sum(closed.get(key, 0) - begun.get(key, 0) for key in local)
    levels = log_levels(result.get("stderr") or [])
    first_p95 = windows[0]["p95Ms"] if windows else None
    last_p95 = windows[-1]["p95Ms"] if windows else None
    return {
        "warmupSent": len(warmup),
        "warmupAnswered": sum(1 for r in warmup if r.outcome in ANSWERED),
        "sent": len(requests),
        "answered": answered,
        "notAnswered": len(requests) - answered,
        "served": sum(1 for r in requests if r.outcome == "served"),
        "withText": sum(1 for r in requests if r.text),
        "cancelAsked": sum(1 for r in requests if r.cancel_asked),
        "cancelled": sum(1 for r in requests if r.outcome == "cancelled"),
        "errors": len(errors),
        "errorKinds": dict(Counter(errors)),
        "clientErrors": len(result.get("clientErrors", [])),
        "timeouts": timeouts,
        "otherUnanswered": result.get("otherUnanswered"),
        "p50Ms": rounded(percentile(served, 0.5)),
        "p95Ms": rounded(percentile(served, 0.95)),
        "maxMs": rounded(max(served, default=None)),
        "p95DriftRatio": rounded(last_p95 / first_p95, 2) if first_p95 and last_p95 else None,
        "accepts": run.accepts if run else 0,
        "commandErrors": len(run.command_errors) if run else 0,
        "statsSent": run.stats_sent if run else 0,
        "statsErrors": len(run.stats_errors) if run else 0,
        "switches": run.switches if run else 0,
        "reopens": run.reopens if run else 0,
        "faultsQueued": dict(run.faults) if run else {},
        "streamsOpenIdle": end.streaming if end else None,
        "rssStartMiB": rounded(start.rss_mib) if start else None,
        "rssEndMiB": rounded(end.rss_mib) if end else None,
        "rssGrowthMiB": rounded(growth),
        "rssSlopeMiBPer1000": rounded(slope, 2),
        "fdsStart": start.fds if start else None,
        "fdsEnd": end.fds if end else None,
        "threadsStart": start.threads if start else None,
        "threadsEnd": end.threads if end else None,
        "tcpIdle": idle.get("serverTcp"),
        "tcpIdleUpstream": idle.get("serverToUpstream"),
        "tcpLeft": closed.get("serverTcp"),
        "upstreamSideLeft": closed.get("upstreamSide"),
        "localSocketsStart": sum(begun.get(key, 0) for key in local) if begun else None,
        "localSocketsLeft": sum(closed.get(key, 0) for key in local) if closed else None,
        "socketsLeft": closed.get("serverTcp", 0) + max(extra, 0) if closed else None,
        "threadsAfterShutdown": result.get("threadsAfterShutdown"),
        "openTasksStart": stats_start.get("openTasks"),
        "openTasksEnd": stats.get("openTasks"),
        "tasksLeft": rise(stats_start, stats, "openTasks"),
        "pendingRequestsLeft": rise(stats_start, stats, "pendingRequests"),
        "openConnections": stats.get("openConnections"),
        "activeConnections": stats.get("activeConnections"),
        "silentWindows": sum(1 for row in windows if not row["withText"]),
        "serverErrorsLogged": levels["error"] + levels["critical"] + levels["traceback"],
        "serverWarningsLogged": levels["warning"],
        "typingSeconds": rounded(result.get("typingSeconds")),
        "requestsPerSecond": rounded(len(requests) / result["typingSeconds"])
        if result.get("typingSeconds")
        else None,
        "seconds": round(seconds, 1),
        "truncated": run.truncated if run else False,
        "failure": result.get("failure"),
        "exitCode": result.get("exitCode"),
        "windows": windows,
    }


def shortfalls(summary: dict[str, Any], requested: int) -> list[str]:
    """Why the figures do not describe a server under load, if they do not: the soak measured
    only if every completion request (warm-up included) got a result, or RequestCancelled for
    one it cancelled itself; every accept command and `lspSpark/stats` request got its result;
    nothing failed on the client's side; and the run was whole."""
    found = [f"the run failed: {summary['failure']}"] if summary["failure"] else []
    for phase, sent, answered in (
        ("warm-up", summary["warmupSent"], summary["warmupAnswered"]),
        ("soak", summary["sent"], summary["answered"]),
    ):
        if sent == 0:
            found.append(f"{phase}: no completion request was sent")
        elif answered < sent:
            found.append(
                f"{phase}: {answered:,} of {sent:,} completion requests answered "
                "(a result, or RequestCancelled for one the soak cancelled)"
            )
    if summary["errors"]:
        kinds = sorted(summary["errorKinds"].items(), key=lambda kind: -kind[1])
        found.append(
            f"{summary['errors']:,} errors, client side included, most often "
            f"x{kinds[0][1]}: {kinds[0][0]}"
        )
    if summary["otherUnanswered"]:
        found.append(f"{summary['otherUnanswered']} accept commands or stats requests unanswered")
    if summary["truncated"]:
        found.append(
            f"stopped at the time limit after {summary['sent']:,} of {requested:,} requests"
        )
    if summary["exitCode"] not in (0, None):
        found.append(f"the server exited with code {summary['exitCode']}")
    return found


ROWS: list[tuple[str, str, str, Any]] = [
    ("completion requests sent", "sent", "", None),
    ("  answered (result or our cancel) / not", "notAnswered", "… / 0", lambda v: v == 0),
    ("  served (answered with a result)", "served", "", None),
    ("  with ghost text", "withText", "", None),
    ("  $/cancelRequest sent / answered cancelled", "cancelAsked", "", None),
    ("  errors, client side included", "errors", "0", lambda v: v == 0),
    ("  timeouts (no answer in 10 s)", "timeouts", "0", lambda v: v == 0),
    ("latency p50 / p95 / max, served (ms)", "p50Ms", "", None),
    ("  p95 last window / first window", "p95DriftRatio", "", None),
    ("windows without any ghost text", "silentWindows", "0", lambda v: v == 0),
    ("accepts / accept commands failed", "accepts", "", None),
    ("lspSpark/stats requests / failed", "statsSent", "", None),
    ("document switches / close+reopen", "switches", "", None),
    ("faults queued (500 / reset / stall)", "faultsQueued", "", None),
    ("server RSS after warm-up (MiB)", "rssStartMiB", "", None),
    ("server RSS at the end, after 2 s idle (MiB)", "rssEndMiB", "", None),
    ("  growth (MiB)", "rssGrowthMiB", "< 10", lambda v: v < TARGET_GROWTH_MIB),
    ("  trend over the windows (MiB / 1,000 req)", "rssSlopeMiBPer1000", "", None),
    ("open fds after warm-up / at the end", "fdsStart", "", None),
    ("threads after warm-up / at the end", "threadsStart", "", None),
    (
        "TCP sockets held idle / of them to upstream",
        "tcpIdle",
        f"≤ {POOL_CONNECTIONS}",
        lambda v: v <= POOL_CONNECTIONS,
    ),
    ("upstream streams still open at idle", "streamsOpenIdle", "0", lambda v: v == 0),
    ("sockets left after shutdown", "socketsLeft", "0", lambda v: v == 0),
    ("  TCP, server side / loopback side", "tcpLeft", "", None),
    ("  Unix: after warm-up / after shutdown", "localSocketsStart", "", None),
    ("asyncio tasks left open (server-reported)", "tasksLeft", "0", lambda v: v == 0),
    ("  after warm-up / at the end", "openTasksStart", "", None),
    ("request bookkeeping left (server-reported)", "pendingRequestsLeft", "0", lambda v: v == 0),
    ("pool connections open / active at idle", "openConnections", "", None),
    ("server log: errors / warnings", "serverErrorsLogged", "0", lambda v: v == 0),
    ("typing time (s) / requests per second", "typingSeconds", "", None),
]
ALWAYS_JUDGED = ("notAnswered", "errors", "timeouts")
"""Rows about the requests themselves; every other target is judged only if the soak measured."""
JOINED = {
    "notAnswered": ("answered", "notAnswered"),
    "cancelAsked": ("cancelAsked", "cancelled"),
    "p50Ms": ("p50Ms", "p95Ms", "maxMs"),
    "accepts": ("accepts", "commandErrors"),
    "statsSent": ("statsSent", "statsErrors"),
    "switches": ("switches", "reopens"),
    "fdsStart": ("fdsStart", "fdsEnd"),
    "threadsStart": ("threadsStart", "threadsEnd"),
    "tcpIdle": ("tcpIdle", "tcpIdleUpstream"),
    "openTasksStart": ("openTasksStart", "openTasksEnd"),
    "openConnections": ("openConnections", "activeConnections"),
    "tcpLeft": ("tcpLeft", "upstreamSideLeft"),
    "localSocketsStart": ("localSocketsStart", "localSocketsLeft"),
    "serverErrorsLogged": ("serverErrorsLogged", "serverWarningsLogged"),
    "typingSeconds": ("typingSeconds", "requestsPerSecond"),
}


COLUMNS = [
    ("requests", "requests", 8),
    ("seconds", "s", 6),
    ("answered", "answered", 8),
    ("served", "served", 6),
    ("cancelled", "cancel", 6),
    ("errors", "errors", 6),
    ("withText", "text", 5),
    ("upstream", "upstream", 8),
    ("streaming", "open", 4),
    ("p50Ms", "p50 ms", 7),
    ("p95Ms", "p95 ms", 7),
    ("rssMiB", "RSS MiB", 7),
    ("fds", "fds", 3),
    ("tcp", "tcp", 3),
]
"""Per window: requests answered, served, cancelled, failed and answered with ghost text,
upstream completions started, upstream streams still open at the window's end, and the
server's memory, fds and TCP sockets."""


def shown(summary: dict[str, Any], key: str) -> str:
    return " / ".join(single(summary, part) for part in JOINED.get(key, (key,)))


def single(summary: dict[str, Any], key: str) -> str:
    value = summary.get(key)
    if value is None:
        return "–"
    if key == "faultsQueued":
        kinds = ("server_error", "reset_after", "stall_after")
        return " / ".join(str(value.get(kind, 0)) for kind in kinds)
    return str(value)


def table(summary: dict[str, Any], measured: bool) -> str:
    """The figures beside their targets; unless the soak `measured`, only the rows about the
    requests themselves are judged, the rest say n/a."""
    lines = [f"{'':46} {'measured':>20}  {'target':<6} met"]
    for label, key, target, check in ROWS:
        value = summary.get(key)
        met = "" if check is None or value is None else ("yes" if check(value) else "NO")
        if met and not measured and key not in ALWAYS_JUDGED:
            met = "n/a"
        lines.append(f"{label:46} {shown(summary, key):>20}  {target:<6} {met}")
    lines.append("")
    lines.append(" ".join(f"{title:>{width}}" for _, title, width in COLUMNS))
    for row in summary["windows"]:
        cells = ("–" if row[key] is None else row[key] for key, _, _ in COLUMNS)
        widths = (width for _, _, width in COLUMNS)
        lines.append(
            " ".join(f"{cell:>{width}}" for cell, width in zip(cells, widths, strict=True))
        )
    return "\n".join(lines)


def notes(summary: dict[str, Any], result: dict[str, Any]) -> list[str]:
    """Failures, messages shown and error kinds, in full (the exit status sums them up)."""
    found = [f"failure: {summary['failure']}"] if summary["failure"] else []
    if summary["truncated"]:
        found.append(f"stopped at the time limit ({MIN_RATE:g} requests/s): truncated")
    found += [f"error x{count}: {kind}" for kind, count in summary["errorKinds"].items()]
    found += [f"server said x{count}: {text}" for text, count in result.get("messages", {}).items()]
    found += [f"test server error: {error}" for error in result["upstream"]["testServerErrors"]]
    warned = Counter(
        re.sub(r'"[^"]*"', '"…"', line.split(" WARNING ", 1)[1])
        for line in (raw.decode(errors="replace").rstrip() for raw in result.get("stderr", []))
        if " WARNING " in line
    )
    found += [f"server warned x{count}: {text}" for text, count in warned.items()]
    missing = [
        key
        for key in ("openTasks", "pendingRequests", "openConnections", "activeConnections")
        if key not in (result.get("stats") or {})
    ]
    if missing:
        found.append(f"lspSpark/stats does not report {', '.join(missing)}: those rows show –")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--requests", type=int, help=f"completion requests (default {FULL_REQUESTS:,})"
    )
    scales = parser.add_mutually_exclusive_group()
    scales.add_argument(
        "--quick", action="store_true", help=f"{QUICK_REQUESTS:,} requests, about a minute"
    )
    scales.add_argument(
        "--tiny",
        action="store_true",
        help=f"a warm-up of {TINY_WARMUP} and {TINY_REQUESTS} requests: checks, not figures",
    )
    parser.add_argument("--output", type=Path, default=RESULTS, help="where the JSON goes")
    arguments = parser.parse_args()
    default = TINY_REQUESTS if arguments.tiny else QUICK_REQUESTS if arguments.quick else None
    requests = arguments.requests or default or FULL_REQUESTS
    warmup = TINY_WARMUP if arguments.tiny else WARMUP
    window = min(WINDOW, max(requests // 10, 1))
    sys.setswitchinterval(SWITCH_INTERVAL)
    started = time.perf_counter()
    result = asyncio.run(soak(requests, window, warmup))
    seconds = time.perf_counter() - started
    summary = summarise(result, seconds)
    missed = shortfalls(summary, requests)
    found = notes(summary, result)
    logged = [line.decode(errors="replace").rstrip() for line in result.get("stderr", [])]
    report = {
        "python": sys.version.split()[0],
        "requests": requests,
        "window": window,
        "warmup": warmup,
        "seed": SEED,
        "settings": {
            "typists": TYPISTS,
            "ttftSeconds": TTFT,
            "tokensPerSecond": TOKENS_PER_SECOND,
            "requestTimeoutMs": REQUEST_TIMEOUT_MS,
            "cancelChance": CANCEL_CHANCE,
            "faultChance": FAULT_CHANCE,
        },
        "measured": not missed,
        "shortfalls": missed,
        "summary": summary,
        "upstream": result["upstream"],
        "serverStatsStart": result.get("statsStart"),
        "serverStats": result.get("stats"),
        "socketsStart": result.get("socketsStart"),
        "socketsIdle": result.get("socketsIdle"),
        "tcpStatesIdle": result.get("tcpStatesIdle"),
        "socketsAfterShutdown": result.get("socketsAfterShutdown"),
        "notes": found,
        "serverLogTail": [line for line in logged if " WARNING " in line or " ERROR " in line][
            -20:
        ],
        "stderrTail": logged[-20:] if summary["failure"] else [],
    }
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    arguments.output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(table(summary, measured=not missed))
    for note in found:
        print(f"note: {note}")
    print(f"\n{seconds:.0f} s in all; wrote {arguments.output}")
    for reason in missed:
        print(f"soak: not measuring: {reason}", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
