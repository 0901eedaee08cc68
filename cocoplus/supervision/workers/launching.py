"""Starting a worker's runs: `launch` (checked, recorded `queued`, sealed), its runner started detached
(`start_runner`), the slot rule the runner waits on (`claim`), and a worker's next run queued again: a resume by
dispatch (`resume`) or a take-over by another runtime (`take_over`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

from cocoplus import config as config_mod
from cocoplus.core import clock, fsio, proc, seal, vocab, worktreemark
from cocoplus.core.errors import CocoplusError, NotFound, UsageError
from cocoplus.core.paths import Layout, is_valid_id
from cocoplus.core.records import SCHEMA_VERSION
from cocoplus.report import traces
from cocoplus.runtimes import registry as runtimes
from cocoplus.sandbox import network as netpolicy
from cocoplus.sandbox import probe, profiles, srt
from cocoplus.session import agents, limits, permissions, procinfo, registry
from cocoplus.supervision import children, state, worktrees
from cocoplus.supervision.workers.ending import reconcile
from cocoplus.supervision.workers.store import (
    LIVE,
    alive,
    describe,
    ids,
    lock,
    number,
    read,
    records,
    settings,
    update_sealed,
    vouched_allow,
    write,
)

if TYPE_CHECKING:
    from cocoplus.core.shapes import SessionRecord, WorkerRecord

MAX_TASK = 64 * 1024
STARTED_WAIT_S = 5.0  # a launch waits this long to say whether its worker started or is queued
WORKER_ENV = "COCOPLUS_WORKER"
ALIAS_ENV = "COCOPLUS_WORKER_ALIAS"


def _why_not(runtime: str) -> str:
    """Why a runtime cocoplus knows is not launched, as its adapter says it (`launch_argv`'s ValueError), or ""."""
    if not runtimes.known(runtime):
        return ""
    try:
        runtimes.get(runtime).launch_argv([runtimes.get(runtime).COMMAND], "task", None, None)
    except ValueError as exc:
        return f" ({exc})"
    return ""


def _check(runtime: str, task: str, alias: str | None, model: str | None, effort: str | None) -> None:
    if runtime not in vocab.LAUNCH_RUNTIMES:
        raise UsageError(
            f"cannot launch {runtime!r}{_why_not(runtime)}: choose one of {', '.join(vocab.LAUNCH_RUNTIMES)}"
        )
    if not isinstance(task, str) or not task.strip():
        raise UsageError("the task is empty")
    if task.lstrip().startswith("-"):
        raise UsageError("the task starts with '-', which the runtime would read as an option: reword it")
    if len(task.encode("utf-8")) > MAX_TASK:
        raise UsageError(f"the task is over {MAX_TASK // 1024} KiB")
    if alias is not None and (
        not is_valid_id(alias) or alias.startswith("cs_") or (alias[:1] == "w" and alias[1:].isdigit())
    ):
        raise UsageError(
            f"--alias {alias!r}: use letters, digits, '_', '-' and '.' (not cs_..., not a worker id such as w1)"
        )
    if model is not None and (not model or model.startswith("-")):
        raise UsageError(f"--model {model!r}: not a model name")
    if effort is not None and effort not in vocab.EFFORTS:
        raise UsageError(f"--effort {effort!r}: choose one of {', '.join(vocab.EFFORTS)}")


def _alias_taken(layout: Layout, alias: str) -> bool:
    try:
        registry.resolve(layout, alias)
        return True
    except NotFound:
        pass
    return any(r.get("alias") == alias and r.get("state") in LIVE for r in records(layout)[0])


def launch(
    layout: Layout,
    runtime: str,
    task: str,
    *,
    by: str,
    alias: str | None = None,
    model: str | None = None,
    effort: str | None = None,
    environ: dict[str, str] | None = None,
    principal: str = "operator",
    allow: list[str] | None = None,
    worktree: bool | None = None,
    unsupervised: bool = False,
    sandbox: str | None = None,
    network: str | None = None,
) -> dict[str, Any]:
    """Start a headless worker on `task` (queued if `max_parallel` run already); the worker's record.

    Refused, before anything is written, where `runtime` will not run this project's cocoplus hooks for the worker
    (install/doctor.py `launch_problem`), unless `unsupervised`: then it runs without them, recorded so.

    `allow`: permission rules for this worker alone (`launch --allow`), beside `[permissions] allow`; the runtime
    gets them as its own settings where it has such (the adapter's `permission_argv`), and cocoplus' permission
    hook applies them to what it is asked.  `worktree` (default `[workers] worktree`): the worker runs in a git
    worktree of its own (supervision/worktrees.py).  `sandbox` (default: the stronger of the user's and the
    project's `[workers] sandbox`): its operating-system sandbox, probed now; a profile that cannot be applied here
    starts nothing.  `network` (default: the narrower of the user's and the project's `[sandbox] network`): what
    that sandbox reaches (sandbox/network.py); limited only in a sandbox."""
    _check(runtime, task, alias, model, effort)
    allow = list(allow or [])
    for rule in allow:
        permissions.parse_rule(rule)
    env = dict(os.environ if environ is None else environ)
    if not unsupervised:
        from cocoplus.install import doctor  # deferred: only a launch asks whether the hooks will run

        problem = doctor.launch_problem(layout, runtime, env)
        if problem is not None:
            raise CocoplusError(
                f"cannot launch {runtime}: {problem}; or launch it --unsupervised ({doctor.UNSUPERVISED_GIVES_UP})"
            )
    cmd = command(layout, runtime, task, model, effort, allow, env)
    max_parallel, _ = settings(layout, environ)  # a bad cocoplus.toml is an error now, not in the runner
    cfg = config_mod.load_for(layout, environ)
    profile = profiles.effective(layout, sandbox, environ)
    reach = netpolicy.effective(layout, network, environ)
    if profile == profiles.NONE and netpolicy.limited(reach):
        raise UsageError(
            f"the network {netpolicy.shown(reach)!r} is limited only in a sandbox: launch it --sandbox workspace "
            "(or --network all)"
        )
    if profile != profiles.NONE:
        refused = sandbox_problem(profile, env, runtime)
        if refused:
            raise CocoplusError(refused)
    fsio.ensure_dir(layout.workers_dir)
    seal.key(create=True)  # a seal key that cannot be used fails the launch before anything is written
    reconcile(layout)
    if worktree is None:
        worktree = bool(cfg.get("workers.worktree"))
    with lock(layout):
        if alias is not None and _alias_taken(layout, alias):
            raise CocoplusError(f"--alias {alias}: already names a session or a live worker")
        known = ids(layout)
        wid = f"w{(number(known[-1]) if known else 0) + 1}"
        plan = worktrees.check(layout, alias or wid, environ) if worktree else None  # refused before anything is made
        fsio.ensure_dir(layout.worker_dir(wid))
        tree = None
        if plan is not None:
            try:
                tree = worktrees.create(layout, wid, alias or wid, runtime, plan)
            except CocoplusError:
                shutil.rmtree(layout.worker_dir(wid), ignore_errors=True)
                raise
        rec: WorkerRecord = {
            "schema_version": SCHEMA_VERSION, "id": wid, "runtime": runtime, "task": task, "alias": alias,
            "model": model, "effort": effort, "by": by, "principal": principal, "allow": allow,
            "created_at": clock.iso(), "state": "queued",
            "command": cmd, "runs": 0, "started_at": None, "ended_at": None, "pid": None, "start_ticks": None,
            "exit": None, "reason": None, "killed_by": None, "session": None, "session_alias": None,
            "worktree": tree, "headless": True, "runner": None, "unsupervised": unsupervised, "sandbox": profile,
            "sandbox_probed_at": time.time() if profile != profiles.NONE else None,
            "goal": None if unsupervised else _goal(layout),
        }  # fmt: skip
        if netpolicy.limited(reach):
            rec["network"] = reach
        rec["seal"] = seal.seal_worker(rec, layout.project, wid)
        write(layout, rec)
    child = start_runner(layout, wid, env)
    deadline = time.monotonic() + STARTED_WAIT_S
    while time.monotonic() < deadline:
        rec = read(layout, wid) or rec
        if rec.get("state") != "queued" or rec.get("waiting_since") or child.poll() is not None:
            break
        time.sleep(0.02)
    return describe(layout, rec, max_parallel=max_parallel)


def sandbox_problem(profile: str, environ: dict[str, str], runtime: str | None = None) -> str | None:
    """Why the sandbox `profile` cannot be applied here (to a worker of `runtime`), in one line (the doctor's cause
    and fix), or None."""
    if profile == profiles.SRT and runtime is not None and (why := srt.refused_runtime(runtime)) is not None:
        return f"the sandbox {profile!r} cannot hold this worker: {why}"
    found = probe.probe(environ)
    if found["ok"] and profile == profiles.SRT:
        found = srt.probe(environ)
    if found["ok"]:
        return None
    return f"the sandbox {profile!r} cannot be applied here: {found['cause']}; fix: {found['fix']}"


def command(
    layout: Layout,
    runtime: str,
    task: str,
    model: str | None,
    effort: str | None,
    allow: list[str],
    env: dict[str, str],
) -> list[str]:
    """The command line that starts a headless run of `runtime` on `task` (its adapter's `launch_argv`), with the
    permission rules of `[permissions]` and `allow` as the runtime's own settings (`permission_argv`)."""
    adapter = runtimes.get(runtime)
    found = children.on_path(adapter.COMMAND, env)
    if not found:
        raise CocoplusError(
            f"no {adapter.TITLE} CLI found (`{adapter.COMMAND}` is not on PATH)",
            hint=f"install it, or put it on PATH for `cocoplus launch {runtime}`",
        )
    try:
        cmd = adapter.launch_argv(found, task, model, effort)
    except ValueError as exc:  # what this runtime cannot be asked for (runtimes/protocol.py)
        raise UsageError(str(exc)) from None
    if cmd is None:
        raise UsageError(f"{adapter.TITLE} cannot be launched headless")
    cfg = config_mod.load_for(layout, env)
    granted = adapter.permission_argv([*cfg.get("permissions.allow"), *allow], list(cfg.get("permissions.deny")))
    return [*cmd[:-1], *granted, cmd[-1]] if cmd[-1] == task else [*cmd, *granted]


def _ready_for_next_run(rec: WorkerRecord, refused: str, gone_hint: str = "") -> str | None:
    """The worktree worker `rec`'s next run works in (None: the project), once it is sure the worker is not running
    (`refused` says what is not done to a running one) and its worktree is still there."""
    wid = rec["id"]
    if rec.get("state") in LIVE and alive(rec):
        raise CocoplusError(f"worker {wid} is {rec['state']}: {refused}")
    cwd = seal.worker_cwd(rec)
    if cwd is not None and not os.path.isdir(cwd):
        raise CocoplusError(f"worker {wid}: its worktree {cwd} is gone (`workers clean` removed it){gone_hint}")
    return cwd


def _queue_next_run(layout: Layout, rec: WorkerRecord, cmd: list[str], cwd: str | None, by: str) -> None:
    """Record worker `rec`'s next run of `cmd` as queued, the last run's end cleared, sealed again as it was sealed
    (`update_sealed`); its runner starts it (under the caller's lock)."""
    update_sealed(
        layout, rec,
        state="queued", command=cmd, resumed_by=by, queued_at=clock.iso(),
        exit=None, reason=None, killed_by=None, kill_requested=None, pid=None, start_ticks=None, ended_at=None,
        waiting_since=None, left_behind=None, limit=None,
    )  # fmt: skip
    write(layout, rec)


def bind_runner(layout: Layout, wid: str) -> WorkerRecord | None:
    """Called by worker `wid`'s runner as it takes its slot: bind the record to this process (`runner`, sealed
    again when its seal held) and record this process in this user's registry of agent processes
    (session/agents.py); the record, or None when there is none.  A registry that cannot be written is said on
    stderr (the runner's log): the worker is then known by its record alone."""
    me = procinfo.self_process()
    with lock(layout):
        rec = read(layout, wid)
        if rec is None:
            return None
        update_sealed(layout, rec, runner=me)
        write(layout, rec)
    try:
        agents.register(agents.WORKER, layout.root, wid, me, runtime=rec.get("runtime"))
    except CocoplusError as exc:
        sys.stderr.write(f"worker {wid}: its runner is not in this user's registry of agent processes: {exc}\n")
    return rec


def take_over(
    layout: Layout,
    wid: str,
    runtime: str,
    text: str,
    *,
    by: str,
    reason: str,
    until: str | None = None,
    estimate: bool = False,
    from_session: SessionRecord | None = None,
    environ: dict[str, str] | None = None,
) -> WorkerRecord:
    """Worker `wid`'s next run is a new session of `runtime`, started with `text` (the handoff): a failover from a
    runtime paused by its limit (supervision/resumes.py).  The record keeps every runtime it ran in, in
    `runtimes` (`runtime`, its `session`, and for each take-over `reason`, `until`, `by`, `from_session`)."""
    env = dict(os.environ if environ is None else environ)
    with lock(layout):
        rec = read(layout, wid)
        if rec is None:
            raise NotFound(f"no worker {wid}")
        cwd = _ready_for_next_run(rec, "it is not taken over while it runs")
        cmd = command(layout, runtime, text, None, None, vouched_allow(layout, rec), env)
        now = clock.iso()
        prev = from_session or {}
        history = [dict(r) for r in rec.get("runtimes") or [] if isinstance(r, dict)]
        if not history:
            history.append({"runtime": rec.get("runtime"), "since": rec.get("created_at")})
        history[-1].update(
            session=prev.get("id") or rec.get("session") or history[-1].get("session"),
            session_alias=prev.get("alias") or rec.get("session_alias") or history[-1].get("session_alias"),
            runs=int(rec.get("runs") or 0),
        )
        history.append(
            {"runtime": runtime, "since": now, "reason": reason, "until": until, "estimate": bool(estimate), "by": by,
             "from_session": prev.get("id"), "session": None, "session_alias": None}
        )  # fmt: skip
        rec.update(
            {
                "runtime": runtime,
                "model": None,
                "effort": None,
                "runtimes": history,
                "session": None,
                "session_alias": None,
            }
        )
        _queue_next_run(layout, rec, cmd, cwd, by)
    start_runner(layout, wid, env)
    return read(layout, wid) or rec


def start_runner(layout: Layout, wid: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start the runner of worker `wid` detached, with `env` (the caller's, cleaned) for its runtime."""
    rec = read(layout, wid) or {}
    child_env = children.child_env(env)
    child_env[WORKER_ENV] = wid
    child_env[children.HEADLESS_ENV] = "1"  # its permission prompts reach whoever may answer them
    alias = rec.get("alias")
    if alias:
        child_env[ALIAS_ENV] = alias
    if seal.worker_cwd(rec):  # its hooks fail closed if its worktree's marker is removed (core/worktreemark.py)
        child_env[worktreemark.ENV] = str(seal.worker_cwd(rec))
    if rec.get("id") == wid:
        # The run's invoke_agent span, sampled: a runtime that reads it (Claude Code in -p) nests its spans under it.
        child_env["TRACEPARENT"] = traces.traceparent(rec)
        child_env.pop("TRACESTATE", None)
    fd = fsio.open_log(layout.worker_runner_log(wid))
    try:
        try:
            child = subprocess.Popen(
                proc.python_m("cocoplus.supervision.workerrun", layout.root, wid),
                cwd=layout.project,
                env=child_env,
                stdin=subprocess.DEVNULL,
                stdout=fd,
                stderr=fd,
                start_new_session=True,  # detached: the launching terminal's end or its signals do not reach it
            )
        except OSError as exc:
            _end_unstarted(layout, wid, f"its runner could not start ({exc.strerror or exc})")
            raise CocoplusError(f"{wid}: cannot start its runner ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    runner = {"pid": child.pid, "start_ticks": procinfo.start_ticks(child.pid), **procinfo.here()}
    with lock(layout):
        cur = read(layout, wid)
        if cur is not None:
            update_sealed(layout, cur, runner=runner)  # the runner binds it to itself too, as it starts
            write(layout, cur)
    import threading  # deferred: only a door that stays up (server, MCP) needs to reap its runners

    threading.Thread(target=child.wait, name=f"reap-{child.pid}", daemon=True).start()
    return child


def _goal(layout: Layout) -> str | None:
    """The supervised goal a worker launched now belongs to (when supervision was enabled), or None: its trace."""
    try:
        auto = state.read(layout).get("autonomous") or {}
    except CocoplusError:
        return None
    return str(auto["enabled_at"]) if auto.get("enabled") and auto.get("enabled_at") else None


def _end_unstarted(layout: Layout, wid: str, why: str) -> None:
    with lock(layout):
        cur = read(layout, wid)
        if cur is not None and cur.get("state") == "queued":
            cur.update({"state": "failed", "reason": why, "ended_at": clock.iso()})
            write(layout, cur)


def resume(
    layout: Layout, session: SessionRecord, cmd: list[str], by: str, environ: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    """Run `cmd` (dispatch's headless resume of the worker's session) as the worker's next run."""
    wid = session["worker"]
    with lock(layout):
        rec = read(layout, wid)
        if rec is None:
            raise NotFound(f"{session.get('alias') or session['id']}: its worker {wid} has no record")
        cwd = _ready_for_next_run(rec, "it is not resumed twice", "; launch anew")
        back = session.get("runtime")
        if rec.get("runtimes") and isinstance(back, str) and back != rec.get("runtime"):
            # The session of a runtime it failed over from: its work is handed back there (`failover_return`).
            rec["runtimes"] = [*rec["runtimes"], {
                "runtime": back, "since": clock.iso(), "reason": "handed back", "until": None, "estimate": False,
                "by": by, "from_session": rec.get("session"), "session": session["id"],
                "session_alias": session.get("alias"),
            }]  # fmt: skip
            rec.update({"runtime": back, "session": session["id"], "session_alias": session.get("alias")})
        _queue_next_run(layout, rec, cmd, cwd, by)
    child = start_runner(layout, wid, dict(os.environ if environ is None else environ))
    info = {
        "pid": child.pid, "start_ticks": procinfo.start_ticks(child.pid), "command": cmd,
        "log": layout.rel(layout.worker_log(wid)), "started_at": clock.iso(), "by": by, "worker": wid,
    }  # fmt: skip
    return child, info


# -- the slot rule (used by the runner) -------------------------------------------------------


def claim(layout: Layout, wid: str, max_parallel: int) -> str:
    """`start` if worker `wid` may start now (it is then `running`), `wait`, or `gone` (killed or ended meanwhile)."""
    reconcile(layout, skip=wid)
    others = [s for s in registry.list_sessions(layout, settle=False)[0] if s.get("worker") != wid]
    walls = limits.limited_runtimes(others)  # (its own session's limit is what its resume is trying)
    with lock(layout):
        recs, _ = records(layout)
        me = next((r for r in recs if r["id"] == wid), None)
        if me is None or me.get("state") != "queued":
            return "gone"
        held = held_by(walls.get(str(me.get("runtime"))))
        if held is not None:  # its runtime is limited: it would only hit the same wall
            if me.get("held") != held or not me.get("waiting_since"):
                me.update({"held": held, "waiting_since": me.get("waiting_since") or clock.iso()})
                write(layout, me)
            return "wait"
        running = [r for r in recs if r.get("state") == "running"]
        queued = [r for r in recs if r.get("state") == "queued" and str(r.get("runtime")) not in walls]
        queued.sort(key=lambda r: (r.get("queued_at") or r.get("created_at") or "", number(r["id"])))
        if len(running) >= max_parallel or queued[0]["id"] != wid:
            if not me.get("waiting_since") or me.get("held"):
                me.update({"waiting_since": me.get("waiting_since") or clock.iso(), "held": None})
                write(layout, me)
            return "wait"
        me.update(
            {"state": "running", "started_at": clock.iso(), "runs": int(me.get("runs") or 0) + 1, "waiting_since": None,
             "held": None}
        )  # fmt: skip
        write(layout, me)
        return "start"


def held_by(wall: dict[str, Any] | None) -> dict[str, Any] | None:
    """Why a queued worker waits for its runtime's limit to reset (`held` on its record), or None."""
    if wall is None:
        return None
    who = wall.get("alias") or wall.get("session")
    return {
        "reason": (
            f"held: its runtime's {wall.get('reason') or 'rate limit'} may not be over yet; {who} is being resumed"
            if wall.get("trying")
            else f"held: its runtime's {wall.get('reason') or 'rate limit'} resets "
            f"{limits.hhmm(clock.parse_iso(wall.get('resets_at')))}{' (estimate)' if wall.get('estimate') else ''}; "
            f"{who} is paused by it"
        ),
        "until": wall.get("resets_at"),
        "estimate": bool(wall.get("estimate")),
        "session": wall.get("session"),
    }


def started(layout: Layout, wid: str, pid: int) -> None:
    with lock(layout):
        rec = read(layout, wid)
        if rec is not None:
            rec.update({"pid": pid, "start_ticks": procinfo.start_ticks(pid), "pgid": pid})
            write(layout, rec)
