"""Headless Emacs with editors/emacs/lsp-spark.el drives the real server through eglot.

lsp-mode is not tested here: it is not packaged for Debian and MELPA is out of reach, so
only the eglot half of lsp-spark.el runs; the lsp-mode half is only byte-compiled."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lsp_spark.testing.cerebras_server import CerebrasTestServer
from tests.editors.helpers import editor_binary, missing_editor, spark_environment

PACKAGE = Path(__file__).resolve().parents[2] / "editors" / "emacs"
EMACS_TIMEOUT = 60
MODEL = "qwen-3.8-27b"
NEXT_MODEL = "gpt-oss-120b"
FIXTURE = "def add(a, b):\n    \n\nprint(add(1, 2))\n"
COMPLETED = "def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n"
EDIT_COMMAND = "lspSpark.editWithInstruction"
INSTRUCTION = "multiply instead of adding"

# Debian installs ELPA packages such as elpa-eglot under /usr/share/emacs/site-lisp/elpa,
# which its site-start (skipped by -Q) adds to `package-directory-list'; an empty user
# directory keeps the user's own packages (lsp-mode, a newer eglot) out.
SYSTEM_ELPA = Path("/usr/share/emacs/site-lisp/elpa")
SYSTEM_PACKAGES = sorted(path for path in SYSTEM_ELPA.glob("*") if path.is_dir())
PACKAGES = f"""
(setq package-user-dir (getenv "LSP_SPARK_TEST_ELPA")
      package-directory-list '("{SYSTEM_ELPA}"))
(package-initialize)
"""

HELPERS = """;;; -*- lexical-binding: t; -*-
(require 'json)
(defvar test-result nil)

(defun test-record (key value)
  (setq test-result (plist-put test-result key value)))

(defun test-wait (what predicate seconds)
  "Run the event loop until PREDICATE holds, or fail naming WHAT after SECONDS."
  (let ((deadline (+ (float-time) seconds)))
    (while (not (funcall predicate))
      (when (> (float-time) deadline)
        (error "Timed out waiting for %s" what))
      (accept-process-output nil 0.05))))

(defun test-finish (status)
  (with-temp-file (getenv "LSP_SPARK_TEST_RESULT")
    (insert (json-encode test-result)))
  (kill-emacs status))

(defun test-open-with-spark ()
  "Open the fixture the way a user would: the mode hook starts eglot, which connects
once a command has run."
  (require 'lsp-spark)
  (setq lsp-spark-command
        (list (getenv "LSP_SPARK_TEST_PYTHON") "-m" "lsp_spark" "serve"))
  (setq lsp-spark-settings (list :model (getenv "LSP_SPARK_TEST_MODEL")))
  (add-hook 'python-mode-hook #'lsp-spark-eglot-ensure)
  (find-file (getenv "LSP_SPARK_TEST_FIXTURE"))
  (run-hooks 'post-command-hook)
  (test-wait "eglot to connect" #'eglot-managed-p 30)
  (test-record :spark (and (lsp-spark--eglot-server) t)))
"""

# Runs `main', writes what it recorded (or the error) as JSON and always exits, so a
# failing script never leaves Emacs waiting; every wait is bounded.
RUN = """
(run-at-time 50 nil (lambda () (test-record :error "watchdog fired") (test-finish 3)))
(condition-case err
    (progn (main) (test-finish 0))
  (error (test-record :error (error-message-string err)) (test-finish 1)))
"""

COMPLETION_SESSION = """
(defun main ()
  (test-open-with-spark)
  (goto-char (point-min))
  (forward-line 1)
  (end-of-line)
  ;; The server answers an empty, incomplete list when the model misses the completion
  ;; deadline and the cached suggestion on the next ask, so ask again (bounded). A miss is
  ;; noted in a file: the slow model answers once it exists.
  (let ((before (buffer-string))
        (attempts 0)
        (deadline (+ (float-time) 30)))
    (while (and (equal (buffer-string) before) (< (float-time) deadline))
      (setq attempts (1+ attempts))
      (completion-at-point)
      (when (equal (buffer-string) before)
        (with-temp-file (getenv "LSP_SPARK_TEST_MISSED"))
        (accept-process-output nil 0.2)))
    (test-record :attempts attempts))
  (test-record :buffer (buffer-substring-no-properties (point-min) (point-max)))
  (test-record :stats (lsp-spark-stats t))
  (test-record :stats-buffer (with-current-buffer "*lsp-spark stats*"
                               (buffer-substring-no-properties (point-min) (point-max))))
  (eglot-shutdown (eglot-current-server)))
"""

SETTINGS_SESSION = """
(defun main ()
  (test-open-with-spark)
  (test-record :initial (lsp-spark-stats))
  (setq lsp-spark-settings (list :model (getenv "LSP_SPARK_TEST_NEXT_MODEL")))
  (eglot-signal-didChangeConfiguration (eglot-current-server))
  (test-wait "the server to take the new model"
             (lambda ()
               (string-match-p (regexp-quote (getenv "LSP_SPARK_TEST_NEXT_MODEL"))
                               (lsp-spark-stats)))
             10)
  (eglot-show-workspace-configuration (eglot-current-server))
  (test-record :configuration
               (with-current-buffer "*EGLOT workspace configuration*"
                 (buffer-substring-no-properties (point-min) (point-max))))
  (eglot-shutdown (eglot-current-server)))
"""

EDIT_SESSION = """
(defun main ()
  (test-open-with-spark)
  (test-record :commands
               (plist-get (plist-get (eglot--capabilities (eglot-current-server))
                                     :executeCommandProvider)
                          :commands))
  (goto-char (point-min))
  (forward-line 1)
  (back-to-indentation)
  (condition-case err
      (lsp-spark-edit-with-instruction
       (getenv "LSP_SPARK_TEST_INSTRUCTION") (point) (line-end-position))
    (jsonrpc-error (test-record :refused (format "%S" err))))
  (test-record :buffer (buffer-substring-no-properties (point-min) (point-max)))
  (eglot-shutdown (eglot-current-server)))
"""


def emacs_batch(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`emacs --batch -Q` with the system's ELPA packages activated, then ARGS."""
    packages = {"LSP_SPARK_TEST_ELPA": str(tmp_path / "elpa")}
    return subprocess.run(
        [editor_binary("emacs"), "--batch", "-Q", "--eval", f"(progn {PACKAGES})", *args],
        env=(os.environ if env is None else env) | packages,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=EMACS_TIMEOUT,
    )


def require_eglot(tmp_path: Path) -> None:
    """Skip (or fail, when editors are required) if this Emacs has no eglot."""
    probe = emacs_batch(tmp_path, "--eval", """(princ (if (require 'eglot nil t) "yes" "no"))""")
    if not probe.stdout.endswith("yes"):
        missing_editor("Emacs has no eglot (install elpa-eglot)")


def missed_marker(tmp_path: Path) -> Path:
    """The file the completion session writes when an ask comes back without the suggestion."""
    return tmp_path / "missed"


def answered_once_missed(marker: Path, reply: str) -> Callable[[Any], str]:
    """A model that answers only once Emacs has seen an ask come back empty: the loopback
    server's thread waits for `marker` (bounded; the test also writes it as it ends)."""

    def answer(body: Any) -> str:
        for _ in range(EMACS_TIMEOUT * 100):
            if marker.exists():
                break
            time.sleep(0.01)
        return reply

    return answer


def run_emacs(
    tmp_path: Path, server: CerebrasTestServer, session: str, fixture: str
) -> dict[str, Any]:
    """Run one headless Emacs session against the loopback server; what it recorded."""
    require_eglot(tmp_path)
    source = tmp_path / "example.py"
    source.write_text(fixture)
    script = tmp_path / "session.el"
    script.write_text(HELPERS + session + RUN)
    result = tmp_path / "result.json"
    env = spark_environment(tmp_path / "home", server.base_url) | {
        "LSP_SPARK_TEST_PYTHON": sys.executable,
        "LSP_SPARK_TEST_MODEL": MODEL,
        "LSP_SPARK_TEST_NEXT_MODEL": NEXT_MODEL,
        "LSP_SPARK_TEST_FIXTURE": str(source),
        "LSP_SPARK_TEST_RESULT": str(result),
        "LSP_SPARK_TEST_INSTRUCTION": INSTRUCTION,
        "LSP_SPARK_TEST_MISSED": str(missed_marker(tmp_path)),
    }
    run = emacs_batch(tmp_path, "-L", str(PACKAGE), "-l", str(script), env=env)
    assert result.exists(), f"Emacs wrote no result (exit {run.returncode}):\n{run.stderr}"
    recorded: dict[str, Any] = json.loads(result.read_text())
    assert "error" not in recorded, f"{recorded['error']}\n{run.stderr}"
    assert run.returncode == 0, run.stderr
    return recorded


@pytest.mark.parametrize("slow", [False, True], ids=["fast-model", "slow-model"])
def test_eglot_completion_inserts_the_suggestion_through_its_text_edit(
    tmp_path: Path, cerebras: CerebrasTestServer, slow: bool
) -> None:
    """A slow model misses the completion deadline: the first ask comes back empty and
    incomplete, and asking again gets the same upstream answer from the cache. (The slow
    model answers only once Emacs has seen the first ask come back empty.)"""
    if slow:
        cerebras.config.reply_fn = answered_once_missed(missed_marker(tmp_path), "return a + b")
    else:
        cerebras.config.queue_replies("return a + b")
    try:
        recorded = run_emacs(tmp_path, cerebras, COMPLETION_SESSION, FIXTURE)
    finally:
        missed_marker(tmp_path).touch()  # never leave the loopback server waiting
    assert recorded["spark"] is True
    assert recorded["buffer"] == COMPLETED
    if slow:
        assert recorded["attempts"] > 1
        assert len(cerebras.completion_requests) == 1
    request = cerebras.completion_requests[-1]
    assert request.body["model"] == MODEL
    assert "def add(a, b):" in request.body["messages"][-1]["content"]
    assert re.fullmatch(
        rf"lsp-spark: cerebras/{re.escape(MODEL)}, \d+ requests, [1-9]\d* suggestions, "
        r"last \d+ ms.*",
        recorded["stats"],
    ), recorded["stats"]
    assert "backend: cerebras\n" in recorded["stats-buffer"]
    assert re.search(r"^latencyMs:\n  p50: \d", recorded["stats-buffer"], re.M)


def test_settings_reach_the_server_at_start_and_through_workspace_configuration(
    tmp_path: Path, cerebras: CerebrasTestServer
) -> None:
    """`lsp-spark-settings' goes out as initializationOptions, and later changes as the
    `lspSpark' section of eglot's workspace configuration."""
    recorded = run_emacs(tmp_path, cerebras, SETTINGS_SESSION, FIXTURE)
    assert recorded["initial"].startswith(f"lsp-spark: cerebras/{MODEL}, ")
    assert json.loads(recorded["configuration"]) == {"lspSpark": {"model": NEXT_MODEL}}


def test_edit_with_instruction_asks_the_server_to_rewrite_the_region(
    tmp_path: Path, cerebras: CerebrasTestServer
) -> None:
    """Until the server offers the command, its refusal naming the command shows the
    request arrived; once it does, the rewrite must land in the buffer."""
    cerebras.config.queue_replies("return a * b")
    recorded = run_emacs(tmp_path, cerebras, EDIT_SESSION, COMPLETED)
    if EDIT_COMMAND in recorded["commands"]:
        assert "refused" not in recorded, recorded["refused"]
        assert recorded["buffer"] == COMPLETED.replace("a + b", "a * b")
        assert INSTRUCTION in json.dumps(cerebras.completion_requests[-1].body)
    else:
        assert EDIT_COMMAND in recorded["refused"]
        assert recorded["buffer"] == COMPLETED


def test_package_byte_compiles_without_warnings_without_lsp_mode(tmp_path: Path) -> None:
    """Package managers byte-compile on install; lsp-mode's and eglot's functions are
    declared, not required, so the file must compile cleanly with neither loaded. A bare
    `emacs -Q` (eglot only on the load path, package.el not even loaded) is the strictest
    case. A copy is compiled so that no .elc lands in the repository."""
    copy = tmp_path / "lsp-spark.el"
    copy.write_text((PACKAGE / "lsp-spark.el").read_text())
    load_path = [arg for package in SYSTEM_PACKAGES for arg in ("-L", str(package))]
    run = subprocess.run(
        [
            *(editor_binary("emacs"), "--batch", "-Q", *load_path, "-L", str(tmp_path)),
            *("--eval", "(setq byte-compile-warnings t)", "-f", "batch-byte-compile", str(copy)),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=EMACS_TIMEOUT,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert (tmp_path / "lsp-spark.elc").exists()
    assert "Warning" not in output and "Error" not in output, output
