"""Which process is the agent runtime a hook runs under, and is it still there.

A runtime starts its hooks either directly (Codex, Gemini CLI) or through
`sh -c COMMAND` (Claude Code), so the runtime is the nearest ancestor of the
hook that is not a shell.  On Linux this reads `/proc`; elsewhere it is the
hook's parent.  A process is named by its pid and its start time (clock
ticks since boot, from `/proc/PID/stat`), so a pid reused by another
process does not pass for the runtime.

Used at SessionStart (to record the process and how it was started, so
`cocoplus dispatch` knows whether the session still runs and how to
resume it) and by the turn-end hold (which ends when the runtime is gone:
Claude Code and Codex start hooks in their own process group, so a waiting
hook outlives a killed runtime).  Standard library only.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any

SHELLS = frozenset(("sh", "dash", "bash", "zsh", "ksh", "mksh", "fish", "busybox"))
MAX_ARGV_BYTES = 64 * 1024


def _stat_fields(pid: int) -> tuple[str, str, int, int] | None:
    """(command name, state letter, parent pid, start time in ticks) from /proc, or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read(4096).decode("utf-8", "replace")
    except OSError:
        return None
    head, sep, tail = raw.rpartition(")")
    if not sep:
        return None
    name = head.partition("(")[2]
    rest = tail.split()
    try:
        return name, rest[0], int(rest[1]), int(rest[19])
    except (IndexError, ValueError):
        return None


def argv_of(pid: int) -> list[str] | None:
    """The process's command line, or None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            raw = fh.read(MAX_ARGV_BYTES)
    except OSError:
        return None
    if not raw:
        return None
    return [a.decode("utf-8", "surrogateescape") for a in raw.rstrip(b"\0").split(b"\0")]


def runtime_process(start: int | None = None) -> dict[str, Any]:
    """`{"pid", "start_ticks", "argv"}` of the nearest non-shell ancestor, starting at `start` (default: the parent)."""
    pid = os.getppid() if start is None else start
    for _ in range(8):
        fields = _stat_fields(pid)
        if fields is None:
            return {"pid": pid, "start_ticks": None, "argv": None}
        name, _state, parent, ticks = fields
        if name not in SHELLS or parent <= 1:
            return {"pid": pid, "start_ticks": ticks, "argv": argv_of(pid)}
        pid = parent
    return {"pid": pid, "start_ticks": None, "argv": None}


def start_ticks(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot), or None where /proc cannot tell."""
    fields = _stat_fields(pid)
    return None if fields is None else fields[3]


def alive(pid: Any, start_ticks: Any = None) -> bool | None:
    """Whether process `pid` (started at `start_ticks`, if known) still runs; None if `pid` is not a pid."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 1:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    except OSError:
        return None
    fields = _stat_fields(pid)
    if fields is not None:
        if fields[1] in ("Z", "X"):
            return False  # exited, not yet reaped by its parent
        if isinstance(start_ticks, int) and fields[3] != start_ticks:
            return False  # the pid was reused
    return True
