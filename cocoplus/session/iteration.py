"""The iteration budget: tool calls counted under a lock, warn once, stop at the cap.

`count()` is called by the PostToolUse hook for every tool call, possibly by
many processes at once (a runtime fires one hook per parallel tool call).
The read-modify-write of iteration-budget.json happens under its sidecar
lock, so N concurrent calls count N.  An increment that cannot be applied
(the lock stays busy past the caller's budget, or the file cannot be
written, on a full disk say) is spooled as an empty file of its own, which
needs no data block, and folded in by the next holder, so a count is never
lost and a hook never hangs.  If even the spool file cannot be made, the
call fails closed: AGENT_STOP is created and `outcome.failed_closed` says why.

A damaged iteration-budget.json is set aside and the agent is stopped
(`outcome.corrupt`); until the operator restores the file or runs `session
resume --reset-budget`, every later call fails closed the same way rather
than starting again from 1.
"""

from __future__ import annotations

import os
import time

from cocoplus.core import clock, fsio
from cocoplus.core.errors import CocoplusError, StateCorrupt
from cocoplus.core.lock import DEFAULT_TIMEOUT, Budget, Lock
from cocoplus.core.paths import Layout
from cocoplus.core.records import MAX_COUNT, check_iteration_budget, new_iteration_budget
from cocoplus.session import killswitch

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Callable
    from typing import Any


class Outcome:
    __slots__ = (
        "budget", "warned_now", "capped", "capped_now", "spooled", "corrupt", "failed_closed", "problems", "refused",
        "shared", "ceiling",
    )  # fmt: skip

    def __init__(self) -> None:
        self.budget: dict[str, Any] | None = None
        self.warned_now = False
        self.capped = False  # consumed >= cap (this call or earlier)
        self.capped_now = False  # this call reached the cap
        self.spooled = False  # the increment was kept in the spool, to be counted by the next holder
        self.corrupt: StateCorrupt | None = None  # damaged (now, or earlier and not yet reset): stop the agent
        self.failed_closed: str | None = None  # the increment could not be kept: AGENT_STOP was created; why
        self.problems: list[str] = []  # what went wrong on the way, for the caller's log
        self.refused = False  # counted before the call: the cap was reached already, so this call must not run
        # Several sessions are live (`shared`): the cap applies to each session's own count, not to the project's
        # (the caller checks the session's); the project's count is held only to `[session] project_max_iterations`.
        self.shared = False
        self.ceiling = False  # what capped the count is `[session] project_max_iterations`, not the cap


# The count's rate marks (`rate_marks`: `[[epoch seconds, count], ...]`, oldest first): one at most every
# MARK_EVERY_S, the last MARKS_KEPT kept, so the rate of the last hour can be told (cost/forecast.py).
MARK_EVERY_S = 300.0
MARKS_KEPT = 13


def _mark(doc: dict[str, Any], now: float) -> None:
    marks = doc.get("rate_marks")
    if not isinstance(marks, list):
        marks = []
    last = marks[-1] if marks and isinstance(marks[-1], list) and len(marks[-1]) == 2 else None
    # (a mark is kept to the millisecond, rounded: a count within the same millisecond may read as a hair before it)
    if last is None or not isinstance(last[0], (int, float)) or not -0.001 <= now - last[0] < MARK_EVERY_S:
        marks.append([round(now, 3), doc["consumed"]])
        doc["rate_marks"] = marks[-MARKS_KEPT:]


def read(layout: Layout) -> dict[str, Any] | None:
    obj = fsio.read_json(layout.iteration_budget)
    return None if obj is None else check_iteration_budget(obj, layout.iteration_budget)


def _drain_spool(layout: Layout) -> list[str]:
    try:
        fsio.refuse_linked_dirs(os.path.join(layout.iteration_spool_dir, "-"))
        names = os.listdir(layout.iteration_spool_dir)
    except (OSError, CocoplusError):  # missing, or not a real directory: nothing spooled there
        return []
    return [os.path.join(layout.iteration_spool_dir, n) for n in names if n.startswith("inc-")]


