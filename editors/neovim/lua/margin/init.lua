-- margin for Neovim: starts `margin serve` for the markdown notes of one
-- vault and adds :MarginAsk, :MarginChanges, :MarginApprove, :MarginDiff and
-- :MarginReport.
-- Works on Neovim 0.7 (Debian 12) and later.
local M = {}

local config = { cmd = { "margin", "serve" } }
local client_id

local function notify(msg, level)
  vim.notify("margin: " .. msg, level or vim.log.levels.INFO)
end

-- in_vault tells whether an absolute path lies inside the vault.
local function in_vault(path)
  return path ~= "" and path:sub(1, #config.vault + 1) == config.vault .. "/"
end

-- lenses asks the server for the code lenses of bufnr, once the client is
-- initialized: asked earlier, Neovim 0.7 finds no codeLens capability yet,
-- fails the request and marks the buffer as refreshing for good, so that
-- buffer would never get its lenses.
local function lenses(bufnr)
  local client = client_id and vim.lsp.get_client_by_id(client_id)
  if not (client and client.initialized and vim.lsp.buf_is_attached(bufnr, client_id)) then
    return
  end
  if vim.fn.has("nvim-0.10") == 1 then
    vim.lsp.codelens.refresh({ bufnr = bufnr })
    return
  end
  -- codelens.refresh() before 0.10 only asks for the current buffer.
  local params = { textDocument = { uri = vim.uri_from_bufnr(bufnr) } }
  client.request("textDocument/codeLens", params, vim.lsp.codelens.on_codelens, bufnr)
end

-- lenses_changed refreshes the lenses of every attached buffer after a
-- notification that changes them, for a Neovim that does not handle the
-- server's workspace/codeLens/refresh (0.7).
local function lenses_changed()
  if vim.lsp.handlers["workspace/codeLens/refresh"] then
    return -- the server asks for the refresh itself
  end
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    lenses(bufnr)
  end
end

local function attach(bufnr)
  local changed = function()
    vim.schedule(lenses_changed)
  end
  local conf = {
    name = "margin",
    cmd = config.cmd,
    root_dir = config.vault,
    init_options = { vault = config.vault },
    -- A buffer attached before the server answered initialize is attached
    -- again (didOpen) after it: its first lenses are asked for here.
    on_attach = function(_, b)
      lenses(b)
    end,
    handlers = {
      -- The first scan is done: lenses asked for meanwhile waited for it,
      -- and agents created by it may have reports now.
      ["margin/indexStatus"] = function(_, st)
        if st and st.kind == "scan" then
          changed()
        end
      end,
      ["margin/reportUpdated"] = changed,
      ["margin/changeSetCreated"] = changed,
      ["margin/changeApplied"] = changed,
    },
  }
  if vim.lsp.start then -- 0.8+: reuses the running client of this root
    client_id = vim.lsp.start(conf, { bufnr = bufnr })
    return
  end
  if not (client_id and vim.lsp.get_client_by_id(client_id)) then
    client_id = vim.lsp.start_client(conf)
  end
  vim.lsp.buf_attach_client(bufnr, client_id)
end

-- request sends a margin method to the vault's server and hands the result
-- to done; errors are shown, not passed on.
local function request(method, params, done)
  local client = client_id and vim.lsp.get_client_by_id(client_id)
  if not client then
    notify("not running: open a note of " .. config.vault, vim.log.levels.WARN)
    return
  end
  local function handler(err, result)
    if err then
      notify(method .. ": " .. err.message, vim.log.levels.ERROR)
      return
    end
    done(result)
  end
  if vim.fn.has("nvim-0.11") == 1 then -- where client.request is deprecated
    client:request(method, params, handler)
  else
    client.request(method, params, handler)
  end
end

local function command(name, args, done)
  request("workspace/executeCommand", { command = name, arguments = args }, done)
end

-- item_line is the 1-based line of a change set item in its file (its
-- block id ends the line), or 1.
local function item_line(file, item)
  local ok, lines = pcall(vim.fn.readfile, file)
  for i, l in ipairs(ok and lines or {}) do
    if l:match("%^" .. item .. "$") then
      return i
    end
  end
  return 1
end

-- show_answer shows an answer, with what margin could not find (the gaps of
-- a partial answer) and its citations as path:line lines that gF opens, in a
-- scratch window.
local function show_answer(res)
  local lines = vim.split(res.answer or "", "\n")
  if res.gaps and #res.gaps > 0 then
    vim.list_extend(lines, { "", "Not found in your notes:" })
    for _, g in ipairs(res.gaps) do
      table.insert(lines, "- " .. g)
    end
  end
  if res.citations and #res.citations > 0 then
    vim.list_extend(lines, { "", "Sources:" })
    for _, c in ipairs(res.citations) do
      table.insert(lines, string.format("%s:%d  %s", c.path, c.line, c.heading or ""))
    end
  end
  table.insert(lines, "")
  local footer = res.status
  if res.keywordOnly then
    footer = footer .. " · searched by keyword: " .. res.keywordOnly
  end
  table.insert(lines, "(" .. footer .. ")")
  vim.cmd("botright new")
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].buftype, vim.bo[buf].bufhidden, vim.bo[buf].swapfile = "nofile", "wipe", false
  vim.bo[buf].path = config.vault -- citations are vault-relative
  vim.api.nvim_buf_set_name(buf, "margin://answer/" .. buf)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
