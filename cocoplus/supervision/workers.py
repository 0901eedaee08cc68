"""Managed workers: `cocoplus launch`, `cocoplus workers list|logs|kill` and the brain's `launch_worker` (SPEC 11).

A launch writes `workers/<id>/worker.json` (ids `w1`, `w2`, ...; state
`queued`) and starts a runner (`python -m cocoplus.supervision.workerrun`,
`workerrun.py`) detached from the caller: its own session, stdin closed,
the caller's environment minus what a runtime sets for its own hooks.  The
runner waits for a slot (`[workers] max_parallel` workers `running` at once;
the oldest queued worker goes first), starts the runtime headless (`claude
-p`, `codex exec`, `gemini -p`: each adapter's `launch_argv`) in the project
directory in a process group of its own, copies its output to
`workers/<id>/output.log` (rotated to `output.log.1` at `[workers]
log_max_bytes`), waits for it and records how it ended (`finish`).

The record is sealed when it is written (`core.seal`: this user's key,
over the worker's id, the project, the command, whose program is an
absolute path, and what the record grants: its own permission rules, its
headless flag, the runner process it is bound to); the runner starts only a
command whose seal holds, so a worker record a repository brought along, or
one changed since, is recorded `failed` and never run, and the permission
hook takes a session for the worker, with its rules, only from a record
whose seal holds and whose runner is an ancestor (`session/identity.py`).
Every change to a sealed field seals the record again, and only a record
whose seal held before (`_update_sealed`): an edit by anyone else stays an
edit that grants nothing.  The runner binds the record to itself once it
takes its slot (`bind_runner`) and records itself in this user's registry
of agent processes (`session/agents.py`).

Who starts a queued worker when one finishes: its own runner, waiting in
the background from the moment of the launch, which takes the slot the
finishing worker's runner gives back.  No watcher is needed for the queue.

The worker <-> session link: the runtime's environment carries
`COCOPLUS_WORKER=<id>` (and `COCOPLUS_WORKER_ALIAS` for `--alias`), which
names the candidate its SessionStart hook, installed by `cocoplus install`,
checks (the record's seal and its runner among the hook's ancestors) before
it records `worker` on the session it registers; the worker record notes the
session when the run ends.
A turn end makes the session `pending` like any other; `cocoplus dispatch`
resumes an exited worker session by its usual headless route, which hands
the command back here (`resume`), so the resumed run is a run of the same
worker (same log, same slot rule, same `workers kill`).

How a run ends: exit code 0 is `exited`; a run `workers kill` stopped is
`exited` with `killed_by`; anything else (a crash, OOM, a signal) is
`failed` with its exit status, and an `exit` signal with value `failed`
wakes the main brain once.  If the runner died with its worker, the
watcher's `reconcile` (also run by every launch) finds the record `running`
with no live process and records `failed` the same way, exit status unknown.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from cocoplus import config as config_mod
from cocoplus.core import clock, fsio, jsonl, proc, seal, vocab, worktreemark
from cocoplus.core.errors import CocoplusError, NotFound, UsageError
from cocoplus.core.lock import Lock
from cocoplus.core.paths import Layout, is_valid_id
from cocoplus.core.records import SCHEMA_VERSION
from cocoplus.runtimes import registry as runtimes
from cocoplus.runtimes import streams
from cocoplus.session import agents, limits, permissions, procinfo, registry
from cocoplus.supervision import children, worktrees

MAX_TASK = 64 * 1024
LOCK_TIMEOUT = 10.0
STARTED_WAIT_S = 5.0  # a launch waits this long to say whether its worker started or is queued
KILL_GRACE_S = 5.0  # SIGTERM to the process group, then SIGKILL after this
WORKER_ENV = "COCOPLUS_WORKER"
ALIAS_ENV = "COCOPLUS_WORKER_ALIAS"
LIVE = vocab.LIVE_WORKER_STATES
FROM_OUTPUT = "worker_output"  # `last_event` of a session its runner recorded from its output (no hook ran)


def _lock(layout: Layout) -> Lock:
    return Lock(layout.lock("workers"), LOCK_TIMEOUT)


def read(layout: Layout, wid: str) -> dict[str, Any] | None:
    return fsio.read_json(layout.worker_record(wid))


def _write(layout: Layout, rec: dict[str, Any]) -> None:
    rec["updated_at"] = clock.iso()
    fsio.atomic_write_json(layout.worker_record(rec["id"]), rec)


def _number(wid: str) -> int:
    try:
        return int(wid[1:])
    except ValueError:
        return 0


def ids(layout: Layout) -> list[str]:
    """The ids of the worker records there are, oldest first."""
    try:
        names = os.listdir(layout.workers_dir)
    except FileNotFoundError:
        return []
    return sorted((n for n in names if n.startswith("w") and n[1:].isdigit() and is_valid_id(n)), key=_number)


def records(layout: Layout) -> tuple[list[dict[str, Any]], list[str]]:
    """Every worker record, oldest first, and one line per damaged one."""
    out: list[dict[str, Any]] = []
    problems: list[str] = []
    for wid in ids(layout):
        try:
            rec = read(layout, wid)
        except CocoplusError as exc:
            problems.append(str(exc))
            continue
        if rec is not None:
            out.append(rec)
    return out, problems


def resolve(layout: Layout, ref: str) -> dict[str, Any]:
    """A worker by its id (`w3`), its alias, or its session's alias, cs_ id or runtime id."""
    if isinstance(ref, str) and is_valid_id(ref) and ref.startswith("w") and ref[1:].isdigit():
        rec = read(layout, ref)
        if rec is not None:
            return rec
    recs, _ = records(layout)
    for rec in reversed(recs):
        if ref in (rec.get("alias"), rec.get("session"), rec.get("session_alias")):
            return rec
    try:
        sess = registry.resolve(layout, ref)
    except CocoplusError:
        sess = None
    if sess is not None and isinstance(sess.get("worker"), str):
        rec = read(layout, sess["worker"])
        if rec is not None:
            return rec
    raise NotFound(
        f"no worker {ref!r} (use a worker id such as w1, or its session's alias; `cocoplus workers list` shows them)"
    )


