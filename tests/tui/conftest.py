"""A project with several sessions, spend, a supervision round and a conversation, at fixed times."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cocoplus.core import clock, fsio
from cocoplus.core.paths import Layout
from cocoplus.core.shapes import SessionRecord
from cocoplus.session import registry

NOW = clock.parse_iso("2026-11-29T12:00:00.000Z") or 0.0


def at(minutes_ago: float) -> str:
    return clock.iso(NOW - minutes_ago * 60)


SESSIONS = [
    # runtime, runtime id, state, attention, last event, minutes ago, tool calls, spend points (minutes ago, usd)
    ("claude", "s-one", "running", None, "PostToolUse", 0.2, 42, [(50, 0.4), (30, 1.1), (5, 2.25)]),
    ("claude", "s-two", "running", "awaiting_decision", "ask_human", 3, 17, [(40, 0.2), (10, 0.6)]),
    ("codex", "x-one", "running", "pending", "Stop", 12, 8, [(20, 0.35)]),
    ("gemini", "g-one", "exited", None, "SessionEnd", 90, 120, [(200, 1.0), (120, 3.5)]),
]


def build(layout: Layout) -> dict[str, SessionRecord]:
    made: dict[str, SessionRecord] = {}
    spend_lines: list[dict[str, Any]] = []
    for runtime, rid, state, attention, last_event, ago, calls, spend in SESSIONS:
        rec, _ = registry.ensure(layout, runtime, rid, event="SessionStart")
        rec.update(
            {
                "state": state,
                "attention": attention,
                "attention_since": at(ago) if attention else None,
                "last_event": last_event,
                "last_event_at": at(ago),
                "updated_at": at(ago),
                "started_at": at(240 - len(made)),
                "tool_calls": calls,
            }
        )
        fsio.atomic_write_json(layout.session_record(rec["id"]), rec)
        made[rec["alias"]] = rec
        for minutes, usd in spend:
            spend_lines.append(
                {
                    "ts": at(minutes),
                    "kind": "usage",
                    "session": rec["id"],
                    "alias": rec["alias"],
                    "usd": usd,
                    "model": "m",
                    "category": "execution",
                }
            )
    spend_lines.sort(key=lambda r: r["ts"])
    with open(layout.spend_log, "w") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in spend_lines)
    fsio.atomic_write_json(
        layout.iteration_budget,
        {
            "schema_version": 1,
            "cap": 200,
            "consumed": 187,
            "warn_at": 160,
            "warned": True,
            "stopped": False,
            "updated_at": at(0.2),
        },
    )
    fsio.atomic_write_json(
        layout.budget_state,
        {
            "schema_version": 1,
            "state": "reserve",
            "limit": 10.0,
            "spent": 9.2,
            "reserve_fraction": 0.1,
            "enforcement": "stage-boundary",
        },
    )
    fsio.atomic_write_json(
        layout.supervision_state,
        {
            "schema_version": 1,
            "autonomous": {"enabled": True, "turns_used": 3, "max_turns": 60, "task_hint": "land the parser PR"},
            "scope": {"mode": "all", "only": None, "excluded": []},
        },
    )
    rounds = [
        {
            "ts": at(9),
            "event": "round_started",
            "number": 3,
            "triggers": [
                {"session": made["cc2"]["id"], "alias": "cc2", "kind": "ask_human", "value": None},
                {"session": made["cx1"]["id"], "alias": "cx1", "kind": "attention", "value": "pending"},
            ],
        },
        {"ts": at(8), "event": "round_finished", "number": 3, "outcome": "succeeded"},
    ]
    with open(layout.rounds, "w") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rounds)
    fsio.ensure_dir(layout.conversation_dir("master-agent"))
    ledger = [
        {
            "ts": at(10),
            "id": "m_q1",
            "role": "worker",
            "session": made["cc2"]["id"],
            "session_alias": "cc2",
            "text": "Should the parser accept tabs in indentation?",
        },
        {"ts": at(9), "role": "system", "text": "supervision round 3: cc2 ask_human; cx1 attention pending"},
        {
            "ts": at(8),
            "role": "assistant",
            "text": "cx1: next, run the parser tests. cc2 waits for your answer about tabs.",
        },
    ]
    with open(layout.ledger("master-agent"), "w") as fh:
        fh.writelines(json.dumps(m) + "\n" for m in ledger)
    return made


@pytest.fixture
def busy(project: Layout) -> Layout:
    build(project)
    return project
