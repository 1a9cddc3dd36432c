-- Headless test of the Neovim plugin against the real margin binary:
--   MARGIN_BIN=bin/margin MARGIN_FAKE_OLLAMA=bin/fakeollama \
--   nvim --headless -u NONE -i NONE --cmd "set rtp+=editors/neovim" \
--     -c "luafile editors/neovim/test/margin_test.lua"
-- A task agent proposes a change set (scripted by fakeollama); the test reads
-- the Apply lens on its item, approves it with :MarginApprove and sees the
-- task note change on disk; it reviews another agent's three proposals in
-- :MarginDiff's diff tab (one applied with ga, one rejected with gr, one
-- stale after a hand edit); it asks a question the fake model asks back
-- about and answers through stubbed prompts. It exits non-zero on the first
-- failed check.

local function wait(what, cond, ms)
  if not vim.wait(ms or 20000, cond, 50) then
    error("timed out waiting for " .. what, 2)
  end
end

local function check(ok, what)
  if not ok then
    error("check failed: " .. what, 2)
  end
end

local function read(path)
  local ok, lines = pcall(vim.fn.readfile, path)
  return ok and table.concat(lines, "\n") or ""
end

-- lenses_refresh asks for the current buffer's code lenses again.
local function lenses_refresh()
  vim.lsp.codelens.refresh()
  vim.wait(200)
end

