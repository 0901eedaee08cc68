"""File watching shared by the supervisor and the server: watchdog, used as a source of hints.

An observer on `.cocoplus/` calls back with the paths that changed.  Reads
(`opened`, `closed_no_write`) and directory-modified events are dropped:
both processes read the files they watch, and reacting to their own reads
would wake them in a loop.  A move counts for its destination as well as
its source (atomic saves arrive as moves).  If inotify cannot be used (no
watches left, a file system without it) or polling is asked for, a
PollingObserver is used instead; `ensure_alive` restarts an observer whose
thread died.  Callers still re-read files on a timer: events can be
coalesced or dropped.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

IGNORED_EVENTS = ("opened", "closed_no_write")


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

    def __init__(self, root: str, on_change: Callable[[str], None], *, polling: bool = False, log: Callable[[str], None] | None = None) -> None:
        self.root = root
        self.on_change = on_change
        self.polling = polling
        self.log = log or (lambda _msg: None)
        self.observer: Any = None
        self.kind = "none"
        self.handler_errors = 0

    def start(self) -> str:
        from watchdog.events import FileSystemEventHandler  # deferred: heavy (watchdog), only when a watch starts
        from watchdog.observers import Observer  # deferred: heavy (watchdog), as above
        from watchdog.observers.polling import PollingObserver  # deferred: heavy (watchdog), as above

        watch = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: Any) -> None:
                try:
                    for path in changed_paths(event):
                        watch.on_change(path)
                except Exception:  # noqa: BLE001 - an exception here would kill the observer thread
                    watch.handler_errors += 1

        kinds = [("polling", PollingObserver)] if self.polling else [("inotify", Observer), ("polling", PollingObserver)]
        for kind, cls in kinds:
            obs = cls(timeout=1) if kind == "polling" else cls()
            try:
                obs.schedule(Handler(), self.root, recursive=True)
                obs.start()
            except OSError as exc:
                self.log(f"{kind} file watching unavailable ({exc}); falling back")
                continue
            self.observer, self.kind = obs, kind
            return kind
        self.observer, self.kind = None, "none"
        self.log("no file watching available; re-reading on a timer only")
        return "none"

    def ensure_alive(self) -> None:
        if self.observer is not None and not self.observer.is_alive():
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
