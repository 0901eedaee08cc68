"""`cocoplus dispatch ID INSTRUCTION` and `cocoplus answer ID TEXT`: one worker session's next instruction."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cocoplus.cli import output
from cocoplus.cli.commands import JsonFlag, layout
from cocoplus.ops import dispatch as ops

SessionArg = Annotated[
    str,
    typer.Argument(
        help="The session: an alias such as cc1, a cs_ id or the runtime's session id; machine/project/alias for "
        "one on another machine of the fleet."
    ),
]


def render(result: dict[str, Any]) -> None:
    where = f" ({result['fleet']['target']}, through the fleet)" if result.get("fleet") else ""
    output.line((f"{result['route']}{where}: ", "bold"), result["message"])
    if result.get("note"):
        output.line(f"note: {result['note']}")
    failed = result.get("resume_failed")
    if failed:
        output.line(f"resume: {failed['error']}" + (f"; {failed['hint']}" if failed.get("hint") else ""))
    q = result.get("question")
    if q:
        output.line(f"answers {q['id']}: ", str(q.get("text") or "")[:200])
    output.problems(result.get("problems") or [], "warning")


def show(result: dict[str, Any], json_out: bool) -> None:
    """The answer, one outcome: a resume that failed left the instruction queued, which is what the call did (its
    route), so it says why the resume failed beside it (the runtime's words, and where its output is) and exits 0,
    never an error line for the same call."""
    output.show(result, json_out, render)


def dispatch(
    session: SessionArg,
    instruction: Annotated[str, typer.Argument(help="The next piece of work for that session.")],
    json_out: JsonFlag = False,
) -> None:
    """Give a session its next piece of work by the best route its state allows: release its held turn end,
    steer it mid-turn, resume it headless if it exited, or queue it for its next prompt (the answer says which)."""
    show(ops.dispatch(layout(), session, instruction), json_out)


def answer(
    session: SessionArg,
    text: Annotated[str, typer.Argument(help="The answer to the session's last ask-human question.")],
    json_out: JsonFlag = False,
) -> None:
    """Answer a worker's ask-human question: it reaches the worker like a dispatch, and the conversation shows it
    against the question."""
    show(ops.answer(layout(), session, text), json_out)


def register(app: typer.Typer) -> None:
    app.command("dispatch")(dispatch)
    app.command("answer")(answer)
