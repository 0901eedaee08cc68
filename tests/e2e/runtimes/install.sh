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
# Codex's own sandbox runs its helper `codex-linux-sandbox` (its own binary under that name) through PATH when
# the system's bwrap is older than 0.9 (no --argv0, as Debian 12's 0.8.0): without it on PATH, a command under
# `-s workspace-write` silently does not run. The e2e tests put this directory on PATH (tests/e2e/conftest.py).
helper="$here/node_modules/.codex-helper"
mkdir -p "$helper"
ln -sf "$(find "$here/node_modules/@openai" -path '*/vendor/*/bin/codex' -type f | head -n 1)" "$helper/codex-linux-sandbox"
# bubblewrap, socat and ripgrep for the sandboxed workers (Debian's packages), and the pinned srt.
sh "$here/install-sandbox.sh"
# Headless Chromium for the web page's browser test (Debian's package).
sh "$here/install-chromium.sh"
# nss_wrapper: each test its own entry in the password database (Debian's package).
sh "$here/install-nss-wrapper.sh"
# dash, zsh and fish for the shell-init tests (Debian's packages).
sh "$here/install-shells.sh"
