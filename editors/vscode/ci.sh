#!/usr/bin/env bash
# Build, check, test and package the VS Code extension; any failing step fails the script.
# Needs Node.js >= 20 and npm; the end-to-end test also needs a Python with lsp_spark
# installed (the repo's .venv, or $LSP_SPARK_PYTHON).
set -euo pipefail
cd "$(dirname "$0")"

start=$SECONDS
step() {
  echo "== $* ($((SECONDS - start)) s)"
  "$@"
}

node_major=$(node -p 'process.versions.node.split(".")[0]')
if ((node_major < 20)); then
  echo "Node.js >= 20 is needed, found $(node --version)" >&2
  exit 1
fi

step npm ci --no-audit --no-fund
step npm run compile
step npm run lint
step npm test
step npm run package

version=$(node -p 'require("./package.json").version')
vsix="lsp-spark-${version}.vsix"
contents=$(unzip -Z1 "$vsix" | sort | tr '\n' ' ')
expected="[Content_Types].xml extension.vsixmanifest extension/dist/extension.js extension/package.json extension/readme.md "
if [[ "$contents" != "$expected" ]]; then
  echo "unexpected files in $vsix: $contents" >&2
  exit 1
fi
echo "== $vsix: $(stat -c %s "$vsix") bytes, built and tested in $((SECONDS - start)) s"
