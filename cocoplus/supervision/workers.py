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

Who starts a queued worker when one finishes: its own runner, waiting in
the background from the moment of the launch, which takes the slot the
finishing worker's runner gives back.  No watcher is needed for the queue.

The worker <-> session link: the runtime's environment carries
`COCOPLUS_WORKER=<id>` (and `COCOPLUS_WORKER_ALIAS` for `--alias`), and its
SessionStart hook, installed by `cocoplus install`, records `worker` on the
session it registers; the worker record notes the session when the run ends.
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
import signal
import subprocess
import sys
import time
from typing import Any

from cocoplus import config as config_mod
from cocoplus.core import clock, fsio, vocab
from cocoplus.core.errors import CocoplusError, NotFound, UsageError
from cocoplus.core.lock import Lock
from cocoplus.core.paths import Layout, is_valid_id
from cocoplus.core.records import SCHEMA_VERSION
from cocoplus.runtimes import registry as runtimes
from cocoplus.session import procinfo, registry
from cocoplus.supervision import headless

MAX_TASK = 64 * 1024
LOCK_TIMEOUT = 10.0
STARTED_WAIT_S = 5.0  # a launch waits this long to say whether its worker started or is queued
KILL_GRACE_S = 5.0  # SIGTERM to the process group, then SIGKILL after this
WORKER_ENV = "COCOPLUS_WORKER"
ALIAS_ENV = "COCOPLUS_WORKER_ALIAS"
LIVE = vocab.LIVE_WORKER_STATES


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


def _ids(layout: Layout) -> list[str]:
    try:
        names = os.listdir(layout.workers_dir)
    except FileNotFoundError:
        return []
    return sorted((n for n in names if n.startswith("w") and n[1:].isdigit() and is_valid_id(n)), key=_number)


def records(layout: Layout) -> tuple[list[dict[str, Any]], list[str]]:
    """Every worker record, oldest first, and one line per damaged one."""
    out: list[dict[str, Any]] = []
    problems: list[str] = []
    for wid in _ids(layout):
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
    raise NotFound(f"no worker {ref!r} (use a worker id such as w1, or its session's alias; `cocoplus workers list` shows them)")


def alive(rec: dict[str, Any]) -> bool:
    """Whether the worker's runner or its runtime process still runs."""
    runner = rec.get("runner") or {}
    if procinfo.alive(runner.get("pid"), runner.get("start_ticks")) is True:
        return True
    return procinfo.alive(rec.get("pid"), rec.get("start_ticks")) is True


def session_of(layout: Layout, rec: dict[str, Any], sessions: list[dict[str, Any]] | None = None) -> dict[str, Any] | None:
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
    if alias is not None and (not is_valid_id(alias) or alias.startswith("cs_") or (alias[:1] == "w" and alias[1:].isdigit())):
        raise UsageError(f"--alias {alias!r}: use letters, digits, '_', '-' and '.' (not cs_..., not a worker id such as w1)")
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
) -> dict[str, Any]:
    """Start a headless worker on `task` (queued if `max_parallel` run already); the worker's record."""
    _check(runtime, task, alias, model, effort)
    env = dict(os.environ if environ is None else environ)
    adapter = runtimes.get(runtime)
    found = headless._on_path(adapter.COMMAND, env)
    if not found:
        raise CocoplusError(f"no {adapter.TITLE} CLI found (`{adapter.COMMAND}` is not on PATH)", hint=f"install it, or put it on PATH for `cocoplus launch {runtime}`")
    cmd = adapter.launch_argv(found, task, model, effort)
    if cmd is None:
        raise UsageError(f"{adapter.TITLE} cannot be launched headless")
    max_parallel, _ = settings(layout, environ)  # a bad cocoplus.toml is an error now, not in the runner
    fsio.ensure_dir(layout.workers_dir)
    reconcile(layout)
    with _lock(layout):
        if alias is not None and _alias_taken(layout, alias):
            raise UsageError(f"--alias {alias}: already names a session or a live worker")
        ids = _ids(layout)
        wid = f"w{(_number(ids[-1]) if ids else 0) + 1}"
        fsio.ensure_dir(layout.worker_dir(wid))
        rec: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION, "id": wid, "runtime": runtime, "task": task, "alias": alias,
            "model": model, "effort": effort, "by": by, "created_at": clock.iso(), "state": "queued",
            "command": cmd, "runs": 0, "started_at": None, "ended_at": None, "pid": None, "start_ticks": None,
            "exit": None, "reason": None, "killed_by": None, "session": None, "session_alias": None,
        }  # fmt: skip
        _write(layout, rec)
    child = start_runner(layout, wid, env)
    deadline = time.monotonic() + STARTED_WAIT_S
    while time.monotonic() < deadline:
        rec = read(layout, wid) or rec
        if rec.get("state") != "queued" or rec.get("waiting_since") or child.poll() is not None:
            break
        time.sleep(0.02)
    return describe(layout, rec, max_parallel=max_parallel)


