"""Processes run with this user's inotify instances really used up, and nobody else's.

inotify instances are counted per user and per user namespace, against
`/proc/sys/user/max_inotify_instances` of each namespace up to the first
(`fs.inotify.max_user_instances`, which is that file in the first
namespace).  A user namespace of its own (`unshare --user --map-root-user`:
no privilege needed where unprivileged user namespaces are allowed, and the
same user, files and interpreter inside) gets its own count and its own
limit, which the holder below lowers to LIMIT for that namespace alone; it
then opens inotify instances until the kernel refuses (EMFILE), holds them,
and runs the command under test in the same namespace.  Nothing outside the
namespace changes: the system-wide sysctl stays as it was, and the user's
count outside the namespace grows by LIMIT at most (a namespace's instances
count for its parent too; that is why the limit is lowered rather than the
first namespace's 128 used up, which would starve every process of this
user on the machine).

Why not a throw-away user (useradd) with its real instances used up: a test
run as root can create one, but that user cannot run the suite's Python
when it lives under a home directory of mode 0700 (here /root/.pyenv), and
a suite not run as root could not create one at all.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

LIMIT = 6
USER_NS_LIMIT = "/proc/sys/user/max_inotify_instances"

HOLDER = """\
import ctypes, json, os, signal, subprocess, sys
limit, ready, argv = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
with open("/proc/sys/user/max_inotify_instances", "w") as fh:
    fh.write(str(limit))  # this user namespace's own limit; the first namespace's is untouched
libc = ctypes.CDLL(None, use_errno=True)
held = []
while True:
    fd = libc.inotify_init1(0o2000000)  # IN_CLOEXEC: the command does not inherit them; the count is per user
    if fd < 0:
        err = ctypes.get_errno()
        break
    held.append(fd)
child = subprocess.Popen(argv)
signal.signal(signal.SIGTERM, lambda *_: child.send_signal(signal.SIGTERM))
with open(ready + ".part", "w") as fh:
    json.dump({"held": len(held), "errno": err, "limit": limit, "pid": child.pid}, fh)
os.replace(ready + ".part", ready)
sys.exit(child.wait())
"""


def skip_unless_possible() -> None:
    """Skip, saying why, where a user namespace with its own inotify limit cannot be made."""
    if not sys.platform.startswith("linux"):
        pytest.skip("inotify is Linux's")
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare (util-linux) to make a user namespace with inotify instances of its own")
    probe = subprocess.run(
        ["unshare", "--user", "--map-root-user", "sh", "-c", f"echo 1 > {USER_NS_LIMIT}"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if probe.returncode != 0:
        pytest.skip(
            f"cannot make a user namespace with its own inotify limit here: {(probe.stderr or '').strip()[:200]}"
        )


def system_limit() -> str:
    return Path("/proc/sys/fs/inotify/max_user_instances").read_text().strip()


class Exhausted:
    """`argv` run in a user namespace whose inotify instances (LIMIT of them) a holder process has all taken."""

    def __init__(self, tmp: Path, argv: Sequence[str], *, log: Path, cwd: str, env: dict[str, str]) -> None:
        script = tmp / "inotify_holder.py"
        script.write_text(HOLDER)
        self.ready = tmp / "inotify_holder.json"
        self.log = log
        self.fh = log.open("w")
        self.proc = subprocess.Popen(
            ["unshare", "--user", "--map-root-user", sys.executable, str(script), str(LIMIT), str(self.ready), *argv],
            cwd=cwd,
            env=env,
            stdout=self.fh,
            stderr=subprocess.STDOUT,
        )

    def held(self) -> dict[str, Any]:
        """What the holder took (`held`, the `errno` that stopped it, `limit`) and the command's `pid`, once it runs."""
        from tests.support.waiting import wait_until

        wait_until(lambda: self.ready.exists() or self.proc.poll() is not None, timeout=30)
        assert self.ready.exists(), self.log.read_text()
        return dict(json.loads(self.ready.read_text()))

    def run_inside(self, argv: Sequence[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        """Run `argv` in the same user namespace (nsenter), where the instances are used up too."""
        return subprocess.run(
            ["nsenter", "--user", "--target", str(self.proc.pid), *argv],
            capture_output=True,
            text=True,
            timeout=60,
            **kw,
        )

    def text(self) -> str:
        return self.log.read_text()

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.fh.close()
        return self.proc.returncode


def env_for(root: str) -> dict[str, str]:
    return dict(os.environ, COCOPLUS_DIR=root)
