"""`cocoplus inbox` and `cocoplus decide ID ACTION`: the decisions waiting for the operator in all their projects."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cocoplus.cli import output
from cocoplus.cli.commands import JsonFlag, optional_layout
from cocoplus.ops import inbox as ops


def render_inbox(result: dict[str, Any]) -> None:
    found = result["decisions"]
    if not found:
        output.line("nothing is waiting for you")
    rows = [
        [d["id"], d["kind"], _project(d), d.get("alias") or d.get("worker") or "-", d["summary"],
         d.get("deadline") or "-"]
        for d in found
    ]  # fmt: skip
    if rows:
        cols = [("ID", True), ("KIND", True), ("PROJECT", True), ("WHO", True), ("WAITS FOR", False),
                ("DEFAULT AT", True)]  # fmt: skip
        for text in output.table(cols, rows, output.terminal_width()):
            output.line(text)
    service = result.get("service") or {}
    if service.get("note"):
        output.problems([service["note"]], label="note")
    output.problems(result.get("problems") or [])


def _project(d: dict[str, Any]) -> str:
    from cocoplus.inbox import decisions  # deferred: only a listing names projects

    return decisions.project_name(d)


def inbox(ctx: typer.Context, json_out: JsonFlag = False) -> None:
    """Everything waiting for you in all your projects: permission requests, questions, stops, paused workers."""
    if ctx.invoked_subcommand is None:
        output.show(ops.inbox(optional_layout()), json_out, render_inbox)


def decide(
    ident: Annotated[str, typer.Argument(help="The decision's id, as `cocoplus inbox` shows it.")],
    action: Annotated[str, typer.Argument(help="One of the actions the decision takes (approve, deny, answer, ...).")],
    text: Annotated[
        str | None, typer.Option("--text", help="The answer to a question, or the reason a denial gives.")
    ] = None,
    json_out: JsonFlag = False,
) -> None:
    """Answer one decision of the inbox: approve, deny, answer, resume, leave."""
    result = ops.decide(ident, action, text=text, channel="cli", layout=optional_layout())
    output.show(result, json_out, lambda r: output.line(r["message"]))


def register(app: typer.Typer) -> None:
    group = typer.Typer(
        help="Everything waiting for you in all your projects: permission requests, questions, stops, paused workers.",
        invoke_without_command=True,
    )
    group.callback()(inbox)
    app.add_typer(group, name="inbox")
    app.command("decide")(decide)
