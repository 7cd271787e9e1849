-- lsp-spark for Neovim: ghost text (the built-in inline completion on 0.12+, the plugin's
-- own extmarks on 0.7 to 0.11, see ghost.lua), next edits (nextedit.lua), completion
-- items, :LspSparkStats and :LspSparkEdit.
local util = require("lsp_spark.util")

local M = {}

local NAME = "lsp_spark"
local STATS_METHOD = "lspSpark/stats"
local EDIT_COMMAND = "lspSpark.editWithInstruction"

local DEFAULT_KEYS = {
  accept = "<Tab>",
  accept_word = "<M-Right>",
  accept_line = "<M-C-Right>",
  next = "<M-]>",
  prev = "<M-[>",
  dismiss = "<C-]>",
  -- Next edits (nextedit.lua): normal mode, insert mode, normal mode.
  apply_edit = "<Tab>",
  apply_edit_insert = "<M-CR>",
  dismiss_edit = "<Esc>",
}
local DEFAULT_ROOT_MARKERS = { ".git", ".hg", ".svn" }

local has, notify, present = util.has, util.notify, util.present

local function resolve_options(opts)
  opts = opts or {}
  if opts.cmd ~= nil and type(opts.cmd) ~= "table" then
    error("lsp_spark.setup: cmd must be a list of strings", 2)
  end
  if opts.settings ~= nil and type(opts.settings) ~= "table" then
    error("lsp_spark.setup: settings must be a table", 2)
  end
  if opts.next_edit ~= nil and type(opts.next_edit) ~= "boolean" then
    error("lsp_spark.setup: next_edit must be true or false", 2)
  end
  if opts.filetypes ~= nil and type(opts.filetypes) ~= "table" then
    error("lsp_spark.setup: filetypes must be a list or nil (all filetypes)", 2)
  end
  local keys = opts.keys
  if keys ~= false then
    if keys ~= nil and type(keys) ~= "table" then
      error("lsp_spark.setup: keys must be a table or false", 2)
    end
    keys = vim.tbl_extend("force", DEFAULT_KEYS, keys or {})
  end
  -- An empty Lua table would be sent as a JSON array; the server wants an object.
  local settings = opts.settings
  if settings == nil or next(settings) == nil then
    settings = vim.empty_dict()
  end
  return {
    cmd = opts.cmd or { "lsp-spark", "serve" },
    settings = settings,
    filetypes = opts.filetypes,
    root_markers = opts.root_markers or DEFAULT_ROOT_MARKERS,
    keys = keys,
    next_edit = opts.next_edit ~= false,
  }
end

--- The nearest ancestor directory of `path` holding one of `markers`, or nil.
function M.find_root(path, markers)
  local dir = vim.fn.fnamemodify(path, ":p:h")
  while true do
    for _, marker in ipairs(markers) do
      if vim.fn.getftype(dir .. "/" .. marker) ~= "" then
        return dir
      end
    end
    local parent = vim.fn.fnamemodify(dir, ":h")
    if parent == dir then
      return nil
    end
    dir = parent
  end
end

local function wanted(config, bufnr)
  if vim.bo[bufnr].buftype ~= "" or vim.api.nvim_buf_get_name(bufnr) == "" then
    return false
  end
  local filetype = vim.bo[bufnr].filetype
  if filetype == "" then
    return false
  end
  return config.filetypes == nil or vim.tbl_contains(config.filetypes, filetype)
end

