"""`cocoplus approve ID`, `cocoplus deny ID` and `cocoplus permissions list|log`: headless workers' permission
requests."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cocoplus.cli import output
from cocoplus.cli.commands import JsonFlag, layout, optional_layout
from cocoplus.ops import permissions as ops

RequestArg = Annotated[
    str,
    typer.Argument(
        help="The request's id (p_...), or a session (alias, cs_ id) or worker (w1) with exactly one pending."
    ),
]
AlwaysFlag = Annotated[
    bool,
    typer.Option("--always", help="Also remember the rule for this project (this user's rules, outside the project)."),
]
RuleOpt = Annotated[
    str | None,
    typer.Option(
        "--rule", help="With --always: the rule to remember (default: the request's own, e.g. Bash(pytest -q))."
    ),
]


def render_answer(result: dict[str, Any]) -> None:
    output.line(result["message"])
    if result.get("always"):
        output.line(
            f"always: allow {', '.join(result['always']['allow']) or '-'}; deny "
            f"{', '.join(result['always']['deny']) or '-'}"
        )


def approve(ref: RequestArg, always: AlwaysFlag = False, rule: RuleOpt = None, json_out: JsonFlag = False) -> None:
    """Allow a headless worker's permission request: its tool call goes ahead."""
    output.show(ops.approve(layout(), ref, always=always, rule=rule), json_out, render_answer)


def deny(
    ref: RequestArg,
    reason: Annotated[str | None, typer.Option("--reason", help="What the agent is told.")] = None,
    always: AlwaysFlag = False,
    rule: RuleOpt = None,
    json_out: JsonFlag = False,
) -> None:
    """Deny a headless worker's permission request; the agent is told why."""
    output.show(ops.deny(layout(), ref, reason=reason, always=always, rule=rule), json_out, render_answer)


def render_pending(result: dict[str, Any]) -> None:
    reqs = result["requests"]
    if not reqs:
        output.line("no permission request is waiting")
        return
    rows = [
        [
            r["id"],
            r.get("alias") or r.get("worker") or "-",
            r.get("rule") or r.get("tool") or "-",
            r.get("deadline") or "-",
        ]
        for r in reqs
    ]
    for text in output.table(
        [("ID", True), ("WHO", True), ("ASKS FOR", False), ("DENIED UNLESS ANSWERED BY", True)],
        rows,
        output.terminal_width(),
    ):
        output.line(text)
    for r in reqs:
        if r.get("protected"):
            output.line(
                f"{r['id']} changes what runs: it writes {', '.join(r['protected'])} (only you may allow it, "
                "this once: `cocoplus approve` without --always)"
            )
        if r.get("state") == "gone":
            output.line(f"{r['id']} is gone: its hook ended, so an answer would reach nothing")


def list_pending(json_out: JsonFlag = False) -> None:
    """The permission requests waiting for an answer."""
    output.show(ops.pending(layout()), json_out, render_pending)


def render_log(result: dict[str, Any]) -> None:
    rows = []
    for d in result["decisions"]:
        who = d.get("by") or d.get("principal") or d.get("where") or "-"
        rows.append([d.get("ts") or "-", d.get("alias") or d.get("worker") or "-", d.get("behavior") or "-", who,
                     d.get("rule") or d.get("call") or d.get("input") or d.get("tool") or "-"])  # fmt: skip
    if not rows:
        output.line("no permission decision yet")
        return
    cols = [("WHEN", True), ("WHO", True), ("DECISION", True), ("BY", True), ("RULE OR CALL", False)]
    for text in output.table(cols, rows, output.terminal_width()):
        output.line(text)


def show_log(json_out: JsonFlag = False) -> None:
    """Every permission decision: who decided, what, which rule, when."""
    output.show(ops.log(layout()), json_out, render_log)


def render_check(result: dict[str, Any]) -> None:
    rule = f" by {result['rule']}" if result.get("rule") else ""
    where = f" ({result['where']})" if result.get("where") else ""
    output.line(f"{result['decision']}{rule}{where}: {result['why']}")
    for p in result.get("parts") or []:
        covered = p.get("rule") or "not covered"
        output.line(f"  part {p['part']}: {p['command']}  [{p['via']}]  -> {covered}")
    if result.get("protected"):
        output.line(
            f"  protected: {', '.join(result['protected'])} (only the operator may allow it, one request at a time)"
        )


def check(
    target: Annotated[str, typer.Argument(help="The command (for Bash) or the path (for the file tools) to judge.")],
    allow: Annotated[
        list[str] | None, typer.Option("--allow", help="An allow rule to judge with (repeat it); none: the project's.")
    ] = None,
    deny: Annotated[list[str] | None, typer.Option("--deny", help="A deny rule to judge with (repeat it).")] = None,
    tool: Annotated[
        str, typer.Option("--tool", help="The tool: Bash (a command), Write, Edit, Read, ... (a path).")
    ] = "Bash",
    json_out: JsonFlag = False,
) -> None:
    """What the rules decide for a command or a path, with the engine the hook uses: allow, deny or ask, the rule
    that decided, and why. With no --allow and no --deny, the rules in effect for this project."""
    result = ops.check(optional_layout(), target, tool=tool, allow=allow, deny=deny)
    output.show(result, json_out, render_check)


def register(app: typer.Typer) -> None:
    app.command("approve")(approve)
    app.command("deny")(deny)
    group = typer.Typer(
        help="Headless workers' permission requests and the decisions taken on them.", no_args_is_help=True
    )
    group.command("list")(list_pending)
    group.command("log")(show_log)
    group.command("check")(check)
    app.add_typer(group, name="permissions")
