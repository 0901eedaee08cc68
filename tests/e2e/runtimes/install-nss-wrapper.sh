#!/bin/sh
# nss_wrapper (Debian's libnss-wrapper): the suite gives every test a home directory of its own, and
# cocoplus finds this user's home in the password database, not in $HOME (a repository can set a
# hook's HOME). With LD_PRELOAD=libnss_wrapper.so and NSS_WRAPPER_PASSWD, each test's processes see a
# password database whose entry for this user names the test's home (tests/conftest.py sets them).
set -eu
for d in /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib64 /usr/lib; do
    if [ -e "$d/libnss_wrapper.so" ]; then
        echo "nss_wrapper: already installed"
        exit 0
    fi
done
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-nss-wrapper.sh: no apt-get here; install nss_wrapper (libnss_wrapper.so) for the test suite" >&2
    exit 1
fi
if [ "$(id -u)" -eq 0 ]; then
    as_root=""
else
    as_root="sudo -n"
fi
export DEBIAN_FRONTEND=noninteractive
$as_root apt-get update -qq
$as_root apt-get install -y -qq --no-install-recommends libnss-wrapper >/dev/null
echo "nss_wrapper: installed"
