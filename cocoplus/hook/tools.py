"""The events around every tool call: the pre-tool hook (the kill switch, a worker's protected paths, and where
the runtime runs no post-tool hook for cocoplus, the count before the call with its cap, the call log and its loop
guard, the session's record and the files an edit names) and the post-tool hooks (the same, after the call, for the
runtimes that wait for them).  What the counting before the call is, and why: docs/architecture/hook-call.md.

Loaded by the runner for the tool-call events.  Standard library only.
"""

from __future__ import annotations

import os

from cocoplus.core.errors import CocoplusError
from cocoplus.hook import COUNT_BEFORE_CALL
from cocoplus.runtimes import answers
from cocoplus.runtimes import registry as runtimes
from cocoplus.session import registry

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Callable
    from typing import Any

    from cocoplus.core.shapes import SessionRecord
    from cocoplus.hook.runner import Answer, Hook  # only a type: the runner imports this module


def on_pre_tool(h: Hook) -> Answer:
    reason = h.stop_sentence()
    if reason is not None:
        return h.adapter.deny_tool(h.event_name, reason), 0
    from cocoplus.hook import guard  # deferred: as in the entry, only a worker's call is checked

    if guard.marked(h.environ) and (refused := guard.refusal(h.adapter, h.payload, h.layout.root, h.environ)):
        return h.adapter.refuse_tool(h.event_name, refused), 0
    if COUNT_BEFORE_CALL not in h.rest:
        return None, 0
    # Counted before the call, with what the post-tool hook does elsewhere: the call log and its loop guard, the
    # session's record, the files an edit names.
    counted, runs = _count_before_call(h)
    if not runs:
        return counted, 0
    repeated = _loop_guard(h, h.values["session"]["loop_guard_repeats"], already_stopping=False)
    if repeated is not None and (reason := h.stop_sentence()) is not None:
        # The loop guard's stop, as after the call elsewhere: this repeat runs, and the agent is stopped for the next.
        repeated = h.adapter.add_context(h.event_name, f"{reason} This call is the last one that runs.")
    _record_edits(h, before=True)
    if runtimes.asks_before_tool(h.adapter):  # its pre-tool hook is its permission prompt
        from cocoplus.hook import permission  # deferred: only a runtime with no permission event routes it here

        decided = permission.before_tool(h)
        if decided is not None:
            return answers.merge(counted, repeated, decided), 0
    return answers.merge(counted, repeated), 0


def _count_before_call(h: Hook) -> tuple[dict[str, Any] | None, bool]:
    """This call counted before it runs: refused once the cap is reached, so no more calls run than it allows;
    the call that reaches it runs, and the agent is stopped for the next; the warn threshold's checkpoint note
    comes with the call that reaches it.  (The answer, whether the call runs.)"""
    s = h.values["session"]
    from cocoplus.session import iteration  # deferred: only tool calls are counted

    out = iteration.count(
        h.layout, s["max_iterations"], s["iteration_warn_at"], timeout=h.timeout,
        progress_every=iteration.PROGRESS_EVERY, before_call=True, shared=_shared(h),
        ceiling=s["project_max_iterations"],
    )  # fmt: skip
    for problem in out.problems:
        h.log(problem)
    if not (out.corrupt or out.failed_closed or out.refused or out.capped or out.warned_now):
        if not out.shared or not _own_due(h, out):
            return None, True  # the usual call (or, several sessions live, one under its own cap): nothing to say
    from cocoplus.hook import tripped  # deferred: only a call whose count has something to say gets here

    if out.corrupt is not None:
        return h.adapter.deny_tool(h.event_name, tripped.budget_damaged(h, out.corrupt, answer=False)), False
    if out.failed_closed is not None:
        reason = f"cocoplus: this tool call could not be counted ({out.failed_closed}); the agent is stopped"
        return h.adapter.deny_tool(h.event_name, reason), False
    if out.refused and out.budget is None:  # not known to be under the cap (its lock stayed busy): not run
        return h.adapter.refuse_tool(
            h.event_name, "cocoplus: this tool call could not be counted before it runs (the count stayed busy); "
            "run it again",
        ), False  # fmt: skip
    if out.shared and not out.capped:  # several sessions are live: the cap is this session's own count's
        return tripped.session_cap(h, out, _own_count(h), before=True)
    return tripped.budget_before_call(h, out), not out.refused


