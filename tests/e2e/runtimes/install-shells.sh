#!/bin/sh
# The shells `cocoplus shell-init` is tested in (tests/cli/test_shell_and_version.py):
# dash (POSIX sh), zsh and fish, from Debian's packages; bash is assumed. A shell
# that cannot be installed here is skipped by the tests, with the reason.
set -eu
missing=""
for sh in dash zsh fish; do
    command -v "$sh" >/dev/null 2>&1 || missing="$missing $sh"
done
if [ -z "$missing" ]; then
    echo "shells: dash, zsh and fish already installed"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-shells.sh: no apt-get here; install$missing for the shell-init tests" >&2
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
    as_root=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    as_root="sudo -n"
else
    echo "install-shells.sh: not root; run 'apt-get install$missing' as root for the shell-init tests" >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
$as_root apt-get update -qq
# shellcheck disable=SC2086 # one package name per word
$as_root apt-get install -y -qq --no-install-recommends $missing >/dev/null
echo "shells: installed$missing"
