"""The replay runs peers' language servers under `loopback_only.js`: whatever they try,
nothing of a benchmark run may leave the machine. The probe's other hosts are reserved
ones (a documentation address, `.invalid` names), so even a broken guard reaches nobody."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

GUARD = Path(__file__).resolve().parents[1] / "benchmarks" / "peers" / "loopback_only.js"

PROBE = """
const net = require("node:net");
const tls = require("node:tls");
const port = Number(process.argv[2]);
const attempts = {
  loopback: () => net.connect({ host: "127.0.0.1", port }),
  portThenHost: () => net.connect(port, "127.0.0.1"),
  documentationAddress: () => net.connect({ host: "198.51.100.7", port: 9 }),
  portThenRemoteHost: () => net.connect(443, "example.invalid"),
  tls: () => tls.connect({ host: "telemetry.example.invalid", port: 443 }),
};
const results = {};
(async () => {
  for (const [name, open] of Object.entries(attempts)) {
    results[name] = await new Promise((resolve) => {
      const socket = open();
      socket.on("connect", () => { socket.destroy(); resolve("connected"); });
      socket.on("error", (error) => resolve(error.message));
    });
  }
  process.stdout.write(JSON.stringify({ script: process.argv[1], results }));
})();
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_only_loopback_connections_get_through(tmp_path: Path) -> None:
    probe = tmp_path / "probe.js"
    probe.write_text(PROBE, encoding="utf-8")
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        run = subprocess.run(
            ["node", str(GUARD), str(probe), str(port)],
            capture_output=True,
            text=True,
            check=True,
        )
    answer = json.loads(run.stdout)
    assert answer["script"] == str(probe)
    results = answer["results"]
    assert results.pop("loopback") == results.pop("portThenHost") == "connected"
    assert results == {
        "documentationAddress": "connect ECONNREFUSED 198.51.100.7 (loopback only)",
        "portThenRemoteHost": "connect ECONNREFUSED example.invalid (loopback only)",
        "tls": "connect ECONNREFUSED telemetry.example.invalid (loopback only)",
    }
    assert run.stderr.count("loopback_only: refused") == 3
