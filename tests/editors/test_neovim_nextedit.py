"""Next edits in real Neovim (0.7 and 0.11), typed into as a person types, against the real server.

A parameter is renamed in insert mode; the loopback Cerebras server, scripted with
`scripted_reply`, predicts the rename of its other uses. What the tests read is what the
user sees: the buffer, and the next edit as Neovim draws it from the plugin's extmarks
(the replaced text highlighted, the new text as virtual text), or the terminal screen.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsp_spark.testing.cerebras_server import CerebrasTestServer
from lsp_spark.testing.nextedit_model import is_next_edit_request, region_of, scripted_reply
from tests.editors import test_neovim
from tests.editors.terminal import TerminalScreen
from tests.editors.test_neovim import (
    BUNDLED_NVIM,
    EVENT_TIMEOUT,
    MODEL,
    START_TIMEOUT,
    Editor,
    Neovim,
    completing,
    connect,
    poll,
    screenshot,
    session_env,
    setup_lua,
)

# The Neovim tests' fixtures: both Neovims, the loopback Cerebras server, a file opened
# in Neovim with lsp-spark attached.
nvim = test_neovim.nvim
cerebras = test_neovim.cerebras
session = test_neovim.session

NEXT_EDIT_HIGHLIGHT = "LspSparkNextEdit"
DELETE_HIGHLIGHT = "LspSparkNextEditDelete"

BEFORE = """\
def area(height, width):
    print(width)
    return width * height
"""


def renamed(name: str) -> str:
    """BEFORE with `width` renamed to `name` everywhere: what the model predicts."""
    return BEFORE.replace("width", name)


def predicting(signature: str, expected: str) -> Callable[[dict[str, Any]], str]:
    """The loopback model: once the document's first line reads `signature` (the rename
    typed), the next edits are those that make the file `expected`; before that, and for
    ghost text, nothing."""

    def reply(request: dict[str, Any]) -> str:
        if not is_next_edit_request(request):
            return ""
        if signature not in region_of(request)[3]:
            return "<none/>"
        return scripted_reply(request, expected)

    return reply


# The buffer as drawn with the next-edit namespace's extmarks, one string per screen line:
# the highlighted range between `[-` and `-]`, virtual text between `{+` and `+}` where it
# is drawn (inside the line, or after its end following a space), virtual lines as lines
# of their own. With the highlight groups used, so a test sees the colours too.
DRAWN = r"""
local namespace = vim.api.nvim_get_namespaces()["lsp_spark_next_edit"]
local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
local cuts, tails, above, below, groups, count = {}, {}, {}, {}, {}, 0
local function cut(row, col, order, text)
  cuts[row] = cuts[row] or {}
  table.insert(cuts[row], { col = col, order = order, text = text })
end
local function chunks(list)
  local text = ""
  for _, chunk in ipairs(list) do
    text = text .. chunk[1]
    groups[chunk[2]] = true
  end
  return "{+" .. text .. "+}"
end
local marks = {}
if namespace then
  marks = vim.api.nvim_buf_get_extmarks(0, namespace, 0, -1, { details = true })
end
for _, mark in ipairs(marks) do
  count = count + 1
  local row, col, details = mark[2], mark[3], mark[4]
  if details.hl_group then
    groups[details.hl_group] = true
    cut(row, col, 3, "[-")
    cut(details.end_row, details.end_col, 1, "-]")
  end
  if details.virt_text then
    if details.virt_text_pos == "inline" then
      cut(row, col, 2, chunks(details.virt_text))
    else
      tails[row] = " " .. chunks(details.virt_text)
    end
  end
  for _, line in ipairs(details.virt_lines or {}) do
    local side = details.virt_lines_above and above or below
    side[row] = side[row] or {}
    table.insert(side[row], chunks(line))
  end
end
local drawn = {}
for index, line in ipairs(lines) do
  local row = index - 1
  local row_cuts = cuts[row] or {}
  -- Right to left, and at one column the later in the line first.
  table.sort(row_cuts, function(a, b)
    if a.col ~= b.col then return a.col > b.col end
    return a.order > b.order
  end)
  for _, c in ipairs(row_cuts) do
    line = line:sub(1, c.col) .. c.text .. line:sub(c.col + 1)
  end
  vim.list_extend(drawn, above[row] or {})
  table.insert(drawn, line .. (tails[row] or ""))
  vim.list_extend(drawn, below[row] or {})
