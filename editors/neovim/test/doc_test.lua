-- Headless test of the Neovim plugin's help, as a person installs it: the
-- plugin folder on 'runtimepath', :helptags on its doc, then :help margin.
--   nvim --headless -u NONE -i NONE -c "luafile editors/neovim/test/doc_test.lua"
-- Every command and Lua function the plugin defines, every option key it
-- reads and every mapping it makes must have its help, and every |link| in
-- the file must lead somewhere. It exits non-zero on the first failed check.

local function check(ok, what)
  if not ok then
    error("check failed: " .. what, 2)
  end
end

-- help opens :help subject and gives the help file's name and the line the
-- cursor landed on, or nil and the error.
local function help(subject)
  local ok, err = pcall(vim.cmd, "help " .. vim.fn.escape(subject, " "))
  if not ok then
    return nil, err
  end
  return vim.api.nvim_buf_get_name(0), vim.api.nvim_get_current_line()
end

local function run()
  local root = vim.fn.getcwd()
  -- A copy of the plugin folder, so :helptags writes its tags file there
  -- rather than into the repository.
  local plugin = vim.fn.tempname()
  vim.fn.mkdir(plugin, "p")
  vim.fn.system({ "cp", "-r", root .. "/editors/neovim/doc", root .. "/editors/neovim/lua", plugin })
  check(vim.v.shell_error == 0, "copying the plugin")
  vim.opt.runtimepath:append(plugin)

  local ok, err = pcall(vim.cmd, "helptags " .. plugin .. "/doc")
  check(ok, "helptags: " .. tostring(err)) -- a duplicate tag is E154
  local doc = plugin .. "/doc/margin.txt"

  local file, line = help("margin")
  check(file == doc, ":help margin opened " .. tostring(file) .. " (" .. tostring(line) .. ")")
  check(line:find("*margin*", 1, true), ":help margin landed on " .. line)

  local function documented(tag)
    local f, l = help(tag)
    check(f == doc, ":help " .. tag .. ": " .. tostring(l))
    check(l:find("*" .. tag .. "*", 1, true), ":help " .. tag .. " landed on " .. l)
  end

  -- Every option key init.lua reads from its config.
  local source = table.concat(vim.fn.readfile(root .. "/editors/neovim/lua/margin/init.lua"), "\n")
  local keys = {}
  for key in source:gmatch("config%.([%w_]+)") do
    keys[key] = true
  end
  check(next(keys), "no option found in init.lua")
  for key in pairs(keys) do
    documented("margin-option-" .. key)
  end

  -- Every Lua function of the module.
  local margin = require("margin")
  for name, v in pairs(margin) do
    if type(v) == "function" then
      documented("margin." .. name .. "()")
    end
  end

  -- Every command and mapping setup makes.
  local vault = vim.fn.tempname()
  vim.fn.mkdir(vault .. "/.obsidian", "p")
  local function mappings()
    local all = {}
    for _, mode in ipairs({ "n", "v", "x", "s", "o", "i", "c", "t" }) do
      for _, m in ipairs(vim.api.nvim_get_keymap(mode)) do
        all[mode .. " " .. m.lhs] = true
      end
    end
    return all
  end
  local before = mappings()
  margin.setup({ vault = vault })
  local commands = 0
  for name in pairs(vim.api.nvim_get_commands({})) do
    if name:match("^Margin") then
      documented(":" .. name)
      commands = commands + 1
    end
  end
  check(commands > 0, "setup defined no command")
  local text = table.concat(vim.fn.readfile(doc), "\n")
  for m in pairs(mappings()) do
    if not before[m] then
      check(text:find(m:sub(3), 1, true), "mapping " .. m .. " is not in margin.txt")
    end
  end

  -- Every |link| leads to a tag, in this file or in Neovim's own help.
  for link in text:gmatch("|([^|%s]+)|") do
    local f, l = help(link)
    check(f, "|" .. link .. "| leads nowhere: " .. tostring(l))
  end
end

local ok, err = xpcall(run, debug.traceback)
if not ok then
  io.stderr:write("FAIL: " .. err .. "\n")
  vim.cmd("cquit 1")
end
io.stdout:write("neovim help: ok\n")
vim.cmd("qall!")