local function root_of(config, bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  return M.find_root(name, config.root_markers) or vim.fn.getcwd()
end

local function all_clients()
  if vim.lsp.get_clients then
    return vim.lsp.get_clients()
  end
  return vim.lsp.get_active_clients()
end

--- The lsp-spark client attached to `bufnr` (default: current buffer), or nil.
function M.client(bufnr)
  if bufnr == nil or bufnr == 0 then
    bufnr = vim.api.nvim_get_current_buf()
  end
  for _, client in ipairs(all_clients()) do
    if client.name == NAME and client.attached_buffers[bufnr] then
      return client
    end
  end
  return nil
end

local request, position = util.request, util.position

--- LSP range for a command: the characterwise visual selection when the command was
--- given the `'<,'>` range of one, the given lines when it had another range, else the cursor.
function M.edit_range(bufnr, command, encoding)
  if command.range == 0 then
    local cursor = vim.api.nvim_win_get_cursor(0)
    local at = position(bufnr, cursor[1] - 1, cursor[2], encoding)
    return { start = at, ["end"] = at }
  end
  local first = vim.api.nvim_buf_get_mark(bufnr, "<")
  local last = vim.api.nvim_buf_get_mark(bufnr, ">")
  if vim.fn.visualmode() == "v" and first[1] == command.line1 and last[1] == command.line2 then
    local last_line = vim.api.nvim_buf_get_lines(bufnr, last[1] - 1, last[1], false)[1] or ""
    local end_col = last[2]
    if vim.o.selection ~= "exclusive" then
      end_col = end_col + util.char_length(last_line, end_col)
    end
    return {
      start = position(bufnr, first[1] - 1, first[2], encoding),
      ["end"] = position(bufnr, last[1] - 1, end_col, encoding),
    }
  end
  local last_line = vim.api.nvim_buf_get_lines(bufnr, command.line2 - 1, command.line2, false)[1]
  return {
    start = { line = command.line1 - 1, character = 0 },
    ["end"] = position(bufnr, command.line2 - 1, #(last_line or ""), encoding),
  }
end

--- One line about the server's numbers, from an `lspSpark/stats` answer.
function M.format_stats(stats)
  local parts = { ("%s %s"):format(present(stats.backend) or "?", present(stats.model) or "?") }
  local last = present(stats.lastLatencyMs)
  if last then
    local speed = present(stats.lastTokensPerSecond)
    local tail = speed and (", %.0f tok/s"):format(speed) or ""
    table.insert(parts, ("last %.0f ms%s"):format(last, tail))
  end
  local latency = present(stats.latencyMs) or {}
  local p50, p95 = present(latency.p50), present(latency.p95)
  if p50 and p95 then
    table.insert(parts, ("p50 %.0f ms, p95 %.0f ms"):format(p50, p95))
  end
  local hit_rate = present(stats.cacheHitRate) or 0
  table.insert(parts, ("cache hits %.0f%%"):format(hit_rate * 100))
  table.insert(
    parts,
    ("shown %d, accepted %d"):format(present(stats.shown) or 0, present(stats.accepted) or 0)
  )
  return table.concat(parts, " | ")
end

local function require_client()
  local client = M.client(0)
  if client == nil then
    notify("no lsp-spark server is attached to this buffer", vim.log.levels.WARN)
  end
  return client
end

--- :LspSparkStats — ask the server for its numbers and print them.
function M.stats()
  local client = require_client()
  if client == nil then
    return
  end
  request(client, STATS_METHOD, vim.empty_dict(), function(err, result)
    if err then
      notify("stats failed: " .. tostring(err.message or err), vim.log.levels.ERROR)
    elseif present(result) then
      notify(M.format_stats(result))
    end
  end, vim.api.nvim_get_current_buf())
end

--- :[range]LspSparkEdit {instruction} — the server rewrites the range and applies the edit.
function M.edit(instruction, command)
  local client = require_client()
  if client == nil then
    return
  end
  local bufnr = vim.api.nvim_get_current_buf()
  local argument = {
    uri = vim.uri_from_bufnr(bufnr),
    range = M.edit_range(bufnr, command, client.offset_encoding or "utf-16"),
    instruction = instruction,
  }
  local params = { command = EDIT_COMMAND, arguments = { argument } }
  request(client, "workspace/executeCommand", params, function(err)
    if err then
      notify("edit failed: " .. tostring(err.message or err), vim.log.levels.ERROR)
    end
  end, bufnr)
end

local function map_inline_keys(keys, bufnr)
  local inline = vim.lsp.inline_completion
  local function fallthrough(lhs, act)
    if lhs then
      vim.keymap.set("i", lhs, function()
        if act() then
          return ""
        end
        return lhs
      end, { buffer = bufnr, expr = true, desc = "lsp-spark: " .. lhs })
    end
  end
  fallthrough(keys.accept, function()
    return inline.get()
  end)
  fallthrough(keys.dismiss, function()
    return inline.get({ on_accept = function() end })
  end)
  for name, count in pairs({ next = 1, prev = -1 }) do
    if keys[name] then
      vim.keymap.set("i", keys[name], function()
        inline.select({ count = count })
      end, { buffer = bufnr, desc = "lsp-spark: " .. name .. " suggestion" })
    end
  end
end

local function on_attach(config)
  return function(client, bufnr)
    if vim.bo[bufnr].omnifunc == "" then
      vim.bo[bufnr].omnifunc = "v:lua.vim.lsp.omnifunc"
    end
    if config.next_edit then
      require("lsp_spark.nextedit").attach(client, bufnr, config.keys)
    end
    local capabilities = client.server_capabilities or {}
    if not capabilities.inlineCompletionProvider then
      return
    end
    if has("0.12") and vim.lsp.inline_completion then
      -- After the attach completes, so the capability sees this client on the buffer.
      vim.schedule(function()
        if vim.api.nvim_buf_is_valid(bufnr) then
          vim.lsp.inline_completion.enable(true, { bufnr = bufnr })
          if config.keys then
            map_inline_keys(config.keys, bufnr)
          end
        end
      end)
    else
      require("lsp_spark.ghost").attach(client, bufnr, config.keys)
    end
  end
end

local function client_config(config, root)
  return {
    name = NAME,
    cmd = config.cmd,
    root_dir = root,
    init_options = config.settings,
    settings = { lspSpark = config.settings },
    on_attach = on_attach(config),
  }
end

-- 0.7 to 0.10: one client per root, started and attached from a FileType autocmd.
local roots = {}

local function attach_legacy(config, bufnr)
  if not wanted(config, bufnr) then
    return
  end
  local root = root_of(config, bufnr)
  local client_id = roots[root]
  if client_id == nil or vim.lsp.get_client_by_id(client_id) == nil then
    client_id = vim.lsp.start_client(client_config(config, root))
    if client_id == nil then
      notify("could not start " .. table.concat(config.cmd, " "), vim.log.levels.ERROR)
      return
    end
    roots[root] = client_id
  end
  vim.lsp.buf_attach_client(bufnr, client_id)
end

local function setup_native(config)
  local native = client_config(config, nil)
  native.filetypes = config.filetypes
  native.root_dir = function(bufnr, on_dir)
    if wanted(config, bufnr) then
      on_dir(root_of(config, bufnr))
    end
  end
  vim.lsp.config(NAME, native)
  vim.lsp.enable(NAME)
end

local function setup_legacy(config)
  local group = vim.api.nvim_create_augroup("lsp_spark", { clear = true })
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    callback = function(args)
      attach_legacy(config, args.buf)
    end,
  })
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) then
      attach_legacy(config, bufnr)
    end
  end
end

function M.setup(opts)
  local config = resolve_options(opts)
  M.config = config
  if has("0.11") then
    setup_native(config)
  else
    setup_legacy(config)
  end
  vim.api.nvim_create_user_command("LspSparkStats", M.stats, {
    desc = "lsp-spark: latency, cache and acceptance numbers",
  })
  vim.api.nvim_create_user_command("LspSparkEdit", function(command)
    M.edit(command.args, command)
  end, {
    nargs = "+",
    range = true,
    desc = "lsp-spark: rewrite the selection (or insert at the cursor) following an instruction",
  })
end

return M