end
local names = vim.tbl_keys(groups)
table.sort(names)
local links = {}
for _, name in ipairs(names) do
  links[name] = vim.fn.synIDattr(vim.fn.synIDtrans(vim.fn.hlID(name)), "name")
end
return { lines = drawn, marks = count, links = links }
"""


@dataclass(frozen=True)
class Drawn:
    """The buffer as Neovim draws it with the next edit, and the highlight groups it uses
    (with the group each resolves to)."""

    lines: list[str]
    marks: int
    links: dict[str, str]


def drawn(neovim: Neovim) -> Drawn:
    found = neovim.lua(DRAWN)
    links = found["links"] or {}
    return Drawn(list(found["lines"]), found["marks"], dict(links))


def wait_drawn(neovim: Neovim, lines: list[str], what: str) -> Drawn:
    return poll(lambda: drawn(neovim), lambda now: now.marks > 0 and now.lines == lines, what)


def wait_nothing_drawn(neovim: Neovim, what: str) -> Drawn:
    return poll(lambda: drawn(neovim), lambda now: now.marks == 0, what)


def inline(neovim: Neovim) -> bool:
    """Whether the new text is drawn inside the line (inline virtual text, 0.10+) rather
    than after its end."""
    return bool(neovim.lua("return vim.fn.has('nvim-0.10') == 1"))


def replacing(neovim: Neovim, head: str, old: str, new: str, tail: str) -> str:
    """A line drawn with `old` highlighted and `new` shown as its replacement."""
    if inline(neovim):
        return f"{head}[-{old}-]{{+{new}+}}{tail}"
    return f"{head}[-{old}-]{tail} {{+{new}+}}"


LINTER_WARNING = """
vim.diagnostic.set(vim.api.nvim_create_namespace("linter"), 0, {
  {
    lnum = 1, col = 10, end_lnum = 1, end_col = 15,
    severity = vim.diagnostic.severity.WARN, message = "width is unused", source = "linter",
  },
})
-- Where Neovim keeps what lsp-spark itself publishes: not sent back to it.
local own = vim.lsp.diagnostic.get_namespace(require("lsp_spark").client(0).id)
vim.diagnostic.set(own, 0, {
  { lnum = 2, col = 4, severity = vim.diagnostic.severity.HINT, message = "a review note" },
})
"""
PROBLEM_IN_PROMPT = "Problems reported in the region:\nline 2: width is unused (linter)\n\n"
"""How the server shows the model the warning the plugin forwarded, and nothing else."""


def rename_signature(neovim: Neovim, name: str) -> None:
    """On the signature's `width`, change the word (insert mode) and type `name`."""
    neovim.type("1G0f,w")
    neovim.type("ciw")
    poll(neovim.mode, lambda mode: mode == "i", "insert mode after ciw")
    neovim.type(name)


