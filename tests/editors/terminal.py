"""A terminal editor on a real terminal screen: a private tmux server the tests type into and read.

The extmarks, overlays and buffers the other tests read are what the editor *means* to show;
this helper reads what the terminal *does* show, cell by cell, as a person would see it.
"""

from __future__ import annotations

import io
import shlex
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from tests.editors.helpers import missing_editor

SESSION = "editor"
"""The one session on the private server, which commands name as their target."""

TMUX_TIMEOUT = 15
"""Seconds any one tmux command may take on a busy machine before the test gives up."""

TERMINAL_TYPE = "screen-256color"
"""What tmux emulates, with 256 colours; its terminfo entry is in Debian's ncurses-base."""

POLL_INTERVAL = 0.05
"""Seconds between two looks at the screen while waiting for something to appear."""


class TerminalScreen:
    """A program in a private tmux server (`tmux -L <unique name>`, `-f /dev/null`), fixed size.

    The private socket keeps tests apart from each other and from anyone's own tmux; the
    empty configuration keeps the user's key bindings and status line off the screen.
    """

    def __init__(
        self,
        command: list[str],
        *,
        env: dict[str, str],
        cwd: Path,
        width: int = 100,
        height: int = 30,
    ) -> None:
        tmux = shutil.which("tmux")
        if tmux is None:
            missing_editor("tmux is not on PATH")
        self.width = width
        self.height = height
        self._tmux = [tmux, "-L", f"lsp-spark-{uuid.uuid4().hex[:12]}", "-f", "/dev/null"]
        # The private server starts with `env` (so the program's environment is `env`, plus
        # the TERM tmux emulates), and the terminal type is set before the one pane exists.
        # Without a status line the pane is the whole window: `height` rows of the program.
        server_env = {
            name: value for name, value in env.items() if name not in ("TMUX", "TMUX_PANE")
        }
        commands = [
            ["start-server"],
            ["set-option", "-g", "default-terminal", TERMINAL_TYPE],
            ["set-option", "-g", "status", "off"],
            # A program that dies leaves its last screen for the failure message to show.
            ["set-option", "-g", "remain-on-exit", "on"],
            [
                "new-session",
                "-d",
                "-s",
                SESSION,
                "-x",
                str(width),
                "-y",
                str(height),
                "-c",
                str(cwd),
            ],
        ]
        commands[-1].append(shlex.join(command))
        self._run(
            *[word for command_words in commands for word in [*command_words, ";"]][:-1],
            env=server_env,
        )

    def _run(self, *arguments: str, env: dict[str, str] | None = None) -> str:
        completed = subprocess.run(
            [*self._tmux, *arguments],
            capture_output=True,
            text=True,
            timeout=TMUX_TIMEOUT,
            env=env,
            check=False,
        )
        if completed.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(arguments)} failed: {completed.stderr.strip()}")
        return completed.stdout

    def send_keys(self, *keys: str, literal: bool = False) -> None:
        """Type `keys` as tmux key names (`Escape`, `Tab`, `C-]`), or as text with `literal`."""
        self._run("send-keys", *(["-l"] if literal else []), "-t", SESSION, *keys)

    def text(self) -> str:
        """What is on the screen now, one line per row, without colours."""
        return self._run("capture-pane", "-p", "-t", SESSION)

    def styled_text(self) -> str:
        """What is on the screen now with its colours and attributes, as escape sequences."""
        return self._run("capture-pane", "-e", "-p", "-t", SESSION)

    def wait_for(self, predicate: Callable[[str], bool], timeout: float, what: str) -> str:
        """Poll the screen (bounded: timeout and a max count) until predicate(screen) holds;
        raise AssertionError naming `what` and showing the last screen otherwise."""
        deadline = time.monotonic() + timeout
        screen = ""
        for _ in range(int(timeout / POLL_INTERVAL) + 1):
            screen = self.text()
            if predicate(screen):
                return screen
            if time.monotonic() >= deadline:
                break
            time.sleep(POLL_INTERVAL)
        raise AssertionError(
            f"the screen never showed {what} in {timeout} s; last screen:\n{screen}"
        )

    def save_svg(self, path: Path, title: str) -> None:
        """capture-pane -e -p (with colours) rendered as an SVG picture of the terminal
        (rich: Text.from_ansi + Console(record=True, width=...).export_svg)."""
        from rich.console import Console
        from rich.text import Text

        screen = self.styled_text()
        # Recording into a string: the picture is all that is wanted, not the console output.
        console = Console(
            record=True,
            width=self.width,
            height=self.height,
            file=io.StringIO(),
            force_terminal=True,
            color_system="truecolor",
        )
        # Read whole: tmux sets a colour once for as many rows as it lasts. Then one row at a
        # time, every row (blank ones too, so the picture is the terminal's size), none
        # wrapping onto the next when it fills the width.
        for row in Text.from_ansi(screen.removesuffix("\n")).split("\n")[: self.height]:
            console.print(row, no_wrap=True, overflow="crop")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(console.export_svg(title=title))

    def close(self) -> None:
        """Stop the private tmux server and with it the program."""
        subprocess.run([*self._tmux, "kill-server"], capture_output=True, timeout=TMUX_TIMEOUT)

    def __enter__(self) -> TerminalScreen:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