def alive(rec: dict[str, Any]) -> bool:
    """Whether the worker's runner or its runtime process still runs."""
    runner = rec.get("runner") or {}
    if procinfo.alive(runner.get("pid"), runner.get("start_ticks")) is True:
        return True
    return procinfo.alive(rec.get("pid"), rec.get("start_ticks")) is True


def session_of(
    layout: Layout, rec: dict[str, Any], sessions: list[dict[str, Any]] | None = None
) -> dict[str, Any] | None:
    """The session the worker's runtime registered (its SessionStart hook recorded `worker`)."""
    if isinstance(rec.get("session"), str):
        try:
            found = registry.read_record(layout, rec["session"])
        except CocoplusError:
            found = None
        if found is not None:
            return found
    if sessions is None:
        sessions = registry.list_sessions(layout)[0]
    mine = [s for s in sessions if s.get("worker") == rec["id"]]
    if rec.get("runtimes"):  # it changed runtime (a failover): the session of the runtime it runs in now
        mine = [s for s in mine if s.get("runtime") == rec.get("runtime")]
        mine.sort(key=lambda s: str(s.get("started_at") or ""))
        return mine[-1] if mine else None
    return mine[0] if mine else None


# -- launching -----------------------------------------------------------------------------


def settings(layout: Layout, environ: dict[str, str] | None = None) -> tuple[int, int]:
    """(`[workers] max_parallel`, `[workers] log_max_bytes`) as configured now."""
    cfg = config_mod.load_for(layout, environ)
    return int(cfg.get("workers.max_parallel")), int(cfg.get("workers.log_max_bytes"))