def on_post_tool(h: Hook) -> Answer:
    s = h.values["session"]
    if COUNT_BEFORE_CALL in h.rest:  # the pre-tool hook counted the call and kept its record
        if h.kind == "post_tool_failure" and not s["count_failed_tools"]:
            from cocoplus.session import iteration  # deferred: only a failed call counted before it ran

            try:
                iteration.uncount(h.layout, timeout=h.timeout)
            except CocoplusError as exc:
                h.log(f"a failed call counted before it ran stays counted: {exc}")
        return None, 0
    if h.kind == "post_tool_failure" and not s["count_failed_tools"]:
        h.touch_session()
        return None, 0
    parts: list[dict[str, Any] | None] = []
    from cocoplus.session import iteration  # deferred: only tool calls are counted

    out = iteration.count(
        h.layout,
        s["max_iterations"],
        s["iteration_warn_at"],
        timeout=h.timeout,
        progress_every=iteration.PROGRESS_EVERY,
        shared=_shared(h),
        ceiling=s["project_max_iterations"],
    )
    if out.corrupt is not None:
        from cocoplus.hook import tripped  # deferred: only a tool call that trips a guard

        return tripped.budget_damaged(h, out.corrupt), 0
    for problem in out.problems:
        h.log(problem)
    if out.failed_closed is not None:
        reason = f"cocoplus: this tool call could not be counted ({out.failed_closed}); the agent is stopped"
        return h.adapter.halt(h.event_name, reason, reason), 0
    capped = out.capped
    if out.shared and not out.capped and out.budget is not None and not _own_due(h, out):
        pass  # several sessions live, this one under its own cap: nothing to say
    elif out.shared and not out.capped and out.budget is not None:  # several live: this session's own count's cap
        from cocoplus.hook import tripped  # deferred: only a count past the cap, with several sessions live

        answer, _runs = tripped.session_cap(h, out, _own_count(h), before=False)
        capped = answer is not None and h.stop_sentence() is not None
        parts.append(answer)
    elif (out.capped or out.warned_now) and out.budget is not None:
        from cocoplus.hook import tripped  # deferred: only a tool call that trips a guard

        parts.append(tripped.budget_reached(h, out))
    elif (sentence := h.stop_sentence()) is not None:
        parts.append(h.adapter.halt(h.event_name, sentence, sentence))
    parts.append(_loop_guard(h, s["loop_guard_repeats"], already_stopping=capped))
    _record_edits(h)
    return answers.merge(*parts), 0


def _shared(h: Hook) -> Callable[[bool], bool]:
    """What the count asks once it reaches the cap: whether the cap is each session's now.  It is while another
    session is live (its recorded process runs), and for a session left alone after that (`was`) whose own
    count can be told; otherwise the project's count has the cap, as the seed's contract says."""

    def shared(was: bool) -> bool:
        from cocoplus.session import sharing  # deferred: only a count that reaches the cap asks

        sid = h.session_id
        cs = registry.cs_id_for(sid) if sid else None
        log = h.layout.session_calls(cs) if cs is not None else _worker_calls(h)
        if log is None:
            return False  # nothing of its own to count: the project's count decides
        if not (sharing.others_live(h.layout, cs) or was):
            return False
        # Each session's own count decides: this call goes into its log now, under the count's lock, and its own
        # count is read with it (the loop guard takes this append as its own).
        repeats = int(h.values["session"]["loop_guard_repeats"])
        try:
            h.logged_call = registry.append_call(log, registry.fingerprint(h.payload), tail=max(2 * repeats, 1))
        except CocoplusError as exc:
            h.log(f"tool call not appended to the session's call log: {exc}")
            return True
        if cs is None:
            h.own = h.logged_call[0]
        else:
            try:
                rec = registry.read_record(h.layout, cs)
            except CocoplusError:
                rec = None
            h.own = sharing.own_count(rec) if rec is not None else h.logged_call[0]
        return True

    return shared


