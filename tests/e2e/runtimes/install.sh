#!/bin/sh
# Install the pinned agent runtime CLIs used by the end-to-end tests, and the
# official MCP conformance suite with the Node 22 it runs on (versions in
# package.json / package-lock.json). Lifecycle scripts are skipped except
# Claude Code's, which places its native binary, and the `node` package's,
# which fetches the Node 22 binary of its own version for this platform.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
npm ci --prefix "$here" --ignore-scripts --no-audit --no-fund --loglevel=error
node "$here/node_modules/@anthropic-ai/claude-code/install.cjs"
npm rebuild node --prefix "$here" --no-audit --no-fund --loglevel=error
"$here/node_modules/.bin/claude" --version
"$here/node_modules/.bin/codex" --version
"$here/node_modules/.bin/gemini" --version
"$here/node_modules/.bin/node" --version
"$here/node_modules/.bin/node" "$here/node_modules/.bin/conformance" --version
# Headless Chromium for the web page's browser test (Debian's package).
sh "$here/install-chromium.sh"
# nss_wrapper: each test its own entry in the password database (Debian's package).
sh "$here/install-nss-wrapper.sh"
# dash, zsh and fish for the shell-init tests (Debian's packages).
sh "$here/install-shells.sh"
