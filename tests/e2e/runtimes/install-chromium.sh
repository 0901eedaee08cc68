#!/bin/sh
# Headless Chromium for tests/server/test_browser.py, from Debian's packages
# (Playwright drives it; no browser is downloaded). Nothing to do when
# /usr/bin/chromium is already there. Needs root (or passwordless sudo) and apt.
set -eu
if [ -x /usr/bin/chromium ]; then
    echo "chromium: $(/usr/bin/chromium --version 2>/dev/null || echo present) (already installed)"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-chromium.sh: no apt-get here; install Chromium as /usr/bin/chromium for the browser test" >&2
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
    as_root=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    as_root="sudo -n"
else
    echo "install-chromium.sh: not root; run 'apt-get install chromium' as root for the browser test" >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
$as_root apt-get update -qq
$as_root apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null
echo "chromium: $(/usr/bin/chromium --version 2>/dev/null)"
