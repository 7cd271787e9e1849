"""Keystroke to ghost text in Emacs: how long after a key the suggestion is on screen.

Run ``python benchmarks/editor_emacs.py [--tiny] [--output PATH]``: prints p50/p95 in
milliseconds and writes ``benchmarks/results/editor_emacs.json`` (or PATH); ``--tiny`` types
3 pairs of keys, to check the path still works. Emacs (``emacs -nw`` on a pseudo-terminal,
Debian's emacs-nox with elpa-eglot) runs editors/emacs/lsp-spark.el against the real server,
whose model is the loopback Cerebras server answering after a realistic 100 ms to the first
token and 1,000 tokens/s (as the replay benchmark's realistic mode); the server runs with
its default settings.

Times are taken inside Emacs with `float-time`: when the command loop starts on the key
(`pre-command-hook`), and at the first redisplay after `lsp-spark-inline-shown-hook` says
the server's suggestion was put on screen. Keys are fed to the running command loop through
`unread-command-events`, one at a time, each once the previous one's suggestion showed.
Two kinds of key, on blank indented lines of a real module (the file is the module with
those lines emptied; the model completes them from the module):

- first key on the line: the server must ask the model (cursor moved since the last ask);
- next key, typed through the suggestion: the rest stays on screen at once (the client
  shortens it), and the server answers from memory; the time is to that answer.
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import shutil
import struct
import subprocess
import sys
import tempfile
import termios
import threading
from fcntl import ioctl
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from timing import add_size_options  # noqa: E402

from lsp_spark.prompts.chat import HOLE  # noqa: E402
from lsp_spark.testing import isolated_environment  # noqa: E402
from lsp_spark.testing.cerebras_server import CerebrasTestServer  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "editor_emacs.json"
PACKAGE = ROOT / "editors" / "emacs"
MODULE = ROOT / "lsp_spark" / "pipeline.py"
"""The code typed into: indented statements of a real module."""
LINES = 32
TINY_LINES = 3
WARMUP_LINES = 2
"""Lines typed first and left out of the figures: the first asks pay for imports."""
TTFT = 0.1
TOKENS_PER_SECOND = 1000.0
TARGET_P50_MS = 200.0
KEY_TIMEOUT = 5.0
"""Seconds a key may wait for its suggestion before it counts as missed."""
RUN_TIMEOUT = 300.0
"""Seconds Emacs may take in all; it stops itself 10 s before."""
API_KEY = "bench-key-not-a-secret"
MODEL = "gpt-oss-120b"
SYSTEM_ELPA = Path("/usr/share/emacs/site-lisp/elpa")
KINDS = {"first": "first key on a line (model)", "through": "typed through (memory)"}

DRIVER = """;;; -*- lexical-binding: t; -*-
(require 'json)
(require 'lsp-spark)
(setq lsp-spark-command (list (getenv "BENCH_PYTHON") "-m" "lsp_spark" "serve"))
(setq lsp-spark-settings (list :model (getenv "BENCH_MODEL")))
(add-hook 'python-mode-hook #'lsp-spark-eglot-ensure)

(defvar bench-lines (let ((json-array-type 'list))
                      (json-read-file (getenv "BENCH_PLAN")))
  "(LINE CHARACTER) for each emptied line, in typing order: its 0-based
number and the first character of its code.")
(defvar bench-buffer nil)
(defvar bench-samples nil)
(defvar bench-key nil "(KIND LINE) of the key in flight.")
(defvar bench-typed-at nil)
(defvar bench-shown nil "Non-nil from the suggestion's arrival to its redisplay.")
(defvar bench-timeout nil)

(defun bench-finish ()
  (with-temp-file (getenv "BENCH_RESULT")
    (insert (json-encode (list :samples (vconcat (nreverse bench-samples))
                               :emacs emacs-version
                               :eglot (package-version-join
                                       (package-desc-version
                                        (cadr (assq 'eglot package-alist))))))))
  (kill-emacs 0))

(defun bench-record (milliseconds)
  (when bench-timeout (cancel-timer bench-timeout))
  (push (list :kind (car bench-key) :line (cadr bench-key) :ms milliseconds
              :ghost (or (buffer-local-value 'lsp-spark--inline-text bench-buffer) ""))
        bench-samples)
  (let ((kind (car bench-key)) (lines (cddr bench-key)))
    (setq bench-key nil bench-typed-at nil bench-shown nil)
    ;; A pause between keys (not measured) lets the last answer's work settle.
    (run-at-time 0.05 nil #'bench-type (if (equal kind "first") 'through 'first) lines)))

(defun bench-type (kind lines)
  "Feed the command loop the next key: KIND `first' on the next of LINES, else
the next character of the suggestion on screen."
  (with-current-buffer bench-buffer
    (cond ((null lines) (bench-finish))
          ((eq kind 'first)
           (lsp-spark-inline-dismiss)
           (goto-char (point-min))
           (forward-line (caar lines))
           (end-of-line)
           (bench-press "first" (caar lines) lines (aref (cadar lines) 0)))
          (lsp-spark--inline-showing
           (bench-press "through" (caar lines) (cdr lines) (aref lsp-spark--inline-text 0)))
          (t (bench-type 'first (cdr lines))))))

(defun bench-press (kind line rest character)
  (setq bench-key (cons kind (cons line rest)))
  (setq bench-timeout (run-at-time (string-to-number (getenv "BENCH_KEY_TIMEOUT")) nil
                                   #'bench-record nil))
  (setq unread-command-events (list character)))

(defun bench-pre-command ()
  (when (and bench-key (not bench-typed-at))
    (setq bench-typed-at (float-time))))

(defun bench-shown ()
  (when bench-typed-at (setq bench-shown t)))

(defun bench-redisplay (&rest _)
  (when bench-shown
    (setq bench-shown nil)
    (bench-record (* 1000 (- (float-time) bench-typed-at)))))

(defun bench-start ()
  (if (not (with-current-buffer bench-buffer (lsp-spark--inline-server)))
      (run-at-time 0.1 nil #'bench-start)
    (add-hook 'pre-command-hook #'bench-pre-command)
    (add-hook 'lsp-spark-inline-shown-hook #'bench-shown)
    (add-hook 'pre-redisplay-functions #'bench-redisplay)
    (bench-type 'first bench-lines)))

;; Whatever goes wrong, Emacs exits (without results) rather than wait for keys.
(run-at-time (string-to-number (getenv "BENCH_WATCHDOG")) nil #'kill-emacs 2)
(find-file (getenv "BENCH_FILE"))
(setq bench-buffer (current-buffer))
(run-hooks 'post-command-hook)  ; eglot connects once a command has run
(bench-start)
"""


def oracle(target: str) -> Any:
    """The model: what follows the text before the cursor in `target` (its line)."""

    def reply(body: Any) -> str:
        content = str(body["messages"][-1]["content"])
        lines = content.split(HOLE, 1)[0].split("\n")
        for first in range(len(lines)):
            typed = "\n".join(lines[first:])
            if typed and (found := target.find(typed)) >= 0:
                return target[found + len(typed) :].split("\n", 1)[0]
        return ""

    return reply


def pick_lines(source: list[str], count: int) -> list[int]:
    """`count` statements inside functions, spread over the module, each long enough to
    complete and starting with a name (no comments, strings or closing brackets)."""
    candidates = [
        number
        for number, line in enumerate(source)
        if line.startswith("        ")
        and len(line.strip()) >= 16
        and line.strip()[0].isalpha()
        and '"' not in line
        and "'" not in line
        and not line.rstrip().endswith(("(", "[", "{", ",", ":", "\\"))
    ]
    step = max(1, len(candidates) // count)
    return candidates[::step][:count]


def emptied(source: list[str], lines: list[int]) -> str:
    """The module with `lines` reduced to their indentation."""
    chosen = set(lines)
    return "\n".join(
        line[: len(line) - len(line.lstrip())] if number in chosen else line
        for number, line in enumerate(source)
    )


def run_emacs(environment: dict[str, str], driver: Path, result: Path) -> None:
    """`emacs -nw` on a pseudo-terminal of 80x24 until it writes `result` (bounded)."""
    emacs = shutil.which("emacs")
    if emacs is None:
        sys.exit("emacs is not on PATH (Debian: apt install emacs-nox elpa-eglot)")
    packages = (
        f'(progn (setq package-user-dir (getenv "BENCH_ELPA") '
        f'package-directory-list (list "{SYSTEM_ELPA}")) (package-initialize))'
    )
    terminal, screen = pty.openpty()
    ioctl(screen, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    process = subprocess.Popen(
        [emacs, "-nw", "-Q", "--eval", packages, "-L", str(PACKAGE), "-l", str(driver)],
        stdin=screen,
        stdout=screen,
        stderr=screen,
        env=environment,
        preexec_fn=take_terminal,
    )
    os.close(screen)
    # What Emacs draws must be read, or it blocks writing to the terminal; the end of it
    # says what went wrong if Emacs stops early.
    screen_output = bytearray()
    drain = threading.Thread(target=read_all, args=(terminal, screen_output), daemon=True)
    drain.start()
    try:
        process.wait(timeout=RUN_TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        drain.join(timeout=5)
        os.close(terminal)
    if not result.exists():
        last = screen_output[-2000:].decode(errors="replace")
        sys.exit(f"Emacs exited {process.returncode} without results; its screen ended:\n{last}")


def take_terminal() -> None:
    """In the child: a session of its own whose controlling terminal is the pty on stdin
    (`emacs -nw` opens /dev/tty)."""
    os.setsid()
    ioctl(0, termios.TIOCSCTTY, 0)


def read_all(descriptor: int, into: bytearray) -> None:
    while True:
        try:
            chunk = os.read(descriptor, 65536)
        except OSError:
            return
        if not chunk:
            return
        into += chunk
        del into[:-4000]


def percentile(values: list[float], share: int) -> float | None:
    ordered = sorted(values)
    return ordered[len(ordered) * share // 100] if ordered else None


def summary(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """p50/p95 in ms and the misses, per kind of key and for all keys."""
    rows: dict[str, Any] = {}
    for kind in (*KINDS, "all"):
        chosen = [sample for sample in samples if kind in ("all", sample["kind"])]
        times = [sample["ms"] for sample in chosen if sample["ms"] is not None]
        rows[kind] = {
            "keys": len(chosen),
            "missed": len(chosen) - len(times),
            "p50Ms": percentile(times, 50),
            "p95Ms": percentile(times, 95),
        }
    return rows


def table(rows: dict[str, Any]) -> str:
    width = max(map(len, (*KINDS.values(), "all keys")))
    lines = [f"{'key':<{width}}  {'keys':>5}  {'missed':>6}  {'p50 ms':>7}  {'p95 ms':>7}"]
    for kind, row in rows.items():
        p50, p95 = (
            "n/a" if row[name] is None else f"{row[name]:.1f}" for name in ("p50Ms", "p95Ms")
        )
        label = KINDS.get(kind, "all keys")
        lines.append(f"{label:<{width}}  {row['keys']:>5}  {row['missed']:>6}  {p50:>7}  {p95:>7}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    add_size_options(parser, RESULTS, f"{TINY_LINES} lines: checks, not figures")
    arguments = parser.parse_args()
    count = (TINY_LINES if arguments.tiny else LINES) + WARMUP_LINES
    source = MODULE.read_text().split("\n")
    lines = pick_lines(source, count)
    work = Path(tempfile.mkdtemp(prefix="lsp-spark-bench-emacs-"))
    try:
        (work / MODULE.name).write_text(emptied(source, lines))
        plan = [[number, source[number].strip()[0]] for number in lines]
        (work / "plan.json").write_text(json.dumps(plan))
        (work / "driver.el").write_text(DRIVER)
        with CerebrasTestServer(
            api_key=API_KEY,
            models=[MODEL],
            ttft=TTFT,
            tokens_per_second=TOKENS_PER_SECOND,
            reply_fn=oracle("\n".join(source)),
        ) as upstream:
            (work / "config").mkdir()
            environment = isolated_environment(str(work / "config")) | {
                "HOME": str(work),
                "TERM": "xterm-256color",
                "CEREBRAS_API_KEY": API_KEY,
                "CEREBRAS_BASE_URL": upstream.base_url,
                "LSP_SPARK_BACKEND": "cerebras",
                "BENCH_PYTHON": sys.executable,
                "BENCH_MODEL": MODEL,
                "BENCH_ELPA": str(work / "elpa"),
                "BENCH_FILE": str(work / MODULE.name),
                "BENCH_PLAN": str(work / "plan.json"),
                "BENCH_RESULT": str(work / "result.json"),
                "BENCH_KEY_TIMEOUT": str(KEY_TIMEOUT),
                "BENCH_WATCHDOG": str(RUN_TIMEOUT - 10),
            }
            run_emacs(environment, work / "driver.el", work / "result.json")
            upstream_requests = len(upstream.completion_requests)
        recorded = json.loads((work / "result.json").read_text())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    warmup = set(lines[:WARMUP_LINES])
    samples = [sample for sample in recorded["samples"] if sample["line"] not in warmup]
    rows = summary(samples)
    print(
        f"keystroke to ghost text on screen, Emacs {recorded['emacs']} + eglot "
        f"{recorded['eglot']}, model at {TTFT * 1000:g} ms to first token and "
        f"{TOKENS_PER_SECOND:g} tokens/s"
    )
    print(table(rows))
    first = rows["first"]["p50Ms"]
    verdict = "n/a" if first is None else ("yes" if first < TARGET_P50_MS else "NO")
    print(f"first key p50 under {TARGET_P50_MS:g} ms: {verdict}")
    report = {
        "emacs": recorded["emacs"],
        "eglot": recorded["eglot"],
        "ttftMs": TTFT * 1000,
        "tokensPerSecond": TOKENS_PER_SECOND,
        "targetP50Ms": TARGET_P50_MS,
        "module": str(MODULE.relative_to(ROOT)),
        "upstreamRequests": upstream_requests,
        "keys": rows,
        "samples": samples,
    }
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    arguments.output.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {arguments.output}")


if __name__ == "__main__":
    main()
