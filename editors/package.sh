#!/usr/bin/env bash
# Builds what a person installs from editors/ into bin/editors (make editors,
# after editors/test.sh), and checks each as it is installed:
#   bin/editors/margin-<version>.vsix  the VS Code extension, one esbuild bundle
#   bin/editors/obsidian/margin/       the Obsidian plugin: the folder to copy
#                                      into .obsidian/plugins/, and the assets
#                                      of a GitHub release for BRAT
#   editors/neovim/doc/margin.txt      :help margin, after :helptags
# Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v nvim >/dev/null || need+=(neovim)
command -v npm >/dev/null || need+=(nodejs npm)
command -v unzip >/dev/null || need+=(unzip)
if ((${#need[@]})); then
  apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null
fi

# install runs npm ci unless editors/test.sh just did (node_modules newer
# than package.json and its lock): vsce's dependencies take half a minute.
install() {
  if [[ node_modules/.package-lock.json -nt package-lock.json && node_modules/.package-lock.json -nt package.json ]]; then
    return
  fi
  npm ci --no-audit --no-fund
}

go build -o bin/margin ./cmd/margin
export MARGIN_BIN="$PWD/bin/margin"
export MARGIN_LOG_LEVEL=warn # the servers under test log to this output
out=bin/editors
rm -rf "$out"

echo "== vscode: bundle, package and check the .vsix"
# No terminal: vsce fails rather than waits if it would ask anything.
(cd editors/vscode && install && npm run package </dev/null && timeout 120 npm run test:package)

echo "== obsidian: build and check the release folder"
(cd editors/obsidian && install && npm run build)
mkdir -p "$out/obsidian/margin"
cp editors/obsidian/{main.js,manifest.json,versions.json} "$out/obsidian/margin/"
if [[ -f editors/obsidian/styles.css ]]; then
  cp editors/obsidian/styles.css "$out/obsidian/margin/"
fi
(cd editors/obsidian && timeout 120 npm run test:release)

echo "== neovim: :help margin"
timeout 60 nvim --headless -u NONE -i NONE -c "luafile editors/neovim/test/doc_test.lua" -c "cquit 2"

echo "editors: packaged in $out: $(cd "$out" && echo *.vsix) obsidian/margin/"
