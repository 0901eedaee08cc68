"""File watching shared by the supervisor and the server: watchdog, used as a source of hints.

An observer on `.cocoplus/` calls back with the paths that changed (never
for workers' git worktrees under it, `UNWATCHED`: a checkout each).  Reads
(`opened`, `closed_no_write`) and directory-modified events are dropped:
both processes read the files they watch, and reacting to their own reads
would wake them in a loop.  A move counts for its destination as well as
its source (atomic saves arrive as moves).  Callers still re-read files on
a timer: events can be coalesced or dropped.

No file-system events is not an error.  If inotify cannot be used (this
user's inotify instances or watches are used up, a file system without it),
or polling is asked for, watchdog's PollingObserver scans the directory
every POLL_S instead: slower to notice, the same results.  The reason is
said once in the caller's log (not on every restart) and kept in `why`, so
the process can record it (`state()`: the supervisor in supervisor.json,
the relay in fleet/relay.json) for `supervision status`, `relay status` and
`doctor`.  `ensure_alive` restarts an observer whose thread, or one of
whose emitters, died (a watch that could not be added for a new directory
ends its emitter): the restart polls if inotify still fails.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from typing import Any

IGNORED_EVENTS = ("opened", "closed_no_write")
# Directories under the watched one that are never watched: workers' git worktrees (a whole checkout each).
UNWATCHED = ("worktrees",)
POLL_S = 1.0
IN_CLOEXEC = 0o2000000
IN_MODIFY = 0x2


def why_unavailable(exc: OSError) -> str:
    """Why inotify could not be used, in a phrase naming the limit to raise."""
    if exc.errno == errno.EMFILE:
        return "the inotify instance limit is reached (fs.inotify.max_user_instances)"
    if exc.errno == errno.ENOSPC:
        return "the inotify watch limit is reached (fs.inotify.max_user_watches)"
    return f"inotify cannot be used ({exc.strerror or exc})"


def probe(root: str) -> dict[str, Any]:
    """Whether this user could watch `root` with inotify now: `{"inotify": bool | None, "why"}` (None: not Linux).

    For `doctor`: it takes one inotify instance and one watch, and gives them back at once.
    """
    import ctypes  # deferred: only doctor probes
    import sys  # deferred: as above

    if not sys.platform.startswith("linux"):
        return {"inotify": None, "why": "no inotify on this system"}
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = int(libc.inotify_init1(IN_CLOEXEC))
    except (OSError, AttributeError) as exc:
        return {"inotify": False, "why": f"inotify cannot be used ({exc})"}
    if fd < 0:
        err = ctypes.get_errno()
        return {"inotify": False, "why": why_unavailable(OSError(err, os.strerror(err)))}
    try:
        if int(libc.inotify_add_watch(fd, os.fsencode(root), IN_MODIFY)) < 0:
            err = ctypes.get_errno()
            return {"inotify": False, "why": why_unavailable(OSError(err, os.strerror(err)))}
    finally:
        os.close(fd)
    return {"inotify": True, "why": None}


def changed_paths(event: Any) -> list[str]:
    """The paths a watchdog event says changed (none for reads and directory touches)."""
    if event.event_type in IGNORED_EVENTS:
        return []
    if event.is_directory and event.event_type == "modified":
        return []
    out = []
    for attr in ("src_path", "dest_path"):
        p = getattr(event, attr, None)
        if p:
            out.append(os.fsdecode(p))
    return out


class Watch:
    """A watchdog observer on one directory, with polling fallback and a health check."""

    def __init__(
        self,
        root: str,
        on_change: Callable[[str], None],
        *,
        polling: bool = False,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.root = root
        self.on_change = on_change
        self.polling = polling
        self.log = log or (lambda _msg: None)
        self.observer: Any = None
        self.kind = "none"
        self.why: str | None = None  # why inotify is not used, when it is not
        self.handler_errors = 0
        self._said: tuple[str, str | None] | None = None
        self._handler: Any = None
        self._below: set[str] = set()  # the directories in `root` watched with all below them

    def state(self) -> dict[str, Any]:
        """`{"kind": "inotify" | "polling" | "none", "why"}`, for the process's state file."""
        return {"kind": self.kind, "why": self.why}

    def _say_once(self) -> None:
        now = (self.kind, self.why)
        if now == self._said:
            return
        self._said = now
        if self.kind == "polling" and self.polling:
            self.log(f"polling {self.root} every {POLL_S:g}s, as asked")
        elif self.kind == "polling":
            self.log(f"no file-system events: {self.why}; polling {self.root} every {POLL_S:g}s instead")
        elif self.kind == "none":
            self.log(f"no file watching available: {self.why}; re-reading on a timer only")

    def start(self) -> str:
        from watchdog.events import FileSystemEventHandler  # deferred: heavy (watchdog), only when a watch starts
        from watchdog.observers import Observer  # deferred: heavy (watchdog), as above
        from watchdog.observers.polling import PollingObserver  # deferred: heavy (watchdog), as above

        watch = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: Any) -> None:
                try:
                    if event.is_directory and event.event_type in ("created", "moved"):
                        watch._watch_below(os.fsdecode(getattr(event, "dest_path", "") or event.src_path))
                    for path in changed_paths(event):
                        if not watch._unwatched(path):
                            watch.on_change(path)
                except Exception:  # noqa: BLE001 - an exception here would kill the observer thread
                    watch.handler_errors += 1

        kinds = (
            [("polling", PollingObserver)] if self.polling else [("inotify", Observer), ("polling", PollingObserver)]
        )
        self.why = "it was asked for" if self.polling else None
        for kind, cls in kinds:
            obs = None
            try:
                # The inotify observer takes its inotify instance when it is made, its watches when it starts.
                obs = cls(timeout=POLL_S) if kind == "polling" else cls()
                # The directory itself, then each directory in it but the unwatched ones, with all below.
                self._handler = Handler()
                obs.schedule(self._handler, self.root, recursive=False)
                self._below = set()
                for sub in self._subdirs():
                    obs.schedule(self._handler, sub, recursive=True)
                    self._below.add(sub)
                obs.start()
            except OSError as exc:
                _discard(obs)
                self.why = (
                    why_unavailable(exc)
                    if kind == "inotify"
                    else f"{self.why}; polling failed too: {exc.strerror or exc}"
                )
                continue
            self.observer, self.kind = obs, kind
            self._say_once()
            return kind
        self.observer, self.kind = None, "none"
        self._say_once()
        return "none"

    def _subdirs(self) -> list[str]:
        try:
            names = sorted(os.listdir(self.root))
        except OSError:
            return []
        out = []
        for name in names:
            path = os.path.join(self.root, name)
            if name not in UNWATCHED and os.path.isdir(path) and not os.path.islink(path):
                out.append(path)
        return out

    def _unwatched(self, path: str) -> bool:
        rel = os.path.relpath(path, self.root)
        return rel.split(os.sep, 1)[0] in UNWATCHED

    def _watch_below(self, path: str) -> None:
        """A directory made in the watched one (not an unwatched one): watch it and all below it from now on."""
        if os.path.dirname(path) != self.root or self._unwatched(path) or path in self._below:
            return
        obs = self.observer
        if obs is not None and os.path.isdir(path) and not os.path.islink(path):
            obs.schedule(self._handler, path, recursive=True)
            self._below.add(path)

    def ensure_alive(self) -> None:
        obs = self.observer
        if obs is None:
            return
        if not obs.is_alive() or not all(e.is_alive() for e in list(getattr(obs, "emitters", ()))):
            self.log("the file observer stopped; restarting it")
            self.stop()
            self.start()

    def stop(self) -> None:
        obs, self.observer = self.observer, None
        if obs is None:
            return
        try:
            obs.stop()
            obs.join(timeout=5)
        except Exception:  # noqa: BLE001 - stopping must not raise on the way out
            pass


def _discard(obs: Any) -> None:
    """An observer that failed to start: give back what it took (the inotify instance, its reader thread)."""
    if obs is None:
        return
    try:
        obs.stop()
        if obs.is_alive():
            obs.join(timeout=5)
    except Exception:  # noqa: BLE001 - best effort on a failed start
        pass
