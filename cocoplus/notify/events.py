"""Which records of cocoplus' logs are worth telling the human about.

Three logs, each read from a saved byte offset (see outbox.py):

* `supervision/signals.jsonl`: a worker asks the human (`ask_human`, or its
  attention becoming `awaiting_decision`), waits for authorization
  (attention `awaiting_authorization`: a permission prompt, or a headless
  worker's permission request, whose id the signal's `request` names), or
  goes `pending` (its turn ended; it waits for the next instruction);
  is paused by its runtime's rate or usage limit (`limited`); two live sessions changed the same file
  (`collision`, from the watcher);
* `session/steps.jsonl`: the stall watchdog (`stall_detected`), the operator
  stopping the project or one session (`stop`, `session_stop` by the
  principal `operator` or `fleet:<machine>`), the cost budget reaching
  reserve or exhausted (`budget_state_changed`) or stopping the agent
  otherwise (`budget_stop`, `budget_unpriced_stop`, a damaged budget state
  that stopped it), the iteration cap (`iteration_cap`) or the loop guard
  (`loop_guard_stop`) stopping an agent, supervision finishing
  (`supervision_finished`) and the summary logged then, or when the last
  running worker ends while supervision is off (`night_summary`), a budget forecast to run out within `[notify]
  forecast_warn_s` (`budget_forecast`, written by the notifier itself:
  runner.py);
* `supervision/rounds.jsonl`: a round that finished `failed`.

Each becomes an event: `{"kind", "session", "alias", "ts", ...details}`
with `kind` one of `vocab.NOTIFY_EVENTS`.
"""

from __future__ import annotations

from typing import Any

from cocoplus.core.paths import Layout
from cocoplus.core.vocab import FLEET_PRINCIPAL_PREFIX

SOURCES = ("signals", "steps", "rounds")


def source_path(layout: Layout, source: str) -> str:
    return {"signals": layout.signals, "steps": layout.steps, "rounds": layout.rounds}[source]


def _event(kind: str, rec: dict[str, Any], **details: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": kind, "session": rec.get("session"), "alias": rec.get("alias"), "ts": rec.get("ts")}
    out.update({k: v for k, v in details.items() if v is not None})
    return out


def from_signal(rec: dict[str, Any]) -> dict[str, Any] | None:
    kind, value = rec.get("kind"), rec.get("value")
    if kind == "ask_human":
        return _event("ask_human", rec, question=rec.get("message"))
    if kind == "attention" and value == "awaiting_decision":
        return _event("ask_human", rec, question=rec.get("message") or rec.get("detail"))
    if kind == "attention" and value == "awaiting_authorization":
        return _event(
            "awaiting_authorization", rec, detail=rec.get("detail") or rec.get("message"), request=rec.get("request")
        )
    if kind == "attention" and value == "pending":
        return _event("pending", rec, detail=rec.get("detail") or rec.get("message"))
    if kind == "collision":
        return _event(
            "collision", rec, path=rec.get("path"), other=rec.get("other_alias") or rec.get("other"),
            other_session=rec.get("other"),
        )  # fmt: skip
    if kind == "limited":  # (not the signal's message: what follows is said when the notification is sent)
        return _event(
            "limited", rec, reason=value, resets_at=rec.get("resets_at"), estimate=rec.get("estimate"),
            clamped=rec.get("clamped"), resume=rec.get("resume"), runtime=rec.get("runtime"),
        )  # fmt: skip
    return None


def operator_principal(principal: object) -> bool:
    """A person: at this machine (`operator`) or at another machine of the fleet (`fleet:<machine>`)."""
    return principal == "operator" or (isinstance(principal, str) and principal.startswith(FLEET_PRINCIPAL_PREFIX))


def from_step(rec: dict[str, Any]) -> dict[str, Any] | None:
    name = rec.get("event")
    if name == "stall_detected":
        return _event("stalled", rec, attention=rec.get("attention"), seconds=rec.get("seconds"))
    if name in ("stop", "session_stop") and operator_principal(rec.get("principal")):
        return _event(
            "operator_stop",
            rec,
            operator=rec.get("operator"),
            principal=rec.get("principal"),
            reason=rec.get("reason"),
            scope="session" if name == "session_stop" else "project",
        )
    if name == "budget_state_changed" and rec.get("to") in ("reserve", "exhausted"):
        return _event("budget_" + str(rec["to"]), rec, spent=rec.get("spent"), limit=rec.get("limit"))
    if name == "budget_stop":
        return _event("budget_stop", rec, spent=rec.get("spent"), limit=rec.get("limit"), why="limit")
    if name == "budget_unpriced_stop":
        return _event("budget_stop", rec, deferred=rec.get("deferred"), why="unpriced")
    if name == "budget_state_damaged" and rec.get("stopped"):
        return _event("budget_stop", rec, path=rec.get("path"), why="damaged")
    if name == "budget_forecast":
        return _event(
            "budget_forecast", rec, budget=rec.get("which"), at=rec.get("at"), in_s=rec.get("in_s"),
            used=rec.get("used"), limit=rec.get("limit"), line=rec.get("line"),
        )  # fmt: skip
    if name == "iteration_cap":
        return _event("iteration_cap", rec, consumed=rec.get("consumed"), cap=rec.get("cap"), scope=rec.get("scope"))
    if name == "loop_guard_stop":
        return _event("loop_guard", rec, tool=rec.get("tool"), repeats=rec.get("repeats"), scope=rec.get("scope"))
    if name == "limit_failover":
        return _event("failover", rec, worker=rec.get("worker"), to=rec.get("to"), reason=rec.get("reason"))
    if name == "limit_hand_back":
        return _event("hand_back", rec, worker=rec.get("worker"), **{"from": rec.get("from"), "to": rec.get("to")})
    if name == "permission_expired":
        return _event("request_expired", rec, request=rec.get("request"), tool=rec.get("tool"),
                      reason=rec.get("reason"))  # fmt: skip
    if name == "supervision_finished":
        return _event("supervision_finished", rec, summary=rec.get("summary"), reason=rec.get("reason"))
    if name == "night_summary":
        return _event(
            "summary", rec, why=rec.get("why"), workers=rec.get("workers"), spent=rec.get("spent"),
            waiting=rec.get("waiting"), lines=rec.get("lines"),
        )  # fmt: skip
    return None


def from_round(rec: dict[str, Any]) -> dict[str, Any] | None:
    if rec.get("event") == "round_finished" and rec.get("outcome") == "failed":
        return _event("round_failed", rec, number=rec.get("number"), task=rec.get("task"))
    return None


READERS = {"signals": from_signal, "steps": from_step, "rounds": from_round}


def to_event(source: str, rec: dict[str, Any]) -> dict[str, Any] | None:
    """The event a log record stands for, or None for the many that are nobody's business."""
    return READERS[source](rec)