end

-- clarify puts the questions of a clarification to the person one after
-- another (vim.ui.select when it has options, vim.ui.input otherwise), then
-- sends query/reply with the answers and hands its result to done. The
-- first prompt opens with margin's reason for asking (the answer text), so
-- the person knows why before answering. A cancelled prompt declines:
-- margin answers with what it has.
local function clarify(res, done)
  local answers = {}
  local function reply(decline)
    local params = { sessionId = res.sessionId, answers = decline and vim.empty_dict() or answers, decline = decline }
    request("query/reply", params, done)
  end
  local function ask_from(i)
    local q = res.questions[i]
    if not q then
      reply(false)
      return
    end
    -- vim.ui.input on 0.7 gives nil for an empty answer: that declines too.
    local function answered(text)
      if text == nil or text == "" then
        reply(true)
        return
      end
      answers[q.id] = text
      ask_from(i + 1)
    end
    -- Both 0.7 prompts (inputlist, input) start a new line at "\n".
    local prompt = q.question
    if i == 1 and res.answer and res.answer ~= "" then
      prompt = res.answer .. "\n" .. prompt
    end
    if q.options and #q.options > 0 then
      vim.ui.select(q.options, { prompt = prompt }, answered)
    else
      vim.ui.input({ prompt = prompt .. " " }, answered)
    end
  end
  ask_from(1)
end

-- settle shows a result of query/ask or query/reply, first answering its
-- questions while margin needs clarification.
local function settle(res)
  if res.status == "needs_clarification" and res.questions and #res.questions > 0 then
    clarify(res, settle)
    return
  end
  show_answer(res)
end

-- ask answers a question, asking back when margin needs clarification.
function M.ask(text)
  command("margin.ask", { text }, settle)
end

-- changes puts every open item of every open change set in the quickfix list.
function M.changes()
  request("changes/list", vim.empty_dict(), function(res)
    local items = {}
    for _, cs in ipairs(res.changeSets) do
      local file = config.vault .. "/" .. cs.path
      for _, it in ipairs(cs.items) do
        if it.status == "pending" or it.status == "deferred" then
          table.insert(items, {
            filename = file,
            lnum = item_line(file, it.id),
            text = string.format("%s: %s [%s %s]", cs.task, it.summary, cs.id, it.id),
          })
        end
      end
    end
    vim.fn.setqflist({}, " ", { title = "margin changes", items = items })
    vim.cmd("copen")
  end)
end

-- approve confirms every open item of the change set set_id, or without it
-- the item under the cursor in a change set file: the target of the Apply
-- lens the server puts on that line.
function M.approve(set_id)
  local function report(cs)
    local done = {}
    for _, it in ipairs(cs.items) do
      table.insert(done, it.id .. " " .. it.status .. (it.detail and (" (" .. it.detail .. ")") or ""))
    end
    notify(cs.task .. ": " .. table.concat(done, ", "))
  end
  if set_id and set_id ~= "" then
    command("margin.confirmAll", { set_id }, report)
    return
  end
  local line = vim.api.nvim_win_get_cursor(0)[1] - 1
  local params = { textDocument = { uri = vim.uri_from_bufnr(0) } }
  request("textDocument/codeLens", params, function(lenses)
    for _, l in ipairs(lenses or {}) do
      if l.range.start.line == line and l.command.command == "margin.confirm" then
        command(l.command.command, l.command.arguments, report)
        return
      end
    end
    notify("no open change on this line", vim.log.levels.WARN)
  end)
end