def test_tab_jumps_to_the_next_edit_applies_it_and_then_the_next_use(
    session: Callable[..., Neovim], cerebras: CerebrasTestServer
) -> None:
    cerebras.config.reply_fn = predicting("def area(height, w):", renamed("w"))
    neovim = session(BEFORE)
    # A linter's warning on the first use: the server hears of it from the plugin.
    neovim.lua(LINTER_WARNING)

    rename_signature(neovim, "w")
    first = wait_drawn(
        neovim,
        [
            "def area(height, w):",
            replacing(neovim, "    print(", "width", "w", ")"),
            "    return width * height",
        ],
        "the first use of the renamed parameter shown as the next edit",
    )
    assert first.links == {NEXT_EDIT_HIGHLIGHT: "DiffAdd", DELETE_HIGHLIGHT: "DiffDelete"}
    prompts = [
        request.body["messages"][-1]["content"]
        for request in cerebras.completion_requests
        if is_next_edit_request(request.body)
    ]
    assert any(PROBLEM_IN_PROMPT in prompt for prompt in prompts), prompts[-1]
    assert not any("a review note" in prompt for prompt in prompts), "lsp-spark's own"
    assert neovim.lines() == [
        "def area(height, w):",
        "    print(width)",
        "    return width * height",
    ]

    neovim.type("<Esc>")
    poll(neovim.mode, lambda mode: mode == "n", "normal mode")
    neovim.type("<Tab>")
    poll(
        lambda: neovim.nvim.current.window.cursor,
        lambda cursor: cursor == (2, len("    print(")),
        "Tab jumping to the next edit",
    )
    assert neovim.lines()[1] == "    print(width)", "the first Tab only jumps"

    neovim.type("<Tab>")
    neovim.wait_lines(
        ["def area(height, w):", "    print(w)", "    return width * height"],
        "Tab on the edit's line applying it",
    )
    wait_drawn(
        neovim,
        [
            "def area(height, w):",
            "    print(w)",
            replacing(neovim, "    return ", "width", "w", " * height"),
        ],
        "the next use offered at once after the first is applied",
    )
    neovim.type("<Tab>")
    poll(
        lambda: neovim.nvim.current.window.cursor,
        lambda cursor: cursor == (3, len("    return ")),
        "Tab jumping to the second use",
    )
    neovim.type("<Tab>")
    neovim.wait_lines(renamed("w").splitlines(), "the second use renamed")
    wait_nothing_drawn(neovim, "nothing more to show once the rename is done")
    # Each edit drawn was reported (didShowInlineEdit), each applied ran its command.
    stats = poll(
        neovim.stats,
        lambda stats: stats["nextEdit"]["accepted"] == 2,
        "lspSpark.acceptNextEdit run for both edits",
    )
    assert stats["nextEdit"]["shown"] == 2

    # With nothing shown, Tab is Neovim's own again: <C-O> goes back to where the last
    # jump to an edit started, Tab (the same key as <C-I>) forward to where it went.
    neovim.type("<C-o>")
    poll(lambda: neovim.nvim.current.window.cursor[0], lambda row: row == 2, "<C-o> back")
    neovim.type("<Tab>")
    poll(lambda: neovim.nvim.current.window.cursor[0], lambda row: row == 3, "Tab as <C-i>")
    assert neovim.lines() == renamed("w").splitlines()


def test_ghost_text_keeps_tab_and_alt_enter_applies_the_next_edit_in_insert_mode(
    session: Callable[..., Neovim], cerebras: CerebrasTestServer
) -> None:
    ghost = completing("def area(height, ", "size")
    next_edit = predicting("def area(height, size):", renamed("size"))

    def reply(request: dict[str, Any]) -> str:
        return next_edit(request) if is_next_edit_request(request) else ghost(request)

    cerebras.config.reply_fn = reply
    neovim = session(BEFORE)

    rename_signature(neovim, "s")
    neovim.wait_seen(["def area(height, size):"], "ghost text completing the new name")
    neovim.type("<Tab>")
    neovim.wait_lines(
        ["def area(height, size):", "    print(width)", "    return width * height"],
        "Tab accepting the ghost text",
    )
    wait_drawn(
        neovim,
        [
            "def area(height, size):",
            replacing(neovim, "    print(", "width", "size", ")"),
            "    return width * height",
        ],
        "the next edit after the ghost text is accepted",
    )
    assert neovim.mode() == "i"

    neovim.type("<M-CR>")
    neovim.wait_lines(
        ["def area(height, size):", "    print(size)", "    return width * height"],
        "Alt-Enter applying the next edit from insert mode",
    )
    assert neovim.mode() == "i"
    assert neovim.nvim.current.window.cursor == (1, len("def area(height, size")), (
        "the cursor stays"
    )
    wait_drawn(
        neovim,
        [
            "def area(height, size):",
            "    print(size)",
            replacing(neovim, "    return ", "width", "size", " * height"),
        ],
        "the next use offered after applying",
    )

    neovim.type("<Esc>")
    poll(neovim.mode, lambda mode: mode == "n", "normal mode")
    assert drawn(neovim).marks > 0, "leaving insert mode keeps the next edit"
    neovim.type("<Esc>")
    wait_nothing_drawn(neovim, "Esc in normal mode dismissing the next edit")
    assert neovim.lines()[2] == "    return width * height", "dismissing changes nothing"


def wait_attached(socket: Path) -> None:
    """Until lsp-spark is attached to the buffer of the Neovim listening on `socket`: a
    change made before the server is there has no next edit to bring."""
    api = poll(
        lambda: connect(socket), lambda api: api is not None, "Neovim's socket", START_TIMEOUT
    )
    assert api is not None
    try:
        poll(
            lambda: api.exec_lua("return require('lsp_spark').client(0) ~= nil"),
            bool,
            "lsp-spark attached to the buffer",
            START_TIMEOUT,
        )
    finally:
        api.close()