def spooled(layout: Layout) -> int:
    """Increments kept in the spool, not yet folded into iteration-budget.json (for `session status`)."""
    return len(_drain_spool(layout))


def _spool(layout: Layout) -> None:
    """Keep one increment as an empty file (no data block needed). CocoplusError if even that fails."""
    d = layout.iteration_spool_dir
    name = os.path.join(d, f"inc-{os.getpid()}-{os.urandom(6).hex()}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fsio.refuse_linked_dirs(name)
        try:
            fd = os.open(name, flags, 0o600)
        except FileNotFoundError:
            fsio.ensure_dir(d)
            fd = os.open(name, flags, 0o600)
    except OSError as exc:
        raise CocoplusError(f"{name}: cannot spool the increment ({exc.strerror})") from None
    os.close(fd)


def damaged_since_reset(layout: Layout) -> str | None:
    """The damaged copy that still stands for iteration-budget.json, if the file is missing because it was set aside.

    A budget set aside as damaged is not a fresh start: while the file is
    missing and a damaged copy exists, counting fails closed.
    """
    if os.path.lexists(layout.iteration_budget):
        return None
    copies = fsio.quarantined_copies(layout.iteration_budget)
    return copies[-1] if copies else None


def _keep(layout: Layout, out: Outcome, why: str) -> None:
    """Spool this call's increment; if that fails too, mark the outcome to fail closed."""
    try:
        _spool(layout)
        out.spooled = True
        out.problems.append(f"{why}; the increment was spooled and will be counted")
    except CocoplusError as exc:
        out.failed_closed = f"a tool call could not be counted ({why}; {exc}), so the agent is stopped"


def count(
    layout: Layout,
    cap: int,
    warn_at: int,
    *,
    timeout: float = 5.0,
    sync_progress: bool = True,
    progress_every: int = 1,
    budget: Budget | None = None,
    before_call: bool = False,
    shared: Callable[[bool], bool] | None = None,
    ceiling: int = 0,
) -> Outcome:
    """Count one tool call, exactly once. Never raises for a busy lock or a full disk.

    `before_call`: counted by the pre-tool hook, before the call runs (hook-call.md, "Counting before the
    call"): a call that finds the cap reached already is not counted and must not run (`refused`), so no more
    calls run than the cap allows; a lock that stays busy refuses the call too (an increment spooled then could
    pass the cap).

    `shared(was_shared)`: asked, under the count's lock and only once the count reaches the cap, whether the cap
    is each session's now (several sessions are live; `was_shared`: it was at an earlier call): then the project's
    count goes on (`outcome.shared`) and the caller holds the session's own count to the cap.  `ceiling`
    (`[session] project_max_iterations`, 0: none) caps the project's count whatever is live (`outcome.ceiling`).

    PROGRESS.md's Iteration Budget lines follow the count (`sync_progress`) at
    every `progress_every`-th call, and always at the first, at the warn
    threshold and at the cap: the hook passes PROGRESS_EVERY, so most calls
    write the count alone (iteration-budget.json is what `session status`
    and the cap read), and `sync_lines` brings the lines up to date when a
    session ends.

    A busy lock (past `timeout` or `budget`) or an unwritable file spools
    the increment; if even that fails, AGENT_STOP is created and
    `outcome.failed_closed` says why.  A damaged iteration-budget.json is
    set aside and reported in `outcome.corrupt`, and so is one set aside
    earlier and not yet reset: the caller must fail closed (stop the
    agent).  A progress lock that stays busy only skips PROGRESS.md's
    budget lines (in `outcome.problems`); the count is not touched again.
    """
    out = Outcome()
    lock = Lock(layout.lock("iteration-budget"), timeout, budget)
    try:
        lock.acquire()
    except CocoplusError as exc:  # busy past the budget, or the lock file cannot be made
        if before_call:  # not known to be under the cap: the call does not run (nothing counted, nothing stopped)
            out.refused = True
            out.problems.append(f"not counted before the call: {exc}")
            return out
        _keep(layout, out, str(exc))
    else:
        try:
            _count_locked(layout, cap, warn_at, out, before_call, shared, ceiling)
            if sync_progress and out.budget is not None and _lines_due(out, progress_every):
                # Still under the count's lock, so PROGRESS.md's lines change in count order;
                # a busy progress lock is handled here and never touches the count again.
                try:
                    several = bool(out.budget.get("shared"))  # (each session's count is read only then)
                    sync_progress_file(layout, out.budget, timeout=timeout, budget=budget, sessions=several)
                except CocoplusError as exc:
                    out.problems.append(f"PROGRESS.md budget lines not updated: {exc}")
        finally:
            lock.release()
    if out.failed_closed:
        # After the count's lock is released: the kill-switch lock comes first in lock order.
        try:
            stopped = killswitch.auto_stop(
                layout, f"cocoplus: {out.failed_closed}", source="iteration-budget", state="paused", budget=budget
            )
            out.problems.extend(stopped["problems"])
        except CocoplusError as exc:  # not even an empty AGENT_STOP: the caller still blocks this call
            out.problems.append(str(exc))
    return out


def _lines_due(out: Outcome, every: int) -> bool:
    b = out.budget
    n = int(b["consumed"]) if b is not None else 0
    return every <= 1 or n <= 1 or n % every == 0 or out.warned_now or out.capped_now


def sync_lines(layout: Layout, *, timeout: float = DEFAULT_TIMEOUT, budget: Budget | None = None) -> bool:
    """Bring PROGRESS.md's Iteration Budget lines up to the count in iteration-budget.json (under the count's
    lock, so they never go back); whether it wrote.  CocoplusError if the count cannot be read."""
    with Lock(layout.lock("iteration-budget"), timeout, budget):
        doc = read(layout)
        return doc is not None and sync_progress_file(layout, doc, timeout=timeout, budget=budget, sessions=True)


def exhausted_reason(doc: dict[str, Any], ceiling: int = 0) -> str:
    """Why the agent is stopped at the cap; the same words for the kill switch and the status, however
    many calls came after the stop (they are counted, never shown as a count past the cap).  `ceiling`: the
    project's ceiling stopped it (`[session] project_max_iterations`)."""
    if ceiling > 0:
        return (
            f"iteration budget exhausted: {ceiling} of {ceiling} tool calls used by the project's sessions together "
            "([session] project_max_iterations)"
        )
    cap = doc["cap"]
    return f"iteration budget exhausted: {cap} of {cap} tool calls used (cap {cap}, [session] max_iterations)"


def checkpoint_note(doc: dict[str, Any]) -> str:
    """What the agent is told at the warn threshold."""
    return (
        f"cocoplus: {doc['consumed']} of {doc['cap']} tool calls used (cap {doc['cap']}, [session] max_iterations; "
        f"checkpoint at {doc['warn_at']}). Checkpoint now: update .cocoplus/session/PROGRESS.md (Done, In Progress, "
        "Next, Notes) so the work can be resumed from files alone."
    )


def _current(layout: Layout, out: Outcome) -> dict[str, Any] | None:
    """The count as it is (None: none yet); a damaged one set aside (`out.corrupt`), or one set aside earlier and not
    reset."""
    try:
        current = read(layout)
    except StateCorrupt as exc:
        kept = fsio.quarantine(layout.iteration_budget)
        out.corrupt = StateCorrupt(exc.path, exc.cause, kept)
        _keep(layout, out, "the count is damaged")
        return None
    if current is None:
        earlier = damaged_since_reset(layout)
        if earlier is not None:
            out.corrupt = StateCorrupt(
                layout.iteration_budget,
                "was set aside as damaged and not reset yet (run `cocoplus session resume --reset-budget`)",
                earlier,
            )
            _keep(layout, out, "the count is damaged")
    return current


def _count_locked(
    layout: Layout,
    cap: int,
    warn_at: int,
    out: Outcome,
    before_call: bool = False,
    shared: Callable[[bool], bool] | None = None,
    ceiling: int = 0,
) -> None:
    spooled_incs = _drain_spool(layout)
    current = _current(layout, out)
    if out.corrupt is not None:
        return
    cap = max(1, min(cap, MAX_COUNT))  # a written count must pass its own validation
    warn_at = max(0, min(warn_at, MAX_COUNT))
    doc = current if current is not None else new_iteration_budget(cap, warn_at)
    doc["cap"] = cap
    doc["warn_at"] = warn_at
    limit = limit_at(doc, cap, len(spooled_incs) + 1, out, shared, ceiling)  # (this call reaching the cap asks too)
    refused, warned_now, capped, capped_now = advance(doc, limit, warn_at, len(spooled_incs), before_call)
    if refused:
        out.refused = out.capped = True
        out.capped_now = capped_now
    now = time.time()
    _mark(doc, now)
    doc["updated_at"] = clock.iso(now)
    try:
        fsio.atomic_write_json(layout.iteration_budget, doc)
    except CocoplusError as exc:
        if out.refused:  # no increment to keep: the call does not run; the stop is made by the caller
            out.problems.append(f"the count's stop not written: {exc}")
            return
        # The file keeps its old count; this call's increment goes to the spool
        # (the drained ones stay there), so nothing is counted twice or lost.
        _keep(layout, out, str(exc))
        return
    for path in spooled_incs:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    out.budget = doc
    out.warned_now = warned_now
    out.capped = capped
    out.capped_now = capped_now


def advance(
    doc: dict[str, Any], limit: int, warn_at: int, spooled: int = 0, before_call: bool = False
) -> tuple[bool, bool, bool, bool]:
    """One call counted on the count `doc` (changed in place: `consumed`, `warned`, `stopped`), held to `limit`
    (`limit_at`): (refused, warned_now, capped, capped_now).  Pure: the live count runs it under its lock, and
    `cocoplus replay` runs it over a recorded run's calls.  `spooled`: increments folded in with this one;
    `before_call`: counted before the call runs, so a call that finds the cap reached is refused (not counted)."""
    refused = before_call and doc["consumed"] + spooled >= limit
    capped_now = False
    if refused:  # the cap is reached: this call does not run
        doc["consumed"] = min(MAX_COUNT, doc["consumed"] + spooled)  # (what was spooled, folded in)
        capped_now = not doc["stopped"]
        doc["stopped"] = True
    else:
        doc["consumed"] = min(MAX_COUNT, doc["consumed"] + 1 + spooled)
    warned_now = not refused and not doc["warned"] and 0 < warn_at < limit and doc["consumed"] >= warn_at
    if warned_now:
        doc["warned"] = True
    capped = refused or doc["consumed"] >= limit
    if not refused:
        capped_now = capped and not doc["stopped"]
    if capped:
        doc["stopped"] = True
    return refused, warned_now, capped, capped_now


def limit_at(
    doc: dict[str, Any], cap: int, adding: int, out: Outcome, shared: Callable[[bool], bool] | None, ceiling: int
) -> int:
    """What the project's count is held to at this call: the cap, or while several sessions are live (`shared`,
    asked only once the count reaches the cap) nothing but the ceiling (`[session] project_max_iterations`)."""
    limit = cap
    if not doc["stopped"] and doc["consumed"] + adding >= cap and shared is not None:
        if shared(bool(doc.get("shared"))):
            doc["shared"] = out.shared = True
            limit = MAX_COUNT + 1
    if 0 < ceiling <= MAX_COUNT and ceiling < limit:
        limit = ceiling
        out.ceiling = doc["consumed"] + adding >= ceiling
    return limit


PROGRESS_EVERY = 10  # the hook's `progress_every`: PROGRESS.md's budget lines are written at every tenth call


def uncount(layout: Layout, *, timeout: float = 5.0, budget: Budget | None = None) -> bool:
    """Take back a call counted before it ran that then failed (`[session] count_failed_tools` off); whether it
    did.  Never below zero, and never once the cap has stopped the agent: a late take-back only ever makes the
    count stricter than the calls that ran."""
    with Lock(layout.lock("iteration-budget"), timeout, budget):
        doc = read(layout)
        if doc is None or doc["stopped"] or doc["consumed"] <= 0:
            return False
        doc["consumed"] -= 1
        doc["updated_at"] = clock.iso()
        fsio.atomic_write_json(layout.iteration_budget, doc)
        return True


def reset(layout: Layout, *, budget: Budget | None = None) -> dict[str, Any]:
    """Start the count again (operator's `session resume --reset-budget`), against the cap and warn
    threshold the hooks apply now (the effective configuration: cocoplus.toml as it is, or while it is
    invalid the last good values), not those the file recorded at its last count.

    Clears a damaged state too: a damaged file is set aside and a fresh one
    written; spooled increments are dropped.
    """

    def update(current: dict[str, Any] | None) -> dict[str, Any]:
        return _fresh(layout)

    try:
        doc = fsio.locked_update(
            layout.iteration_budget,
            layout.lock("iteration-budget"),
            update,
            validate=check_iteration_budget,
            budget=budget,
        )
    except StateCorrupt:
        # The damaged copy is kept aside by locked_update; start fresh from config.
        with Lock(layout.lock("iteration-budget"), DEFAULT_TIMEOUT, budget):
            doc = _fresh(layout)
            fsio.atomic_write_json(layout.iteration_budget, doc)
    for path in _drain_spool(layout):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    from cocoplus.session import sharing  # deferred: only a reset changes the session records

    sharing.rebase(layout, budget)
    try:
        sync_progress_file(layout, doc, budget=budget, sessions=True)
    except CocoplusError:
        pass  # PROGRESS.md's lines follow at the next count
    return doc


def _fresh(layout: Layout) -> dict[str, Any]:
    from cocoplus.session import (
        values as hook_values,  # deferred: keeps the configuration off the hook events that read no value
    )

    values, _problem = hook_values.for_hook(layout, os.environ)  # what the next counted call applies
    s = values["session"]
    return new_iteration_budget(
        max(1, min(int(s["max_iterations"]), MAX_COUNT)), max(0, min(int(s["iteration_warn_at"]), MAX_COUNT))
    )


def budget_lines(doc: dict[str, Any]) -> dict[str, str]:
    return {"Cap": str(doc["cap"]), "Consumed": str(doc["consumed"]), "Warn At": str(doc["warn_at"])}


def sync_progress_file(
    layout: Layout,
    doc: dict[str, Any],
    extra: dict[str, str] | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    budget: Budget | None = None,
    sessions: bool = False,
) -> bool:
    """Set PROGRESS.md's Iteration Budget lines, leaving every other byte as it was; with `sessions`, the Sessions
    line too (each session's own count: `sharing.sessions_line`).

    Does nothing if PROGRESS.md does not exist.  If the file changes while
    we compute (the agent is editing it), we start again from its new
    content rather than overwrite the edit.  Returns whether it wrote.
    """
    from cocoplus.core import progress  # deferred: most counted calls leave PROGRESS.md alone (PROGRESS_EVERY)

    values = budget_lines(doc)
    if sessions and os.path.lexists(layout.progress):
        from cocoplus.session import sharing  # deferred: only a sync that shows the sessions reads their records

        if (line := sharing.sessions_line(layout)) is not None:
            values["Sessions"] = line
    if extra:
        values.update(extra)
    return update_progress(layout, lambda text: progress.set_budget(text, values), timeout=timeout, budget=budget)


def update_progress(
    layout: Layout, change: Any, attempts: int = 3, *, timeout: float = DEFAULT_TIMEOUT, budget: Budget | None = None
) -> bool:
    """Apply `change` (text -> text) to PROGRESS.md under the progress lock. LockTimeout if it stays busy."""
    path = layout.progress
    with Lock(layout.lock("progress"), timeout, budget):
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
            from cocoplus.session import freshness  # deferred, as `progress` above

            freshness.note(layout, text, before.st_mtime)  # our write must not make the handoff look fresh
            fsio.atomic_write_text(path, new)
            return True
    return False
