#!/usr/bin/env bash
# Tests the editor plugins against the real margin binary (make editors): the
# Neovim plugin in headless Neovim, the VS Code extension's protocol code over
# vscode-jsonrpc, the Obsidian plugin's protocol module; and compiles,
# type-checks and bundles the TypeScript. Then margin mcp, driven by the
# official MCP TypeScript SDK's stdio client as an AI application would.
# Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v nvim >/dev/null || need+=(neovim)
command -v npm >/dev/null || need+=(nodejs npm)
if ((${#need[@]})); then
  apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null
fi

go build -o bin/margin ./cmd/margin
go build -o bin/fakeollama ./editors/internal/fakeollama
export MARGIN_BIN="$PWD/bin/margin" MARGIN_FAKE_OLLAMA="$PWD/bin/fakeollama"
export MARGIN_LOG_LEVEL=warn # the servers under test log to this output

echo "== neovim: $(nvim --version | head -1)"
# The test quits itself; the second -c only runs if the script broke off.
timeout 120 nvim --headless -u NONE -i NONE --cmd "set rtp+=editors/neovim" \
  -c "luafile editors/neovim/test/margin_test.lua" -c "cquit 2"
echo

echo "== vscode: compile and test"
(cd editors/vscode && npm ci --no-audit --no-fund && npm run compile && timeout 120 npm test)

echo "== obsidian: type-check, bundle and test"
(cd editors/obsidian && npm ci --no-audit --no-fund && npm run check && npm run build && timeout 120 npm test)

echo "== mcp: margin mcp with the official TypeScript SDK's stdio client"
(cd server/mcp/testdata/tsclient && npm ci --no-audit --no-fund && timeout 120 npm test)

echo "editors: ok"
