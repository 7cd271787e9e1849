"""Emacs with editors/emacs/lsp-spark.el drives the real server through eglot.

Ghost text is tested as a person sees it: `emacs -nw` runs in a terminal (tmux), keys are
typed into it, and the tests read what the overlays at the cursor show, the buffer after
accepting, the echo area, the terminal screen itself, and the server's counters. The
`completion-at-point` path, the settings and the edit command run in `emacs --batch`.

lsp-mode's ghost text runs only on request (LSP_SPARK_LSP_MODE_DIR): Debian 12 packages
lsp-mode 8.0.0, which has no inline completion, and no other registry reachable here has
a newer one for it; otherwise the lsp-mode half of lsp-spark.el is only byte-compiled."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from lsp_spark.prompts.chat import HOLE
from lsp_spark.testing.cerebras_server import CerebrasTestServer
from lsp_spark.testing.nextedit_model import is_next_edit_request, scripted_reply
from tests.editors.helpers import TEST_KEY, editor_binary, missing_editor, spark_environment
from tests.editors.terminal import TerminalScreen

PACKAGE = Path(__file__).resolve().parents[2] / "editors" / "emacs"
EMACS_TIMEOUT = 60
WAIT = 20
"""Seconds to wait for something to appear on a busy machine (a bound, not a pace)."""
DISMISS_ATTEMPTS = 3
DISMISS_WAIT = 3
"""Seconds a C-g gets to clear the screen before the test looks for why it did not."""
QUIT_POLL = "Quit emacsclient request"
MODEL = "qwen-3.8-27b"
NEXT_MODEL = "gpt-oss-120b"
FIXTURE = "def add(a, b):\n    \n\nprint(add(1, 2))\n"
COMPLETED = "def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n"
EDIT_COMMAND = "lspSpark.editWithInstruction"
INSTRUCTION = "multiply instead of adding"
SCREENSHOTS = "LSP_SPARK_SCREENSHOTS"
NO_NEXT_EDIT = "<none/>"
"""What the next-edit prompt tells the model to answer when no edit follows."""
EDITABLE_REGION = re.compile(r"^Editable region of (.+?) \(", re.MULTILINE)
LSP_MODE_DIR = "LSP_SPARK_LSP_MODE_DIR"

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

# `emacs -nw' in a terminal, as a person starts it, plus a server socket through which the
# test opens files and reads what Emacs shows (`emacsclient --eval' runs between commands
# and is not a command itself, so it neither triggers nor clears ghost text).
TERMINAL_SESSION = """;;; -*- lexical-binding: t; -*-
(require 'json)
(require 'lsp-spark)
(setq lsp-spark-command
      (list (getenv "LSP_SPARK_TEST_PYTHON") "-m" "lsp_spark" "serve"))
(setq lsp-spark-settings (list :model (getenv "LSP_SPARK_TEST_MODEL")))
;; Typing `(' inserts `()', as in most people's editors.
(electric-pair-mode 1)

(defvar-local test-undefined-names nil
  "The names the test's linter reports wherever they are used.")

(defun test-open (file line &optional column undefined-names)
  "Show FILE with the cursor on LINE (0-based), at COLUMN or its end, as `C-x C-f'
would; the test's linter reports UNDEFINED-NAMES in it."
  (switch-to-buffer (find-file-noselect file))
  (setq test-undefined-names undefined-names)
  ;; eglot manages the buffer at once when its server runs already.
  (test-lint)
  (goto-char (point-min))
  (forward-line line)
  (if column (forward-char column) (end-of-line))
  (run-hooks 'post-command-hook)  ; eglot connects once a command has run
  nil)

(defun test-linter (report &rest _)
  "A flymake backend that reports each use of `test-undefined-names' as pyflakes would."
  (let (found)
    (save-excursion
      (dolist (name test-undefined-names)
        (goto-char (point-min))
        (while (re-search-forward (concat "\\\\_<" (regexp-quote name) "\\\\_>") nil t)
          (push (flymake-make-diagnostic (current-buffer) (match-beginning 0) (match-end 0)
                                         :error (format "undefined name '%s'" name))
                found))))
    (funcall report found)))

(defun test-lint ()
  "Run the test's linter next to eglot's diagnostics, as people add other backends."
  (when (and (eglot-managed-p) test-undefined-names)
    (add-hook 'flymake-diagnostic-functions #'test-linter nil t)
    (flymake-start)))
(add-hook 'eglot-managed-mode-hook #'test-lint)

(defun test-next-edits ()
  "What the overlays show of next edits: the text struck out (face
`lsp-spark-next-edit-deletion') where it is, and the text shown after it
\\(face `lsp-spark-next-edit')."
  (let (edits)
    (dolist (overlay (overlays-in (point-min) (point-max)))
      (let ((old (if (eq (overlay-get overlay 'face) 'lsp-spark-next-edit-deletion)
                     (buffer-substring-no-properties (overlay-start overlay)
                                                     (overlay-end overlay))
                   ""))
            (new ""))
        (dolist (property '(before-string display after-string))
          (let ((value (overlay-get overlay property)))
            (when (and (stringp value)
                       (eq (get-text-property 0 'face value) 'lsp-spark-next-edit))
              (setq new (concat new value)))))
        (unless (and (string-empty-p old) (string-empty-p new))
          (save-excursion
            (goto-char (overlay-start overlay))
            (push (list :line (1- (line-number-at-pos))
                        :column (current-column)
                        :old old
                        :new new)
                  edits)))))
    (vconcat edits)))

(defun test-shown-at-point ()
  "The text overlays show at point in place of, or next to, the buffer's text."
  (let ((shown ""))
    (dolist (overlay (overlays-in (point) (min (point-max) (1+ (point)))))
      (when (= (overlay-start overlay) (point))
        (dolist (property '(before-string display after-string))
          (let ((value (overlay-get overlay property)))
            (when (stringp value) (setq shown (concat shown value)))))))
    shown))

(defun test-encode (object)
  "OBJECT as JSON in base64, which emacsclient prints unharmed."
  (base64-encode-string (encode-coding-string (json-encode object) 'utf-8) t))

(defun test-state ()
  (with-current-buffer (window-buffer (selected-window))
    (let ((shown (test-shown-at-point)))
      (test-encode
       (list :file (or buffer-file-name "")
             :connected (if (test-connected) t :json-false)
             :ghost shown
             :face (if (string-empty-p shown) ""
                     (format "%s" (get-text-property 0 'face shown)))
             :buffer (buffer-substring-no-properties (point-min) (point-max))
             :line (buffer-substring-no-properties (line-beginning-position)
                                                   (line-end-position))
             :column (- (point) (line-beginning-position))
             :row (1- (line-number-at-pos))
             :edits (test-next-edits)
             ;; Whether lsp-spark sent flymake's diagnostics (to wait on, not to check).
             :diagnostics-sent (length (bound-and-true-p lsp-spark--sent-diagnostics))
             :message (or (current-message) ""))))))

(defun test-stats ()
  (with-current-buffer (window-buffer (selected-window))
    (test-encode (lsp-spark--request (lsp-spark--client) "lspSpark/stats" nil 10))))
"""

EGLOT_SESSION = """
(add-hook 'python-mode-hook #'lsp-spark-eglot-ensure)

(defun test-connected ()
  (lsp-spark--inline-server))
"""

# lsp-mode from a folder of unpacked ELPA packages (lsp-mode and what it requires), with
# TAB accepting as the README shows; lsp-spark alone serves Python here.
LSP_MODE_SESSION = r"""
(dolist (package (directory-files (getenv "LSP_SPARK_LSP_MODE_DIR") t "\\`[^.]"))
  (when (file-directory-p package)
    (add-to-list 'load-path package)
    (dolist (autoloads (directory-files package t "-autoloads\\.el\\'"))
      (load autoloads nil t))))
(setq lsp-auto-guess-root t
      lsp-session-file (expand-file-name "lsp-session" (getenv "HOME"))
      lsp-inline-completion-idle-delay 0.1)
(require 'lsp-mode)
(require 'lsp-inline-completion)
(define-key lsp-inline-completion-active-map (kbd "TAB") #'lsp-inline-completion-accept)
(add-hook 'python-mode-hook #'lsp)

(defun test-connected ()
  (when-let* ((workspace (lsp-spark--lsp-workspace)))
    (and (eq (lsp--workspace-status workspace) 'initialized)
         (bound-and-true-p lsp-inline-completion-mode))))
"""

# Last: the socket appears once everything before it is defined.
SERVER_SOCKET = """
(require 'server)
(setq server-socket-dir (getenv "LSP_SPARK_TEST_SOCKETS") server-name "test")
(server-start)
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


def session_environment(tmp_path: Path, server: CerebrasTestServer) -> dict[str, str]:
    """What Emacs and the server it starts run with: the loopback server, the model."""
    return spark_environment(tmp_path / "home", server.base_url) | {
        "LSP_SPARK_TEST_PYTHON": sys.executable,
        "LSP_SPARK_TEST_MODEL": MODEL,
        "LSP_SPARK_TEST_ELPA": str(tmp_path / "elpa"),
    }


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
    env = session_environment(tmp_path, server) | {
        "LSP_SPARK_TEST_FIXTURE": str(source),
        "LSP_SPARK_TEST_NEXT_MODEL": NEXT_MODEL,
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


class Oracle:
    """A model that knows the finished files: it answers each prompt with what follows the
    text before the cursor in the file the prompt names (the rest of the line, or of the
    file when a block is asked for), whichever keystroke's request reaches it. Asked for a
    next edit, it answers the edits that turn the file into its next-edit target, and
    keeps the prompt."""

    def __init__(self) -> None:
        self.targets: dict[str, str] = {}
        self.next_edit_targets: dict[str, str] = {}
        self.next_edit_prompts: list[str] = []

    def __call__(self, body: Any) -> str:
        if is_next_edit_request(body):
            return self.next_edit(body)
        content = str(body["messages"][-1]["content"])
        header, _ = content.split("\n", 1)
        target = next(
            (text for name, text in self.targets.items() if header.startswith(f"File: {name} ")),
            "",
        )
        before, after = content.split(HOLE, 1)
        # The longest run of whole lines before the cursor that the target holds: the
        # prompt's header and related code come first and are not in it.
        lines = before.split("\n")
        for first in range(len(lines)):
            typed = "\n".join(lines[first:])
            if typed and (found := target.find(typed)) >= 0:
                rest = target[found + len(typed) :]
                if "Complete the current line only." in after:
                    return rest.split("\n", 1)[0]
                return rest.rstrip("\n")
        return ""

    def next_edit(self, body: Any) -> str:
        content = str(body["messages"][-1]["content"])
        self.next_edit_prompts.append(content)
        region = EDITABLE_REGION.search(content)
        target = self.next_edit_targets.get(region.group(1)) if region else None
        return NO_NEXT_EDIT if target is None else scripted_reply(body, target)


class EmacsInTerminal:
    """`emacs -nw` on a terminal screen: keys go in through tmux; what it shows comes back
    through emacsclient (overlays at the cursor, buffer, echo area) and the screen itself."""

    def __init__(
        self, screen: TerminalScreen, socket: Path, directory: Path, oracle: Oracle
    ) -> None:
        self.screen = screen
        self.socket = socket
        self.directory = directory
        self.oracle = oracle
        self.emacsclient = editor_binary("emacsclient")

    def eval(self, expression: str) -> str:
        run = subprocess.run(
            [self.emacsclient, "-s", str(self.socket), "--eval", expression],
            capture_output=True,
            text=True,
            timeout=WAIT,
        )
        assert run.returncode == 0, f"emacsclient {expression}: {run.stderr}\n{self.screen.text()}"
        return run.stdout.strip()

    def decoded(self, expression: str) -> Any:
        return json.loads(base64.b64decode(self.eval(expression).strip('"')).decode())

    def open(
        self,
        name: str,
        text: str,
        target: str,
        line: int,
        column: int | None = None,
        next_edit_target: str | None = None,
        undefined_names: tuple[str, ...] = (),
    ) -> None:
        """Edit a new file `name` holding `text`, the cursor on `line` (0-based) at `column`
        or its end, once lsp-spark manages it; the model completes it towards `target` and
        predicts the edits that make it `next_edit_target`. The test's linter (a flymake
        backend) reports each use of `undefined_names`."""
        path = self.directory / name
        path.write_text(text)
        self.oracle.targets[name] = target
        if next_edit_target is not None:
            self.oracle.next_edit_targets[name] = next_edit_target
        names = f"'({' '.join(json.dumps(name) for name in undefined_names)})"
        column_argument = "nil" if column is None else str(column)
        self.eval(f"(test-open {json.dumps(str(path))} {line} {column_argument} {names})")
        self.wait(
            f"lsp-spark managing {name}",
            lambda state: state["file"] == str(path) and state["connected"] is True,
        )

    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = self.decoded("(test-state)")
        return state

    def stats(self) -> dict[str, Any]:
        stats: dict[str, Any] = self.decoded("(test-stats)")
        return stats

    def wait(self, what: str, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """Poll what Emacs shows (bounded in time and count) until `predicate` holds."""
        deadline = time.monotonic() + WAIT
        state: dict[str, Any] = {}
        for _ in range(WAIT * 20):
            state = self.state()
            if predicate(state):
                return state
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        raise AssertionError(f"Emacs never showed {what}; last state: {state}")

    def wait_for_stats(self, what: str, predicate: Callable[[dict[str, Any]], bool]) -> None:
        deadline = time.monotonic() + WAIT
        stats: dict[str, Any] = {}
        for _ in range(WAIT * 10):
            stats = self.stats()
            if predicate(stats):
                return
            if time.monotonic() > deadline:
                break
            time.sleep(0.1)
        raise AssertionError(f"the server never counted {what}; last stats: {stats}")

    def type(self, text: str) -> None:
        self.screen.send_keys(text, literal=True)

    def press(self, *keys: str) -> None:
        self.screen.send_keys(*keys)

    def dismiss(self, shown: str) -> None:
        """Press C-g until `shown` is off the screen. In a terminal, C-g interrupts whatever
        Lisp Emacs runs; when that is the end of the test's last emacsclient poll, Emacs says
        "Quit emacsclient request" and the key never reaches the keymap: it is pressed again
        then (a bounded number of times), never for any other reason."""
        for attempt in range(1, DISMISS_ATTEMPTS + 1):
            self.press("C-g")
            try:
                self.screen.wait_for(
                    lambda screen: shown not in screen,
                    DISMISS_WAIT if attempt < DISMISS_ATTEMPTS else WAIT,
                    f"{shown!r} taken away by C-g",
                )
                return
            except AssertionError:
                if attempt == DISMISS_ATTEMPTS or QUIT_POLL not in self.screen.text():
                    raise


@contextmanager
def emacs_in_terminal(
    tmp_path: Path, client: str, extra_env: dict[str, str] | None = None
) -> Iterator[EmacsInTerminal]:
    """`emacs -nw` set up with lsp-spark through `client` (the session's Lisp), its
    loopback model answering from the files the tests open."""
    require_eglot(tmp_path)
    init = tmp_path / "session.el"
    init.write_text(TERMINAL_SESSION + client + SERVER_SOCKET)
    # A socket's path must stay short (108 bytes), and pytest's directories are long.
    sockets = Path(tempfile.mkdtemp(prefix="lsp-spark-emacs-"))
    command = [editor_binary("emacs"), "-nw", "-Q", "--eval", f"(progn {PACKAGES})"]
    command += ["-L", str(PACKAGE), "-l", str(init)]
    oracle = Oracle()
    try:
        with CerebrasTestServer(api_key=TEST_KEY, models=[MODEL], reply_fn=oracle) as server:
            env = session_environment(tmp_path, server) | {
                "LSP_SPARK_TEST_SOCKETS": str(sockets),
                "LANG": "C.UTF-8",
                **(extra_env or {}),
            }
            with TerminalScreen(command, env=env, cwd=tmp_path, width=80, height=16) as screen:
                session = EmacsInTerminal(screen, sockets / "test", tmp_path, oracle)
                screen.wait_for(lambda _: session.socket.exists(), WAIT, "Emacs' server socket")
                yield session
    finally:
        shutil.rmtree(sockets, ignore_errors=True)


@pytest.fixture(scope="module")
def emacs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmacsInTerminal]:
    """One `emacs -nw` with lsp-spark through eglot for the ghost text tests, each of which
    opens its own file (the server and its counters are shared: tests compare counts)."""
    with emacs_in_terminal(tmp_path_factory.mktemp("emacs"), EGLOT_SESSION) as session:
        yield session


def screenshot_path(tmp_path: Path, name: str) -> Path:
    """Where a test saves its picture of the screen: LSP_SPARK_SCREENSHOTS, else tmp_path."""
    return Path(os.environ.get(SCREENSHOTS) or tmp_path) / name


def test_ghost_text_follows_typing_and_tab_accepts_it(emacs: EmacsInTerminal) -> None:
    """Typing shows the rest of the line after the cursor, typing it through shortens it;
    M-n asks for alternatives and says there are none; C-g takes it away; TAB inserts it,
    and the item's command tells the server (its accepted count)."""
    emacs.open("add.py", FIXTURE, COMPLETED, line=1)
    accepted_before = emacs.stats()["accepted"]
    emacs.type("r")
    shown = emacs.wait("the ghost text", lambda state: state["ghost"] == "eturn a + b")
    assert shown["face"] == "lsp-spark-ghost-text"
    assert shown["line"] == "    r"
    emacs.type("e")
    emacs.wait("the ghost text typed through", lambda state: state["ghost"] == "turn a + b")

    emacs.press("M-n")
    cycled = emacs.wait(
        "the answer to M-n", lambda state: "no other suggestion" in state["message"]
    )
    assert cycled["ghost"] == "turn a + b"

    emacs.dismiss("    return a + b")
    dismissed = emacs.wait("the ghost text dismissed", lambda state: state["ghost"] == "")
    assert dismissed["line"] == "    re"

    emacs.type("t")
    emacs.wait("the ghost text again", lambda state: state["ghost"] == "urn a + b")
    emacs.press("Tab")
    accepted = emacs.wait("the accepted line", lambda state: state["buffer"] == COMPLETED)
    assert accepted["ghost"] == ""
    assert accepted["column"] == len("    return a + b")
    emacs.wait_for_stats("the accept", lambda stats: stats["accepted"] == accepted_before + 1)


def test_multi_line_ghost_text_on_screen_and_partial_accepts(
    emacs: EmacsInTerminal, tmp_path: Path
) -> None:
    """Enter opens the function's body and its suggestion shows on the terminal screen,
    every line of it; M-f takes a word, C-e a line, TAB the rest, and the server counts the
    partial accepts (didPartiallyAcceptCompletion) and the whole one."""
    target = (
        "def clamp(value, low, high):\n"
        "    if value < low:\n"
        "        return low\n"
        "    return min(value, high)\n"
    )
    rest = "if value < low:\n        return low\n    return min(value, high)"
    emacs.open("clamp.py", "def clamp(value, low, high):\n", target, line=0)
    before = emacs.stats()
    emacs.press("Enter")  # a new line, indented into the function's body
    emacs.wait("the block's ghost text", lambda state: state["ghost"] == rest)
    emacs.screen.wait_for(
        lambda text: target.rstrip("\n") in text, WAIT, "the ghost text's three lines"
    )
    emacs.screen.save_svg(screenshot_path(tmp_path, "emacs.svg"), "lsp-spark in Emacs (eglot)")

    emacs.press("M-f")
    word = emacs.wait("one word accepted", lambda state: state["line"] == "    if")
    assert word["ghost"] == rest.removeprefix("if")
    emacs.press("C-e")
    line = emacs.wait("the line accepted", lambda state: state["line"] == "    if value < low:")
    assert line["ghost"] == "\n        return low\n    return min(value, high)"
    emacs.press("Tab")
    emacs.wait("the block accepted", lambda state: state["buffer"] == target)
    emacs.wait_for_stats(
        "two partial accepts and one whole",
        lambda stats: (
            stats["partiallyAccepted"] == before["partiallyAccepted"] + 2
            and stats["accepted"] == before["accepted"] + 1
        ),
    )


def test_ghost_text_replaces_the_auto_inserted_paren_after_an_emoji(
    emacs: EmacsInTerminal,
) -> None:
    """Typing `greet(' makes electric-pair-mode insert `)'; the item's range covers it
    (in UTF-16 columns, counted after an emoji that takes two), the ghost text shows in its
    place, and accepting leaves one `)'."""
    target = 'def greet(name):\n    return "hi " + name\n\n\nlabel = "😀 " + greet("world")\n'
    fixture = 'def greet(name):\n    return "hi " + name\n\n\nlabel = "😀 " + \n'
    emacs.open("greet.py", fixture, target, line=4)
    emacs.type("greet(")
    shown = emacs.wait("the ghost text", lambda state: state["ghost"] == '"world")')
    assert shown["line"] == 'label = "😀 " + greet()'
    emacs.press("Tab")
    emacs.wait("the accepted call", lambda state: state["buffer"] == target)


RECTANGLE = "def area(width, height):\n    assert width >= 0\n    return width * height\n"
RENAMED_RECTANGLE = RECTANGLE.replace("width", "w")


def next_edit(line: int, column: int, old: str, new: str) -> dict[str, Any]:
    """A next edit as the overlays show it: `old` struck out at (line, column), `new` after."""
    return {"line": line, "column": column, "old": old, "new": new}


def test_next_edit_of_a_rename_shows_on_screen_and_tab_walks_its_uses(
    emacs: EmacsInTerminal, tmp_path: Path
) -> None:
    """Renaming a parameter shows the rename at its next use, struck out and followed by the
    new name, on the terminal screen; TAB goes there, TAB makes it (the server counts the
    accept) and the next use shows at once; two more TABs finish the rename."""
    emacs.open(
        "rect.py",
        RECTANGLE,
        "",
        line=0,
        column=len("def area(width"),
        next_edit_target=RENAMED_RECTANGLE,
    )
    before = emacs.stats()["nextEdit"]
    emacs.press("M-BSpace")  # backward-kill-word: `width' goes
    emacs.type("w")
    first_use = next_edit(1, len("    assert "), "width", "w")
    shown = emacs.wait(
        "the next edit at the first use",
        lambda state: state["edits"] == [first_use] and state["ghost"] == "",
    )
    assert shown["buffer"] == RECTANGLE.replace("area(width", "area(w")
    assert (shown["row"], shown["column"]) == (0, len("def area(w"))
    emacs.screen.wait_for(
        lambda text: "\n    assert widthw >= 0\n" in text, WAIT, "the struck name and the new one"
    )
    emacs.screen.save_svg(
        screenshot_path(tmp_path, "emacs-next-edit.svg"), "lsp-spark next edit in Emacs (eglot)"
    )

    emacs.press("Tab")
    jumped = emacs.wait("the cursor at the edit", lambda state: state["row"] == 1)
    assert jumped["column"] == first_use["column"]
    assert jumped["edits"] == [first_use]

    emacs.press("Tab")
    second_use = next_edit(2, len("    return "), "width", "w")
    applied = emacs.wait(
        "the first use renamed and the second shown",
        lambda state: state["edits"] == [second_use],
    )
    assert applied["line"] == "    assert w >= 0"
    assert (applied["row"], applied["column"]) == (1, len("    assert w"))

    emacs.press("Tab")
    emacs.wait("the cursor at the second edit", lambda state: state["row"] == 2)
    emacs.press("Tab")
    done = emacs.wait("the rename finished", lambda state: state["buffer"] == RENAMED_RECTANGLE)
    assert done["edits"] == []
    emacs.wait_for_stats(
        "both edits shown and accepted",
        lambda stats: (
            stats["nextEdit"]["accepted"] == before["accepted"] + 2
            and stats["nextEdit"]["shown"] >= before["shown"] + 2
        ),
    )


def test_next_edit_is_dismissed_with_c_g(emacs: EmacsInTerminal) -> None:
    """C-g takes the shown next edit away and leaves the buffer as it was."""
    box = "def volume(depth, width, height):\n    return depth * width * height\n"
    emacs.open(
        "box.py",
        box,
        "",
        line=0,
        column=len("def volume(depth"),
        next_edit_target=box.replace("depth", "d"),
    )
    emacs.press("M-BSpace")
    emacs.type("d")
    renamed = box.replace("volume(depth", "volume(d")
    emacs.wait(
        "the next edit",
        lambda state: (
            state["edits"] == [next_edit(1, len("    return "), "depth", "d")]
            and state["ghost"] == ""
        ),
    )
    emacs.dismiss("depthd")  # the edit shows the old text, then the new
    dismissed = emacs.wait("the next edit dismissed", lambda state: state["edits"] == [])
    assert dismissed["buffer"] == renamed
    assert (dismissed["row"], dismissed["column"]) == (0, len("def volume(d"))


def test_flymake_diagnostics_reach_the_prediction_that_fixes_them(
    emacs: EmacsInTerminal,
) -> None:
    """A linter (a flymake backend beside eglot's) reports an undefined name; lsp-spark
    sends it to the server (lspSpark/diagnostics), the next prediction's prompt holds it,
    and the predicted fix shows and is made with TAB, TAB."""
    leftover = "def area(width, height):\n    return width * size\n"
    comment = "# Width times height."
    fixed = f"def area(width, height):\n    {comment}\n    return width * height\n"
    emacs.open(
        "leftover.py", leftover, "", line=0, next_edit_target=fixed, undefined_names=("size",)
    )
    emacs.wait("the linter's problem sent", lambda state: state["diagnostics-sent"] == 1)
    emacs.press("Enter")
    emacs.type(comment)
    fix = next_edit(2, len("    return width * "), "size", "height")
    emacs.wait(
        "the predicted fix",
        lambda state: state["edits"] == [fix] and state["ghost"] == "",
    )
    assert any(
        "Problems reported in the region:" in prompt and "undefined name 'size'" in prompt
        for prompt in emacs.oracle.next_edit_prompts
    ), emacs.oracle.next_edit_prompts
    emacs.press("Tab")
    emacs.wait("the cursor at the fix", lambda state: state["row"] == 2)
    emacs.press("Tab")
    emacs.wait("the fix made", lambda state: state["buffer"] == fixed)


def test_lsp_mode_shows_ghost_text_on_screen_and_tab_accepts_it(tmp_path: Path) -> None:
    """lsp-mode's own inline completion shows lsp-spark's suggestion (read off the screen:
    lsp-mode draws it over the character before the cursor) and accepts it with the item's
    command. Opt-in: lsp-mode 9.0.1+ is not packaged for Debian 12 (8.0.0; Debian 13 has
    9.0.0, also without inline completion; only unstable has 10.0.0), so this runs when
    LSP_SPARK_LSP_MODE_DIR names a folder of unpacked ELPA packages: lsp-mode and dash, f,
    ht, lv, markdown-mode, spinner."""
    packages = os.environ.get(LSP_MODE_DIR)
    if not packages:
        pytest.skip(f"lsp-mode 9.0.1+ is not packaged for Debian 12; set {LSP_MODE_DIR}")
    with emacs_in_terminal(tmp_path, LSP_MODE_SESSION, {LSP_MODE_DIR: packages}) as emacs:
        emacs.open("add.py", FIXTURE, COMPLETED, line=1)
        accepted_before = emacs.stats()["accepted"]
        emacs.type("r")
        emacs.screen.wait_for(
            lambda text: "\n    return a + b\n" in text, WAIT, "lsp-mode's ghost text"
        )
        assert emacs.state()["line"] == "    r"
        emacs.press("Tab")
        emacs.wait("the accepted line", lambda state: state["buffer"] == COMPLETED)
        emacs.wait_for_stats("the accept", lambda stats: stats["accepted"] == accepted_before + 1)


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


def test_the_readme_eglot_snippet_runs_as_written(tmp_path: Path) -> None:
    """The eglot snippet of editors/emacs/README.md, pasted into an init file of this Emacs
    (Debian's 28, which has no use-package), loads lsp-spark and hooks it into Python."""
    readme = (PACKAGE / "README.md").read_text(encoding="utf-8")
    snippet = next(
        block
        for block in re.findall(r"```elisp\n(.*?)```", readme, re.DOTALL)
        if "lsp-spark-eglot-ensure" in block
    )
    init = tmp_path / "init.el"
    init.write_text(snippet.replace("~/src/lsp-spark/editors/emacs", str(PACKAGE)))
    check = (
        '(princ (format "%S|%S|%S" (and (memq \'lsp-spark-eglot-ensure python-mode-hook) t)'
        " (fboundp 'lsp-spark-eglot-ensure) lsp-spark-settings))"
    )
    done = emacs_batch(tmp_path, "--load", str(init), "--eval", check)
    assert done.returncode == 0, done.stderr
    assert done.stdout == 't|t|(:backend "cerebras" :model "gpt-oss-120b")', done.stderr