-- lines splits a note's text into buffer lines; the final line break
-- ends the last line rather than starting an empty one.
local function lines(text)
  local ls = vim.split(text or "", "\n", { plain = true })
  if ls[#ls] == "" then
    table.remove(ls)
  end
  return ls
end

-- property_line is a frontmatter change as a person reads a property:
-- "status: open → in-progress".
local function property_line(p)
  if p.change == "added" then
    return p.key .. ": " .. (p.after or "") .. " (added)"
  elseif p.change == "removed" then
    return p.key .. ": " .. (p.before or "") .. " (removed)"
  end
  return p.key .. ": " .. (p.before or "") .. " → " .. (p.after or "")
end

-- preview_buffer is one side of a diff review: a scratch buffer holding
-- text, named after the item and side so that several reviews can be open.
local function preview_buffer(pv, side, text)
  local name = string.format("margin-preview://%s/%s/%s/%s", pv.id, pv.item, side, pv.path)
  local earlier = vim.fn.bufnr("^" .. vim.fn.escape(name, "\\/.*$^~[]") .. "$")
  if earlier ~= -1 then
    -- The item reviewed again: the new preview replaces the old one.
    vim.api.nvim_buf_delete(earlier, { force = true })
  end
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].buftype, vim.bo[buf].bufhidden, vim.bo[buf].swapfile = "nofile", "wipe", false
  vim.api.nvim_buf_set_name(buf, name)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines(text))
  vim.bo[buf].modifiable, vim.bo[buf].filetype = false, "markdown"
  vim.cmd("diffthis")
  return buf
end

-- show_preview opens the preview of a change item in a new tab: the note
-- as it is on the left, as applying the item would leave it on the right,
-- diffed. The status lines name the change, its property changes and the
-- keys: ga applies the item, gr rejects it (asking why), either closes
-- the tab. A stale item (the note moved on) is said instead.
function M.show_preview(pv)
  if pv.stale then
    notify(string.format('"%s" no longer applies to %s: %s', pv.summary, pv.path, pv.reason or "the note changed"), vim.log.levels.WARN)
    return
  end
  local status = { pv.summary }
  for _, p in ipairs(pv.properties or {}) do
    table.insert(status, property_line(p))
  end
  if pv.reason then
    table.insert(status, pv.reason)
  end
  table.insert(status, "ga apply, gr reject")
  status = ("margin: " .. table.concat(status, " | ")):gsub("%%", "%%%%")
  vim.cmd("tabnew")
  local bufs = { preview_buffer(pv, "before", pv.before) }
  vim.wo.statusline = "%f"
  vim.cmd("rightbelow vnew")
  table.insert(bufs, preview_buffer(pv, "after", pv.after))
  vim.wo.statusline = status
  local tab = vim.api.nvim_get_current_tabpage()
  local function decide(verdict, reason)
    local d = { item = pv.item, verdict = verdict, reason = reason }
    request("changes/decide", { id = pv.id, decisions = { d } }, function(cs)
      for _, it in ipairs(cs.items) do
        if it.id == pv.item then
          notify(pv.summary .. ": " .. it.status .. (it.detail and (" (" .. it.detail .. ")") or ""))
        end
      end
      if vim.api.nvim_tabpage_is_valid(tab) then
        vim.cmd(vim.api.nvim_tabpage_get_number(tab) .. "tabclose")
      end
    end)
  end
  for _, buf in ipairs(bufs) do
    vim.keymap.set("n", "ga", function()
      decide("confirmed")
    end, { buffer = buf, desc = "margin: apply this change" })
    vim.keymap.set("n", "gr", function()
      vim.ui.input({ prompt = "Why? (optional) " }, function(reason)
        if reason ~= nil then -- nil: cancelled, nothing decided
          decide("rejected", reason ~= "" and reason or nil)
        end
      end)
    end, { buffer = buf, desc = "margin: reject this change" })
  end
end

-- diff opens the diff review of item item_id of change set set_id, or
-- without them of the item under the cursor in a change set file (where
-- the server puts its Diff lens).
function M.diff(set_id, item_id)
  if set_id and set_id ~= "" then
    request("changes/preview", { id = set_id, item = item_id }, M.show_preview)
    return
  end
  local line = vim.api.nvim_win_get_cursor(0)[1] - 1
  local params = { textDocument = { uri = vim.uri_from_bufnr(0) } }
  request("textDocument/codeLens", params, function(found)
    for _, l in ipairs(found or {}) do
      if l.range.start.line == line and l.command.command == "margin.preview" then
        M.diff(l.command.arguments[1], l.command.arguments[2])
        return
      end
    end
    notify("no open change on this line", vim.log.levels.WARN)
  end)
end