SCALED = """\
def area(height, width, scale):
    return width * height
"""
SCALED_EXPECTED = """\
def area(height, width, scale):
    scaled = width * scale
    return scaled * height
"""


def test_new_text_of_several_lines_is_drawn_as_the_lines_it_makes(
    session: Callable[..., Neovim], cerebras: CerebrasTestServer
) -> None:
    cerebras.config.reply_fn = predicting("def area(height, width, scale):", SCALED_EXPECTED)
    neovim = session(SCALED.replace(", scale", ""))

    neovim.type("1G$F)i")
    poll(neovim.mode, lambda mode: mode == "i", "insert mode")
    neovim.type(", scale")
    drawn_edit = [
        "def area(height, width, scale):",
        "    [-return width-] * height",
        "{+    scaled = width * scale+}",
        "{+    return scaled * height+}",
    ]
    shown = wait_drawn(neovim, drawn_edit, "the replaced text marked, the two new lines under it")
    assert shown.links == {NEXT_EDIT_HIGHLIGHT: "DiffAdd", DELETE_HIGHLIGHT: "DiffDelete"}

    neovim.type("x")
    wait_nothing_drawn(neovim, "the next edit gone once the text it was for changes")
    neovim.type("<BS>")
    wait_drawn(neovim, drawn_edit, "the next edit asked for again after the change")
    neovim.type("<M-CR>")
    neovim.wait_lines(SCALED_EXPECTED.splitlines(), "the two lines applied")


def test_the_next_edit_on_the_terminal_screen(
    nvim: Editor, tmp_path: Path, cerebras: CerebrasTestServer
) -> None:
    """What a person sees: the new name beside the old one, drawn by Neovim on a terminal."""
    cerebras.config.reply_fn = predicting("def area(height, w):", renamed("w"))
    file = tmp_path / "project" / "calc.py"
    file.parent.mkdir()
    file.write_text(BEFORE)
    transparent = 'vim.cmd("highlight Normal guibg=NONE ctermbg=NONE")\n'
    (tmp_path / "init.lua").write_text(setup_lua({"settings": {"model": MODEL}}) + transparent)
    env = session_env(tmp_path, cerebras) | {
        "NVIM_LOG_FILE": str(tmp_path / "nvim.log"),
        "COLORTERM": "truecolor",
    }
    # 0.10+ draws the new name inside the line, right after the old one; 0.7 after its end.
    shown = "    print(widthw)" if nvim.binary == str(BUNDLED_NVIM) else "    print(width) w"

    def rows(text: str) -> list[str]:
        return [row.rstrip() for row in text.splitlines()[:3]]

    # A socket to ask Neovim whether the server is attached yet (a path under ~100 bytes).
    socket_dir = tempfile.TemporaryDirectory(prefix="nvim-")
    socket = Path(socket_dir.name) / "socket"
    command = [nvim.binary, "--clean", "--listen", str(socket), "-u", str(tmp_path / "init.lua")]
    with (
        socket_dir,
        TerminalScreen(
            [*command, str(file)], env=env, cwd=file.parent, width=60, height=8
        ) as screen,
    ):
        screen.wait_for(lambda text: "def area(height, width" in text, START_TIMEOUT, "the file")
        wait_attached(socket)
        screen.send_keys("f", ",", "w", "c", "i", "w")
        screen.wait_for(lambda text: "-- INSERT --" in text, EVENT_TIMEOUT, "insert mode")
        screen.send_keys("w", literal=True)
        screen.wait_for(
            lambda text: rows(text) == ["def area(height, w):", shown, "    return width * height"],
            START_TIMEOUT,
            "the next edit's new name beside the old one",
        )
        screen.save_svg(
            screenshot(tmp_path, "neovim-next-edit.svg", nvim),
            f"lsp-spark next edit in Neovim {nvim.version}",
        )
        screen.send_keys("Escape")
        screen.wait_for(lambda text: "-- INSERT --" not in text, EVENT_TIMEOUT, "normal mode")
        screen.send_keys("Tab")
        screen.send_keys("Tab")
        screen.wait_for(
            lambda text: rows(text)[:2] == ["def area(height, w):", "    print(w)"],
            EVENT_TIMEOUT,
            "the next edit applied by Tab, Tab",
        )
