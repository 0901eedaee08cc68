"""A cocoplus process that runs in the background for a project: one at a time, found by its lock, started
detached and stopped with SIGTERM.

The supervisor (`cocoplus supervision watcher run`) and the fleet relay (`cocoplus
relay run`) are such processes: each holds its lock (`.cocoplus/locks/<lock>`)
for its life and writes its pid into a state file, so whether one runs is
known from the lock (no stale pid files), and which process it is from the
state file.  Standard library only.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from typing import Any

from cocoplus.core import fsio, proc
from cocoplus.core.errors import CocoplusError
from cocoplus.core.lock import is_locked
from cocoplus.core.paths import Layout


class Background:
    """One kind of background process: its lock, its state file, the command that starts it, its log."""

    def __init__(
        self, name: str, lock: str, state: Callable[[Layout], str], argv: list[str], log: Callable[[Layout], str]
    ) -> None:
        self.name = name  # what it is called in messages: "supervisor", "relay"
        self.lock = lock
        self.state = state
        self.argv = argv
        self.log = log

    def read_state(self, layout: Layout) -> dict[str, Any]:
        """Its state file (`{}` when there is none; `damaged` and `error` when it cannot be read)."""
        try:
            return fsio.read_json(self.state(layout)) or {}
        except CocoplusError as exc:
            return {"damaged": True, "error": str(exc)}

    def running_pid(self, layout: Layout) -> int | None:
        """The pid of the one running for this project, if one does (-1: one runs, its pid cannot be read)."""
        if not is_locked(layout.lock(self.lock)):
            return None
        pid = self.read_state(layout).get("pid")
        return pid if isinstance(pid, int) and pid > 0 else -1

    def start_detached(
        self,
        layout: Layout,
        wait_s: float = 10.0,
        ready: Callable[[int], bool] | None = None,
        env_extra: Callable[[], dict[str, str]] | None = None,
    ) -> int | None:
        """Start it in the background unless one runs: its pid (None if one ran already).

        Waits until it has written its pid (or `ready(pid)` holds), it has exited, or `wait_s` passed.
        `env_extra()` gives what goes into its environment besides (made only when it is started).
        """
        if self.running_pid(layout) is not None:
            return None
        fsio.ensure_dir(os.path.dirname(self.state(layout)))
        child = proc.spawn_cocoplus(
            self.argv, state_dir=layout.root, cwd=layout.project, log_path=self.log(layout),
            env_extra=env_extra() if env_extra is not None else None,
        )  # fmt: skip
        started = ready or (lambda pid: self.read_state(layout).get("pid") == pid and self.running_pid(layout) == pid)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if started(child.pid) or child.poll() is not None:
                break
            time.sleep(0.05)
        return child.pid

    def stop(self, layout: Layout, timeout: float = 10.0) -> dict[str, Any]:
        """SIGTERM to the one running, and wait until its lock is free: `{"stopped", "pid", "why"?}`."""
        pid = self.running_pid(layout)
        if pid is None:
            return {"stopped": False, "pid": None, "why": f"no {self.name} is running for this project"}
        if pid <= 0:
            return {
                "stopped": False,
                "pid": None,
                "why": f"a {self.name} holds the lock but its state file is unreadable",
            }
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.running_pid(layout) is None:
                return {"stopped": True, "pid": pid}
            time.sleep(0.05)
        return {"stopped": False, "pid": pid, "why": f"still running after {timeout:g}s"}


# The supervisor (`cocoplus supervision watcher run`): defined here so that whatever must know whether it runs (a
# notification that says what follows a pause) can ask without importing the supervision code.
SUPERVISOR = Background(
    "supervisor", "supervisor", lambda lay: lay.supervisor_pid, ["supervisor", "run"], lambda lay: lay.supervisor_log
)
