"""`cocoplus dispatch ID INSTRUCTION` and `cocoplus answer ID TEXT`: one worker session's next instruction."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cocoplus.cli import output
from cocoplus.cli.commands import JsonFlag, layout
from cocoplus.ops import dispatch as ops

SessionArg = Annotated[str, typer.Argument(help="The session: an alias such as cc1, a cs_ id or the runtime's session id; machine/project/alias for one on another machine of the fleet.")]


def render(result: dict[str, Any]) -> None:
    where = f" ({result['fleet']['target']}, through the fleet)" if result.get("fleet") else ""
    output.line((f"{result['route']}{where}: ", "bold"), result["message"])
    if result.get("note"):
        output.line(f"note: {result['note']}")
    q = result.get("question")
    if q:
        output.line(f"answers {q['id']}: ", str(q.get("text") or "")[:200])
    output.problems(result.get("problems") or [], "warning")


def dispatch(
    session: SessionArg,
    instruction: Annotated[str, typer.Argument(help="The next piece of work for that session.")],
    json_out: JsonFlag = False,
) -> None:
    """Give a session its next piece of work by the best route its state allows: release its held turn end,
    steer it mid-turn, resume it headless if it exited, or queue it for its next prompt (the answer says which)."""
    output.show(ops.dispatch(layout(), session, instruction), json_out, render)


def answer(
    session: SessionArg,
    text: Annotated[str, typer.Argument(help="The answer to the session's last ask-human question.")],
    json_out: JsonFlag = False,
) -> None:
    """Answer a worker's ask-human question: it reaches the worker like a dispatch, and the conversation shows it
    against the question."""
    output.show(ops.answer(layout(), session, text), json_out, render)


def register(app: typer.Typer) -> None:
    app.command("dispatch")(dispatch)
    app.command("answer")(answer)
