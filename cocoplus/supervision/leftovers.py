"""What a worker's runtime leaves behind: found, reported and ended by the worker's runner.

A runtime that starts a daemon (a dev server, a watcher, `cmd &` in a tool
call) may exit while it still runs.  A process group does not hold such a
daemon (a double fork with `setsid` leaves the group and the session), and
neither does the output pipe (the daemon may keep it open for as long as it
likes, and would keep the worker's slot that long).  So the runner makes
itself a *child subreaper* (`prctl(PR_SET_CHILD_SUBREAPER)`, Linux 3.4+, no
privilege needed): every process its runtime started, however it detached,
is re-parented to the runner when its own parent exits, instead of to init.
What is still below the runner once the runtime has exited is what it left
behind (`find`); `end` stops it (SIGTERM, SIGKILL after a grace period) and
reaps it.

Why not a cgroup: a cgroup holds every process too, but creating one needs
root or a delegated subtree (systemd's user slice, when there is one), which
a user running `cocoplus launch` cannot count on; the subreaper needs
nothing.  What it cannot see: a process started outside the runtime's
process tree on its behalf (by systemd-run, at, a daemon it asked over a
socket), and orphans of a runner that was itself killed with SIGKILL (they
go to init).

Elsewhere (no prctl, no /proc) `become_subreaper` says False and the runner
ends only what is still in the runtime's process group; the slot is freed
all the same, since the runner waits for the runtime process, not for its
output pipe.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Any

from cocoplus.session import procinfo

PR_SET_CHILD_SUBREAPER = 36
POLL_S = 0.05
MAX_COMMAND = 300


def become_subreaper() -> bool:
    """Make this process a child subreaper; False where the system has none (not Linux, or prctl refused)."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # deferred: only the runner of a worker comes here

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def wait_for(pid: int) -> int:
    """Wait for child `pid` and return its raw wait status, reaping every other child that ends meanwhile.

    As a subreaper the runner inherits its runtime's orphans; those that end
    before the runtime does are reaped here, so none lingers as a zombie.
    """
    while hasattr(os, "waitid"):
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT)
        except ChildProcessError:
            break
        if info is None or info.si_pid == pid:
            break
        try:
            os.waitpid(info.si_pid, 0)
        except ChildProcessError:
            pass
    _, status = os.waitpid(pid, 0)
    return status


def reap() -> None:
    """Reap every child of this process that has ended (never blocks)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def describe(pid: int) -> dict[str, Any] | None:
    """`{"pid", "start_ticks", "command"}` of a live process, or None once it is gone."""
    ticks = procinfo.start_ticks(pid)
    if ticks is None or procinfo.alive(pid, ticks) is not True:
        return None
    argv = procinfo.argv_of(pid) or []
    return {"pid": pid, "start_ticks": ticks, "command": " ".join(argv)[:MAX_COMMAND]}


def find(root: int | None = None) -> list[dict[str, Any]]:
    """Every live process below `root` (default: this process), described."""
    found = [describe(pid) for pid in procinfo.descendants(os.getpid() if root is None else root)]
    return [d for d in found if d is not None]


def _live(procs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in procs if procinfo.alive(p.get("pid"), p.get("start_ticks")) is True]


def _send(procs: list[dict[str, Any]], sig: int) -> None:
    for p in _live(procs):
        try:
            os.kill(p["pid"], sig)
        except OSError:
            pass


def end(procs: list[dict[str, Any]], grace: float, *, below: int | None = None) -> list[dict[str, Any]]:
    """SIGTERM `procs`, SIGKILL after `grace` seconds what still runs; the ones still alive after that.

    With `below` (this process, a subreaper) whatever appears below it
    meanwhile (a daemon's own orphans) is ended too, and the ended ones are
    reaped.  Without it only `procs` are signalled (`workers kill` from
    another process).
    """
    procs = list(procs)

    def current() -> list[dict[str, Any]]:
        if below is not None:
            reap()
            known = {p["pid"] for p in procs}
            procs.extend(d for d in find(below) if d["pid"] not in known)
        return _live(procs)

    _send(current(), signal.SIGTERM)
    deadline = time.monotonic() + grace
    while current() and time.monotonic() < deadline:
        time.sleep(POLL_S)
    deadline = time.monotonic() + grace
    while (left := current()) and time.monotonic() < deadline:
        _send(left, signal.SIGKILL)
        time.sleep(POLL_S)
    return current()
