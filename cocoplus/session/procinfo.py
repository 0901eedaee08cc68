"""Which process is the agent runtime a hook runs under, and is it still there.

A runtime starts its hooks either directly (Codex, Gemini CLI) or through
`sh -c COMMAND` (Claude Code), so the runtime is the nearest ancestor of the
hook that is not a shell.  On Linux this reads `/proc`; elsewhere it is the
hook's parent.  A process is named by its pid and its start time (clock
ticks since boot, from `/proc/PID/stat`), so a pid reused by another
process does not pass for the runtime.

Used at SessionStart (to record the process and how it was started, so
`cocoplus dispatch` knows whether the session still runs and how to
resume it, and the session registry knows it has ended when the runtime
died without saying so: `program_of` resolves the program to absolute paths
then, as the system found it when the runtime started, and `core.seal`
seals what was recorded), and by the turn-end hold (which ends when the
runtime is gone: Claude Code and Codex start hooks in their own process
group, so a waiting hook outlives a killed runtime).  A recorded process
names the machine and the pid namespace it ran in, so a record read from
another machine or another container is not taken for a process here.
Standard library only.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Iterator
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


# A sandboxed worker's hook runs outside its sandbox, in a process its control channel forks (sandbox/channel.py),
# whose ancestors are the channel and the runner, not the runtime: there the channel sets what its worker's record
# says runs the runtime (`{"pid", "start_ticks", "argv"}`: the sandbox's process on this machine, and the command
# it runs), and that is the runtime's process.
RUNTIME: "dict[str, Any] | None" = None


def runtime_process(start: int | None = None) -> dict[str, Any]:
    """`{"pid", "start_ticks", "argv", "host", "pidns"}` of the nearest non-shell ancestor, starting at `start`
    (default: the parent; in a sandboxed worker's channel, `RUNTIME`)."""
    if start is None and RUNTIME is not None:
        return {**RUNTIME, **here()}
    pid = os.getppid() if start is None else start
    for _ in range(8):
        fields = _stat_fields(pid)
        if fields is None:
            return {"pid": pid, "start_ticks": None, "argv": None, **here()}
        name, _state, parent, ticks = fields
        if name not in SHELLS or parent <= 1:
            return {"pid": pid, "start_ticks": ticks, "argv": argv_of(pid), **here()}
        pid = parent
    return {"pid": pid, "start_ticks": None, "argv": None, **here()}


def self_process() -> dict[str, Any]:
    """`{"pid", "start_ticks", "host", "pidns"}` of this process (what `gone` checks later)."""
    pid = os.getpid()
    return {"pid": pid, "start_ticks": start_ticks(pid), **here()}


def here() -> dict[str, str | None]:
    """Where a pid means something: this machine's name, and this process's pid namespace (Linux; else None)."""
    try:
        pidns: str | None = os.readlink("/proc/self/ns/pid")
    except OSError:
        pidns = None
    return {"host": os.uname().nodename, "pidns": pidns}


def gone(proc: Any) -> bool:
    """Whether the recorded process `proc` (as `runtime_process` gives it) has certainly ended.

    False where that cannot be known here: nothing recorded, a pid that is
    not one, a process of another machine or pid namespace, or one this
    user may not signal (it exists).  A record written before machine and
    namespace were recorded is taken as this machine's.
    """
    if not isinstance(proc, dict):
        return False
    where = here()
    for key in ("host", "pidns"):
        if proc.get(key) is not None and proc.get(key) != where[key]:
            return False
    return alive(proc.get("pid"), proc.get("start_ticks")) is False


def ancestors(start: int | None = None, limit: int = 64) -> list[tuple[int, int]]:
    """(pid, start ticks) of this process's parent, its parent, ... up to (not including) pid 1; [] without /proc."""
    return list(walk_up(start, limit))


def walk_up(start: int | None = None, limit: int = 64) -> Iterator[tuple[int, int]]:
    """`ancestors`, one process at a time (a caller looking for one process stops reading /proc once it is found)."""
    pid = os.getppid() if start is None else start
    for _ in range(limit):
        if pid <= 1:
            return
        fields = _stat_fields(pid)
        if fields is None:
            return
        yield pid, fields[3]
        pid = fields[2]


def find_program(name: str, search_path: str | None) -> str | None:
    """Where a bare command name is found on `search_path` (a PATH value), or None.

    Only absolute directories are searched: an empty or relative entry (".",
    "bin") would find the program from whatever the working directory is,
    which for cocoplus is usually the project, and a repository must not
    choose what cocoplus runs.
    """
    for d in (search_path or "").split(os.pathsep):
        if not d or not os.path.isabs(d):
            continue
        found = os.path.join(d, name)
        if os.path.isfile(found) and os.access(found, os.X_OK):
            return found
    return None


def _cwd(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None


def program_of(argv: list[str] | None, pid: int | None, search_path: str | None) -> list[str] | None:
    """The program part of a recorded command line (`runtimes.argv.program`) as absolute paths, or None.

    Resolved now, as the system did when the runtime started: its command
    on `search_path` (the runtime's PATH, absolute directories only), a
    relative path, and an interpreter's script, from the runtime's working
    directory (`/proc/PID/cwd`).  None when any part cannot be found: a
    resume then runs the runtime's command from PATH.
    """
    from cocoplus.runtimes import argv as words  # deferred: only a session start resolves a command line

    parts = words.program(argv)
    if not parts:
        return None
    out: list[str] = []
    cwd: str | None = None
    for i, part in enumerate(parts):
        if os.path.isabs(part):
            found: str | None = part
        elif i == 0 and "/" not in part:
            found = find_program(part, search_path)
        else:
            cwd = cwd or (_cwd(pid) if isinstance(pid, int) else None)
            found = os.path.join(cwd, part) if cwd else None
        if found is None or not os.path.isfile(found):
            return None
        out.append(found)
    return out


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


def descendants(pid: int) -> list[int]:
    """Every live process below `pid` (its children, theirs, ...), from /proc; [] where /proc cannot tell.

    Not used on the hook path: the runner of a managed worker calls it to find
    what its runtime left behind (cocoplus.supervision.leftovers).
    """
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    children: dict[int, list[int]] = {}
    for name in names:
        if name.isdigit():
            fields = _stat_fields(int(name))
            if fields is not None and fields[1] not in ("Z", "X"):
                children.setdefault(fields[2], []).append(int(name))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.append(child)
                todo.append(child)
    return found
