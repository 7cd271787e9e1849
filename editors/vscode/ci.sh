#!/usr/bin/env bash
# Build, check, test and package the VS Code extension, then run the package in real VS Code
# (e2e/run.sh); any failing step fails the script. Needs Node.js >= 20 and npm; the tests
# against the server also need a Python with lsp_spark installed (the repo's .venv, or
# $LSP_SPARK_PYTHON), and the browser test Chromium (it skips without, or fails under
# LSP_SPARK_REQUIRE_EDITORS=1).
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
python=${LSP_SPARK_PYTHON:-python3}
# Python's zipfile rather than unzip, which a bare machine may not have.
contents=$("$python" -c 'import sys, zipfile; print(" ".join(sorted(zipfile.ZipFile(sys.argv[1]).namelist())), end=" ")' "$vsix")
expected="[Content_Types].xml extension.vsixmanifest extension/dist/extension.js extension/package.json extension/readme.md "
if [[ "$contents" != "$expected" ]]; then
  echo "unexpected files in $vsix: $contents" >&2
  exit 1
fi
echo "== $vsix: $(stat -c %s "$vsix") bytes, built and tested in $((SECONDS - start)) s"
step bash e2e/run.sh
echo "== done in $((SECONDS - start)) s"
