-- Next edits for Neovim (every version the plugin supports, 0.7 and later).
--
-- After each change (debounced) the plugin asks the server for
-- `textDocument/copilotInlineEdit` at the cursor: the edit the user will most likely make
-- next, somewhere else in the file (the other uses of a name just renamed, say). The
-- first edit of the answer is drawn with extmarks: the text it replaces highlighted, and
-- its new text as virtual text right after that (0.10+; before, at the end of the line),
-- or, for new text of several lines, as virtual lines showing how those lines will read.
--
-- In normal mode `<Tab>` jumps to the edit, and on its line applies it; then the edit's
-- command runs on the server (`workspace/executeCommand`) and the plugin asks again,
-- which brings the next edit of the same prediction at once. In insert mode `<Tab>`
-- stays with ghost text: `<M-CR>` applies the edit shown without leaving insert mode.
--
-- The plugin also sends the buffer's diagnostics (other servers', linters') to the
-- server with `lspSpark/diagnostics`, so predictions can fix what they point at.
local util = require("lsp_spark.util")

local M = {}

local METHOD = "textDocument/copilotInlineEdit"
local SHOWN = "textDocument/didShowInlineEdit"
local DIAGNOSTICS = "lspSpark/diagnostics"
local METHOD_NOT_FOUND = -32601
-- lsp-spark's own diagnostics live in namespaces named after its client.
local OWN_DIAGNOSTICS = "^vim%.lsp%.lsp_spark%."

M.HIGHLIGHT = "LspSparkNextEdit"
M.DELETE_HIGHLIGHT = "LspSparkNextEditDelete"
-- Fired (`User LspSparkNextEdit`) each time a next edit is drawn, e.g. for a statusline.
M.SHOWN_EVENT = "LspSparkNextEdit"
-- Milliseconds of quiet after a change before asking: one request per burst of typing.
M.DEBOUNCE_MS = 50

M.namespace = vim.api.nvim_create_namespace("lsp_spark_next_edit")

local inline_virt_text = util.has("0.10")
local uv = vim.uv or vim.loop

util.link_highlights("lsp_spark_next_edit_highlights", {
  [M.HIGHLIGHT] = "DiffAdd",
  [M.DELETE_HIGHLIGHT] = "DiffDelete",
})

-- Per buffer: the client, the debounce timer, the request in flight and the edit shown.
local buffers = {}

-- The document version the client reports to the server (the buffer's changedtick since
-- its last change), which the server's answers carry back.
local function version_of(bufnr)
  return util.present(vim.lsp.util.buf_versions[bufnr])
    or vim.api.nvim_buf_get_changedtick(bufnr)
end

local function encoding_of(client)
  return client.offset_encoding or "utf-16"
end

local function hide(state)
  vim.api.nvim_buf_clear_namespace(state.bufnr, M.namespace, 0, -1)
  state.edit = nil
end

--- The edit shown in the current buffer while it still applies to the text there, or nil.
local function shown_edit()
  local state = buffers[vim.api.nvim_get_current_buf()]
  local edit = state and state.edit
  if edit and edit.version == version_of(state.bufnr) then
    return state, edit
  end
  return nil
end

local function buffer_line(bufnr, row)
  return vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ""
end

--- An edit of the answer with its range as byte columns of the buffer as it is now, or
--- nil when it does not fit the buffer.
local function parse_edit(raw, bufnr, encoding)
  local range = util.present(raw.range)
  if type(raw.text) ~= "string" or type(range) ~= "table" then
    return nil
  end
  local line_count = vim.api.nvim_buf_line_count(bufnr)
  local start, finish = range.start, range["end"]
  if start.line < 0 or start.line >= line_count or finish.line < start.line then
    return nil
  end
  local edit = {
    raw = raw,
    text = raw.text,
    command = util.present(raw.command),
    start_row = start.line,
    start_col = util.byte_column(buffer_line(bufnr, start.line), start.character, encoding),
  }
  if finish.line >= line_count then
    -- A range up to the line after the last one ends at the end of the buffer.
    edit.end_row = line_count - 1
    edit.end_col = #buffer_line(bufnr, line_count - 1)
  else
    edit.end_row = finish.line
    edit.end_col = util.byte_column(buffer_line(bufnr, finish.line), finish.character, encoding)
  end
  if edit.end_row == edit.start_row and edit.end_col < edit.start_col then
    return nil
  end
  return edit