def start_runner(layout: Layout, wid: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start the runner of worker `wid` detached, with `env` (the caller's, cleaned) for its runtime."""
    rec = read(layout, wid) or {}
    child_env = headless.child_env(env)
    child_env[WORKER_ENV] = wid
    if rec.get("alias"):
        child_env[ALIAS_ENV] = rec["alias"]
    fd = fsio.open_log(layout.worker_runner_log(wid))
    try:
        try:
            child = subprocess.Popen(
                [sys.executable, "-m", "cocoplus.supervision.workerrun", layout.root, wid],
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
    ticks = procinfo.start_ticks(child.pid)

    def note(r: dict[str, Any]) -> None:
        r["runner"] = {"pid": child.pid, "start_ticks": ticks}

    with _lock(layout):
        cur = read(layout, wid)
        if cur is not None:
            note(cur)
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


def resume(layout: Layout, session: dict[str, Any], cmd: list[str], by: str, environ: dict[str, str] | None = None) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    """Run `cmd` (dispatch's headless resume of the worker's session) as the worker's next run."""
    wid = session["worker"]
    with _lock(layout):
        rec = read(layout, wid)
        if rec is None:
            raise NotFound(f"{session.get('alias') or session['id']}: its worker {wid} has no record")
        if rec.get("state") in LIVE and alive(rec):
            raise CocoplusError(f"worker {wid} is {rec['state']}: it is not resumed twice")
        rec.update(
            state="queued", command=cmd, resumed_by=by, exit=None, reason=None, killed_by=None, kill_requested=None,
            pid=None, start_ticks=None, ended_at=None, waiting_since=None, queued_at=clock.iso(),
        )  # fmt: skip
        _write(layout, rec)
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
    with _lock(layout):
        recs, _ = records(layout)
        me = next((r for r in recs if r["id"] == wid), None)
        if me is None or me.get("state") != "queued":
            return "gone"
        running = [r for r in recs if r.get("state") == "running"]
        queued = [r for r in recs if r.get("state") == "queued"]
        queued.sort(key=lambda r: (r.get("queued_at") or r.get("created_at") or "", _number(r["id"])))
        if len(running) >= max_parallel or queued[0]["id"] != wid:
            if not me.get("waiting_since"):
                me["waiting_since"] = clock.iso()
                _write(layout, me)
            return "wait"
        me.update(state="running", started_at=clock.iso(), runs=int(me.get("runs") or 0) + 1, waiting_since=None)
        _write(layout, me)
        return "start"


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


def finish(layout: Layout, wid: str, code: int | None, why: str | None = None) -> dict[str, Any] | None:
    """Record how worker `wid`'s run ended (once); update its session and wake the brain on a failure."""
    with _lock(layout):
        rec = read(layout, wid)
        if rec is None or rec.get("state") not in LIVE:
            return None
        killed = rec.get("kill_requested") or None
        status = status_text(code)
        negative = code is not None and code < 0
        rec["exit"] = {"code": None if negative else code, "signal": status.split()[-1] if negative else None, "status": status}
        rec["ended_at"] = clock.iso()
        if killed:
            rec.update(state="exited", killed_by=killed.get("by"), reason=f"killed by {killed.get('by')} (cocoplus workers kill; {status})")
        elif code == 0:
            rec.update(state="exited", reason=why or "ended (exit code 0)")
        else:
            rec.update(state="failed", reason=why or f"died without a turn end ({status})")
        sess = session_of(layout, rec)
        if sess is not None:
            rec.update(session=sess["id"], session_alias=sess.get("alias"))
            _end_session(layout, rec, sess)  # before the record says it ended, so whoever sees that sees the signal too
        elif rec["state"] == "failed":
            _failed_without_session(layout, rec)
        _write(layout, rec)
    return rec


def _failed_without_session(layout: Layout, rec: dict[str, Any]) -> None:
    """A run that failed before its runtime's SessionStart named a session (a rejected login, a flag its
    version does not know): no session record will ever say so, so its exit signal names the worker instead."""
    who = {"id": None, "alias": rec.get("alias") or rec["id"], "runtime": rec.get("runtime")}
    detail = f"worker {rec['id']}: {rec['reason']}; no session had started (its output: cocoplus workers logs {rec['id']})"
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
        registry.append_signal(layout, updated, "exit", rec["state"], detail=f"worker {rec['id']}: {rec['reason']}", worker=rec["id"])


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
        why = "its process is gone and so is its runner (exit status unknown)" if rec.get("state") == "running" else "its runner is gone before it started"
        if finish(layout, rec["id"], None, why) is not None:
            done.append(rec["id"])
    return done


# -- kill ---------------------------------------------------------------------------------------


def kill(layout: Layout, ref: str, by: str) -> dict[str, Any]:
    """`workers kill ID`: stop the worker's process group (SIGTERM, then SIGKILL); it is recorded `exited`, killed by `by`."""
    rec = resolve(layout, ref)
    wid = rec["id"]
    with _lock(layout):
        rec = read(layout, wid) or rec
        if rec.get("state") not in LIVE:
            raise UsageError(f"worker {wid} is not running (it is {rec.get('state')})")
        rec["kill_requested"] = {"by": by, "at": clock.iso()}
        if rec.get("state") == "queued":
            rec.update(state="exited", killed_by=by, ended_at=clock.iso(), reason=f"killed by {by} while queued (cocoplus workers kill)")
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
        _killpg(pgid, signal.SIGTERM)
        end = time.monotonic() + KILL_GRACE_S
        while time.monotonic() < end and procinfo.alive(rec.get("pid"), rec.get("start_ticks")):
            time.sleep(0.05)
        _killpg(pgid, signal.SIGKILL)  # whatever it started in its group goes too
    else:
        _signal_runner(rec)
    end = time.monotonic() + KILL_GRACE_S
    while time.monotonic() < end:
        cur = read(layout, wid) or rec
        if cur.get("state") not in LIVE:
            return describe(layout, cur)
        if not alive(cur):
            break
        time.sleep(0.05)
    finish(layout, wid, -signal.SIGTERM)  # its runner did not record it: record it here
    return describe(layout, read(layout, wid) or rec)


def _killpg(pgid: int, sig: int) -> None:
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


def describe(layout: Layout, rec: dict[str, Any], *, sessions: list[dict[str, Any]] | None = None, max_parallel: int | None = None) -> dict[str, Any]:
    """A worker as the doors show it: its record plus its session's alias, state and attention."""
    sess = session_of(layout, rec, sessions)
    out = {k: v for k, v in rec.items() if k not in ("schema_version", "kill_requested")}
    out["session"] = sess["id"] if sess else rec.get("session")
    out["session_alias"] = sess.get("alias") if sess else rec.get("session_alias")
    out["session_state"] = sess.get("state") if sess else None
    out["attention"] = sess.get("attention") if sess else None
    out["log"] = layout.rel(layout.worker_log(rec["id"]))
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


def logs(layout: Layout, ref: str, offset: int | None = None, limit: int = 256 * 1024) -> dict[str, Any]:
    """The worker's output from `offset` (None: its last `limit` bytes); `offset` in the answer reads on."""
    rec = resolve(layout, ref)
    path = layout.worker_log(rec["id"])
    rotated = False
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return {"worker": rec["id"], "state": rec.get("state"), "text": "", "offset": 0, "rotated": False, "log": layout.rel(path)}
    except OSError as exc:
        raise CocoplusError(f"{layout.rel(path)}: cannot read ({exc.strerror})") from None
    try:
        size = os.fstat(fd).st_size
        if offset is None:
            start = max(0, size - limit)
        elif offset > size:
            start, rotated = 0, True  # set aside as output.log.1 since the last read
        else:
            start = offset
        os.lseek(fd, start, os.SEEK_SET)
        data = os.read(fd, min(limit, size - start)) if size > start else b""
    finally:
        os.close(fd)
    return {
        "worker": rec["id"], "state": rec.get("state"), "text": data.decode("utf-8", "replace"),
        "offset": start + len(data), "rotated": rotated, "log": layout.rel(path),
    }  # fmt: skip
