"""Supervision rounds: one at a time, a turn each, and exactly one follow-up.

A round is a master-agent task of kind `supervision` whose prompt says what
changed; its reply lands in the same ledger a human reads.  Single flight
is kept in a file (`supervision/round.json`) so it holds across processes
(`cocoplus supervise` and the watcher) and across restarts: while the
current round's task is queued or running, new triggers are merged into
its `followup` list; when it finishes, that list becomes exactly one
follow-up round.  Every round is appended to `supervision/rounds.jsonl`
when it starts and again when it ends.

The brain acts during its round (controllers/brain.py); each action is
appended to the same file as `{"event": "action", "round": N, "action",
"session", "alias", "by", "result", "error"}` by whoever carried it out
(the MCP tool or the CLI command, which learn N from `COCOPLUS_ROUND`).
A round's `round_finished` record says how it ended (`outcome`: the
reply task's `succeeded` or `failed`, with `error`) and how many actions
it took (`actions`, 0 when it took none, listed in `took`); the same is
said in the conversation, so `chat log` and the page show it.  When the
round that used the last allowed turn ends, supervision finishes then,
not at the next trigger.
"""

from __future__ import annotations

import os
from typing import Any

from cocoplus.chat import api, store, worker
from cocoplus.core import clock, fsio, jsonl, vocab
from cocoplus.core.errors import CocoplusError
from cocoplus.core.lock import Lock
from cocoplus.core.paths import Layout
from cocoplus.core.records import SCHEMA_VERSION
from cocoplus.supervision import actions as acts
from cocoplus.supervision import autonomy
from cocoplus.supervision import triggers as trig

CONVERSATION = store.DEFAULT_CONVERSATION


def _round_path(layout: Layout) -> str:
    return layout.current_round


def current(layout: Layout) -> dict[str, Any] | None:
    try:
        return fsio.read_json(_round_path(layout))
    except CocoplusError:
        return None


def _log(layout: Layout, record: dict[str, Any]) -> None:
    jsonl.append_jsonl(
        layout.rounds, {"schema_version": SCHEMA_VERSION, "ts": clock.iso(), **record}, layout.lock("rounds")
    )


def _task(layout: Layout, rnd: dict[str, Any]) -> dict[str, Any]:
    try:
        return store.read_task(layout, rnd.get("conversation", CONVERSATION), rnd["task"])
    except CocoplusError as exc:
        return {"state": "failed", "error": f"the round's reply task cannot be read: {exc}"}


def _task_state(layout: Layout, rnd: dict[str, Any]) -> str:
    return str(_task(layout, rnd)["state"])


def actions(layout: Layout, number: int | None = None) -> list[dict[str, Any]]:
    """The action records of round `number` (every one with None), oldest first."""
    return acts.for_round(layout, number) if number is not None else acts.every(layout)


UNDO = {
    "stop_session": "cocoplus session resume --session {who} --yes",
    "resume_session": "cocoplus session stop --session {who}",
}


def describe_action(rec: dict[str, Any]) -> str:
    """One action as a short phrase: `dispatch cc1 (route: held)`, `stop_session cc2 failed: ...`."""
    who = rec.get("alias") or rec.get("session") or ""
    text = f"{rec.get('action')} {who}".strip()
    raw = rec.get("result")
    result: dict[str, Any] = raw if isinstance(raw, dict) else {}
    if result.get("route"):
        text += f" (route: {result['route']})"
    if rec.get("error"):
        text += f" failed: {rec['error']}"
    return text


def action_view(rec: dict[str, Any]) -> dict[str, Any]:
    """An action record as status shows it, with how to undo it where that can be done."""
    keep = ("ts", "round", "action", "session", "alias", "by", "principal", "result", "error")
    out = {k: rec.get(k) for k in keep}
    undo = UNDO.get(str(rec.get("action")))
    who = rec.get("alias") or rec.get("session")
    out["undo"] = undo.format(who=who) if undo and who and not rec.get("error") else None
    out["text"] = describe_action(rec)
    # Who took it, in words: the brain acts in its user's name (`by`), and the principal says it was the brain.
    out["actor"] = "the main brain" if rec.get("principal") == "brain" else str(rec.get("by") or "?")
    return out


