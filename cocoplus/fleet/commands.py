"""Fleet commands: their shape, what each does on the machine it reaches, and the record that makes it apply once.

A command is one JSON message on `cocoplus.F.cmd.M.P`:

    {"v": 1, "id": "fc_....1", "batch": "fc_...", "type": "stop", "machine": "m1", "project": "web",
     "session": null, "args": {"reason": "..."}, "operator": "alice", "from": "m2", "sent_at": "..."}

The relay turns it into the same local call the CLI makes (`TYPES`: one
entry per command type, mapping it to one function of `cocoplus.ops`), so
a fleet stop is exactly a `session stop` on that machine: AGENT_STOP under
the kill-switch lock.  With a session (`machine/project/alias`), stop,
resume and steer are `session stop|resume|steer --session` there (that
session only), and `dispatch` (which always names a session) is
`cocoplus dispatch` there: its answer names the route taken (held, steer,
resume, queued), and the target records it as every dispatch is recorded
(supervision/rounds.jsonl) besides commands.jsonl.

Applying once: before a command's local call the relay appends
`{"id", "phase": "applying"}` to `.cocoplus/fleet/commands.jsonl`, and
after it `{"id", "phase": "applied", "ok", "result" | "error"}`.  A command
delivered again (the relay or the server restarted before the message was
acknowledged) is answered from that record, not applied again.  One found
`applying` (the relay died during the local call) is applied again only if
doing so twice is harmless (`stop`); otherwise it is answered with a
failure saying it may or may not have taken effect.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Any

from cocoplus.core import clock, fsio
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout, is_valid_id
from cocoplus.core.records import SCHEMA_VERSION
from cocoplus.fleet import naming

VERSION = 1
MAX_TEXT = 64 * 1024
RECENT = 20


class Rejected(Exception):
    """A command this relay will not apply; the message says why (it is acknowledged with it)."""


def new_batch_id() -> str:
    """An id for one operator action; each target's message is `<batch>.<n>`."""
    return f"fc_{int(time.time() * 1000):x}{secrets.token_hex(4)}"


def operator_label(cmd: dict[str, Any]) -> str:
    """Who a command came from, as written into AGENT_STOP and steps.jsonl: `alice on m2 (fleet)`."""
    return f"{cmd.get('operator') or 'unknown'} on {cmd.get('from') or 'an unknown machine'} (fleet)"


# -- what each type does here ------------------------------------------------------------


def _session(cmd: dict[str, Any]) -> str | None:
    session = cmd.get("session")
    return session if isinstance(session, str) and session else None


def _stop(layout: Layout, cmd: dict[str, Any]) -> dict[str, Any]:
    from cocoplus.ops import session as ops_session  # deferred: only the relay applies commands; senders just name them

    reason = str(cmd["args"].get("reason") or "stopped from the fleet")
    session = _session(cmd)
    out = ops_session.stop(layout, reason=reason, operator=operator_label(cmd), session=session)
    if session is not None:  # that session's tools only, as `session stop --session`
        who = out.get("alias") or out.get("session")
        return {
            "stopped": bool(out.get("stopped")),
            "session": out.get("session"),
            "alias": out.get("alias"),
            "message": f"{who} stopped: its tools are blocked, other sessions carry on",
            "reason": reason,
            "project_stopped": bool(out.get("project_stopped")),
            "problems": list(out.get("problems") or []),
        }
    stop = out.get("stop") or {}
    return {
        "kill_switch": True,
        "kept_existing": bool(out.get("kept_existing")),
        "operator": stop.get("operator"),
        "reason": stop.get("reason"),
        "problems": list(out.get("problems") or []),
    }


def _resume(layout: Layout, cmd: dict[str, Any]) -> dict[str, Any]:
    from cocoplus.ops import session as ops_session  # deferred: as in _stop

    session = _session(cmd)
    out = ops_session.resume(layout, operator=operator_label(cmd), session=session)
    if session is not None:
        return {
            "resumed": bool(out.get("resumed")),
            "session": out.get("session"),
            "alias": out.get("alias"),
            "message": out.get("message"),
            "project_stopped": bool(out.get("project_stopped")),
            "problems": list(out.get("problems") or []),
        }
    return {
        "resumed": bool(out.get("resumed")),
        "message": out.get("message"),
        "iteration_budget_exhausted": bool(out.get("iteration_budget_exhausted")),
        "problems": list(out.get("problems") or []),
    }


