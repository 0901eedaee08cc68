"""Which records of cocoplus' logs are worth telling the human about.

Three logs, each read from a saved byte offset (see outbox.py):

* `supervision/signals.jsonl`: a worker asks the human (`ask_human`, or its
  attention becoming `awaiting_decision`), or waits for authorization
  (attention `awaiting_authorization`);
* `session/steps.jsonl`: the stall watchdog (`stall_detected`), the cost
  budget reaching reserve or exhausted (`budget_state_changed`), the
  iteration cap (`iteration_cap`) or the loop guard (`loop_guard_stop`)
  stopping an agent, supervision finishing (`supervision_finished`);
* `supervision/rounds.jsonl`: a round that finished `failed`.

Each becomes an event: `{"kind", "session", "alias", "ts", ...details}`
with `kind` one of `vocab.NOTIFY_EVENTS`.
"""

from __future__ import annotations

from typing import Any

from cocoplus.core.paths import Layout

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
        return _event("awaiting_authorization", rec, detail=rec.get("detail") or rec.get("message"))
    return None


def from_step(rec: dict[str, Any]) -> dict[str, Any] | None:
    name = rec.get("event")
    if name == "stall_detected":
        return _event("stalled", rec, attention=rec.get("attention"), seconds=rec.get("seconds"))
    if name == "budget_state_changed" and rec.get("to") in ("reserve", "exhausted"):
        return _event("budget_" + str(rec["to"]), rec, spent=rec.get("spent"), limit=rec.get("limit"))
    if name == "iteration_cap":
        return _event("iteration_cap", rec, consumed=rec.get("consumed"), cap=rec.get("cap"))
    if name == "loop_guard_stop":
        return _event("loop_guard", rec, tool=rec.get("tool"), repeats=rec.get("repeats"))
    if name == "supervision_finished":
        return _event("supervision_finished", rec, summary=rec.get("summary"), reason=rec.get("reason"))
    return None


def from_round(rec: dict[str, Any]) -> dict[str, Any] | None:
    if rec.get("event") == "round_finished" and rec.get("outcome") == "failed":
        return _event("round_failed", rec, number=rec.get("number"), task=rec.get("task"))
    return None


READERS = {"signals": from_signal, "steps": from_step, "rounds": from_round}


def to_event(source: str, rec: dict[str, Any]) -> dict[str, Any] | None:
    """The event a log record stands for, or None for the many that are nobody's business."""
    return READERS[source](rec)
