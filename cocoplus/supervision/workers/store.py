"""The worker records: `workers/<id>/worker.json`, read, written and shown.

The record (ids `w1`, `w2`, ...) is written whole under the `workers` lock (`lock`, `write`); `read`, `ids`,
`records` and `resolve` find it; `describe`, `listing` and `logs` are how the doors show it.  A change to a sealed
field seals it again, only where its seal held before (`update_sealed`; the package's docstring says why).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, cast

from cocoplus import config as config_mod
from cocoplus.core import clock, fsio, seal, vocab
from cocoplus.core.errors import CocoplusError, NotFound
from cocoplus.core.lock import Lock
from cocoplus.core.paths import Layout, is_valid_id
from cocoplus.runtimes import streams
from cocoplus.session import limits, procinfo, registry

if TYPE_CHECKING:
    from typing import Unpack

    from cocoplus.core.shapes import SessionRecord, WorkerRecord

LOCK_TIMEOUT = 10.0
LIVE = vocab.LIVE_WORKER_STATES


def lock(layout: Layout) -> Lock:
    return Lock(layout.lock("workers"), LOCK_TIMEOUT)


def read(layout: Layout, wid: str) -> WorkerRecord | None:
    """Worker `wid`'s record, None if there is none; StateCorrupt if it cannot be read."""
    return cast("WorkerRecord | None", fsio.read_json(layout.worker_record(wid)))  # as `launch` wrote it


def write(layout: Layout, rec: WorkerRecord) -> None:
    rec["updated_at"] = clock.iso()
    fsio.atomic_write_json(layout.worker_record(rec["id"]), rec)


def number(wid: str) -> int:
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
    return sorted((n for n in names if n.startswith("w") and n[1:].isdigit() and is_valid_id(n)), key=number)


def records(layout: Layout) -> tuple[list[WorkerRecord], list[str]]:
    """Every worker record, oldest first, and one line per damaged one."""
    out: list[WorkerRecord] = []
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


def resolve(layout: Layout, ref: str) -> WorkerRecord:
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
    wid = sess.get("worker") if sess is not None else None
    if isinstance(wid, str):
        rec = read(layout, wid)
        if rec is not None:
            return rec
    raise NotFound(
        f"no worker {ref!r} (use a worker id such as w1, or its session's alias; `cocoplus workers list` shows them)"
    )


def alive(rec: WorkerRecord) -> bool:
    """Whether the worker's runner or its runtime process still runs."""
    runner = rec.get("runner") or {}
    if procinfo.alive(runner.get("pid"), runner.get("start_ticks")) is True:
        return True
    return procinfo.alive(rec.get("pid"), rec.get("start_ticks")) is True


def session_of(layout: Layout, rec: WorkerRecord, sessions: list[SessionRecord] | None = None) -> SessionRecord | None:
    """The session the worker's runtime registered (its SessionStart hook recorded `worker`)."""
    sid = rec.get("session")
    if isinstance(sid, str):
        try:
            found = registry.read_record(layout, sid)
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


def settings(layout: Layout, environ: dict[str, str] | None = None) -> tuple[int, int]:
    """(`[workers] max_parallel`, `[workers] log_max_bytes`) as configured now."""
    cfg = config_mod.load_for(layout, environ)
    return int(cfg.get("workers.max_parallel")), int(cfg.get("workers.log_max_bytes"))


def update_sealed(layout: Layout, rec: WorkerRecord, **fields: Unpack[WorkerRecord]) -> str | None:
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


def vouched_allow(layout: Layout, rec: WorkerRecord) -> list[str]:
    """Worker `rec`'s own permission rules (`launch --allow`), when its seal covers them; else none."""
    if seal.worker_grant_problem(rec, layout.project, rec["id"]) is not None:
        return []
    return [r for r in rec.get("allow") or [] if isinstance(r, str)]


# -- reading ------------------------------------------------------------------------------------


def describe(
    layout: Layout,
    rec: WorkerRecord,
    *,
    sessions: list[SessionRecord] | None = None,
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
    out["paused"] = (
        limits.text(limit, watcher=limits.watcher_runs(layout), who=str(out["session_alias"] or rec["id"]))
        if limit
        else None
    )
    out["log"] = layout.rel(layout.worker_log(rec["id"]))
    out["runtimes_text"] = runtimes_text(rec)
    out["sandbox"] = rec.get("sandbox") or "none"  # its sandbox profile (a record from before profiles: none)
    out["network"] = rec.get("network") or "all"  # what its sandbox reaches (sandbox/network.py)
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


def last_report(layout: Layout, wid: str) -> str | None:
    """What the worker's model last said in its output (its transcript's last text), or None."""
    try:
        entries = logs(layout, wid, limit=128 * 1024).get("entries") or []
    except CocoplusError:
        return None
    said = [e.get("text") for e in entries if e.get("kind") == "text" and isinstance(e.get("text"), str)]
    return said[-1] if said else None


def runtimes_text(rec: WorkerRecord) -> str | None:
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
