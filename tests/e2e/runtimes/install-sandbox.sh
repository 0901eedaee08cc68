#!/bin/sh
# bubblewrap and socat (Debian's packages) for the sandboxed workers' tests (`cocoplus sandbox doctor`, the
# `workspace` profile) and Anthropic's sandbox runtime. Nothing to do when both are there. Needs root (or
# passwordless sudo) and apt; without them the tests that need a sandbox are skipped with the doctor's reason.
set -eu
if command -v bwrap >/dev/null 2>&1 && command -v socat >/dev/null 2>&1; then
    echo "bubblewrap: $(bwrap --version) (already installed)"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-sandbox.sh: no apt-get here; install bubblewrap and socat for the sandbox tests" >&2
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
    as_root=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    as_root="sudo -n"
else
    echo "install-sandbox.sh: not root; run 'apt-get install bubblewrap socat' as root for the sandbox tests" >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
$as_root apt-get update -qq
$as_root apt-get install -y -qq --no-install-recommends bubblewrap socat >/dev/null
echo "bubblewrap: $(bwrap --version)"