-- item_lnum is the 1-based line of a change set item in its file.
local function item_lnum(file, item)
  for i, l in ipairs(vim.fn.readfile(file)) do
    if l:find("^" .. item .. "$", 1) or l:sub(-#item - 1) == "^" .. item then
      return i
    end
  end
  error("no line of " .. item .. " in " .. file)
end

local fake_job
local function run()
  local root = vim.fn.getcwd()
  local vault = vim.fn.tempname() .. "-vault"
  vim.fn.system({ "cp", "-r", root .. "/testdata/vault", vault })
  check(vim.v.shell_error == 0, "copying testdata/vault")
  -- A daily review over a folder that holds nothing: it runs as the server
  -- starts, with nothing new, so it calls no model.
  vim.fn.mkdir(vault .. "/Margin/Reviews", "p")
  vim.fn.writefile({ "---", "schedule: daily 07:00", "scope:", "  folders: [Nowhere]", "---", "# Daily", "", "What is due." },
    vault .. "/Margin/Reviews/daily.md")

  -- The fake model serves until its stdin closes: when this test ends.
  local url
  -- -embed: the vault is embedded in the background, so notes have
  -- related notes (a Related lens, which the task lens check leaves out).
  fake_job = vim.fn.jobstart({ os.getenv("MARGIN_FAKE_OLLAMA"), "-embed" }, {
    on_stdout = function(_, data)
      url = url or (data[1] ~= "" and data[1] or nil)
    end,
  })
  wait("fakeollama's URL", function()
    return url ~= nil
  end)
  vim.env.OLLAMA_HOST = url
  vim.env.MARGIN_AGENTS_AUTO_CREATE = "false" -- one agent, created below
  vim.env.MARGIN_AGENTS_QUIET_PERIOD = "250ms"
  vim.env.MARGIN_WATCH_DEBOUNCE = "30ms"
  vim.env.MARGIN_LLM_RETRY_LLM_RETRY = "0"

  -- Errors the plugin or Neovim show the person, kept for the checks.
  local errors, said = {}, {}
  local notify = vim.notify
  vim.notify = function(msg, level, ...)
    if level == vim.log.levels.ERROR then
      table.insert(errors, msg)
    end
    table.insert(said, msg)
    return notify(msg, level, ...)
  end

  local margin = require("margin")
  margin.setup({ cmd = { os.getenv("MARGIN_BIN"), "serve" }, vault = vault })

  local task = vault .. "/Tasks/Ship invoice export.md"
  vim.cmd("edit " .. vim.fn.fnameescape(task))
  local client
  wait("the margin client to start", function()
    client = vim.lsp.get_active_clients()[1]
    return client ~= nil and client.initialized == true
  end)
  check(client.name == "margin", "the client is margin's")
  check(vim.lsp.buf_is_attached(0, client.id), "the task note is attached")

  -- The agent's first wake proposes the estimate as a change set file.
  local created = client.request_sync("agents/create", { task = "Tasks/Ship invoice export.md" }, 10000)
  check(created and created.result and created.result.id, "agents/create: " .. vim.inspect(created))
  local setfile
  wait("the change set file", function()
    setfile = vim.fn.glob(vault .. "/Margin/Changes/Ship invoice export/*.md")
    return setfile ~= ""
  end)

  -- The first note opened gets its lenses without being asked again: the
  -- plugin asks once the server is initialized, and again when the wake's
  -- report and change set arrive (0.7 has no workspace/codeLens/refresh).
  local taskbuf = vim.fn.bufnr(task)
  local task_lenses = ""
  wait("the first note's code lenses", function()
    local titles = {}
    for _, l in ipairs(vim.lsp.codelens.get(taskbuf)) do
      if not l.command.title:find("^Related: ") then
        table.insert(titles, l.command.title)
      end
    end
    task_lenses = table.concat(titles, " | ")
    return task_lenses:find("Apply all", 1, true) ~= nil
  end)
  check(#errors == 0, "errors shown: " .. vim.inspect(errors))
  check(task_lenses == "TLDR: QA and docs left. | 1 suggested change | Apply all", "the first note's lenses: " .. task_lenses)

  -- :MarginChanges lists the item at its line of the change set file.
  vim.cmd("MarginChanges")
  local qf
  wait("the quickfix list", function()
    qf = vim.fn.getqflist()
    return #qf > 0
  end)
  check(#qf == 1 and qf[1].text:find("Set estimate to 2h", 1, true), "quickfix: " .. vim.inspect(qf))
  check(vim.fn.bufname(qf[1].bufnr) == setfile, "quickfix file " .. vim.fn.bufname(qf[1].bufnr))
  check(vim.fn.readfile(setfile)[qf[1].lnum]:find("- [ ] Set estimate to 2h ^c1", 1, true), "quickfix line " .. qf[1].lnum)

  -- The change set file shows Apply and Reject on the item's line.
  vim.cmd("cclose | edit " .. vim.fn.fnameescape(setfile))
  vim.api.nvim_win_set_cursor(0, { qf[1].lnum, 0 })
  local buf = vim.api.nvim_get_current_buf()
  wait("the change set's code lenses", function()
    if #vim.lsp.codelens.get(buf) == 0 then
      vim.lsp.codelens.refresh()
      vim.wait(200)
    end
    return #vim.lsp.codelens.get(buf) > 0
  end)
  local titles = {}
  for _, l in ipairs(vim.lsp.codelens.get(buf)) do
    check(l.range.start.line == qf[1].lnum - 1, "lens on line " .. l.range.start.line)
    table.insert(titles, l.command.title .. "=" .. l.command.command)
  end
  check(
    table.concat(titles, " ") == "Apply=margin.confirm Reject=margin.reject Diff=margin.preview",
    "lenses: " .. table.concat(titles, " ")
  )

  -- :MarginApprove runs the Apply lens under the cursor. The task note is
  -- closed, so margin changes it on disk; the change set file is open, so
  -- its tick arrives as an edit of the buffer (workspace/applyEdit).
  vim.cmd("bwipeout " .. vim.fn.bufnr(task))
  check(read(task):find("\nestimate: 1d\n", 1, true), "the task starts at 1d")
  vim.cmd("MarginApprove")
  wait("the estimate on disk", function()
    return read(task):find("\nestimate: 2h\n", 1, true) ~= nil
  end)
  wait("the ticked item in the buffer", function()
    return vim.api.nvim_buf_get_lines(buf, qf[1].lnum - 1, qf[1].lnum, false)[1]:find("- [x] Set estimate to 2h", 1, true) ~= nil
  end)
  vim.cmd("write")

  -- A diff review: fakeollama's first wake of Renew passport proposes its
  -- status, its due date and a checklist item.
  local passport = vault .. "/Tasks/Renew passport.md"
  local original = read(passport) .. "\n" -- read drops the final line break
  created = client.request_sync("agents/create", { task = "Tasks/Renew passport.md" }, 10000)
  check(created and created.result and created.result.id, "agents/create: " .. vim.inspect(created))
  local reviewfile
  wait("the passport's change set file", function()
    reviewfile = vim.fn.glob(vault .. "/Margin/Changes/Renew passport/*.md")
    return reviewfile ~= ""
  end)
  local set_id = read(reviewfile):match('\nid: "([^"]+)"\n')
  check(set_id, "the set's id in its file:\n" .. read(reviewfile))

  -- :MarginDiff on c1's line (its Diff lens) opens a tab with the note as
  -- it is and after c1, diffed; the status line reads the property change.
  vim.cmd("edit " .. vim.fn.fnameescape(reviewfile))
  local setbuf = vim.api.nvim_get_current_buf()
  wait("the review set's lenses", function()
    if #vim.lsp.codelens.get(setbuf) == 0 then
      lenses_refresh()
    end
    return #vim.lsp.codelens.get(setbuf) > 0
  end)
  vim.api.nvim_win_set_cursor(0, { item_lnum(reviewfile, "c1"), 0 })
  local settab = vim.api.nvim_get_current_tabpage()
  local function review_tab()
    wait("the diff tab", function()
      local wins = vim.api.nvim_tabpage_list_wins(0)
      return vim.api.nvim_get_current_tabpage() ~= settab and #wins == 2 and vim.wo[wins[1]].diff and vim.wo[wins[2]].diff
    end)
    local wins = vim.api.nvim_tabpage_list_wins(0)
    local function text(win)
      return table.concat(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false), "\n") .. "\n"
    end
    return text(wins[1]), text(wins[2]), vim.wo[wins[2]].statusline
  end
  vim.cmd("MarginDiff")
  local left, right, status = review_tab()
  check(left == original, "the left side is the note as it is:\n" .. left)
  check(right == (original:gsub("\nstatus: open\n", "\nstatus: in-progress\n")), "the right side is the note after c1:\n" .. right)
  check(status:find("status: open → in-progress", 1, true), "the status line: " .. status)
  -- ga applies c1: the note on disk is the right side, and the tab closes.
  vim.cmd("normal ga")
  wait("c1 applied", function()
    return read(passport) .. "\n" == right and vim.api.nvim_get_current_tabpage() == settab
  end)

  -- The Diff lens of c3 runs margin.preview as the plugin's own command;
  -- gr rejects c3, with the reason typed, and the note stays as it was.
  local input = vim.ui.input
  vim.ui.input = function(_, on_confirm)
    on_confirm("not yet")
  end
  -- Reviewed twice, the later review replaces the earlier one.
  local tabs = #vim.api.nvim_list_tabpages()
  vim.lsp.commands["margin.preview"]({ command = "margin.preview", arguments = { set_id, "c3" } })
  review_tab()
  vim.cmd("tabprevious")
  vim.lsp.commands["margin.preview"]({ command = "margin.preview", arguments = { set_id, "c3" } })
  left, right = review_tab()
  check(#vim.api.nvim_list_tabpages() == tabs + 1, "tabs after reviewing c3 twice: " .. #vim.api.nvim_list_tabpages())
  check(right:find("\n%- %[ %] Book the Seoul flights\n") and left == read(passport) .. "\n", "c3's sides:\n" .. right)
  vim.cmd("normal gr")
  vim.ui.input = input
  wait("c3 rejected", function()
    return vim.api.nvim_get_current_tabpage() == settab and said[#said]:find("rejected", 1, true) ~= nil
  end)
  check(read(passport) .. "\n" == left, "rejecting c3 changed the note")
  -- The set file is open: margin ticks it in the buffer.
  local setlines = table.concat(vim.api.nvim_buf_get_lines(setbuf, 0, -1, false), "\n")
  check(setlines:find('%- %[%-%] Add checklist item "Book the Seoul flights" ❌ [%d-]+ — not yet %^c3'), "c3 in the set file:\n" .. setlines)
  check(setlines:find("%- %[x%] Set status to in%-progress"), "c1 in the set file:\n" .. setlines)

  -- The person sets the due date by hand: c2 says it no longer applies,
  -- and no diff opens.
  vim.fn.writefile(vim.split(read(passport):gsub("due: 2026%-12%-15", "due: 2026-12-20"), "\n"), passport)
  tabs = #vim.api.nvim_list_tabpages()
  vim.cmd("MarginDiff " .. set_id .. " c2")
  wait("c2 said stale", function()
    return said[#said]:find("no longer applies", 1, true) ~= nil
  end)
  check(said[#said]:find("the task's due date changed since it was proposed", 1, true), "stale: " .. said[#said])
  check(#vim.api.nvim_list_tabpages() == tabs, "a stale item opened a tab")
  check(#errors == 0, "errors shown: " .. vim.inspect(errors))

  -- :MarginReport opens the report the wake wrote.
  vim.cmd("edit " .. vim.fn.fnameescape(task))
  vim.cmd("MarginReport")
  wait("the report buffer", function()
    return vim.api.nvim_buf_get_name(0) == vault .. "/Margin/Reports/Ship invoice export.md"
  end)
  check(read(vim.api.nvim_buf_get_name(0)):find("QA and docs left.", 1, true), "the report has the TLDR")

  -- :MarginReview opens the note of the review's latest run.
  vim.cmd("MarginReview daily")
  local reviews = vault .. "/Margin/Reviews/daily/"
  wait("the review note", function()
    local name = vim.api.nvim_buf_get_name(0)
    return name:sub(1, #reviews) == reviews and name:sub(#reviews + 1):match("^%d%d%d%d%-%d%d%-%d%d%.md$") ~= nil
  end)
  check(read(vim.api.nvim_buf_get_name(0)):find("margin: review", 1, true), "the review note is a review")

  -- :MarginAsk shows an answer with its citations.
  vim.cmd("MarginAsk bench press")
  wait("the answer window", function()
    return vim.api.nvim_buf_get_name(0):find("margin://answer/", 1, true) ~= nil
  end)
  local answer = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  check(answer:find("\nSources:\n", 1, true) and answer:find("%.md:%d+"), "answer with citations:\n" .. answer)

  -- fakeollama asks back about this question, once with options and once
  -- without, after saying why: the person picks "very" and types what they
  -- ate, and the answer that follows cites the heavy session.
  local prompts = {}
  local pick, typed = "very", "nothing"
  vim.ui.select = function(items, opts, on_choice)
    table.insert(prompts, "select " .. opts.prompt .. " [" .. table.concat(items, "/") .. "]")
    on_choice(pick)
  end
  vim.ui.input = function(opts, on_confirm)
    table.insert(prompts, "input " .. opts.prompt)
    on_confirm(typed)
  end
  local function next_answer(after)
    wait("the answer window after " .. after, function()
      return vim.api.nvim_get_current_buf() ~= after and vim.api.nvim_buf_get_name(0):find("margin://answer/", 1, true) ~= nil
    end)
    return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  end
  local shown = vim.api.nvim_get_current_buf()
  vim.cmd("MarginAsk Was stress behind Friday's heavy bench?")
  answer = next_answer(shown)
  check(
    table.concat(prompts, "\n")
      == "select Your notes do not say how Friday felt.\nHow stressed were you on Friday? [not at all/somewhat/very]"
        .. "\ninput What did you eat before the session? ",
    "prompts:\n" .. table.concat(prompts, "\n")
  )
  check(answer:find("very stressed", 1, true), "the answer after the reply:\n" .. answer)
  check(answer:find("\nDaily/2026%-11%-13%.md:%d+  18:15\n") and answer:find("(answered)", 1, true), "its citation:\n" .. answer)

  -- Cancelling the first prompt declines: margin answers with what it has.
  prompts, pick, shown = {}, nil, vim.api.nvim_get_current_buf()
  vim.cmd("MarginAsk Was stress behind Friday's heavy bench?")
  answer = next_answer(shown)
  check(#prompts == 1, "prompts after cancelling: " .. vim.inspect(prompts))
  check(answer:find("(partial)", 1, true), "the declined answer:\n" .. answer)
  check(
    answer:find("\nNot found in your notes:\n- how stressed you were on Friday\n- what you ate before the session\n", 1, true),
    "the declined answer's gaps:\n" .. answer
  )

  -- Once the vault is embedded a note's first line names its related
  -- notes; running the lens lists them in the quickfix list and opens the
  -- first.
  local sleep = vault .. "/Reference/Sleep.md"
  vim.cmd("edit " .. vim.fn.fnameescape(sleep))
  local sleepbuf = vim.api.nvim_get_current_buf()
  local related
  wait("the Related lens", function()
    lenses_refresh()
    for _, l in ipairs(vim.lsp.codelens.get(sleepbuf)) do
      if l.command.title:find("^Related: ") then
        related = l
      end
    end
    return related ~= nil
  end, 45000)
  check(related.range.start.line == 0 and related.command.command == "margin.showRelated", "the Related lens: " .. vim.inspect(related))
  local first = related.command.title:match("^Related: ([^,]+)")
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  vim.lsp.codelens.run()
  wait("the first related note", function()
    return vim.fn.fnamemodify(vim.api.nvim_buf_get_name(0), ":t:r") == first
  end)
  check(#vim.fn.getqflist() >= 1, "related notes in the quickfix list")
  check(#errors == 0, "errors shown: " .. vim.inspect(errors))

  client.stop()
  wait("the server to stop", function()
    return client.is_stopped()
  end)
end

local ok, err = xpcall(run, debug.traceback)
if fake_job then
  vim.fn.jobstop(fake_job)
end
if not ok then
  io.stderr:write("FAIL: " .. err .. "\n")
  vim.cmd("cquit 1")
end
io.stdout:write("\nneovim: ok\n")
vim.cmd("qall!")
