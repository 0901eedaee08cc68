"""Supervision rounds: one at a time, a turn each, and exactly one follow-up.

A round is a master-agent task of kind `supervision` whose prompt says what
changed; its reply lands in the same ledger a human reads.  Single flight
is kept in a file (`supervision/round.json`) so it holds across processes
(`cocoplus supervise` and the watcher) and across restarts: while the
current round's task is queued or running, new triggers are merged into
its `followup` list; when it finishes, that list becomes exactly one
follow-up round.  Every round is appended to `supervision/rounds.jsonl`
when it starts and again when it ends.
"""

from __future__ import annotations

import os
from typing import Any

from cocoplus.chat import api, store, worker
from cocoplus.core import clock, fsio, vocab
from cocoplus.core.errors import CocoplusError
from cocoplus.core.lock import Lock
from cocoplus.core.paths import Layout
from cocoplus.core.records import SCHEMA_VERSION
from cocoplus.supervision import autonomy
from cocoplus.supervision import triggers as trig

CONVERSATION = "master-agent"


def _round_path(layout: Layout) -> str:
    return layout.current_round


def current(layout: Layout) -> dict[str, Any] | None:
    try:
        return fsio.read_json(_round_path(layout))
    except CocoplusError:
        return None


def _log(layout: Layout, record: dict[str, Any]) -> None:
    fsio.append_jsonl(layout.rounds, {"schema_version": SCHEMA_VERSION, "ts": clock.iso(), **record}, layout.lock("rounds"))


def _task_state(layout: Layout, rnd: dict[str, Any]) -> str:
    try:
        return store.read_task(layout, rnd.get("conversation", CONVERSATION), rnd["task"])["state"]
    except CocoplusError:
        return "failed"


def start_round(layout: Layout, triggers: list[dict[str, Any]], source: str = "triggers", *, start_worker: bool = True) -> dict[str, Any]:
    """Start a round now, or fold the triggers into the running round's follow-up."""
    triggers = _dedupe(triggers)
    with Lock(layout.lock("supervision-round"), timeout=30):
        doc = autonomy.read(layout)
        auto = doc.get("autonomous")
        if not auto or not auto.get("enabled"):
            return {"started": False, "why": "supervision is off"}
        rnd = current(layout)
        if rnd is not None:
            worker.recover(layout)
            if _task_state(layout, rnd) in vocab.UNFINISHED_TASK_STATES:
                rnd["followup"] = list(rnd.get("followup") or []) + triggers
                rnd["followup_pending"] = True
                fsio.atomic_write_json(_round_path(layout), rnd)
                return {"started": False, "why": "a round is running; merged into its follow-up", "round": rnd["number"]}
            _close(layout, rnd)
        used, cap = int(auto.get("turns_used", 0)), int(auto.get("max_turns", 0))
        if used >= cap:
            autonomy.finish(layout, f"turn cap reached ({used}/{cap})", reason="max_turns")
            return {"started": False, "why": f"turn cap reached ({used}/{cap}); supervision finished"}
        number = int(doc.get("rounds_total") or 0) + 1

        def consume(d: dict[str, Any]) -> None:
            d["rounds_total"] = number
            a = d["autonomous"]
            a["turns_used"] = int(a.get("turns_used", 0)) + 1
            a["updated_at"] = clock.iso()
            a["last_round_at"] = clock.iso()

        doc = autonomy.update(layout, consume)
        prompt = trig.wake_prompt(layout, doc, triggers, number)
        summary = f"supervision round {number}: " + "; ".join(trig.describe(t) for t in triggers[:10])
        if len(triggers) > 10:
            summary += f"; and {len(triggers) - 10} more"
        sent = api.send(layout, summary, CONVERSATION, kind="supervision", prompt=prompt, role="system", start_worker=start_worker, round=number)
        rnd = {
            "schema_version": SCHEMA_VERSION,
            "number": number,
            "task": sent["task"]["id"],
            "conversation": CONVERSATION,
            "started_at": clock.iso(),
            "source": source,
            "triggers": triggers,
            "followup": [],
            "followup_pending": False,
        }
        fsio.atomic_write_json(_round_path(layout), rnd)
        _log(
            layout,
            {
                "event": "round_started",
                "number": number,
                "source": source,
                "triggers": [{k: t.get(k) for k in ("session", "alias", "kind", "value")} for t in triggers],
                "prompt_summary": summary,
                "task": sent["task"]["id"],
                "turns_used": doc["autonomous"]["turns_used"],
                "max_turns": doc["autonomous"]["max_turns"],
            },
        )
        return {"started": True, "round": number, "task": sent["task"]["id"], "masterReplyState": sent["masterReplyState"]}


def _close(layout: Layout, rnd: dict[str, Any]) -> None:
    outcome = _task_state(layout, rnd)
    _log(layout, {"event": "round_finished", "number": rnd["number"], "task": rnd["task"], "outcome": outcome})
    try:
        os.unlink(_round_path(layout))
    except OSError:
        pass


def poll(layout: Layout, *, start_worker: bool = True) -> dict[str, Any] | None:
    """Close the current round if its task is done; start its single follow-up if triggers came meanwhile."""
    with Lock(layout.lock("supervision-round"), timeout=30):
        rnd = current(layout)
        if rnd is None:
            return None
        if _task_state(layout, rnd) in vocab.UNFINISHED_TASK_STATES:
            return None
        _close(layout, rnd)
        followup = list(rnd.get("followup") or [])
        pending = bool(rnd.get("followup_pending"))
    if pending and followup:
        return start_round(layout, _dedupe(followup), source="follow-up", start_worker=start_worker)
    return {"closed": rnd["number"]}


def _dedupe(triggers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[tuple[Any, ...]] = set()
    out = []
    for t in triggers:
        key = (t.get("session"), t.get("kind"), t.get("value"))
        if key in seen:
            continue
        seen.add(key)
        out.append(t)
    return out


def history(layout: Layout) -> list[dict[str, Any]]:
    return fsio.read_jsonl(layout.rounds).records