def _steer(layout: Layout, cmd: dict[str, Any]) -> dict[str, Any]:
    from cocoplus.ops import session as ops_session  # deferred: as in _stop

    session = _session(cmd)
    out = ops_session.steer(layout, str(cmd["args"]["text"]), operator=operator_label(cmd), session=session)
    answer = {"appended": bool(out.get("appended", out.get("route") == "held")), "problems": list(out.get("problems") or [])}
    if session is not None:
        answer.update({k: out.get(k) for k in ("session", "alias", "route", "hold", "message")})
    return answer


def _dispatch(layout: Layout, cmd: dict[str, Any]) -> dict[str, Any]:
    from cocoplus.ops import dispatch as ops_dispatch  # deferred: as in _stop

    session = _session(cmd)
    if session is None:
        raise Rejected("dispatch needs one session: target machine/project/alias")
    return _dispatch_answer(ops_dispatch.dispatch(layout, session, str(cmd["args"]["instruction"]), by=operator_label(cmd)))


def _dispatch_answer(out: dict[str, Any]) -> dict[str, Any]:
    """What a dispatch (or an answer, which is delivered like one) sends back: the route taken and why."""
    keep = ("session", "alias", "runtime", "route", "why", "hold", "note", "message")
    answer = {k: out.get(k) for k in keep}
    resumed = out.get("resume") or {}
    answer["resume"] = {k: resumed.get(k) for k in ("pid", "log")} if resumed else None
    answer["problems"] = list(out.get("problems") or [])
    return answer


def _answer(layout: Layout, cmd: dict[str, Any]) -> dict[str, Any]:
    from cocoplus.ops import dispatch as ops_dispatch  # deferred: as in _stop

    session = _session(cmd)
    if session is None:
        raise Rejected("answer needs one session: target machine/project/alias")
    out = ops_dispatch.answer(layout, session, str(cmd["args"]["text"]), by=operator_label(cmd))
    answer = _dispatch_answer(out)
    answer["question_id"] = out.get("question_id")
    return answer


class Spec:
    __slots__ = ("apply", "reapply_safe", "args")

    def __init__(self, apply: Callable[[Layout, dict[str, Any]], dict[str, Any]], reapply_safe: bool, args: dict[str, bool]) -> None:
        """`args`: argument name -> required."""
        self.apply = apply
        self.reapply_safe = reapply_safe
        self.args = args


TYPES: dict[str, Spec] = {
    "stop": Spec(_stop, reapply_safe=True, args={"reason": False}),
    "resume": Spec(_resume, reapply_safe=False, args={}),
    "steer": Spec(_steer, reapply_safe=False, args={"text": True}),
    "dispatch": Spec(_dispatch, reapply_safe=False, args={"instruction": True}),
    "answer": Spec(_answer, reapply_safe=False, args={"text": True}),
}


# -- checking a message ------------------------------------------------------------------------


def make(batch: str, n: int, type_: str, target: naming.Target, args: dict[str, Any], operator: str, sender: str) -> dict[str, Any]:
    """The message for one target of one operator action."""
    return {
        "v": VERSION,
        "id": f"{batch}.{n}",
        "batch": batch,
        "type": type_,
        "machine": target.machine,
        "project": target.project,
        "session": target.session,
        "args": args,
        "operator": operator,
        "from": sender,
        "sent_at": clock.iso(),
    }


def check(doc: Any, machine: str, project: str) -> dict[str, Any]:
    """A received command, checked; Rejected naming what is wrong."""
    if not isinstance(doc, dict):
        raise Rejected("not a JSON object")
    cid = doc.get("id")
    if not isinstance(cid, str) or not is_valid_id(cid):
        raise Rejected("no valid id")
    if doc.get("v") != VERSION:
        raise Rejected(f"command version {doc.get('v')!r}; this relay understands {VERSION}")
    spec = TYPES.get(doc.get("type"))  # type: ignore[arg-type]
    if spec is None:
        raise Rejected(f"unknown command type {doc.get('type')!r} (this relay applies {', '.join(TYPES)})")
    if doc.get("machine") != machine or doc.get("project") != project:
        raise Rejected(f"addressed to {doc.get('machine')}/{doc.get('project')}, not {machine}/{project}")
    session = doc.get("session")
    if session is not None and not (isinstance(session, str) and is_valid_id(session)):
        raise Rejected("the session is not a valid alias or id")
    args = doc.get("args")
    if not isinstance(args, dict):
        raise Rejected("args is not an object")
    for name, value in args.items():
        if name not in spec.args:
            raise Rejected(f"unknown argument {name!r} for {doc['type']}")
        if not isinstance(value, str) or len(value.encode("utf-8")) > MAX_TEXT:
            raise Rejected(f"argument {name!r} must be text of at most {MAX_TEXT // 1024} KiB")
    for name, required in spec.args.items():
        if required and not str(args.get(name) or "").strip():
            raise Rejected(f"{doc['type']} needs {name!r}")
    for name in ("operator", "from"):
        if not isinstance(doc.get(name), str) or len(doc[name]) > 200:
            raise Rejected(f"{name!r} missing or too long")
    return doc


