#!/bin/sh
# bubblewrap, socat and ripgrep (Debian's packages) for the sandboxed workers' tests (`cocoplus sandbox doctor`,
# the `workspace` profile), and Anthropic's sandbox runtime for the `srt` profile: pinned in srt/package.json and
# installed in that project-local prefix (the tests put srt/node_modules/.bin on PATH; nothing global). The
# packages are skipped when all three are there. Needs root (or passwordless sudo) and apt; without them the
# tests that need a sandbox are skipped with the doctor's reason.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
install_srt() {
    npm ci --prefix "$here/srt" --ignore-scripts --no-audit --no-fund --loglevel=error
    echo "srt: $("$here/srt/node_modules/.bin/srt" --version)"
}
if command -v bwrap >/dev/null 2>&1 && command -v socat >/dev/null 2>&1 && command -v rg >/dev/null 2>&1; then
    echo "bubblewrap: $(bwrap --version) (already installed)"
    install_srt
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-sandbox.sh: no apt-get here; install bubblewrap, socat and ripgrep for the sandbox tests" >&2
    install_srt
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
    as_root=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    as_root="sudo -n"
else
    echo "install-sandbox.sh: not root; run 'apt-get install bubblewrap socat ripgrep' as root for the sandbox tests" >&2
    install_srt
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
$as_root apt-get update -qq
$as_root apt-get install -y -qq --no-install-recommends bubblewrap socat ripgrep >/dev/null
echo "bubblewrap: $(bwrap --version)"
install_srt
