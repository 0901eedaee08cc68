"""The iteration budget: tool calls counted under a lock, warn once, stop at the cap.

`count()` is called by the PostToolUse hook for every tool call, possibly by
many processes at once (a runtime fires one hook per parallel tool call).
The read-modify-write of iteration-budget.json happens under its sidecar
lock, so N concurrent calls count N.  If the lock cannot be had within the
configured timeout, the increment is spooled as a file of its own and
folded in by the next holder, so a count is never lost and a hook never hangs.
"""

from __future__ import annotations

import os

from cocoplus.core import clock, fsio, progress
from cocoplus.core.errors import CocoplusError, LockTimeout, StateCorrupt
from cocoplus.core.lock import Lock
from cocoplus.core.paths import Layout
from cocoplus.core.records import check_iteration_budget, new_iteration_budget
from cocoplus.session import freshness

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any



class Outcome:
    __slots__ = ("budget", "warned_now", "capped", "capped_now", "spooled", "corrupt")

    def __init__(self) -> None:
        self.budget: dict[str, Any] | None = None
        self.warned_now = False
        self.capped = False  # consumed >= cap (this call or earlier)
        self.capped_now = False  # this call reached the cap
        self.spooled = False
        self.corrupt: StateCorrupt | None = None


def read(layout: Layout) -> dict[str, Any] | None:
    obj = fsio.read_json(layout.iteration_budget)
    return None if obj is None else check_iteration_budget(obj, layout.iteration_budget)


def _drain_spool(layout: Layout) -> list[str]:
    try:
        names = os.listdir(layout.iteration_spool_dir)
    except FileNotFoundError:
        return []
    return [os.path.join(layout.iteration_spool_dir, n) for n in names if n.startswith("inc-")]


def _spool(layout: Layout) -> None:
    d = layout.iteration_spool_dir
    name = os.path.join(d, f"inc-{os.getpid()}-{os.urandom(6).hex()}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(name, flags, 0o600)
    except FileNotFoundError:
        os.makedirs(d, mode=0o700, exist_ok=True)
        fd = os.open(name, flags, 0o600)
    os.close(fd)


def count(layout: Layout, cap: int, warn_at: int, *, timeout: float = 5.0, sync_progress: bool = True) -> Outcome:
    """Count one tool call. Never raises for a busy lock (spools instead).

    A damaged iteration-budget.json is set aside and reported in
    `outcome.corrupt`: the caller must fail closed (stop the agent).
    """
    out = Outcome()
    try:
        with Lock(layout.lock("iteration-budget"), timeout):
            spooled = _drain_spool(layout)
            try:
                current = read(layout)
            except StateCorrupt as exc:
                kept = fsio.quarantine(layout.iteration_budget)
                out.corrupt = StateCorrupt(exc.path, exc.cause, kept)
                return out
            doc = current if current is not None else new_iteration_budget(cap, warn_at)
            doc["cap"] = cap
            doc["warn_at"] = warn_at
            doc["consumed"] = doc["consumed"] + 1 + len(spooled)
            if not doc["warned"] and 0 < warn_at < cap and doc["consumed"] >= warn_at:
                doc["warned"] = True
                out.warned_now = True
            if doc["consumed"] >= cap:
                out.capped = True
                out.capped_now = not doc["stopped"]
                doc["stopped"] = True
            doc["updated_at"] = clock.iso()
            fsio.atomic_write_json(layout.iteration_budget, doc)
            for path in spooled:
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass
            out.budget = doc
            if sync_progress:
                sync_progress_file(layout, doc)
    except LockTimeout:
        _spool(layout)
        out.spooled = True
    return out


def exhausted_reason(doc: dict[str, Any]) -> str:
    """Why the agent is stopped at the cap; the same words for the kill switch and the status, however
    many calls came after the stop (they are counted, never shown as a count past the cap)."""
    return f"iteration budget exhausted ({doc['cap']}/{doc['cap']})"


def reset(layout: Layout) -> dict[str, Any]:
    """Start the count again (operator's `session resume --reset-budget`)."""

    def update(current: dict[str, Any] | None) -> dict[str, Any]:
        base = current or new_iteration_budget(200, 160)
        doc = new_iteration_budget(base["cap"], base["warn_at"])
        return doc

    try:
        doc = fsio.locked_update(
            layout.iteration_budget, layout.lock("iteration-budget"), update, validate=check_iteration_budget
        )
    except StateCorrupt:
        # The damaged copy is kept aside by locked_update; start fresh from config.
        from cocoplus import config

        cfg = config.load_for(layout)
        doc = new_iteration_budget(cfg.session["max_iterations"], cfg.session["iteration_warn_at"])
        fsio.atomic_write_json(layout.iteration_budget, doc)
    for path in _drain_spool(layout):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    sync_progress_file(layout, doc)
    return doc


def budget_lines(doc: dict[str, Any]) -> dict[str, str]:
    return {"Cap": str(doc["cap"]), "Consumed": str(doc["consumed"]), "Warn At": str(doc["warn_at"])}


def sync_progress_file(layout: Layout, doc: dict[str, Any], extra: dict[str, str] | None = None) -> bool:
    """Set PROGRESS.md's Iteration Budget lines, leaving every other byte as it was.

    Does nothing if PROGRESS.md does not exist.  If the file changes while
    we compute (the agent is editing it), we start again from its new
    content rather than overwrite the edit.  Returns whether it wrote.
    """
    values = budget_lines(doc)
    if extra:
        values.update(extra)
    return update_progress(layout, lambda text: progress.set_budget(text, values))


def update_progress(layout: Layout, change: Any, attempts: int = 3) -> bool:
    path = layout.progress
    with Lock(layout.lock("progress")):
        for _ in range(attempts):
            try:
                before = os.stat(path)
                text = fsio.read_text(path)
            except FileNotFoundError:
                return False
            except CocoplusError:
                return False  # damaged PROGRESS.md is reported by status/check, not rewritten here
            if text is None:
                return False
            new = change(text)
            if new == text:
                return False
            try:
                after = os.stat(path)
            except FileNotFoundError:
                return False
            if (after.st_mtime_ns, after.st_size, after.st_ino) != (before.st_mtime_ns, before.st_size, before.st_ino):
                continue
            freshness.note(layout, text, before.st_mtime)  # our write must not make the handoff look fresh
            fsio.atomic_write_text(path, new)
            return True
    return False