def _own_due(h: Hook, out: Any) -> bool:
    """Whether this session's own count (several sessions live) has something to say: the cap, or its warn
    threshold (`tripped.session_cap`, loaded only then)."""
    b = out.budget
    if b is None:
        return False
    n = _own_count(h)
    return n >= int(b["cap"]) or 0 < int(b["warn_at"]) == n


def _own_count(h: Hook) -> int:
    """This session's own count with this call (`sharing.own_count`), or its worker's where the event names no
    session: as taken under the count's lock (`_shared`), else (its call log could not be appended) read now."""
    if h.own is not None:
        return h.own
    from cocoplus.session import sharing  # deferred: only a count past the cap, with several sessions live

    sid = h.session_id
    if sid is None:
        path = _worker_calls(h)
        try:
            return (os.lstat(path).st_size // registry.CALL_WIDTH if path else 0) + 1
        except OSError:
            return 1
    try:
        rec = registry.read_record(h.layout, registry.cs_id_for(sid))
    except CocoplusError:
        rec = None
    return (sharing.own_count(rec) if rec is not None else 0) + 1


def _worker_calls(h: Hook) -> str | None:
    """The call log of the managed worker the environment names (`COCOPLUS_WORKER`), for an event that names no
    session; None where it names none.  (A name alone, not vouched for: it keys a count, and a stop made by it
    is checked then, `tripped.stop_own`.)"""
    wid = h.environ.get("COCOPLUS_WORKER")
    if not wid:
        return None
    try:
        return h.layout.worker_calls(wid)
    except CocoplusError:  # not a valid worker id
        return None


def _record_edits(h: Hook, before: bool = False) -> None:
    """The files this tool call changed (`before`: is about to change), appended to the session's edits (the
    watcher compares them)."""
    if h.kind != "post_tool" and not before:
        return  # a tool that failed changed nothing to speak of
    paths = h.adapter.edited_paths(h.payload)
    sid = h.session_id
    if not paths or sid is None:
        return
    from cocoplus.session import edits  # deferred: only an edit or write tool records its files

    try:
        edits.record_call(h.layout, registry.cs_id_for(sid), paths, h.adapter, h.payload, h.environ)
    except CocoplusError as exc:
        h.log(f"edited files not recorded: {exc}")


def _loop_guard(h: Hook, repeats: int, already_stopping: bool) -> dict[str, Any] | None:
    """The call appended to the session's call log and counted on its record; the run of equal calls it ends
    answered by `tripped.repeated` once it reaches `repeats`."""
    fp = registry.fingerprint(h.payload)
    sid = h.session_id
    cs = registry.cs_id_for(sid) if sid else None
    logged: tuple[int, int] | None = None  # (calls in the log, the run of equal calls at its end)
    log = h.layout.session_calls(cs) if cs is not None else _worker_calls(h)
    if log is not None:
        try:  # (appended already where the count took it under its lock)
            calls, last = h.logged_call or registry.append_call(log, fp, tail=max(2 * repeats, 1))
        except CocoplusError as exc:
            h.log(f"tool call not appended to the session's call log: {exc}")
        else:
            logged = (calls, registry.run_length(fp, last))
    log_id = registry.calls_log_id(h.layout, cs) if logged is not None and cs is not None else None
    seen: dict[str, int] = {} if logged is None else {"count": logged[1]}

    def change(rec: SessionRecord) -> None:
        seen["count"] = registry.count_call(
            rec, fp, logged, h.event_name, str(h.payload.get("tool_name") or ""), log_id
        )

    rec = None
    if logged is not None and cs is not None:
        try:
            rec = registry.read_record(h.layout, cs)
        except CocoplusError:
            rec = None
    if rec is not None and logged is not None and logged[0] != 1 and not registry.record_due(rec):
        h.record = rec  # appended: nothing else to change in the record
    else:
        h.touch_session(change)
    if already_stopping or registry.loop_verdict(seen.get("count", 0), repeats) is None:
        return None
    from cocoplus.hook import tripped  # deferred: only a call repeated `repeats` times or more

    return tripped.repeated(h, seen["count"], repeats)