def start_round(
    layout: Layout, triggers: list[dict[str, Any]], source: str = "triggers", *, start_worker: bool = True
) -> dict[str, Any]:
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
                return {
                    "started": False,
                    "why": "a round is running; merged into its follow-up",
                    "round": rnd["number"],
                }
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
        sent = api.send(
            layout,
            summary,
            CONVERSATION,
            kind="supervision",
            prompt=prompt,
            role="system",
            start_worker=start_worker,
            round=number,
        )
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
        return {
            "started": True,
            "round": number,
            "task": sent["task"]["id"],
            "masterReplyState": sent["masterReplyState"],
        }


def _close(layout: Layout, rnd: dict[str, Any]) -> None:
    number = int(rnd["number"])
    task = _task(layout, rnd)
    outcome = str(task["state"])
    error = task.get("error") if outcome == "failed" else None
    took = actions(layout, number)
    _log(
        layout,
        {
            "event": "round_finished",
            "number": number,
            "round": number,
            "task": rnd["task"],
            "outcome": outcome,
            "error": error,
            "actions": len(took),
            "took": [describe_action(a) for a in took],
        },
    )
    try:
        os.unlink(_round_path(layout))
    except OSError:
        pass
    _announce(layout, number, outcome, error, took)
    _finish_at_cap(layout)


def result_text(number: int, outcome: str, error: str | None, took: list[str]) -> str:
    """How a round ended, in one line (the conversation's and the status' words)."""
    did = f"{len(took)} action(s): " + "; ".join(took) if took else "no action taken"
    if outcome == "failed":
        return f"supervision round {number} failed: {error or 'no reason recorded'}" + (
            f"; before that, {did}" if took else ""
        )
    return f"supervision round {number} finished: {did}"


def _announce(layout: Layout, number: int, outcome: str, error: str | None, took: list[dict[str, Any]]) -> None:
    text = result_text(number, outcome, error, [describe_action(a) for a in took])
    try:
        store.append_message(
            layout, CONVERSATION, "system", text, kind="round_result", round=number, outcome=outcome, actions=len(took)
        )
    except CocoplusError:
        pass  # rounds.jsonl has it; the conversation is a second place to read it


def _finish_at_cap(layout: Layout) -> None:
    """The round that used the last allowed turn has ended: supervision finishes now."""
    auto = autonomy.read(layout).get("autonomous") or {}
    used, cap = int(auto.get("turns_used", 0)), int(auto.get("max_turns", 0))
    if auto.get("enabled") and used >= cap:
        autonomy.finish(layout, f"turn cap reached ({used}/{cap})", reason="max_turns")


def last_round(layout: Layout) -> dict[str, Any]:
    """For `supervision status`: the round in progress, the last
    finished round (outcome, error, actions), recent actions."""
    records = history(layout)
    finished = next((r for r in reversed(records) if r.get("event") == "round_finished"), None)
    cur = current(layout)

    def actions_of(number: Any) -> list[dict[str, Any]]:
        return [action_view(a) for a in records if a.get("event") == "action" and a.get("round") == number]

    last = None
    if finished is not None:
        number = finished.get("number")
        last = {
            "number": number,
            "finished_at": finished.get("ts"),
            "outcome": finished.get("outcome"),
            "error": finished.get("error"),
            "actions": actions_of(number),
        }
        last["text"] = result_text(
            int(number or 0), str(last["outcome"]), last["error"], [a["text"] for a in last["actions"]]
        )
    in_progress = None
    if cur is not None:
        number = cur.get("number")
        in_progress = {"number": number, "started_at": cur.get("started_at"), "actions": actions_of(number)}
    recent = [action_view(a) for a in records if a.get("event") == "action"][-10:]
    return {"last_round": last, "round_in_progress": in_progress, "recent_actions": recent}


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
        key = (t.get("session"), t.get("worker"), t.get("kind"), t.get("value"))
        if key in seen:
            continue
        seen.add(key)
        out.append(t)
    return out


def history(layout: Layout) -> list[dict[str, Any]]:
    return jsonl.read_jsonl(layout.rounds).records
