"""Keystroke to ghost text in Neovim: how long a person waits, measured inside the editor.

Run: `python benchmarks/editor_neovim.py [--tiny] [--output PATH]` (prints a table, writes
benchmarks/results/editor_neovim.json, or PATH). Each Neovim found here (Debian's, and
0.11 from the dev extra) runs headless with editors/nvim set up as its README shows, the
real server over stdio with its default settings, and the loopback Cerebras server at a
realistic pace (TTFT 0.1 s, 1,000 tokens/s). A typist types an identifier one key at a time
in insert mode through `nvim_input`; the model always suggests ` = ...` after it, so no
keystroke types what is shown and every one waits for a fresh answer. Neovim itself takes
the times (`vim.loop.hrtime`): when the key is handed to `nvim_input`, and when the
plugin's `User LspSparkGhostText` event finds the extmark drawn. `--tiny` types 5 keys per
Neovim: a check that ghost text still appears, whose figures mean nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pynvim  # noqa: E402
from timing import add_size_options  # noqa: E402

from lsp_spark.testing import editor_environment  # noqa: E402
from lsp_spark.testing.cerebras_server import CerebrasTestServer  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "editor_neovim.json"
PLUGIN = ROOT / "editors" / "nvim"
API_KEY = "editor-benchmark-key"
TTFT = 0.1
TOKENS_PER_SECOND = 1000.0
TARGET_P50_MS = 200.0
KEYSTROKES = 40
TINY_KEYSTROKES = 5
TYPED = "total_price_of_the_items_in_the_basket_after_all_discounts_and_taxes"
"""Letters and underscores only, so no key ever types the ` = ...` the model suggests."""
SUGGESTION = " = compute_total(items, discounts) + shipping_cost(order, address)"
FILE_HEAD = "def checkout(items, discounts, order, address):\n    "
START_TIMEOUT = 30.0
GHOST_TIMEOUT = 10.0
"""Past this a keystroke's ghost text counts as never shown."""
POLL_INTERVAL = 0.005
SWITCH_INTERVAL = 0.001
"""The loopback server is a thread of this process: a short GIL switch interval keeps this
process's polling from holding up its answers."""

# In Neovim: `type(key)` notes the time and hands the key to nvim_input; the plugin's event
# after it draws ghost text notes the time again when the extmark is there.
PROBE = """
local ghost = require("lsp_spark.ghost")
local probe = { latencies = {} }
_G.editor_benchmark = probe
function probe.type(key)
  probe.typed_at = vim.loop.hrtime()
  vim.api.nvim_input(key)
end
vim.api.nvim_create_autocmd("User", {
  pattern = ghost.SHOWN_EVENT,
  callback = function()
    local marks = vim.api.nvim_buf_get_extmarks(0, ghost.namespace, 0, -1, {})
    if probe.typed_at and #marks > 0 then
      table.insert(probe.latencies, (vim.loop.hrtime() - probe.typed_at) / 1e6)
      probe.typed_at = nil
    end
  end,
})
"""


GHOST_DRAWN = """
local ghost = require("lsp_spark.ghost")
return #vim.api.nvim_buf_get_extmarks(0, ghost.namespace, 0, -1, {}) > 0
"""


