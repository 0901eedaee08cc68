"""How a run ends: `finish` records it once (state, reason, exit status), ends its session or says why there is
none, and wakes the brain on a failure; `reconcile` does it for a worker whose runner died with it.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from cocoplus import config as config_mod
from cocoplus.core import clock, fsio, jsonl, seal, vocab
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.runtimes import registry as runtimes
from cocoplus.session import killswitch, limits, permissions, registry, stops
from cocoplus.supervision.workers.store import LIVE, alive, lock, read, records, session_of, write

if TYPE_CHECKING:
    from cocoplus.core.shapes import SessionRecord, WorkerExit, WorkerRecord

FROM_OUTPUT = "worker_output"  # `last_event` of a session its runner recorded from its output (no hook ran)


# The states a session's own hooks end it in; a run ended by a limit pauses it from there.
ENDED = ("exited", "failed")


def status_text(code: int | None) -> str:
    if code is None:
        return "exit status unknown"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


class End(NamedTuple):
    """How a run ends (`decide_end`): what its record says, and who is told."""

    state: str  # `exited` or `failed`
    reason: str  # the record's reason: `told`, and how many tool calls were denied permission
    told: str  # the reason its session's end and the exit signal give
    exit: WorkerExit  # `code` (None when a signal ended it), `signal` (`SIGTERM`, ...), `status` (in words)
    killed_by: str | None  # who killed it (`workers kill`, the kill switch), when it was killed
    limit: dict[str, Any] | None  # the limit recorded on the worker (its session's pause; the one no session saw)
    wake: str | None  # `session`: its session ends, with an exit signal if it was live or the run failed;
    # `worker`: the worker's own exit signal (it failed before any session started); None: nothing to tell


def decide_end(
    code: int | None,
    why: str | None = None,
    *,
    kill: Mapping[str, Any] | None = None,
    paused: dict[str, Any] | None = None,
    limit: dict[str, Any] | None = None,
    session: bool = True,
    denied: int = 0,
    now: float | None = None,
    stopped: Mapping[str, Any] | None = None,
) -> End:
    """How a run ends, from what is known of it; reads and writes nothing.

    `code`: its exit status (negative: the signal that ended it; None: unknown).  `why`: what its runner or the
    watcher says ended it (else the exit status says it).  `kill`: the kill request on its record (`workers kill`,
    or the kill switch ending a run whose hooks are not running).  `paused`: the limit its session is paused by now.
    `limit`: the limit its output reported.  `session`: whether it has a session.  `denied`: how many of its tool
    calls were refused permission.  `now`: the time the limit's reset is told against.  `stopped`: the stop that
    ended it (`stopped_by`): one of its session or of the worker alone is how it ended (`exited`, whatever its exit
    status: a guard's stop is never a failure); the project's AGENT_STOP is only said beside it.

    A kill wins (`exited`, killed by whom); then a pause by a limit (`exited`, with the limit, to be resumed at the
    reset); then a limit with no session to resume (`failed`: nothing comes back); then exit code 0 (`exited`);
    anything else is `failed`.  Denied calls are told on a run that exited by itself.
    """
    status = status_text(code)
    negative = code is not None and code < 0
    ended: WorkerExit = {
        "code": None if negative else code,
        "signal": status.split()[-1] if negative else None,
        "status": status,
    }
    killed_by = None
    kept = None
    if kill:
        state, killed_by = "exited", kill.get("by")
        reason = f"killed by {killed_by} (cocoplus workers kill; {status})"
    elif paused is not None:
        state, reason, kept = "exited", f"{limits.text(paused, now)} ({status})", paused
    elif stopped is not None and stopped.get("scope") in ("session", "worker"):
        state, reason = "exited", f"{stopped_text(stopped)}: {stopped.get('reason') or 'no reason given'} ({status})"
    elif limit is not None and not session:  # no session to resume (its hooks never ran): nothing comes back
        cause = f"stopped by its runtime's {limit.get('reason') or 'rate limit'} before a session was recorded"
        state, reason, kept = "failed", f"{cause}, so it is not resumed ({status})", dict(limit)
    elif code == 0:
        state, reason = "exited", why or "ended (exit code 0)"
    else:
        state, reason = "failed", why or f"died without a turn end ({status})"
    told = reason
    if denied and state == "exited" and not kill:
        reason = f"{reason}; {denied} tool call(s) were denied permission"
    wake = "session" if session else "worker" if state == "failed" else None
    return End(state, reason, told, ended, killed_by, kept, wake)


STOPPED_BY = {"loop-guard": "the loop guard", "operator": "the operator", "brain": "the main brain",
              "watcher": "the watcher"}  # fmt: skip


def stopped_text(stopped: Mapping[str, Any]) -> str:
    """Who stopped a run, in words: `stopped by the loop guard`, `stopped at its iteration cap`, `stopped by the
    operator (AGENT_STOP)`."""
    who = str(stopped.get("principal") or "operator")
    project = stopped.get("scope") == "project"
    if who == "budget":
        words = "stopped by a budget stop" if project else "stopped at its iteration cap"
    elif who.startswith(vocab.FLEET_PRINCIPAL_PREFIX):
        words = f"stopped by machine {who[len(vocab.FLEET_PRINCIPAL_PREFIX) :]} of the fleet"
    else:
        words = f"stopped by {STOPPED_BY.get(who, who)}"
    return f"{words} (AGENT_STOP)" if project else words


def stopped_by(layout: Layout, rec: WorkerRecord, sess: SessionRecord | None) -> dict[str, Any] | None:
    """The stop its run ended under, newest first where it applies: one the hook made for the worker alone (its
    runtime named no session; `Layout.worker_stop`, taken here), its session's own stop, the project's
    AGENT_STOP; None if none was made since the run started."""
    since = str(rec.get("started_at") or "")
    path = layout.worker_stop(rec["id"])
    try:
        doc = fsio.read_json(path)
    except CocoplusError:
        doc = None
    if isinstance(doc, dict):
        try:
            os.unlink(path)  # read once: a later run of the worker starts without it
        except OSError:
            pass
        if str(doc.get("at") or "") >= since:
            return {"principal": doc.get("principal"), "scope": "worker", "reason": doc.get("reason"),
                    "at": doc.get("at")}  # fmt: skip
    if sess is not None:
        try:
            stop = stops.read(layout, sess["id"])
        except CocoplusError:
            stop = None
        if stop is not None and str(stop.get("created_at") or "") >= since:
            return {"principal": stop.get("principal"), "scope": "session", "reason": stop.get("reason"),
                    "at": stop.get("created_at"), "stop": stop.get("id")}  # fmt: skip
    try:
        agent = killswitch.read_stop(layout)
    except CocoplusError:
        agent = None
    if agent and str(agent.get("created_at") or "") >= since:
        return {"principal": agent.get("principal"), "scope": "project", "reason": agent.get("reason"),
                "at": agent.get("created_at"), "stop": agent.get("id")}  # fmt: skip
    return None


def finish(
    layout: Layout,
    wid: str,
    code: int | None,
    why: str | None = None,
    left_behind: list[dict[str, Any]] | None = None,
    limit: dict[str, Any] | None = None,
    native: dict[str, Any] | None = None,
) -> WorkerRecord | None:
    """Record how worker `wid`'s run ended (once, as `decide_end` decides); update its session and wake the brain
    on a failure.

    `left_behind`: the processes its runtime left running (`leftovers.find`), which its runner ends next.
    `limit`: the rate or usage limit its output reported (the adapter's `output_limit`): a run ended by a limit
    is `exited` with the limit, not `failed`, and its session is paused (session/limits.py) if its hook did not
    say so already.  `native`: the session its output named (the adapter's `output_session`), recorded for a
    run ended by a limit whose hooks recorded none (`session_from_output`), so that it is resumed at the reset.
    """
    with lock(layout):
        rec = read(layout, wid)
        if rec is None or rec.get("state") not in LIVE:
            if rec is not None and left_behind:
                rec["left_behind"] = [
                    dict(p, ended=False) for p in left_behind
                ]  # `workers kill` recorded the end first
                write(layout, rec)
            return None
        if left_behind:
            rec["left_behind"] = [dict(p, ended=False) for p in left_behind]
        killed = rec.get("kill_requested") or None
        sess = session_of(layout, rec)
        if sess is None and limit is not None and native is not None and not killed:
            sess = session_from_output(layout, rec, native)
        if (
            sess is not None
            and limit is not None
            and not killed
            # (a run's own hooks may have ended its session as the runtime gave up, Codex's at its failed turn)
            and (sess.get("state") in vocab.ACTIVE_STATES or (sess.get("worker") == wid and sess.get("state") in ENDED))
            and limits.active(sess) is None  # (its hook said so already: one pause, one `limited` signal)
        ):
            sess = _pause_session(layout, sess, limit)
        paused = None if killed or sess is None else limits.active(sess)
        if sess is not None and paused is None and limits.trying(sess) is not None:
            sess = _limit_over(layout, sess)
        if sess is not None:
            rec.update({"session": sess["id"], "session_alias": sess.get("alias")})
            if rec.get("runtimes") and isinstance(rec["runtimes"][-1], dict):  # the run of its current runtime
                rec["runtimes"][-1].update(session=sess["id"], session_alias=sess.get("alias"))
        denied = denied_calls(layout, rec)
        stop = None if killed else stopped_by(layout, rec, sess)
        end = decide_end(
            code, why, kill=killed, paused=paused, limit=limit, session=sess is not None, denied=denied, stopped=stop
        )
        rec["stopped_by"] = stop
        rec["exit"] = end.exit
        rec["ended_at"] = clock.iso()
        rec["state"] = end.state
        if killed:
            rec["killed_by"] = end.killed_by
        rec["reason"] = end.told
        if end.limit is not None:
            rec["limit"] = end.limit
        if sess is not None:
            _end_session(layout, rec, sess, end)  # before the record says it ended: whoever sees that sees the signal
        elif end.wake == "worker":
            _failed_without_session(layout, rec, end)
        rec["denied"] = denied
        rec["reason"] = end.reason
        write(layout, rec)
    return rec


def denied_calls(layout: Layout, rec: WorkerRecord) -> int:
    """How many of this run's tool calls were refused permission: by cocoplus (a rule, an answer, the deadline,
    in the audit log) or by the runtime itself (Claude Code's `permission_denials` in its last result)."""
    ours = permissions.denied_count(layout, rec.get("session"), rec["id"], since=rec.get("started_at"))
    theirs = 0
    path = layout.worker_log(rec["id"])
    try:
        size = os.lstat(path).st_size
        tail = jsonl.read_jsonl_from(path, max(0, size - 256 * 1024)).records
    except (OSError, CocoplusError):
        tail = []
    for doc in reversed(tail):
        if doc.get("type") == "result" and isinstance(doc.get("permission_denials"), list):
            theirs = len(doc["permission_denials"])
            break
    return max(ours, theirs)


def left_behind_ended(layout: Layout, wid: str, still: list[dict[str, Any]]) -> None:
    """Note on worker `wid`'s record that what its runtime left behind is ended, but for `still`."""
    alive_pids = {p["pid"] for p in still}
    with lock(layout):
        rec = read(layout, wid)
        if rec is None or not isinstance(rec.get("left_behind"), list):
            return
        for p in rec["left_behind"]:
            if isinstance(p, dict):
                p["ended"] = p.get("pid") not in alive_pids
        write(layout, rec)


def _failed_without_session(layout: Layout, rec: WorkerRecord, end: End) -> None:
    """A run that failed before its runtime's SessionStart named a session (a rejected login, a flag its
    version does not know): no session record will ever say so, so its exit signal names the worker instead."""
    who = {"id": None, "alias": rec.get("alias") or rec["id"], "runtime": rec.get("runtime")}
    detail = f"worker {rec['id']}: {end.told}; no session had started (its output: cocoplus workers logs {rec['id']})"
    try:
        registry.append_signal(layout, who, "exit", "failed", detail=detail, worker=rec["id"])
    except CocoplusError:
        pass  # the worker's record still says failed; `cocoplus workers list` shows it


def _end_session(layout: Layout, rec: WorkerRecord, sess: SessionRecord, end: End) -> None:
    """The session of a run that ended: `failed` if the run failed, `exited` otherwise; one exit signal."""
    failed = end.state == "failed"
    said = f"worker {rec['id']}: {end.told}"
    box: dict[str, bool] = {}

    def change(r: SessionRecord) -> None:
        box["was_active"] = r.get("state") in vocab.ACTIVE_STATES
        if limits.active(r) is not None:
            box["was_active"] = False  # paused by a limit: it stays paused, to be resumed at the reset
            return
        if failed:
            r["state"] = "failed"
            r["exit_reason"] = said
        elif box["was_active"]:
            r["state"] = "exited"
            r["exit_reason"] = said

    try:
        updated = registry.update(layout, sess["id"], change)
    except CocoplusError:
        return
    if failed or box.get("was_active"):
        # Its own SessionEnd hook did not say so (a crash, a kill): the watcher hears it here, once.
        registry.append_signal(layout, updated, "exit", end.state, detail=said, worker=rec["id"])
    elif isinstance(rec.get("worktree"), dict):
        # Its own hook ended its session before its runner committed what it left on its branch and recorded its
        # end: the branch is ready to merge only now, so the watcher (and the brain, which may merge it) hears of
        # its end again, once.
        ready = f"{said}; its branch {rec['worktree'].get('branch')} holds its work"
        registry.append_signal(layout, updated, "exit", end.state, detail=ready, worker=rec["id"])


def session_from_output(layout: Layout, rec: WorkerRecord, native: dict[str, Any]) -> SessionRecord | None:
    """The session of a run whose hooks did not run (a `codex exec` whose project hooks were not reviewed), from
    the id its output named: recorded as a SessionStart hook would record it (the worker, where it runs, the
    transcript, the command line sealed for this user, record and project), with `last_event` FROM_OUTPUT (the
    runner's kill switch still ends its runs: no hook blocks their tools).  None if it cannot be recorded."""
    runtime, cmd, rid = rec.get("runtime"), rec.get("command"), native.get("id")
    if not (isinstance(runtime, str) and runtimes.known(runtime) and isinstance(rid, str) and rid):
        return None
    if seal.worker_problem(rec, layout.project, rec["id"]) is not None:
        return None  # only the command cocoplus sealed for this worker is sealed again as its session's
    from cocoplus.runtimes import argv as words  # deferred: only a run ended by a limit without a session

    program = words.program(cmd)
    fields = seal.session_fields(registry.cs_id_for(rid), runtime, rid, layout.project, program, cmd)
    info = {
        "cwd": seal.worker_cwd(rec) or layout.project,
        "transcript_path": native.get("transcript_path"),
        # the run's process (ended): dispatch takes the session for one no longer running, and resumes it
        "process": {
            "pid": rec.get("pid"),
            "start_ticks": rec.get("start_ticks"),
            "argv": cmd,
            "program": program,
            "seal": seal.sealed(fields),
        },
        "worker": rec["id"],
        "source": "its output (its hooks did not run)",
    }
    try:
        sess, _ = registry.ensure(layout, runtime, rid, event=FROM_OUTPUT, info=info, alias=rec.get("alias"))
    except CocoplusError:
        return None
    return sess


def _pause_session(layout: Layout, sess: SessionRecord, limit: dict[str, Any]) -> SessionRecord:
    """Pause the session by the limit its run's output reported (its hook did not: no StopFailure, or an older
    runtime); the `limited` signal as the hook would have sent it."""
    retry_s = float(config_mod.load_for(layout).get("workers.limit_retry_s"))

    box: dict[str, bool] = {}

    def change(r: SessionRecord) -> None:
        box["told"] = limits.active(r) is not None  # its hook paused it meanwhile: that pause and signal stand
        limits.pause(r, limit, retry_s)

    try:
        rec = registry.update(layout, sess["id"], change)
    except CocoplusError:
        return sess
    if box.get("told"):
        return rec
    got = rec.get("limit") or {}
    try:
        registry.append_signal(
            layout, rec, "limited", got.get("reason"), resets_at=got.get("resets_at"), estimate=got.get("estimate"),
            clamped=got.get("clamped"), resume=got.get("resume"), tries=got.get("tries"), message=limits.text(got),
            worker=rec.get("worker"),
        )  # fmt: skip
    except CocoplusError:
        pass  # the session record says it: the doors show it
    return rec


def _limit_over(layout: Layout, sess: SessionRecord) -> SessionRecord:
    """A run resumed from a limit ended without meeting it again: the limit is over (the queue stops holding)."""

    def change(r: SessionRecord) -> None:
        if limits.trying(r) is not None:
            r["limit"] = None

    try:
        return registry.update(layout, sess["id"], change)
    except CocoplusError:
        return sess


def reconcile(layout: Layout, skip: str | None = None) -> list[str]:
    """Workers recorded live whose runner and runtime are both gone: `failed` (exit status unknown). Their ids."""
    done = []
    for rec in records(layout)[0]:
        if rec["id"] == skip or rec.get("state") not in LIVE or alive(rec):
            continue
        runner = rec.get("runner") or {}
        if rec.get("state") == "queued" and runner.get("pid") is None:
            created = clock.parse_iso(rec.get("created_at")) or 0
            if time.time() - created < 30:
                continue  # its launch has not recorded the runner yet
        why = (
            "its process is gone and so is its runner (exit status unknown)"
            if rec.get("state") == "running"
            else "its runner is gone before it started"
        )
        if finish(layout, rec["id"], None, why) is not None:
            done.append(rec["id"])
    return done