end

--- `text` with its tabs turned into the spaces they take on screen: virtual text draws
--- a tab as a control character.
local function expand_tabs(text, tabstop)
  if not text:find("\t", 1, true) then
    return text
  end
  local out = ""
  for char in text:gmatch(".") do
    if char == "\t" then
      out = out .. string.rep(" ", tabstop - vim.fn.strdisplaywidth(out) % tabstop)
    else
      out = out .. char
    end
  end
  return out
end

-- The lines the edit's rows will read once it is applied, and whether the last of the
-- edit's rows stays as it is (the range ends at its start and the new text at a line
-- break): then the new lines go above that row, not below it.
local function lines_after(bufnr, edit)
  local first = buffer_line(bufnr, edit.start_row)
  local last = buffer_line(bufnr, edit.end_row)
  local lines = vim.split(edit.text, "\n", { plain = true })
  lines[1] = first:sub(1, edit.start_col) .. lines[1]
  lines[#lines] = lines[#lines] .. last:sub(edit.end_col + 1)
  local last_untouched = edit.end_col == 0 and lines[#lines] == last
  if last_untouched then
    table.remove(lines)
  end
  return lines, last_untouched
end

-- Draw `edit`: what it replaces highlighted, what it brings as virtual text.
local function render(state, edit)
  local bufnr = state.bufnr
  hide(state)
  local function set(row, col, options)
    vim.api.nvim_buf_set_extmark(bufnr, M.namespace, row, col, options)
  end
  local replaces = edit.start_row ~= edit.end_row or edit.start_col ~= edit.end_col
  if replaces then
    set(edit.start_row, edit.start_col, {
      end_row = edit.end_row,
      end_col = edit.end_col,
      hl_group = M.DELETE_HIGHLIGHT,
      -- A range over line breaks: the highlight runs to the window's edge on those lines.
      hl_eol = edit.end_row > edit.start_row,
    })
  end
  local single_line = edit.start_row == edit.end_row and not edit.text:find("\n", 1, true)
  if single_line then
    if edit.text ~= "" then
      local chunk = { { edit.text, M.HIGHLIGHT } }
      if inline_virt_text then
        set(edit.end_row, edit.end_col, { virt_text = chunk, virt_text_pos = "inline" })
      else
        set(edit.end_row, edit.end_col, { virt_text = chunk, virt_text_pos = "eol" })
      end
    end
  else
    local lines, above = lines_after(bufnr, edit)
    if #lines > 0 then
      local tabstop = vim.bo[bufnr].tabstop
      local virt_lines = {}
      for _, line in ipairs(lines) do
        table.insert(virt_lines, { { expand_tabs(line, tabstop), M.HIGHLIGHT } })
      end
      set(edit.end_row, 0, { virt_lines = virt_lines, virt_lines_above = above })
    end
  end
  state.edit = edit
  local client = util.client_of(state)
  if client then
    util.send_notification(client, SHOWN, { item = edit.raw })
  end
  vim.cmd("doautocmd <nomodeline> User " .. M.SHOWN_EVENT)
end

-- Ask for the next edit at the cursor and draw the first one the answer brings, unless
-- the buffer changed or another request went out meanwhile.
local function ask(state)
  local bufnr = state.bufnr
  local client = util.client_of(state)
  if not client or state.unsupported or not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  if vim.api.nvim_get_current_buf() ~= bufnr then
    return
  end
  util.cancel_inflight(state)
  local cursor = vim.api.nvim_win_get_cursor(0)
  local encoding = encoding_of(client)
  local version = version_of(bufnr)
  local uri = vim.uri_from_bufnr(bufnr)
  local params = {
    textDocument = { uri = uri, version = version },
    position = util.position(bufnr, cursor[1] - 1, cursor[2], encoding),
  }
  local id
  id = util.request(client, METHOD, params, function(err, result)
    if state.inflight ~= id then
      return
    end
    state.inflight = nil
    if err then
      -- A server without next edits: stop asking it on every change.
      state.unsupported = err.code == METHOD_NOT_FOUND
      return
    end
    if not vim.api.nvim_buf_is_valid(bufnr) or version_of(bufnr) ~= version then
      return
    end
    result = util.present(result)
    local raw = result and util.present(result.edits) and result.edits[1]
    if not raw then
      return
    end
    local document = util.present(raw.textDocument) or {}
    if document.version ~= version or (document.uri and document.uri ~= uri) then
      return
    end
    local edit = parse_edit(raw, bufnr, encoding)
    if edit then
      edit.version = version
      render(state, edit)
    end
  end, bufnr)
  state.inflight = id
end

local function ask_soon(state)
  state.timer:stop()
  state.timer:start(
    M.DEBOUNCE_MS,
    0,
    vim.schedule_wrap(function()
      ask(state)
    end)
  )
end

-- Every change: the edit shown no longer fits the text; ask again once typing pauses.
local function on_change(state)
  local version = version_of(state.bufnr)
  if version == state.changed_version then
    return
  end
  state.changed_version = version
  if state.edit and state.edit.version ~= version then
    hide(state)
  end
  -- An edit the plugin applied asks again itself, once the server has heard of it.
  if version ~= state.applied_version then
    ask_soon(state)
  end
end

-- Where the cursor lands after applying: on the new text's last character (normal mode).
local function end_of_new_text(edit)
  local lines = vim.split(edit.text, "\n", { plain = true })
  local row = edit.start_row + #lines - 1
  local col = #lines[#lines]
  if #lines == 1 then
    col = col + edit.start_col
  end
  return row, col
end

--- Apply the edit shown, run its command, and ask for the next one. In normal mode the
--- cursor goes to the end of the new text; in insert mode it stays where the user types.
function M.apply()
  local state, edit = shown_edit()
  if not state then
    return false
  end
  local client = util.client_of(state)
  if not client then
    return false
  end
  hide(state)
  util.cancel_inflight(state)
  state.timer:stop()
  vim.lsp.util.apply_text_edits(
    { { range = edit.raw.range, newText = edit.text } },
    state.bufnr,
    encoding_of(client)
  )
  local applied = version_of(state.bufnr)
  state.applied_version = applied
  if vim.api.nvim_get_mode().mode == "n" then
    local row, col = end_of_new_text(edit)
    local line = buffer_line(state.bufnr, row)
    col = math.max(math.min(col, #line) - 1, 0)
    vim.api.nvim_win_set_cursor(0, { row + 1, col })
  end
  local function ask_next()
    if vim.api.nvim_buf_is_valid(state.bufnr) and version_of(state.bufnr) == applied then
      ask(state)
    end
  end
  if edit.command then
    local params = { command = edit.command.command, arguments = edit.command.arguments }
    util.request(client, "workspace/executeCommand", params, ask_next, state.bufnr)
  else
    ask_next()
  end
  return true
end

--- Normal mode's key: away from the edit's first line, go there (a jump: `''` returns);
--- on it, apply the edit.
function M.jump_or_apply()
  local _, edit = shown_edit()
  if not edit then
    return false
  end
  if vim.api.nvim_win_get_cursor(0)[1] - 1 ~= edit.start_row then
    vim.cmd("normal! m'")
    vim.api.nvim_win_set_cursor(0, { edit.start_row + 1, edit.start_col })
    -- Open the folds hiding it.
    vim.cmd("normal! zv")
    return true
  end
  return M.apply()
end

--- Hide the edit shown until the next change; false when none was shown.
function M.dismiss()
  local state = shown_edit()
  if not state then
    return false
  end
  util.cancel_inflight(state)
  hide(state)
  return true
end

-- The keys of setup's `keys` for next edits: the mode each works in and what it does.
local KEYS = {
  apply_edit = { mode = "n", action = "jump_or_apply", what = "jump to or apply the next edit" },
  apply_edit_insert = { mode = "i", action = "apply", what = "apply the next edit" },
  dismiss_edit = { mode = "n", action = "dismiss", what = "dismiss the next edit" },
}

--- What the key `name` types: its action when an edit is shown, else the key itself.
function M.key_pressed(name)
  if shown_edit() then
    -- <Cmd>: the action runs without leaving the mode; an expression mapping itself may
    -- not change the buffer.
    return util.termcodes(("<Cmd>lua require'lsp_spark.nextedit'.%s()<CR>"):format(KEYS[name].action))
  end
  return util.termcodes(buffers[vim.api.nvim_get_current_buf()].keys[name])
end

local function map_keys(bufnr, keys)
  for name, key in pairs(KEYS) do
    if keys[name] then
      -- A Vimscript expression rather than a Lua callback: Neovim 0.7 types the special
      -- keys a Lua expression mapping returns as text.
      local rhs = ("v:lua.require'lsp_spark.nextedit'.key_pressed('%s')"):format(name)
      vim.api.nvim_buf_set_keymap(bufnr, key.mode, keys[name], rhs, {
        expr = true,
        noremap = true,
        desc = "lsp-spark: " .. key.what,
      })
    end
  end
end

-- vim.diagnostic's severities are LSP's numbers (1 error to 4 hint). Columns are counted
-- again in the client's encoding: `vim.lsp.diagnostic.from` would pass on another
-- server's ranges in that server's encoding, or byte columns as characters.
local function lsp_diagnostic(bufnr, diagnostic, encoding)
  local end_lnum = diagnostic.end_lnum or diagnostic.lnum
  local end_col = diagnostic.end_col or diagnostic.col
  return {
    range = {
      start = util.position(bufnr, diagnostic.lnum, diagnostic.col, encoding),
      ["end"] = util.position(bufnr, end_lnum, end_col, encoding),
    },
    severity = diagnostic.severity,
    message = diagnostic.message,
    source = diagnostic.source,
    code = diagnostic.code,
  }
end

local function is_own(namespace)
  local name = (vim.diagnostic.get_namespace(namespace) or {}).name or ""
  return name:find(OWN_DIAGNOSTICS) ~= nil
end

-- Send the buffer's diagnostics when they differ from what the server last heard.
local function forward_diagnostics(state)
  local client = util.client_of(state)
  if not client or not vim.api.nvim_buf_is_valid(state.bufnr) then
    return
  end
  local encoding = encoding_of(client)
  local diagnostics = {}
  for _, diagnostic in ipairs(vim.diagnostic.get(state.bufnr)) do
    if not is_own(diagnostic.namespace) then
      table.insert(diagnostics, lsp_diagnostic(state.bufnr, diagnostic, encoding))
    end
  end
  local sent = vim.fn.json_encode(diagnostics)
  if sent == state.diagnostics_sent then
    return
  end
  state.diagnostics_sent = sent
  util.send_notification(client, DIAGNOSTICS, {
    uri = vim.uri_from_bufnr(state.bufnr),
    diagnostics = diagnostics,
  })
end

--- Ask `client` for next edits in `bufnr` as the user edits, with setup's `keys` (or
--- none: false), and send it the buffer's diagnostics.
function M.attach(client, bufnr, keys)
  local previous = buffers[bufnr]
  if previous then
    util.cancel_inflight(previous)
    previous.timer:close()
  end
  local state = {
    bufnr = bufnr,
    client_id = client.id,
    keys = keys,
    timer = uv.new_timer(),
    changed_version = version_of(bufnr),
    -- Nothing sent yet: as far as the server knows, no diagnostics.
    diagnostics_sent = "[]",
  }
  buffers[bufnr] = state
  hide(state)
  local group = vim.api.nvim_create_augroup("lsp_spark_next_edit_" .. bufnr, { clear = true })
  local function on(events, callback)
    vim.api.nvim_create_autocmd(events, { group = group, buffer = bufnr, callback = callback })
  end
  -- Typing, pasting, undo and accepting ghost text (which types the suggestion) all
  -- come here.
  on({ "TextChanged", "TextChangedI" }, function()
    on_change(state)
  end)
  on({ "CursorMoved", "CursorMovedI" }, function()
    if state.edit and state.edit.version ~= version_of(bufnr) then
      hide(state)
    end
  end)
  -- Several namespaces change one after another: one notification for all of them.
  local forward_pending = false
  on("DiagnosticChanged", function()
    if not forward_pending then
      forward_pending = true
      vim.schedule(function()
        forward_pending = false
        forward_diagnostics(state)
      end)
    end
  end)
  on("BufWipeout", function()
    util.cancel_inflight(state)
    state.timer:close()
    buffers[bufnr] = nil
    vim.api.nvim_del_augroup_by_id(group)
  end)
  if keys then
    map_keys(bufnr, keys)
  end
  vim.schedule(function()
    forward_diagnostics(state)
  end)
end

return M
