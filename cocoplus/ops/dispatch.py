"""Giving one worker session its next instruction: `cocoplus dispatch|answer`, their REST routes and the
brain MCP tools `dispatch` and `answer_worker`.

The result names the route taken (`held`, `steer`, `resume`, `queued`) and
why; `cocoplus.supervision.dispatch` says what each route does.  Every
call is recorded in supervision/rounds.jsonl.
"""

from __future__ import annotations

from typing import Any

from cocoplus.core.paths import Layout
from cocoplus.ops import fleet as fleet_ops
from cocoplus.ops import operator_name


def dispatch(layout: Layout, session: str, instruction: str, by: str | None = None) -> dict[str, Any]:
    """The session's next piece of work, by the best route its state allows (`machine/project/alias`: on that
    machine, through the fleet)."""
    if (target := fleet_ops.session_target(session)) is not None:
        return fleet_ops.on_session(layout, "dispatch", target, {"instruction": instruction}, by)
    from cocoplus.supervision import dispatch as mod  # deferred: the CLI imports every ops module at start

    return mod.dispatch(layout, session, instruction, by or operator_name())


def answer(layout: Layout, session: str, text: str, by: str | None = None) -> dict[str, Any]:
    """Answer the session's last ask-human question; it reaches the worker like a dispatch (`machine/project/alias`:
    on that machine, where the question was asked, through the fleet)."""
    if (target := fleet_ops.session_target(session)) is not None:
        return fleet_ops.on_session(layout, "answer", target, {"text": text}, by)
    from cocoplus.supervision import dispatch as mod  # deferred: the CLI imports every ops module at start

    return mod.answer(layout, session, text, by or operator_name())
