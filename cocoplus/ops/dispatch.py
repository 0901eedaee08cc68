"""Giving one worker session its next instruction: `cocoplus dispatch|answer`, their REST routes and the
brain MCP tools `dispatch` and `answer_worker`.

The result names the route taken (`held`, `steer`, `resume`, `queued`) and
why; `cocoplus.supervision.dispatch` says what each route does.  Every
call is recorded in supervision/rounds.jsonl.
"""

from __future__ import annotations

from typing import Any

from cocoplus.core.paths import Layout
from cocoplus.ops import authority
from cocoplus.ops import fleet as fleet_ops
from cocoplus.ops.authority import Principal


def dispatch(
    layout: Layout, session: str, instruction: str, by: str | None = None, principal: Principal | None = None
) -> dict[str, Any]:
    """The session's next piece of work, by the best route its state allows (`machine/project/alias`: on that
    machine, through the fleet)."""
    who, name = authority.acting(principal, "dispatch", f"dispatch {session}", layout, by)
    if (target := fleet_ops.session_target(session)) is not None:
        return fleet_ops.on_session(
            layout, "dispatch", target, {"instruction": instruction}, name, authority.acting_as(who)
        )
    from cocoplus.supervision import dispatch as mod  # deferred: the CLI imports every ops module at start

    return mod.dispatch(layout, session, instruction, name, principal=who.word)


def answer(
    layout: Layout,
    session: str,
    text: str,
    by: str | None = None,
    principal: Principal | None = None,
    channel: str | None = None,
) -> dict[str, Any]:
    """Answer the session's last ask-human question; it reaches the worker like a dispatch (`machine/project/alias`:
    on that machine, where the question was asked, through the fleet).  `channel`: the inbox's door it came
    through, recorded with the answer (the inbox shows it)."""
    who, name = authority.acting(principal, "dispatch", f"answer {session}", layout, by)
    if (target := fleet_ops.session_target(session)) is not None:
        return fleet_ops.on_session(layout, "answer", target, {"text": text}, name, authority.acting_as(who))
    from cocoplus.supervision import dispatch as mod  # deferred: the CLI imports every ops module at start

    return mod.answer(layout, session, text, name, principal=who.word, channel=channel)