def _check(runtime: str, task: str, alias: str | None, model: str | None, effort: str | None) -> None:
    if runtime not in vocab.LAUNCH_RUNTIMES:
        raise UsageError(f"cannot launch {runtime!r}: choose one of {', '.join(vocab.LAUNCH_RUNTIMES)}")
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
) -> dict[str, Any]:
    """Start a headless worker on `task` (queued if `max_parallel` run already); the worker's record.

    `allow`: permission rules for this worker alone (`launch --allow`), beside `[permissions] allow`; the runtime
    gets them as its own settings where it has such (the adapter's `permission_argv`), and cocoplus' permission
    hook applies them to what it is asked.  `worktree` (default `[workers] worktree`): the worker runs in a git
    worktree of its own (supervision/worktrees.py)."""
    _check(runtime, task, alias, model, effort)
    allow = list(allow or [])
    for rule in allow:
        permissions.parse_rule(rule)
    env = dict(os.environ if environ is None else environ)
    cmd = command(layout, runtime, task, model, effort, allow, env)
    max_parallel, _ = settings(layout, environ)  # a bad cocoplus.toml is an error now, not in the runner
    cfg = config_mod.load_for(layout, environ)
    fsio.ensure_dir(layout.workers_dir)
    seal.key(create=True)  # a seal key that cannot be used fails the launch before anything is written
    reconcile(layout)
    if worktree is None:
        worktree = bool(cfg.get("workers.worktree"))
    with _lock(layout):
        if alias is not None and _alias_taken(layout, alias):
            raise UsageError(f"--alias {alias}: already names a session or a live worker")
        known = ids(layout)
        wid = f"w{(_number(known[-1]) if known else 0) + 1}"
        plan = worktrees.check(layout, alias or wid, environ) if worktree else None  # refused before anything is made
        fsio.ensure_dir(layout.worker_dir(wid))
        tree = None
        if plan is not None:
            try:
                tree = worktrees.create(layout, wid, alias or wid, runtime, plan)
            except CocoplusError:
                shutil.rmtree(layout.worker_dir(wid), ignore_errors=True)
                raise
        rec: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION, "id": wid, "runtime": runtime, "task": task, "alias": alias,
            "model": model, "effort": effort, "by": by, "principal": principal, "allow": allow,
            "created_at": clock.iso(), "state": "queued",
            "command": cmd, "runs": 0, "started_at": None, "ended_at": None, "pid": None, "start_ticks": None,
            "exit": None, "reason": None, "killed_by": None, "session": None, "session_alias": None,
            "worktree": tree, "headless": True, "runner": None,
        }  # fmt: skip
        rec["seal"] = seal.seal_worker(rec, layout.project, wid)
        _write(layout, rec)
    child = start_runner(layout, wid, env)
    deadline = time.monotonic() + STARTED_WAIT_S
    while time.monotonic() < deadline:
        rec = read(layout, wid) or rec
        if rec.get("state") != "queued" or rec.get("waiting_since") or child.poll() is not None:
            break
        time.sleep(0.02)
    return describe(layout, rec, max_parallel=max_parallel)


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


def _ready_for_next_run(rec: dict[str, Any], refused: str, gone_hint: str = "") -> str | None:
    """The worktree worker `rec`'s next run works in (None: the project), once it is sure the worker is not running
    (`refused` says what is not done to a running one) and its worktree is still there."""
    wid = rec["id"]
    if rec.get("state") in LIVE and alive(rec):
        raise CocoplusError(f"worker {wid} is {rec['state']}: {refused}")
    cwd = seal.worker_cwd(rec)
    if cwd is not None and not os.path.isdir(cwd):
        raise CocoplusError(f"worker {wid}: its worktree {cwd} is gone (`workers clean` removed it){gone_hint}")
    return cwd


def _queue_next_run(layout: Layout, rec: dict[str, Any], cmd: list[str], cwd: str | None, by: str) -> None:
    """Record worker `rec`'s next run of `cmd` as queued, the last run's end cleared, sealed again as it was sealed
    (`_update_sealed`); its runner starts it (under the caller's lock)."""
    _update_sealed(
        layout, rec,
        state="queued", command=cmd, resumed_by=by, queued_at=clock.iso(),
        exit=None, reason=None, killed_by=None, kill_requested=None, pid=None, start_ticks=None, ended_at=None,
        waiting_since=None, left_behind=None, limit=None,
    )  # fmt: skip
    _write(layout, rec)


def _update_sealed(layout: Layout, rec: dict[str, Any], **fields: Any) -> str | None:
    """Change `fields` of worker record `rec` and seal it again as it was sealed: over its grants too, or (sealed by
    an earlier release, `seal.LEGACY`) over its command alone, so that it still grants nothing.  A record whose
    seal did not hold before the change is not sealed now (its runner will not run it, and it grants nothing).
    Why its seal did not cover its grants before, or None."""
    problem = seal.worker_grant_problem(rec, layout.project, rec["id"])
    rec.update(fields)
    if problem is None:
        rec["seal"] = seal.seal_worker(rec, layout.project, rec["id"])
    elif problem == seal.LEGACY:
        old = seal.legacy_worker_fields(rec["id"], layout.project, rec.get("command"), seal.worker_cwd(rec))
        rec["seal"] = seal.seal(old)
    return problem


def vouched_allow(layout: Layout, rec: dict[str, Any]) -> list[str]:
    """Worker `rec`'s own permission rules (`launch --allow`), when its seal covers them; else none."""
    if seal.worker_grant_problem(rec, layout.project, rec["id"]) is not None:
        return []
    return [r for r in rec.get("allow") or [] if isinstance(r, str)]