@dataclass
class Run:
    """One Neovim's keystrokes."""

    neovim: str
    version: str
    keystrokes: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    missed: int = 0
    """Keystrokes whose ghost text did not appear within GHOST_TIMEOUT."""

    def summary(self) -> dict[str, Any]:
        samples = sorted(self.latencies_ms)
        return {
            "neovim": self.neovim,
            "version": self.version,
            "keystrokes": self.keystrokes,
            "shown": len(samples),
            "missed": self.missed,
            "p50Ms": samples[len(samples) // 2] if samples else None,
            "p95Ms": samples[len(samples) * 95 // 100] if samples else None,
            "meanMs": statistics.fmean(samples) if samples else None,
            "samplesMs": self.latencies_ms,
        }


def neovims() -> dict[str, str]:
    """The Neovims here: Debian's (or whichever is on PATH) and the dev extra's."""
    bundled = Path(sys.prefix) / "bin" / "nvim"
    path = os.pathsep.join(
        entry
        for entry in os.environ.get("PATH", "").split(os.pathsep)
        if Path(entry) != bundled.parent
    )
    found = {}
    if (system := shutil.which("nvim", path=path)) is not None:
        found["system"] = system
    if os.access(bundled, os.X_OK):
        found["dev extra"] = str(bundled)
    return found


def version_of(binary: str) -> str:
    first_line = subprocess.run(
        [binary, "--version"], capture_output=True, text=True, timeout=30, check=True
    ).stdout.split("\n", 1)[0]
    return first_line.removeprefix("NVIM v")


def poll(read: Callable[[], Any], timeout: float) -> bool:
    """Whether `read()` turned true within `timeout` (a bounded count of looks)."""
    deadline = time.monotonic() + timeout
    for _ in range(int(timeout / POLL_INTERVAL) + 1):
        if read():
            return True
        if time.monotonic() >= deadline:
            break
        time.sleep(POLL_INTERVAL)
    return bool(read())


def environment(home: Path, base_url: str) -> dict[str, str]:
    """No user settings; the loopback server; the server's own defaults otherwise."""
    return editor_environment(home, base_url, API_KEY)


@contextmanager
def neovim_session(binary: str, folder: Path, base_url: str) -> Iterator[pynvim.Nvim]:
    """Neovim editing a Python file, lsp-spark attached, the probe installed."""
    file = folder / "project" / "checkout.py"
    file.parent.mkdir(parents=True)
    file.write_text(FILE_HEAD + "\n")
    init = folder / "init.lua"
    setup = {"cmd": [sys.executable, "-m", "lsp_spark", "serve"]}
    init.write_text(
        "vim.g.loaded_python3_provider = 0\n"
        f"vim.opt.runtimepath:append([==[{PLUGIN}]==])\n"
        f"require('lsp_spark').setup(vim.fn.json_decode([==[{json.dumps(setup)}]==]))\n"
    )
    socket_dir = Path(tempfile.mkdtemp(prefix="nvim-"))
    socket = socket_dir / "socket"
    process = subprocess.Popen(
        [binary, "--headless", "--clean", "--listen", str(socket), "-u", str(init), str(file)],
        env=environment(folder / "home", base_url) | {"NVIM_LOG_FILE": str(folder / "nvim.log")},
        cwd=file.parent,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    nvim = None

    def connect() -> bool:
        # The socket's file appears a moment before Neovim takes connections on it.
        nonlocal nvim
        try:
            nvim = pynvim.attach("socket", path=str(socket)) if socket.exists() else None
        except ConnectionRefusedError:
            nvim = None
        return nvim is not None

    try:
        if not poll(connect, START_TIMEOUT) or nvim is None:
            raise RuntimeError(f"{binary} did not listen on {socket}")
        if not poll(
            lambda: nvim.exec_lua("return require('lsp_spark').client(0) ~= nil"), START_TIMEOUT
        ):
            raise RuntimeError("lsp-spark did not attach")
        nvim.exec_lua(PROBE)
        yield nvim
    finally:
        if nvim is not None:
            nvim.command("qa!", async_=True)
            nvim.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        shutil.rmtree(socket_dir, ignore_errors=True)


def suggest_after_the_identifier(body: dict[str, Any]) -> str:
    """The model: whatever is typed of the identifier, it suggests an assignment to it."""
    return SUGGESTION if "def checkout(" in body["messages"][-1]["content"] else ""


def measure(name: str, binary: str, keystrokes: int, folder: Path) -> Run:
    run = Run(name, version_of(binary))
    upstream = CerebrasTestServer(
        api_key=API_KEY,
        ttft=TTFT,
        tokens_per_second=TOKENS_PER_SECOND,
        reply_fn=suggest_after_the_identifier,
    )
    with upstream, neovim_session(binary, folder, upstream.base_url) as nvim:

        def shown() -> int:
            return int(nvim.exec_lua("return #editor_benchmark.latencies"))

        nvim.input("2GA")
        # The first suggestion (on entering insert mode) warms the path: not a sample.
        poll(lambda: nvim.exec_lua(GHOST_DRAWN), GHOST_TIMEOUT)
        for key in TYPED[:keystrokes]:
            before = shown()
            nvim.exec_lua("editor_benchmark.type(...)", key)
            run.keystrokes += 1
            if not poll(lambda before=before: shown() > before, GHOST_TIMEOUT):
                run.missed += 1
                nvim.exec_lua("editor_benchmark.typed_at = nil")
        run.latencies_ms = list(nvim.exec_lua("return editor_benchmark.latencies"))
    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    add_size_options(
        parser, RESULTS, f"{TINY_KEYSTROKES} keystrokes per Neovim: checks, not figures"
    )
    arguments = parser.parse_args()
    sys.setswitchinterval(SWITCH_INTERVAL)
    found = neovims()
    if not found:
        print("no Neovim here: install Debian's neovim or the dev extra", file=sys.stderr)
        return 1
    keystrokes = TINY_KEYSTROKES if arguments.tiny else KEYSTROKES
    runs = []
    with tempfile.TemporaryDirectory(prefix="editor-neovim-") as scratch:
        for index, (name, binary) in enumerate(found.items()):
            runs.append(measure(name, binary, keystrokes, Path(scratch) / str(index)))
    summaries = [run.summary() for run in runs]

    print(
        f"keystroke -> ghost text drawn (extmark), TTFT {TTFT * 1000:.0f} ms, "
        f"{TOKENS_PER_SECOND:,.0f} tokens/s, target p50 < {TARGET_P50_MS:.0f} ms"
    )
    print(f"{'Neovim':<20} {'keys':>5} {'shown':>6} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8}")
    for row in summaries:
        figures = " ".join(
            f"{row[key]:>8.1f}" if row[key] is not None else f"{'-':>8}"
            for key in ("p50Ms", "p95Ms", "meanMs")
        )
        label = f"{row['version']} ({row['neovim']})"
        print(f"{label:<20} {row['keystrokes']:>5} {row['shown']:>6} {figures}")
    report = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "ttftSeconds": TTFT,
        "tokensPerSecond": TOKENS_PER_SECOND,
        "targetP50Ms": TARGET_P50_MS,
        "keystrokesPerNeovim": keystrokes,
        "runs": summaries,
    }
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    arguments.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {arguments.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
