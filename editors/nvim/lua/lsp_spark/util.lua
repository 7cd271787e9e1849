-- What the plugin's modules share: version checks, the client's calling conventions
-- (which changed in 0.11) and columns in the position encoding the client negotiated.
local M = {}

function M.has(version)
  return vim.fn.has("nvim-" .. version) == 1
end

function M.notify(message, level)
  vim.notify("lsp-spark: " .. message, level or vim.log.levels.INFO)
end

-- JSON null may arrive as vim.NIL depending on the version.
function M.present(value)
  if value == nil or value == vim.NIL then
    return nil
  end
  return value
end

-- Methods are called as client:method() on 0.11+ (the dotted form is deprecated there)
-- and as client.method() before.
local colon_calls = M.has("0.11")

--- Sends a request; returns its id, or nil when the client is shutting down.
function M.request(client, method, params, handler, bufnr)
  local ok, id
  if colon_calls then
    ok, id = client:request(method, params, handler, bufnr)
  else
    ok, id = client.request(method, params, handler, bufnr)
  end
  return ok and id or nil
end

--- Cancels request `id` unless its answer is already in (`client.requests` holds those
--- still pending), so the server hears of no request it has finished.
function M.cancel(client, id)
  local request = client.requests[id]
  if not request or request.type ~= "pending" then
    return
  end
  if colon_calls then
    client:cancel_request(id)
  else
    client.cancel_request(id)
  end
end

function M.send_notification(client, method, params)
  if colon_calls then
    client:notify(method, params)
  else
    client.notify(method, params)
  end
end

--- Links each highlight group of `links` (name -> group) by default, again after every
--- `:colorscheme` (which clears groups it does not know); `augroup` names the autocmd.
-- A target with no terminal attributes at all (Neovim 0.10+'s default `Comment` has only a
-- GUI colour) would leave the group looking like plain text on a terminal without
-- 'termguicolors': there the group gets the target's GUI colour and, for terminals, grey
-- italics of its own.
local TERMINAL_GREY = 8
local set_hl_takes_default = M.has("0.8")

local function without_terminal_attributes(target)
  return set_hl_takes_default and next(vim.api.nvim_get_hl_by_name(target, false)) == nil
end

function M.link_highlights(augroup, links)
  local function define()
    for name, target in pairs(links) do
      if without_terminal_attributes(target) then
        local gui = vim.api.nvim_get_hl_by_name(target, true)
        vim.api.nvim_set_hl(0, name, {
          default = true,
          fg = gui.foreground,
          ctermfg = TERMINAL_GREY,
          italic = true,
          cterm = { italic = true },
        })
      else
        vim.cmd("highlight default link " .. name .. " " .. target)
      end
    end
  end
  define()
  vim.api.nvim_create_autocmd("ColorScheme", {
    group = vim.api.nvim_create_augroup(augroup, { clear = true }),
    callback = define,
  })
end

function M.termcodes(keys)
  return vim.api.nvim_replace_termcodes(keys, true, false, true)
end

--- The client a buffer's state (`client_id`) belongs to, or nil once it has stopped.
function M.client_of(state)
  return vim.lsp.get_client_by_id(state.client_id)
end

--- Cancels the request a buffer's state has in flight (`inflight`), if any.
function M.cancel_inflight(state)
  local client = M.client_of(state)
  if state.inflight and client then
    M.cancel(client, state.inflight)
  end
  state.inflight = nil
end

-- Bytes of the UTF-8 character starting with `byte`.
local function char_bytes(byte)
  if byte == nil or byte < 0x80 then
    return 1
  elseif byte >= 0xF0 then
    return 4
  elseif byte >= 0xE0 then
    return 3
  end
  return 2
end

--- Bytes of the character at byte column `col` (0-based) of `line`.
function M.char_length(line, col)
  return char_bytes(line:byte(col + 1))
end

-- Code units of one character in `encoding`: a byte count for UTF-8, one unit per code
-- point for UTF-32, and for UTF-16 two units for what takes four bytes in UTF-8.
local function units_of(bytes, encoding)
  if encoding == "utf-8" then
    return bytes
  elseif encoding == "utf-16" and bytes == 4 then
    return 2
  end
  return 1
end

--- The first `col` bytes of `text` counted in `encoding`'s code units.
function M.encode_column(text, col, encoding)
  local units, index = 0, 0
  while index < col and index < #text do
    local bytes = char_bytes(text:byte(index + 1))
    units = units + units_of(bytes, encoding)
    index = index + bytes
  end
  return units
end

--- The byte column of `line` that is `units` code units of `encoding` in (clamped to the
--- line: a position past its end means its end).
function M.byte_column(line, units, encoding)
  local counted, index = 0, 0
  while counted < units and index < #line do
    local bytes = char_bytes(line:byte(index + 1))
    counted = counted + units_of(bytes, encoding)
    index = index + bytes
  end
  return index
end

--- An LSP position for byte column `col` of row `row` (both 0-based).
function M.position(bufnr, row, col, encoding)
  local line = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ""
  return { line = row, character = M.encode_column(line, math.min(col, #line), encoding) }
end

return M
