"""`lsp-spark demo`, the README's first command, run as a user runs it (on the loopback
Cerebras server, whose answers are the file's real lines, so what it shows is known)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_spark.demo import default_fixture, pick_holes
from lsp_spark.testing import isolated_environment

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.mark.timeout(600)  # a hang guard: the demo is waited for until it exits
def test_the_demo_shows_each_lines_rest_as_ghost_text_with_its_latencies(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "lsp_spark", "demo", "--backend", "loopback"],
        capture_output=True,
        text=True,
        env=isolated_environment(str(tmp_path)),
        check=False,
    )
    assert run.returncode == 0, run.stderr
    printed = ANSI.sub("", run.stdout).splitlines()
    lines = default_fixture().read_text(encoding="utf-8").split("\n")
    holes = pick_holes(lines, 4)
    shown = [line for line in printed if line.startswith("line ")]
    assert len(shown) == len(holes) == 4
    for row, output in zip(holes, shown, strict=True):
        # "line  17  <typed><ghost text>   12.3 ms": typed and ghost together are the real line.
        match = re.fullmatch(r"line +(\d+)  (.*?)   +([\d.]+) ms", output)
        assert match is not None, output
        assert int(match[1]) == row + 1
        assert match[2] == lines[row]
    summary = next(line for line in printed if line.startswith("backend "))
    assert "4/4 holes got ghost text" in summary
    assert re.search(r"median \d+ ms after the last keystroke \(\d+ ms per upstream", summary)
    breakdown = next(line for line in printed if line.startswith("where the time goes"))
    until_first = re.search(r"(\d+) ms until its first text arrived", breakdown)
    assert until_first is not None, breakdown
    # The loopback server waits 80 ms before its first token.
    assert int(until_first[1]) >= 80
    assert re.fullmatch(
        r"before the first keystroke: the backend was ready \d+ ms after the file opened.*",
        printed[-1],
    )
