"""What the main brain and the operator did to workers: `action` records in `supervision/rounds.jsonl`.

Every dispatch, answer, and per-session steer, stop and resume appends one
record, whoever asked (the brain in a round, or a human at any door), and
so does the watcher's failover of a limited worker to another runtime, and
its restart of one whose runtime kept no session to resume:

    {"schema_version": 1, "ts", "event": "action", "round": int | None,
     "action": "dispatch" | "answer_worker" | "steer_session" | "stop_session" | "resume_session" | "failover" |
               "restart",
     "session": "cs_..." | None, "alias": str | None, "by": str,
     "result": {...} | None, "error": str | None}

`round` is the supervision round the action belongs to: the
`COCOPLUS_ROUND` variable that a round's backend runs with; absent (None)
for a human.  The records sit beside the `round_started` and
`round_finished` records in the same file, so a round's actions read in
order with it (`for_round`).
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Mapping
from typing import Any

from cocoplus.core import clock, fsio, jsonl
from cocoplus.core.paths import Layout
from cocoplus.core.records import SCHEMA_VERSION

ACTIONS = ("dispatch", "answer_worker", "steer_session", "stop_session", "resume_session", "failover", "restart")
ROUND_ENV = "COCOPLUS_ROUND"


def current_round(environ: dict[str, str] | None = None) -> int | None:
    """The round this process acts in (`COCOPLUS_ROUND`), or None."""
    raw = (os.environ if environ is None else environ).get(ROUND_ENV)
    try:
        n = int(raw) if raw else None
    except ValueError:
        return None
    return n if n is not None and n > 0 else None


def _operator() -> str:
    name = os.environ.get("COCOPLUS_OPERATOR")
    if name:
        return name
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - getpass raises various errors without a passwd entry
        return "unknown"


def record(
    layout: Layout,
    action: str,
    session: Mapping[str, Any] | None,
    result: dict[str, Any] | None = None,
    error: str | None = None,
    *,
    by: str | None = None,
    principal: str | None = None,
) -> dict[str, Any]:
    """Append one action record (see the module docstring) and return it; `principal` is who acted
    (docs/authority.md), `by` the name shown."""
    if action not in ACTIONS:
        raise ValueError(action)
    rec: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "ts": clock.iso(),
        "event": "action",
        "round": current_round(),
        "action": action,
        "session": session.get("id") if session else None,
        "alias": session.get("alias") if session else None,
        "by": by or _operator(),
        "principal": principal or "operator",
        "result": result,
        "error": error,
    }
    fsio.ensure_dir(layout.supervision_dir)
    jsonl.append_jsonl(layout.rounds, rec, layout.lock("rounds"))
    return rec


def every(layout: Layout) -> list[dict[str, Any]]:
    """Every action record, oldest first."""
    return [r for r in jsonl.read_jsonl(layout.rounds).records if r.get("event") == "action"]


def for_round(layout: Layout, n: int) -> list[dict[str, Any]]:
    """The actions taken in supervision round `n`, oldest first."""
    return [r for r in every(layout) if r.get("round") == n]


def last(layout: Layout, n: int = 20) -> list[dict[str, Any]]:
    """The last `n` actions, oldest first."""
    return every(layout)[-n:] if n > 0 else []
