#!/bin/sh
# Install the pinned agent runtime CLIs used by the end-to-end tests
# (versions in package.json / package-lock.json). Lifecycle scripts are
# skipped except Claude Code's, which places its native binary.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
npm ci --prefix "$here" --ignore-scripts --no-audit --no-fund --loglevel=error
node "$here/node_modules/@anthropic-ai/claude-code/install.cjs"
"$here/node_modules/.bin/claude" --version
"$here/node_modules/.bin/codex" --version
"$here/node_modules/.bin/gemini" --version
# Headless Chromium for the web page's browser test (Debian's package).
sh "$here/install-chromium.sh"
# nss_wrapper: each test its own entry in the password database (Debian's package).
sh "$here/install-nss-wrapper.sh"
# dash, zsh and fish for the shell-init tests (Debian's packages).
sh "$here/install-shells.sh"