# -- the record of what was applied -------------------------------------------------------------


class Applied:
    """`.cocoplus/fleet/commands.jsonl`, read once by the relay (the only writer) and kept in memory."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.by_id: dict[str, dict[str, Any]] = {}
        self.order: list[str] = []
        got = fsio.read_jsonl(layout.fleet_commands)
        for rec in got.records:
            cid = rec.get("id")
            if isinstance(cid, str):
                if cid not in self.by_id:
                    self.order.append(cid)
                self.by_id[cid] = {**self.by_id.get(cid, {}), **rec}
        self.problems = got.problems

    def get(self, cid: str) -> dict[str, Any] | None:
        return self.by_id.get(cid)

    def _append(self, rec: dict[str, Any]) -> None:
        fsio.ensure_dir(self.layout.fleet_dir)
        fsio.append_jsonl(self.layout.fleet_commands, rec, self.layout.lock("fleet-commands"))
        cid = rec["id"]
        if cid not in self.by_id:
            self.order.append(cid)
        self.by_id[cid] = {**self.by_id.get(cid, {}), **rec}

    def begin(self, cmd: dict[str, Any]) -> None:
        self._append(
            {
                "schema_version": SCHEMA_VERSION,
                "ts": clock.iso(),
                "id": cmd["id"],
                "phase": "applying",
                "type": cmd["type"],
                "session": cmd.get("session"),
                "operator": cmd.get("operator"),
                "from": cmd.get("from"),
                "sent_at": cmd.get("sent_at"),
            }
        )

    def done(self, cmd: dict[str, Any], answer: dict[str, Any]) -> None:
        self._append({"schema_version": SCHEMA_VERSION, "ts": clock.iso(), "id": cmd["id"], "phase": "applied", **answer})

    def recent(self, n: int = RECENT) -> list[dict[str, Any]]:
        out = []
        for cid in self.order[-n:][::-1]:
            rec = self.by_id[cid]
            out.append({k: rec.get(k) for k in ("id", "type", "session", "operator", "from", "sent_at", "phase", "ok", "error")} | {"applied_at": rec.get("ts")})
        return out


def apply(layout: Layout, applied: Applied, cmd: dict[str, Any]) -> dict[str, Any]:
    """Apply one checked command here, once; the answer to acknowledge it with.

    `{"ok", "result" | "error", "duplicate"}`: `duplicate` when the record
    already held this command (nothing was done again).
    """
    spec = TYPES[cmd["type"]]
    seen = applied.get(cmd["id"])
    if seen is not None and seen.get("phase") == "applied":
        return {"ok": seen.get("ok"), "result": seen.get("result"), "error": seen.get("error"), "duplicate": True}
    if seen is not None and not spec.reapply_safe:
        answer = {
            "ok": False,
            "error": (
                "the relay stopped while applying this command; it was not applied again, "
                "so it may or may not have taken effect: check `cocoplus session status` there"
            ),
        }
        applied.done(cmd, answer)
        return {**answer, "duplicate": False}
    applied.begin(cmd)
    try:
        answer = {"ok": True, "result": spec.apply(layout, cmd)}
    except Rejected as exc:
        answer = {"ok": False, "error": str(exc)}
    except CocoplusError as exc:
        answer = {"ok": False, "error": exc.message}
    except Exception as exc:  # noqa: BLE001 - every command gets an answer; the relay logs the rest
        answer = {"ok": False, "error": f"internal error: {type(exc).__name__}: {exc}"}
    applied.done(cmd, answer)
    return {**answer, "duplicate": False}
