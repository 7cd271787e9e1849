-- Ghost text for Neovim without `vim.lsp.inline_completion` (0.7 to 0.11).
--
-- While you type in insert mode the plugin asks the server for
-- `textDocument/inlineCompletion` at the cursor (cancelling the request the previous
-- keystroke left in flight) and draws the first item as virtual text of an extmark:
-- the rest of the cursor's line in `virt_text`, the item's further lines in `virt_lines`.
-- What is drawn is what the line will read once the item is accepted, so an item whose
-- range covers text right of the cursor (an auto-inserted `)`) shows it replaced.
--
-- Accepting types the text through an expression mapping (as if pasted: one undoable
-- step, no auto-indent of the server's already indented lines), then
-- runs the item's command on the server (`workspace/executeCommand`) or, for a word or a
-- line of it, tells the server with `textDocument/didPartiallyAcceptCompletion`.
local util = require("lsp_spark.util")

local M = {}

local METHOD = "textDocument/inlineCompletion"
local PARTIAL_ACCEPT = "textDocument/didPartiallyAcceptCompletion"
local TRIGGER_INVOKED = 1
local TRIGGER_AUTOMATIC = 2
M.HIGHLIGHT = "LspSparkGhostText"
M.COUNT_HIGHLIGHT = "LspSparkGhostTextCount"
-- Fired (`User LspSparkGhostText`) each time ghost text is drawn, e.g. for a statusline.
M.SHOWN_EVENT = "LspSparkGhostText"

M.namespace = vim.api.nvim_create_namespace("lsp_spark_ghost_text")

local inline_virt_text = util.has("0.10")

util.link_highlights("lsp_spark_ghost_highlights", {
  [M.HIGHLIGHT] = "Comment",
  [M.COUNT_HIGHLIGHT] = "Comment",
})

-- Per buffer: the client, the request in flight, the items of the last answer and the
-- one shown.
local buffers = {}

-- Plain insert mode: while a completion menu or CTRL-X mode is up (`ic`, `ix`) the menu
-- has the user's attention and no ghost text is drawn.
local function in_insert_mode()
  return vim.api.nvim_get_mode().mode == "i"
end

-- Where the cursor is now, and a key that changes with every edit and every move.
local function cursor_state(bufnr)
  local cursor = vim.api.nvim_win_get_cursor(0)
  local row, col = cursor[1] - 1, cursor[2]
  local line = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ""
  local key = table.concat({ vim.api.nvim_buf_get_changedtick(bufnr), row, col }, ":")
  return { bufnr = bufnr, row = row, col = col, line = line, key = key }
end

local function hide(state)
  vim.api.nvim_buf_del_extmark(state.bufnr, M.namespace, state.extmark)
  state.view = nil
end

-- Forget the items and stop asking: the user left insert mode or the buffer.
local function reset(state)
  util.cancel_inflight(state)
  hide(state)
  state.items = nil
  state.requested = nil
end

--- An item of the answer, with its range as byte columns of the line it was asked on.
local function parse_item(raw, asked, encoding)
  if type(raw.insertText) ~= "string" then
    return nil
  end
  local start_col, end_col = asked.col, asked.col
  local range = util.present(raw.range)
  if range then
    if range.start.line ~= asked.row or range["end"].line ~= asked.row then
      return nil
    end
    start_col = util.byte_column(asked.line, range.start.character, encoding)
    end_col = util.byte_column(asked.line, range["end"].character, encoding)
    if start_col > asked.col or end_col < asked.col then
      return nil
    end
  end
  return {
    raw = raw,
    text = raw.insertText,
    row = asked.row,
    start_col = start_col,
    -- The text right of the cursor that accepting replaces: it stays right of the cursor
    -- while the user types, however far the columns move.
    replaced = asked.line:sub(asked.col + 1, end_col),
    command = util.present(raw.command),
  }
end

-- The text from the start of `item` to the cursor, over the lines its line breaks (typed
-- or accepted) have made since; nil when the cursor is elsewhere.
local function typed_since(item, at)
  if at.row < item.row or (at.row == item.row and at.col < item.start_col) then
    return nil
  end
  local _, breaks = item.text:gsub("\n", "")
  if at.row - item.row > breaks then
    return nil
  end
  local lines = vim.api.nvim_buf_get_lines(at.bufnr, item.row, at.row + 1, false)
  lines[#lines] = lines[#lines]:sub(1, at.col)
  lines[1] = lines[1]:sub(item.start_col + 1)
  return table.concat(lines, "\n")
end

--- What `item` still adds at the cursor, or nil when the typing since went elsewhere.
local function view_of(item, at)
  local typed = typed_since(item, at)
  if typed == nil or item.text:sub(1, #typed) ~= typed then
    return nil
  end
  if at.line:sub(at.col + 1, at.col + #item.replaced) ~= item.replaced then
    return nil
  end
  local ghost = item.text:sub(#typed + 1)
  if ghost == "" or ghost == item.replaced then
    return nil
  end
  return {
    item = item,
    row = at.row,
    col = at.col,
    typed = typed,
    ghost = ghost,
    replaced = item.replaced,
    after = at.line:sub(at.col + #item.replaced + 1),
    rest_of_line = at.line:sub(at.col + 1),
  }
end

local function ends_with(text, suffix)
  return suffix == "" or text:sub(-#suffix) == suffix
end

-- The extmark that draws `view`: the line as it reads after accepting, over the old one.
local function extmark_options(state, view)
  local lines = vim.split(view.ghost, "\n", { plain = true })
  local count = nil
  if state.cycled and #state.items > 1 then
    count = { (" (%d/%d)"):format(state.index, #state.items), M.COUNT_HIGHLIGHT }
  end
  local options = { id = state.extmark, hl_mode = "combine" }

  local keeps_the_rest = #lines == 1 and ends_with(lines[1], view.replaced)
  if inline_virt_text and view.rest_of_line ~= "" and keeps_the_rest then
    -- 0.10+: the new text goes in between and what follows the cursor stays as it is
    -- drawn (the replaced text is that text again: the suggestion ends with it).
    options.virt_text = { { lines[1]:sub(1, #lines[1] - #view.replaced), M.HIGHLIGHT } }
    options.virt_text_pos = "inline"
    if count then
      table.insert(options.virt_text, count)
    end
    return options
  end

  if #lines == 1 then
    lines[1] = lines[1] .. view.after
  else
    lines[#lines] = lines[#lines] .. view.after
  end
  -- Cover what is right of the cursor now: the first line replaces all of it.
  local covered = vim.fn.strdisplaywidth(view.rest_of_line)
  local first = lines[1] .. string.rep(" ", covered - vim.fn.strdisplaywidth(lines[1]))
  options.virt_text = { { first, M.HIGHLIGHT } }
  options.virt_text_pos = "overlay"
  if #lines > 1 then
    options.virt_lines = {}
    for index = 2, #lines do
      table.insert(options.virt_lines, { { lines[index], M.HIGHLIGHT } })
    end
  end
  if count then
    local lines_drawn = options.virt_lines or { options.virt_text }
    table.insert(lines_drawn[#lines_drawn], count)
  end
  return options
end

-- Draw the current item as it applies at the cursor now, or nothing when it no longer does.
local function render(state)
  local item = state.items and state.items[state.index]
  local view = item and in_insert_mode() and view_of(item, cursor_state(state.bufnr))
  if not view then
    hide(state)
    return
  end
  vim.api.nvim_buf_set_extmark(
    state.bufnr,
    M.namespace,
    view.row,
    view.col,
    extmark_options(state, view)
  )
  state.view = view
  vim.cmd("doautocmd <nomodeline> User " .. M.SHOWN_EVENT)
end

local function parse_answer(result, asked, encoding)
  local items = {}
  result = util.present(result)
  for _, raw in ipairs(result and (result.items or result) or {}) do
    local item = parse_item(raw, asked, encoding)
    if item then
      table.insert(items, item)
    end
  end
  return items
end

-- Ask for items at the cursor; `on_items` gets them unless a newer request or an edit
-- came first (then they answer a question nobody is asking any more).
local function ask(state, trigger_kind, on_items)
  local client = util.client_of(state)
  if not client then
    return
  end
  util.cancel_inflight(state)
  local asked = cursor_state(state.bufnr)
  local encoding = client.offset_encoding or "utf-16"
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(state.bufnr) },
    position = util.position(state.bufnr, asked.row, asked.col, encoding),
    context = { triggerKind = trigger_kind },
  }
  local id
  id = util.request(client, METHOD, params, function(err, result)
    if state.inflight ~= id then
      return
    end
    state.inflight = nil
    if err or not vim.api.nvim_buf_is_valid(state.bufnr) then
      return
    end
    if vim.api.nvim_get_current_buf() ~= state.bufnr or not in_insert_mode() then
      return
    end
    if cursor_state(state.bufnr).key ~= asked.key then
      return
    end
    on_items(parse_answer(result, asked, encoding))
  end, state.bufnr)
  state.inflight = id
  state.requested = asked.key
end

-- Every keystroke and cursor move in insert mode: keep drawing what still applies of
-- the current item at once, and ask for what applies here.
local function on_change(state)
  if not in_insert_mode() or vim.api.nvim_get_current_buf() ~= state.bufnr then
    return
  end
  local now = cursor_state(state.bufnr)
  if now.key == state.requested then
    return
  end
  render(state)
  ask(state, TRIGGER_AUTOMATIC, function(items)
    -- Where the user typed or accepted the start of the shown suggestion, an empty answer
    -- leaves its rest in place (the server may suggest nothing after a line break that
    -- the suggestion itself brought).
    if #items == 0 and state.view then
      return
    end
    state.items, state.index, state.cycled = items, 1, false
    render(state)
  end)
end

local function current_state()
  return buffers[vim.api.nvim_get_current_buf()]
end

-- What accepting a word or a line of `ghost` takes (leading line breaks come along, so a
-- suggestion that starts on the next line is taken with that line).
local PARTS = {
  word = [[^\n*\%(\k\@!.\)*\k*]],
  line = [[^\n*[^\n]*]],
}

local queued = ""

--- The text an accept key is inserting: read once, by the expression register.
function M.take_queued()
  local text = queued
  queued = ""
  return text
end

-- After the text is in: run the item's command for a whole suggestion, tell the server
-- how much of it was taken for a part.
local function report_accept(state, view, accepted)
  local client = util.client_of(state)
  if not client then
    return
  end
  local item = view.item
  if accepted == view.ghost then
    if item.command then
      local params = { command = item.command.command, arguments = item.command.arguments }
      util.request(client, "workspace/executeCommand", params, function() end, state.bufnr)
    end
    return
  end
  local encoding = client.offset_encoding or "utf-16"
  local taken = view.typed .. accepted
  util.send_notification(client, PARTIAL_ACCEPT, {
    item = item.raw,
    acceptedLength = util.encode_column(taken, #taken, encoding),
  })
end

--- Keys that accept `part` ("all", "word" or "line") of the shown suggestion, or nil when
--- nothing is shown. For an expression mapping: the text goes in as the mapping's keys.
function M.accept_keys(part)
  local state = current_state()
  local view = state and state.view
  if not view then
    return nil
  end
  local accepted = view.ghost
  if part ~= "all" then
    accepted = vim.fn.matchstr(view.ghost, PARTS[part])
    if accepted == "" then
      accepted = view.ghost
    end
  end
  local whole = accepted == view.ghost
  hide(state)
  vim.schedule(function()
    report_accept(state, view, accepted)
  end)
  -- <C-G>u: undo takes back the suggestion alone. <Del>: the replaced text right of the
  -- cursor goes when the whole suggestion comes in. <C-R><C-O>: inserted literally, not
  -- re-indented, with no line breaking at 'textwidth'.
  local deletes = whole and string.rep("<Del>", vim.fn.strchars(view.replaced)) or ""
  local keys = "<C-G>u" .. deletes .. "<C-R><C-O>="
  local erase = ""
  queued = accepted
  if accepted:sub(-1) == "\n" then
    -- Text ending in a line break would be put as whole lines above the cursor's line:
    -- one more character keeps it characterwise, and <BS> takes that character out.
    queued, erase = accepted .. " ", "<BS>"
  end
  return util.termcodes(keys)
    .. "v:lua.require'lsp_spark.ghost'.take_queued()"
    .. util.termcodes("<CR>" .. erase)
end

--- Hide the suggestion until the next edit or cursor move; false when none was shown.
function M.dismiss()
  local state = current_state()
  if not state or not state.view then
    return false
  end
  util.cancel_inflight(state)
  hide(state)
  state.items = nil
  return true
end

-- Show the item `count` places on (wrapping), asking once for alternatives (an invoked
-- request) before the first step.
local function cycle(count)
  local state = current_state()
  if not state or not in_insert_mode() then
    return
  end
  local function step()
    if state.items and #state.items > 0 then
      state.index = (state.index - 1 + count) % #state.items + 1
      render(state)
    end
  end
  if state.cycled then
    step()
    return
  end
  local before = state.items or {}
  local shown_before = state.view ~= nil
  ask(state, TRIGGER_INVOKED, function(items)
    local merged, seen = {}, {}
    for _, item in ipairs(vim.list_extend(vim.list_extend({}, before), items)) do
      if not seen[item.text] then
        seen[item.text] = true
        table.insert(merged, item)
      end
    end
    state.items, state.cycled = merged, true
    if shown_before then
      step()
    else
      state.index = 1
      render(state)
    end
  end)
end

function M.next()
  cycle(1)
end

function M.prev()
  cycle(-1)
end

-- The keys that act on the suggestion only when one is shown, and what each takes.
local FALLTHROUGH = {
  accept = "all",
  accept_word = "word",
  accept_line = "line",
  dismiss = "dismiss",
}

--- What the key `name` of setup's `keys` types: the action on the shown suggestion, or
--- the key itself when none is shown.
function M.key_pressed(name)
  local state = current_state()
  local action = FALLTHROUGH[name]
  local keys
  if action == "dismiss" then
    keys = M.dismiss() and "" or nil
  else
    keys = M.accept_keys(action)
  end
  return keys or util.termcodes(state.keys[name])
end

local function map_keys(bufnr, keys)
  for name, action in pairs(FALLTHROUGH) do
    if keys[name] then
      -- A Vimscript expression rather than a Lua callback: Neovim 0.7 types the special
      -- keys (<Del>, <M-Right>) a Lua expression mapping returns as text.
      local rhs = ("v:lua.require'lsp_spark.ghost'.key_pressed('%s')"):format(name)
      local description = action == "dismiss" and "dismiss suggestion" or ("accept " .. action)
      vim.api.nvim_buf_set_keymap(bufnr, "i", keys[name], rhs, {
        expr = true,
        noremap = true,
        desc = "lsp-spark: " .. description,
      })
    end
  end
  for name, step in pairs({ next = M.next, prev = M.prev }) do
    if keys[name] then
      local description = "lsp-spark: " .. name .. " suggestion"
      vim.keymap.set("i", keys[name], step, { buffer = bufnr, desc = description })
    end
  end
end

--- Draw ghost text from `client` in `bufnr` as the user types, with `keys` (or none: false).
function M.attach(client, bufnr, keys)
  if buffers[bufnr] then
    reset(buffers[bufnr])
  end
  local state = {
    bufnr = bufnr,
    client_id = client.id,
    keys = keys,
    -- One extmark per buffer, moved and redrawn rather than created anew each time.
    extmark = 1,
  }
  buffers[bufnr] = state
  local group = vim.api.nvim_create_augroup("lsp_spark_ghost_" .. bufnr, { clear = true })
  local function on(events, callback)
    vim.api.nvim_create_autocmd(events, { group = group, buffer = bufnr, callback = callback })
  end
  on({ "TextChangedI", "CursorMovedI" }, function()
    on_change(state)
  end)
  -- The cursor settles where insert mode starts (`A`, `o`) only after InsertEnter.
  on("InsertEnter", function()
    vim.schedule(function()
      on_change(state)
    end)
  end)
  on({ "InsertLeave", "BufLeave" }, function()
    reset(state)
  end)
  on("BufWipeout", function()
    buffers[bufnr] = nil
    vim.api.nvim_del_augroup_by_id(group)
  end)
  if keys then
    map_keys(bufnr, keys)
  end
  if vim.api.nvim_get_current_buf() == bufnr then
    on_change(state)
  end
end

return M
