"""What a fleet command does on the machine it reaches, once.

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
`{"id", "seq", "phase": "applying"}` to `.cocoplus/fleet/commands.jsonl`,
and after it `{"id", "phase": "applied", "ok", "result" | "error"}`.  The
same stream message delivered again (the relay or the server restarted
before it was acknowledged) is answered from that record, not applied
again; the same id in another message is a replay, refused.  One found
`applying` (the relay died during the local call) is applied again only if
doing so twice is harmless (`stop`); otherwise it is answered with a
failure saying it may or may not have taken effect.  Ids are remembered for
the max age and an hour more (commands older are refused anyway); older
records are dropped from the file when the relay starts and every hour.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from cocoplus.core import clock, fsio, jsonfast, jsonl
from cocoplus.core.errors import CocoplusError
from cocoplus.core.lock import DEFAULT_TIMEOUT, Lock
from cocoplus.core.paths import Layout
from cocoplus.core.records import SCHEMA_VERSION
from cocoplus.fleet.commands import TYPES, Rejected, operator_label, stop_id_of
from cocoplus.ops import authority
from cocoplus.ops import dispatch as ops_dispatch
from cocoplus.ops import session as ops_session

RECENT = 20
REMEMBER_SLACK_S = 3600.0  # ids are remembered this long past the max age: the machines' clocks differ
PRUNE_EVERY_S = 3600.0


def principal(cmd: dict[str, Any]) -> Any:
    """The principal a received command acts as: `fleet:<sender>`, with the authority there of who made it (its
    operator, or its main brain)."""
    return authority.fleet(str(cmd["sender"]), cmd.get("acting"))


# -- what each type does here ------------------------------------------------------------


def _session(cmd: dict[str, Any]) -> str | None:
    session = cmd.get("session")
    return session if isinstance(session, str) and session else None


def _stop(layout: Layout, cmd: dict[str, Any]) -> dict[str, Any]:
    reason = str(cmd["args"].get("reason") or "stopped from the fleet")
    session = _session(cmd)
    # The stop's id is the command's (its sender can name it at once), and a stop already there is kept: a resume
    # of this stop never lifts one someone else made.
    own = stop_id_of(str(cmd["id"]))
    if session is not None:  # that session's tools only, as `session stop --session`
        out = ops_session.stop_session(
            layout, session, reason, operator=operator_label(cmd), principal=principal(cmd), stop_id=own,
            keep_existing=True,
        )  # fmt: skip
        who = out.get("alias") or out.get("session")
        kept = bool(out.get("kept_existing"))
        there = out.get("stop") or {}
        return {
            "stopped": bool(out.get("stopped")),
            "session": out.get("session"),
            "alias": out.get("alias"),
            "stop_id": there.get("id"),
            "kept_existing": kept,
            "message": (
                f"{who} was stopped already (by {there.get('operator') or 'someone'}): that stop is kept"
                if kept
                else f"{who} stopped: its tools are blocked, other sessions carry on"
            ),
            "reason": reason,
            "project_stopped": bool(out.get("project_stopped")),
            "problems": list(out.get("problems") or []),
        }
    out = ops_session.stop(
        layout, reason=reason, operator=operator_label(cmd), principal=principal(cmd), stop_id=own, keep_existing=True
    )
    stop = out.get("stop") or {}
    return {
        "kill_switch": True,
        "stop_id": stop.get("id"),
        "kept_existing": bool(out.get("kept_existing")),
        "operator": stop.get("operator"),
        "reason": stop.get("reason"),
        "problems": list(out.get("problems") or []),
    }


def _resume(layout: Layout, cmd: dict[str, Any]) -> dict[str, Any]:
    session = _session(cmd)
    stop_id = str(cmd["args"]["stop_id"])
    if session is not None:
        out = ops_session.resume_session(
            layout, session, operator_label(cmd), principal=principal(cmd), stop_id=stop_id
        )
    else:
        out = ops_session.resume(layout, operator=operator_label(cmd), principal=principal(cmd), stop_id=stop_id)
    kept = out.get("kept") or {}
    answer = {
        "resumed": bool(out.get("resumed")),
        "stop_id": stop_id,
        "kept": {k: kept.get(k) for k in ("id", "principal", "operator", "reason", "created_at")} if kept else None,
        "message": out.get("message"),
        "problems": list(out.get("problems") or []),
    }
    if session is not None:
        answer.update(
            session=out.get("session"), alias=out.get("alias"), project_stopped=bool(out.get("project_stopped"))
        )
    else:
        answer["iteration_budget_exhausted"] = bool(out.get("iteration_budget_exhausted"))
    return answer


def _steer(layout: Layout, cmd: dict[str, Any]) -> dict[str, Any]:
    session = _session(cmd)
    text, by, who = str(cmd["args"]["text"]), operator_label(cmd), principal(cmd)
    if session is not None:
        out = ops_session.steer_session(layout, session, text, operator=by, principal=who)
    else:
        out = ops_session.steer(layout, text, operator=by, principal=who)
    answer = {
        "appended": bool(out.get("appended", out.get("route") == "held")),
        "problems": list(out.get("problems") or []),
    }
    if session is not None:
        answer.update({k: out.get(k) for k in ("session", "alias", "route", "hold", "message")})
    return answer


def _dispatch(layout: Layout, cmd: dict[str, Any]) -> dict[str, Any]:
    session = _session(cmd)
    if session is None:
        raise Rejected("dispatch needs one session: target machine/project/alias")
    out = ops_dispatch.dispatch(
        layout, session, str(cmd["args"]["instruction"]), by=operator_label(cmd), principal=principal(cmd)
    )
    return _dispatch_answer(out)


def _dispatch_answer(out: dict[str, Any]) -> dict[str, Any]:
    """What a dispatch (or an answer, which is delivered like one) sends back: the route taken and why."""
    keep = ("session", "alias", "runtime", "route", "why", "hold", "note", "message")
    answer = {k: out.get(k) for k in keep}
    resumed = out.get("resume") or {}
    answer["resume"] = {k: resumed.get(k) for k in ("pid", "log")} if resumed else None
    answer["problems"] = list(out.get("problems") or [])
    return answer


def _answer(layout: Layout, cmd: dict[str, Any]) -> dict[str, Any]:
    session = _session(cmd)
    if session is None:
        raise Rejected("answer needs one session: target machine/project/alias")
    out = ops_dispatch.answer(
        layout, session, str(cmd["args"]["text"]), by=operator_label(cmd), principal=principal(cmd)
    )
    answer = _dispatch_answer(out)
    answer["question_id"] = out.get("question_id")
    return answer


# One function per command type (the types and their arguments are the wire format's: fleet/commands.py).
APPLY: dict[str, Callable[[Layout, dict[str, Any]], dict[str, Any]]] = {
    "stop": _stop,
    "resume": _resume,
    "steer": _steer,
    "dispatch": _dispatch,
    "answer": _answer,
}


# -- the record of what was applied -------------------------------------------------------------


class Applied:
    """`.cocoplus/fleet/commands.jsonl`, read once by the relay (the only writer) and kept in memory.

    With `window_s` (the max command age and REMEMBER_SLACK_S), ids older than the window are forgotten,
    in memory and in the file (`prune`).
    """

    def __init__(self, layout: Layout, window_s: float | None = None) -> None:
        self.layout = layout
        self.window_s = window_s
        self.pruned_at = 0.0
        self.by_id: dict[str, dict[str, Any]] = {}
        self.order: list[str] = []
        got = jsonl.read_jsonl(layout.fleet_commands)
        for rec in got.records:
            cid = rec.get("id")
            if isinstance(cid, str):
                if cid not in self.by_id:
                    self.order.append(cid)
                self.by_id[cid] = {**self.by_id.get(cid, {}), **rec}
        self.problems = got.problems
        self.prune()

    def prune(self, now: float | None = None) -> int:
        """Forget the ids last recorded before the window (and drop their lines from the file); how many."""
        now = time.time() if now is None else now
        self.pruned_at = now
        if self.window_s is None:
            return 0
        cutoff = now - self.window_s
        old = {cid for cid in self.order if (clock.parse_iso(self.by_id[cid].get("ts")) or now) < cutoff}
        if not old:
            return 0
        with Lock(self.layout.lock("fleet-commands"), DEFAULT_TIMEOUT):
            got = jsonl.read_jsonl(self.layout.fleet_commands)
            if not got.problems:  # a file with a damaged line is left as it is, for the operator to see
                kept = [r for r in got.records if r.get("id") not in old]
                data = "".join(jsonfast.dumps(r, compact=True) + "\n" for r in kept)
                fsio.atomic_write_bytes(self.layout.fleet_commands, data.encode("utf-8"))
        for cid in old:
            del self.by_id[cid]
        self.order = [cid for cid in self.order if cid not in old]
        return len(old)

    def prune_now_and_then(self) -> None:
        if time.time() - self.pruned_at >= PRUNE_EVERY_S:
            self.prune()

    def get(self, cid: str) -> dict[str, Any] | None:
        return self.by_id.get(cid)

    def _append(self, rec: dict[str, Any]) -> None:
        fsio.ensure_dir(self.layout.fleet_dir)
        jsonl.append_jsonl(self.layout.fleet_commands, rec, self.layout.lock("fleet-commands"))
        cid = rec["id"]
        if cid not in self.by_id:
            self.order.append(cid)
        self.by_id[cid] = {**self.by_id.get(cid, {}), **rec}

    def begin(self, cmd: dict[str, Any], seq: int | None = None) -> None:
        self._append(
            {
                "schema_version": SCHEMA_VERSION,
                "ts": clock.iso(),
                "id": cmd["id"],
                "seq": seq,
                "phase": "applying",
                "type": cmd["type"],
                "session": cmd.get("session"),
                "operator": cmd.get("operator"),
                "from": cmd.get("sender") or cmd.get("from"),
                "principal": f"fleet:{cmd['sender']}" if cmd.get("sender") else None,
                "sent_at": cmd.get("sent_at"),
            }
        )

    def done(self, cmd: dict[str, Any], answer: dict[str, Any]) -> None:
        self._append(
            {"schema_version": SCHEMA_VERSION, "ts": clock.iso(), "id": cmd["id"], "phase": "applied", **answer}
        )

    def recent(self, n: int = RECENT) -> list[dict[str, Any]]:
        out = []
        for cid in self.order[-n:][::-1]:
            rec = self.by_id[cid]
            keep = ("id", "type", "session", "operator", "from", "principal", "sent_at", "phase", "ok", "error")
            out.append({k: rec.get(k) for k in keep} | {"applied_at": rec.get("ts")})
        return out


def apply(layout: Layout, applied: Applied, cmd: dict[str, Any], seq: int | None = None) -> dict[str, Any]:
    """Apply one checked command here, once; the answer to acknowledge it with.

    `{"ok", "result" | "error", "duplicate"}`: `duplicate` when the record
    already held this command from the same stream message `seq` (nothing
    was done again).  The same id from another message is a replay:
    Rejected, nothing done.
    """
    spec = TYPES[cmd["type"]]
    seen = applied.get(cmd["id"])
    if seen is not None and seq is not None and isinstance(seen.get("seq"), int) and seen["seq"] != seq:
        raise Rejected(
            f"command {cmd['id']} was received before (stream message {seen['seq']}, from {seen.get('from')}, "
            f"{seen.get('phase')}); this copy (stream message {seq}) is a replay"
        )
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
    applied.begin(cmd, seq)
    try:
        answer = {"ok": True, "result": APPLY[cmd["type"]](layout, cmd)}
    except Rejected as exc:
        answer = {"ok": False, "error": str(exc)}
    except CocoplusError as exc:
        answer = {"ok": False, "error": exc.message}
    except Exception as exc:  # noqa: BLE001 - every command gets an answer; the relay logs the rest
        answer = {"ok": False, "error": f"internal error: {type(exc).__name__}: {exc}"}
    applied.done(cmd, answer)
    return {**answer, "duplicate": False}