def bind_runner(layout: Layout, wid: str) -> dict[str, Any] | None:
    """Called by worker `wid`'s runner as it takes its slot: bind the record to this process (`runner`, sealed
    again when its seal held) and record this process in this user's registry of agent processes
    (session/agents.py); the record, or None when there is none.  A registry that cannot be written is said on
    stderr (the runner's log): the worker is then known by its record alone."""
    me = procinfo.self_process()
    with _lock(layout):
        rec = read(layout, wid)
        if rec is None:
            return None
        _update_sealed(layout, rec, runner=me)
        _write(layout, rec)
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
    from_session: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Worker `wid`'s next run is a new session of `runtime`, started with `text` (the handoff): a failover from a
    runtime paused by its limit (supervision/resumes.py).  The record keeps every runtime it ran in, in
    `runtimes` (`runtime`, its `session`, and for each take-over `reason`, `until`, `by`, `from_session`)."""
    env = dict(os.environ if environ is None else environ)
    with _lock(layout):
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
        rec.update(runtime=runtime, model=None, effort=None, runtimes=history, session=None, session_alias=None)
        _queue_next_run(layout, rec, cmd, cwd, by)
    start_runner(layout, wid, env)
    return read(layout, wid) or rec


def last_report(layout: Layout, wid: str) -> str | None:
    """What the worker's model last said in its output (its transcript's last text), or None."""
    try:
        entries = logs(layout, wid, limit=128 * 1024).get("entries") or []
    except CocoplusError:
        return None
    said = [e.get("text") for e in entries if e.get("kind") == "text" and isinstance(e.get("text"), str)]
    return said[-1] if said else None


def runtimes_text(rec: dict[str, Any]) -> str | None:
    """The runtimes a worker ran in, as every door shows them: `claude → codex (rate limit until 15:00)` (with
    `, estimate` where the runtime gave no reset time); None for a worker that never changed runtime."""
    history = [r for r in rec.get("runtimes") or [] if isinstance(r, dict) and r.get("runtime")]
    if len(history) < 2:
        return None
    words = " → ".join(str(r["runtime"]) for r in history)
    last = history[-1]
    why = str(last.get("reason") or "")
    until = clock.parse_iso(last.get("until"))
    if until is not None:
        why += f" until {limits.hhmm(until)}" + (", estimate" if last.get("estimate") else "")
    return f"{words} ({why})" if why else words


def start_runner(layout: Layout, wid: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start the runner of worker `wid` detached, with `env` (the caller's, cleaned) for its runtime."""
    rec = read(layout, wid) or {}
    child_env = children.child_env(env)
    child_env[WORKER_ENV] = wid
    child_env[children.HEADLESS_ENV] = "1"  # its permission prompts reach whoever may answer them
    if rec.get("alias"):
        child_env[ALIAS_ENV] = rec["alias"]
    if seal.worker_cwd(rec):  # its hooks fail closed if its worktree's marker is removed (core/worktreemark.py)
        child_env[worktreemark.ENV] = str(seal.worker_cwd(rec))
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
    with _lock(layout):
        cur = read(layout, wid)
        if cur is not None:
            _update_sealed(layout, cur, runner=runner)  # the runner binds it to itself too, as it starts
            _write(layout, cur)
    import threading  # deferred: only a door that stays up (server, MCP) needs to reap its runners

    threading.Thread(target=child.wait, name=f"reap-{child.pid}", daemon=True).start()
    return child


def _end_unstarted(layout: Layout, wid: str, why: str) -> None:
    with _lock(layout):
        cur = read(layout, wid)
        if cur is not None and cur.get("state") == "queued":
            cur.update(state="failed", reason=why, ended_at=clock.iso())
            _write(layout, cur)


