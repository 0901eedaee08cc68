"""SessionStart: the session registered and its runtime's process sealed, stale sessions and the run state healed,
the session exported to the runtime's shell, and the handoff given as context.

Loaded by the runner only for a session start.  Standard library only.
"""

from __future__ import annotations

import os

from cocoplus.core import clock
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import ensure_marker
from cocoplus.session import killswitch, registry

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any

    from cocoplus.core.shapes import SessionRecord
    from cocoplus.hook.runner import Answer, Hook  # only a type: the runner imports this module


def on_session_start(h: Hook) -> Answer:
    from cocoplus.session import identity  # deferred: only a session start (and a permission request) asks

    s = h.values["session"]
    p = h.payload
    who = identity.of_hook(h.layout, h.environ)
    if who.problem:
        h.log(f"identity: {who.problem}")
    proc = _runtime_process(h)
    info = {
        "cwd": p.get("cwd") if isinstance(p.get("cwd"), str) else None,
        "transcript_path": p.get("transcript_path") if isinstance(p.get("transcript_path"), str) else None,
        "model": p.get("model") if isinstance(p.get("model"), str) else None,
        "source": p.get("source") if isinstance(p.get("source"), str) else None,
        # Which process runs the session and how it was started: `cocoplus dispatch` resumes an exited one alike.
        "process": proc,
        # The worker <-> session link: only a worker whose sealed record's runner is an ancestor of this hook
        # (session/identity.py), never a name in the environment alone.
        "worker": who.worker,
    }

    def change(rec: SessionRecord) -> None:
        registry.set_attention(rec, None)
        rec["state"] = "running"
        rec.pop("exit_reason", None)
        rec.pop("continuations", None)

    alias = (who.record or {}).get("alias") if who.worker else None
    rec = h.touch_session(change, info, alias=alias if isinstance(alias, str) and alias else None)
    ensure_marker(h.layout)  # the runtime's own project: an override may name it from now on
    if rec is not None:
        _register_agent(h, rec["id"], proc)
    max_age = float(s["running_stale_hours"]) * 3600
    try:
        healed = registry.heal_stale(h.layout, max_age, skip=rec["id"] if rec else None)
        if healed:
            h.step(
                "sessions_healed",
                sessions=healed,
                reason=f"running with no event for over {s['running_stale_hours']:g} h",
            )
    except CocoplusError as exc:
        h.log(f"stale sessions not healed: {exc}")
    _heal_status(h, max_age)
    if not killswitch.stop_present(h.layout):
        from cocoplus.session import status  # deferred: only a session start sets the run state

        try:
            status.set_state(h.layout, "running", f"session {rec['alias'] if rec else h.session_id} started")
        except CocoplusError as exc:
            h.log(f"status not updated: {exc}")
    h.step("session_start", alias=rec["alias"] if rec else None, source=info["source"])
    if rec is not None:
        _export_session(h, rec["id"])
    from cocoplus.session import handoff  # deferred: only a session start reads the handoff

    text = handoff.context(h.layout, rec, worktree=bool(h.environ.get("COCOPLUS_WORKTREE")))
    return h.adapter.add_context(h.event_name, text), 0


def _runtime_process(h: Hook) -> dict[str, Any]:
    """The runtime's process, its program as absolute paths, and the seal over what a resume would run (`core.seal`)."""
    from cocoplus.core import seal  # deferred: only a session start looks at the runtime's process and seals it
    from cocoplus.session import procinfo  # deferred: as above

    proc = procinfo.runtime_process()
    proc["program"] = procinfo.program_of(proc.get("argv"), proc.get("pid"), h.environ.get("PATH"))
    sid = h.session_id
    if sid is not None:
        fields = seal.session_fields(
            registry.cs_id_for(sid), h.runtime, sid, h.layout.project, proc["program"], proc.get("argv")
        )
        proc["seal"] = seal.sealed(fields, h.log)
    return proc


def _register_agent(h: Hook, cs_id: str, proc: dict[str, Any]) -> None:
    """Record the runtime's process in this user's registry of agent processes (session/agents.py), so that a
    `cocoplus` command it runs, with whatever environment, acts as a worker in every project.  Only a process
    whose command line runs this runtime's CLI (a hook run by hand records whatever ran it)."""
    from cocoplus.session import agents  # deferred: only a session start records its runtime's process

    if not agents.runs_runtime(proc.get("argv"), h.runtime):
        return
    try:
        agents.register(agents.SESSION, h.layout.root, cs_id, proc, runtime=h.runtime, keep=True)
    except CocoplusError as exc:
        h.log(f"agent process not recorded in this user's registry: {exc}")


def _export_session(h: Hook, cs_id: str) -> None:
    """Tell the runtime's shell which session this is, so worker tools find it (Claude Code's CLAUDE_ENV_FILE)."""
    name = h.adapter.ENV_FILE
    path = h.environ.get(name) if name else None
    if not path:
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, f"export COCOPLUS_SESSION={cs_id}\n".encode())
        finally:
            os.close(fd)
    except OSError as exc:
        h.log(f"could not write {name}: {exc}")


def _heal_status(h: Hook, max_age: float) -> None:
    from cocoplus.session import status  # deferred: only a session start heals the run state

    try:
        cur = status.read_status(h.layout)
    except CocoplusError as exc:
        h.log(f"status.json unreadable: {exc}")
        return
    if not cur or cur.get("state") != "running":
        return
    at = clock.parse_iso(cur.get("updated_at"))
    if at is None or clock.parse_iso(clock.iso()) - at < max_age:  # type: ignore[operator]
        return
    reason = f"healed: `running` since {cur.get('updated_at')} with no update for over {max_age / 3600:g} h"
    try:
        status.set_state(h.layout, "exited", reason)
        h.step("status_healed", previous="running", state="exited", reason=reason)
    except CocoplusError as exc:
        h.log(f"status not healed: {exc}")