-- report opens the report of the task note in the current buffer.
function M.report()
  request("reports/get", { task = vim.api.nvim_buf_get_name(0) }, function(rep)
    vim.cmd("edit " .. vim.fn.fnameescape(config.vault .. "/" .. rep.path))
  end)
end

-- related lists the notes related to the note at path (the current
-- buffer's without one), nearest first, in the quickfix list at their
-- nearest sections, and opens the first; without vectors it says why there
-- are none.
function M.related(path)
  path = (path and path ~= "") and path or vim.api.nvim_buf_get_name(0)
  request("vault/related", { path = path }, function(res)
    if #res.notes == 0 then
      notify("margin: no related notes" .. (res.reason and (": " .. res.reason) or ""), vim.log.levels.INFO)
      return
    end
    local items = {}
    for _, n in ipairs(res.notes) do
      table.insert(items, {
        filename = config.vault .. "/" .. n.path,
        lnum = math.max(n.line, 1),
        text = string.format("%s (%.2f)", n.heading ~= "" and n.heading or n.path, n.score),
      })
    end
    vim.fn.setqflist({}, " ", { title = "margin related notes", items = items })
    vim.cmd("cfirst")
  end)
end

-- review opens the note of the latest run of the scheduled review name
-- (Margin/Reviews/<name>.md defines it), prompting for the name without one.
function M.review(name)
  if not name or name == "" then
    vim.ui.input({ prompt = "Review: ", default = "daily" }, function(text)
      if text and text ~= "" then
        M.review(text)
      end
    end)
    return
  end
  request("reviews/latest", { name = name }, function(rev)
    vim.cmd("edit " .. vim.fn.fnameescape(config.vault .. "/" .. rev.path))
  end)
end

-- setup{vault = dir, cmd = {...}}: vault defaults to the folder holding
-- .obsidian above the current directory.
function M.setup(opts)
  config = vim.tbl_extend("force", config, opts or {})
  local vault = config.vault
  if not vault then
    local marker = vim.fn.finddir(".obsidian", ".;")
    if marker == "" then
      notify("no vault: pass setup{vault = ...}", vim.log.levels.ERROR)
      return
    end
    vault = vim.fn.fnamemodify(marker, ":p:h:h")
  end
  config.vault = (vim.fn.resolve(vim.fn.fnamemodify(vim.fn.expand(vault), ":p")):gsub("/$", ""))

  local group = vim.api.nvim_create_augroup("margin", { clear = true })
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
    group = group,
    pattern = "*.md",
    callback = function(ev)
      if in_vault(vim.fn.resolve(vim.api.nvim_buf_get_name(ev.buf))) then
        attach(ev.buf)
      end
    end,
  })
  -- Lenses show the TLDR, the suggested changes and Apply/Reject; run one
  -- with vim.lsp.codelens.run().
  vim.api.nvim_create_autocmd({ "BufEnter", "BufWritePost", "InsertLeave" }, {
    group = group,
    pattern = "*.md",
    callback = function(ev)
      lenses(ev.buf)
    end,
  })

  vim.api.nvim_create_user_command("MarginAsk", function(c)
    if c.args ~= "" then
      M.ask(c.args)
      return
    end
    vim.ui.input({ prompt = "Ask margin: " }, function(text)
      if text and text ~= "" then
        M.ask(text)
      end
    end)
  end, { nargs = "*" })
  vim.api.nvim_create_user_command("MarginChanges", M.changes, {})
  vim.api.nvim_create_user_command("MarginApprove", function(c)
    M.approve(c.args)
  end, { nargs = "?" })
  vim.api.nvim_create_user_command("MarginReport", M.report, {})
  vim.api.nvim_create_user_command("MarginReview", function(c)
    M.review(c.args)
  end, { nargs = "?" })
  vim.api.nvim_create_user_command("MarginRelated", function()
    M.related()
  end, {})
  vim.api.nvim_create_user_command("MarginDiff", function(c)
    M.diff(c.fargs[1], c.fargs[2])
  end, { nargs = "*" })
  -- The Diff lens (vim.lsp.codelens.run) opens the review here rather
  -- than asking the server for a preview it cannot show.
  vim.lsp.commands["margin.preview"] = function(cmd)
    M.diff(cmd.arguments[1], cmd.arguments[2])
  end
  -- The Related lens lists the notes in the quickfix list and opens the
  -- first, whether or not this Neovim can show documents for the server.
  vim.lsp.commands["margin.showRelated"] = function(cmd)
    M.related(config.vault .. "/" .. cmd.arguments[1])
  end
end

return M