def resume(
    layout: Layout, session: dict[str, Any], cmd: list[str], by: str, environ: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    """Run `cmd` (dispatch's headless resume of the worker's session) as the worker's next run."""
    wid = session["worker"]
    with _lock(layout):
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
            rec.update(runtime=back, session=session["id"], session_alias=session.get("alias"))
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
    with _lock(layout):
        recs, _ = records(layout)
        me = next((r for r in recs if r["id"] == wid), None)
        if me is None or me.get("state") != "queued":
            return "gone"
        held = held_by(walls.get(str(me.get("runtime"))))
        if held is not None:  # its runtime is limited: it would only hit the same wall
            if me.get("held") != held or not me.get("waiting_since"):
                me.update(held=held, waiting_since=me.get("waiting_since") or clock.iso())
                _write(layout, me)
            return "wait"
        running = [r for r in recs if r.get("state") == "running"]
        queued = [r for r in recs if r.get("state") == "queued" and str(r.get("runtime")) not in walls]
        queued.sort(key=lambda r: (r.get("queued_at") or r.get("created_at") or "", _number(r["id"])))
        if len(running) >= max_parallel or queued[0]["id"] != wid:
            if not me.get("waiting_since") or me.get("held"):
                me.update(waiting_since=me.get("waiting_since") or clock.iso(), held=None)
                _write(layout, me)
            return "wait"
        me.update(
            state="running", started_at=clock.iso(), runs=int(me.get("runs") or 0) + 1, waiting_since=None, held=None
        )
        _write(layout, me)
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
    with _lock(layout):
        rec = read(layout, wid)
        if rec is not None:
            rec.update(pid=pid, start_ticks=procinfo.start_ticks(pid), pgid=pid)
            _write(layout, rec)


# -- how a run ends ---------------------------------------------------------------------------


def status_text(code: int | None) -> str:
    if code is None:
        return "exit status unknown"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def finish(
    layout: Layout,
    wid: str,
    code: int | None,
    why: str | None = None,
    left_behind: list[dict[str, Any]] | None = None,
    limit: dict[str, Any] | None = None,
    native: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """Record how worker `wid`'s run ended (once); update its session and wake the brain on a failure.

    `left_behind`: the processes its runtime left running (`leftovers.find`), which its runner ends next.
    `limit`: the rate or usage limit its output reported (the adapter's `output_limit`): a run ended by a limit
    is `exited` with the limit, not `failed`, and its session is paused (session/limits.py) if its hook did not
    say so already.  `native`: the session its output named (the adapter's `output_session`), recorded for a
    run ended by a limit whose hooks recorded none (`session_from_output`), so that it is resumed at the reset.
    """
    with _lock(layout):
        rec = read(layout, wid)
        if rec is None or rec.get("state") not in LIVE:
            if rec is not None and left_behind:
                rec["left_behind"] = [
                    dict(p, ended=False) for p in left_behind
                ]  # `workers kill` recorded the end first
                _write(layout, rec)
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
            and sess.get("state") in vocab.ACTIVE_STATES
            and limits.active(sess) is None  # (its hook said so already: one pause, one `limited` signal)
        ):
            sess = _pause_session(layout, sess, limit)
        paused = None if killed or sess is None else limits.active(sess)
        status = status_text(code)
        negative = code is not None and code < 0
        rec["exit"] = {
            "code": None if negative else code,
            "signal": status.split()[-1] if negative else None,
            "status": status,
        }
        rec["ended_at"] = clock.iso()
        if killed:
            rec.update(
                state="exited",
                killed_by=killed.get("by"),
                reason=f"killed by {killed.get('by')} (cocoplus workers kill; {status})",
            )
        elif paused is not None:
            rec.update(state="exited", reason=f"{limits.text(paused)} ({status})", limit=paused)
        elif limit is not None and sess is None:  # no session to resume (its hooks never ran): nothing comes back
            why = f"stopped by its runtime's {limit.get('reason') or 'rate limit'} before a session was recorded"
            rec.update(state="failed", reason=f"{why}, so it is not resumed ({status})", limit=dict(limit))
        elif code == 0:
            rec.update(state="exited", reason=why or "ended (exit code 0)")
        else:
            rec.update(state="failed", reason=why or f"died without a turn end ({status})")
        if sess is not None and paused is None and limits.trying(sess) is not None:
            sess = _limit_over(layout, sess)
        if sess is not None:
            rec.update(session=sess["id"], session_alias=sess.get("alias"))
            if rec.get("runtimes") and isinstance(rec["runtimes"][-1], dict):  # the run of its current runtime
                rec["runtimes"][-1].update(session=sess["id"], session_alias=sess.get("alias"))
            _end_session(layout, rec, sess)  # before the record says it ended, so whoever sees that sees the signal too
        elif rec["state"] == "failed":
            _failed_without_session(layout, rec)
        rec["denied"] = denied_calls(layout, rec)
        if rec["denied"] and rec["state"] == "exited" and not killed:
            rec["reason"] = f"{rec['reason']}; {rec['denied']} tool call(s) were denied permission"
        _write(layout, rec)
    return rec


def denied_calls(layout: Layout, rec: dict[str, Any]) -> int:
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
    with _lock(layout):
        rec = read(layout, wid)
        if rec is None or not isinstance(rec.get("left_behind"), list):
            return
        for p in rec["left_behind"]:
            if isinstance(p, dict):
                p["ended"] = p.get("pid") not in alive_pids
        _write(layout, rec)


def _failed_without_session(layout: Layout, rec: dict[str, Any]) -> None:
    """A run that failed before its runtime's SessionStart named a session (a rejected login, a flag its
    version does not know): no session record will ever say so, so its exit signal names the worker instead."""
    who = {"id": None, "alias": rec.get("alias") or rec["id"], "runtime": rec.get("runtime")}
    detail = (
        f"worker {rec['id']}: {rec['reason']}; no session had started (its output: cocoplus workers logs {rec['id']})"
    )
    try:
        registry.append_signal(layout, who, "exit", "failed", detail=detail, worker=rec["id"])
    except CocoplusError:
        pass  # the worker's record still says failed; `cocoplus workers list` shows it


def _end_session(layout: Layout, rec: dict[str, Any], sess: dict[str, Any]) -> None:
    """The session of a run that ended: `failed` if the run failed, `exited` otherwise; one exit signal."""
    failed = rec["state"] == "failed"
    box: dict[str, bool] = {}

    def change(r: dict[str, Any]) -> None:
        box["was_active"] = r.get("state") in vocab.ACTIVE_STATES
        if limits.active(r) is not None:
            box["was_active"] = False  # paused by a limit: it stays paused, to be resumed at the reset
            return
        if failed:
            r["state"] = "failed"
            r["exit_reason"] = f"worker {rec['id']}: {rec['reason']}"
        elif box["was_active"]:
            r["state"] = "exited"
            r["exit_reason"] = f"worker {rec['id']}: {rec['reason']}"

    try:
        updated = registry.update(layout, sess["id"], change)
    except CocoplusError:
        return
    if failed or box.get("was_active"):
        # Its own SessionEnd hook did not say so (a crash, a kill): the watcher hears it here, once.
        registry.append_signal(
            layout, updated, "exit", rec["state"], detail=f"worker {rec['id']}: {rec['reason']}", worker=rec["id"]
        )


def session_from_output(layout: Layout, rec: dict[str, Any], native: dict[str, Any]) -> dict[str, Any] | None:
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


def _pause_session(layout: Layout, sess: dict[str, Any], limit: dict[str, Any]) -> dict[str, Any]:
    """Pause the session by the limit its run's output reported (its hook did not: no StopFailure, or an older
    runtime); the `limited` signal as the hook would have sent it."""
    retry_s = float(config_mod.load_for(layout).get("workers.limit_retry_s"))

    box: dict[str, bool] = {}

    def change(r: dict[str, Any]) -> None:
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


def _limit_over(layout: Layout, sess: dict[str, Any]) -> dict[str, Any]:
    """A run resumed from a limit ended without meeting it again: the limit is over (the queue stops holding)."""

    def change(r: dict[str, Any]) -> None:
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


# -- worktrees: bringing the work back -----------------------------------------------------------


def note_commit(layout: Layout, wid: str, commit: str) -> None:
    """Record on the worker the commit its run's leftovers went into."""
    with _lock(layout):
        rec = read(layout, wid)
        if rec is not None and isinstance(rec.get("worktree"), dict):
            rec["worktree"]["committed"] = {"commit": commit, "at": clock.iso()}
            _write(layout, rec)


def _ended(layout: Layout, rec: dict[str, Any], doing: str) -> None:
    if rec.get("state") in LIVE and (alive(rec) or rec.get("state") == "queued"):
        raise UsageError(
            f"workers {doing} {rec['id']}: the worker is still {rec['state']}; wait for it to end "
            f"or `cocoplus workers kill {rec['id']}`"
        )


def _keep_leftovers(layout: Layout, rec: dict[str, Any]) -> None:
    """What an ended worker left uncommitted, committed on its branch now if its runner could not (it died with
    its worker, or the commit failed): a merge or a clean never loses it."""
    commit = worktrees.commit_leftovers(rec)
    if commit:
        note_commit(layout, rec["id"], commit)


def _note_tree(layout: Layout, wid: str, **fields: Any) -> dict[str, Any] | None:
    with _lock(layout):
        rec = read(layout, wid)
        if rec is not None and isinstance(rec.get("worktree"), dict):
            rec["worktree"].update(fields)
            _write(layout, rec)
        return rec


def diff(layout: Layout, ref: str) -> dict[str, Any]:
    """`workers diff W`: the worker's branch against the commit it started from."""
    return worktrees.diff(layout, resolve(layout, ref))


def merge(layout: Layout, ref: str, by: str, check: Callable[[list[str]], None] | None = None) -> dict[str, Any]:
    """`workers merge W`: its branch into the project's current branch (refused while it runs).  `check`: called
    with the protected paths the merge would change, once what the worker left is committed and before git merges
    anything (worktrees.merge); it raises to refuse."""
    rec = resolve(layout, ref)
    worktrees.of(rec)
    _ended(layout, rec, "merge")
    _keep_leftovers(layout, rec)
    out = worktrees.merge(layout, rec, check)
    if out["merged"]:
        merged = {"into": out["into"], "commit": out["commit"], "at": clock.iso(), "by": by}
        if out.get("protected"):
            merged["protected"] = out["protected"]
        _note_tree(layout, rec["id"], merged=merged)
    return out


def clean(layout: Layout, ref: str | None, force: bool = False) -> dict[str, Any]:
    """`workers clean [W]`: remove ended workers' worktrees; a branch not merged stays unless `force`."""
    if ref is not None:
        rec = resolve(layout, ref)
        worktrees.of(rec)
        _ended(layout, rec, "clean")
        chosen = [rec]
        skipped: list[dict[str, Any]] = []
    else:
        chosen, skipped = [], []
        for rec in records(layout)[0]:
            tree = rec.get("worktree")
            if not isinstance(tree, dict) or tree.get("removed_at"):
                continue
            if rec.get("state") in LIVE and (alive(rec) or rec.get("state") == "queued"):
                skipped.append({"worker": rec["id"], "state": rec.get("state")})
            else:
                chosen.append(rec)
    done = []
    for rec in chosen:
        _keep_leftovers(layout, rec)
        out = worktrees.remove(layout, rec, force)
        _note_tree(layout, rec["id"], removed_at=clock.iso(), branch_kept=out["branch_kept"])
        done.append(out)
    return {"cleaned": done, "running": skipped}


# -- kill ---------------------------------------------------------------------------------------


def kill(layout: Layout, ref: str, by: str) -> dict[str, Any]:
    """`workers kill ID`: stop the worker's process group (SIGTERM,
    then SIGKILL); it is recorded `exited`, killed by `by`."""
    rec = resolve(layout, ref)
    wid = rec["id"]
    with _lock(layout):
        rec = read(layout, wid) or rec
        if rec.get("state") not in LIVE:
            raise UsageError(f"worker {wid} is not running (it is {rec.get('state')})")
        rec["kill_requested"] = {"by": by, "at": clock.iso()}
        if rec.get("state") == "queued":
            rec.update(
                state="exited",
                killed_by=by,
                ended_at=clock.iso(),
                reason=f"killed by {by} while queued (cocoplus workers kill)",
            )
        _write(layout, rec)
    if rec.get("state") == "queued":
        _signal_runner(rec)
        return describe(layout, rec)
    deadline = time.monotonic() + 2.0
    while rec.get("pid") is None and time.monotonic() < deadline and alive(rec):
        time.sleep(0.05)  # its runner is starting the process
        rec = read(layout, wid) or rec
    pgid = rec.get("pgid") or rec.get("pid")
    if isinstance(pgid, int) and procinfo.alive(rec.get("pid"), rec.get("start_ticks")):
        killpg(pgid, signal.SIGTERM)
        end = time.monotonic() + KILL_GRACE_S
        while time.monotonic() < end and procinfo.alive(rec.get("pid"), rec.get("start_ticks")):
            time.sleep(0.05)
        killpg(pgid, signal.SIGKILL)  # whatever it started in its group goes too
    else:
        _signal_runner(rec)
    end = time.monotonic() + KILL_GRACE_S
    while time.monotonic() < end:
        cur = read(layout, wid) or rec
        if cur.get("state") not in LIVE:
            return describe(layout, _end_left_behind(layout, wid) or cur)
        if not alive(cur):
            break
        time.sleep(0.05)
    finish(layout, wid, -signal.SIGTERM)  # its runner did not record it: record it here
    return describe(layout, _end_left_behind(layout, wid) or rec)


def _end_left_behind(layout: Layout, wid: str) -> dict[str, Any] | None:
    """After a kill: what the runtime left behind (its runner found and is ending it) is gone when kill returns.

    The runner records it when it records the end, and ends it; this covers a
    runner that died meanwhile, and makes `workers kill` return only once the
    processes are gone.
    """
    from cocoplus.supervision import leftovers  # deferred: only a kill of a running worker needs it

    rec = read(layout, wid)
    procs = [p for p in (rec or {}).get("left_behind") or [] if isinstance(p, dict) and isinstance(p.get("pid"), int)]
    if procs:
        still = leftovers.end(procs, KILL_GRACE_S)
        left_behind_ended(layout, wid, still)
        rec = read(layout, wid)
    return rec


def killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _signal_runner(rec: dict[str, Any]) -> None:
    runner = rec.get("runner") or {}
    if procinfo.alive(runner.get("pid"), runner.get("start_ticks")) is True:
        try:
            os.kill(runner["pid"], signal.SIGTERM)
        except OSError:
            pass


# -- reading ------------------------------------------------------------------------------------


def describe(
    layout: Layout,
    rec: dict[str, Any],
    *,
    sessions: list[dict[str, Any]] | None = None,
    max_parallel: int | None = None,
) -> dict[str, Any]:
    """A worker as the doors show it: its record plus its session's alias, state and attention."""
    sess = session_of(layout, rec, sessions)
    out = {k: v for k, v in rec.items() if k not in ("schema_version", "kill_requested", "seal")}
    out["session"] = sess["id"] if sess else rec.get("session")
    out["session_alias"] = sess.get("alias") if sess else rec.get("session_alias")
    out["session_state"] = sess.get("state") if sess else None
    out["attention"] = (
        registry.attention_of(sess) if sess else None
    )  # as sessions list shows it: an ended session waits for nothing
    limit = limits.active(sess)  # its session is paused by its runtime's limit: the doors say until when
    out["limit"] = dict(limit) if limit else rec.get("limit")  # else the limit its last run ended by, if any
    out["paused"] = limits.text(limit) if limit else None
    out["log"] = layout.rel(layout.worker_log(rec["id"]))
    out["runtimes_text"] = runtimes_text(rec)
    if rec.get("state") in LIVE and not alive(rec) and rec.get("runner"):
        out["stale"] = True  # the watcher or the next launch records it failed
    if max_parallel is not None:
        out["max_parallel"] = max_parallel
    return out


def listing(layout: Layout, environ: dict[str, str] | None = None) -> dict[str, Any]:
    recs, problems = records(layout)
    sessions = registry.list_sessions(layout)[0]
    max_parallel, _ = settings(layout, environ)
    workers = [describe(layout, r, sessions=sessions) for r in recs]
    return {
        "workers": workers,
        "running": sum(1 for w in workers if w["state"] == "running"),
        "queued": sum(1 for w in workers if w["state"] == "queued"),
        "max_parallel": max_parallel,
        "problems": problems,
    }


def logs(
    layout: Layout, ref: str, offset: int | None = None, limit: int = 256 * 1024, raw: bool = False
) -> dict[str, Any]:
    """The worker's output from `offset` (None: its last `limit` bytes); `offset` in the answer reads on.

    `text` is the output as it is; unless `raw`, `entries` is its transcript
    (`runtimes.streams`: the model's text, each tool call and its result,
    errors), read from whole lines only: a line still being written is left
    for the next read (`offset` stops before it) while the worker runs.
    """
    rec = resolve(layout, ref)
    path = layout.worker_log(rec["id"])
    data, start, size = fsio.read_log(path, offset, limit)
    rotated = offset is not None and offset > size  # set aside as output.log.1 since the last read
    out = {
        "worker": rec["id"], "runtime": rec.get("runtime"), "state": rec.get("state"), "rotated": rotated,
        "log": layout.rel(path), "offset": start + len(data),
    }  # fmt: skip
    if raw:
        return {**out, "text": data.decode("utf-8", "replace")}
    if start > 0 and offset is None:
        cut = data.find(b"\n") + 1
        data, start = data[cut:], start + cut  # the first line was cut by the limit: begin at the next whole one
    if rec.get("state") in LIVE:
        data = data[: data.rfind(b"\n") + 1]  # whole lines only while more may come
    text = data.decode("utf-8", "replace")
    return {**out, "text": text, "offset": start + len(data), "entries": streams.transcript(rec.get("runtime"), text)}
