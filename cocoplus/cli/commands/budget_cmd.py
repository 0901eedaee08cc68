"""`cocoplus budget status|add-cost` and `cocoplus stage start|end`."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cocoplus.cli import output
from cocoplus.cli.commands import JsonFlag, layout
from cocoplus.core import inert
from cocoplus.ops import budget as ops

BAR_WIDTH = 20
_EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(value: float, scale: float, width: int = BAR_WIDTH) -> str:
    """`value` of `scale` as a bar of `width` cells (eighths of a cell), then the percentage."""
    share = 0.0 if scale <= 0 else max(0.0, value / scale)
    eighths = round(min(share, 1.0) * width * 8)
    full, part = divmod(eighths, 8)
    text = "█" * full + (_EIGHTHS[part] if part else "")
    return f"{text.ljust(width, '·')} {share:>4.0%}"


def render_status(rep: dict[str, Any]) -> None:
    source = rep.get("limit_from")
    where = "" if not source else (", the default" if source == "defaults" else f" from {source}")
    if rep["limit"] > 0:
        output.line(
            f"cost budget: {rep['state']} - ${rep['spent']:.2f} of ${rep['limit']:.2f} spent, ${rep['remaining']:.2f} "
            f"left (limit ${rep['limit']:.2f}{where}); reserve from ${rep['reserve_threshold']:.2f} "
            f"({rep['reserve_fraction']:.0%} kept for wrap-up)"
        )
        if rep["state_at_next_boundary"] != rep["state"]:
            output.line(f"at the next stage boundary the state becomes {rep['state_at_next_boundary']}")
    else:
        output.line(f"cost budget: no limit set ([session] budget_limit = 0{where}); ${rep['spent']:.2f} spent")
    fc = rep.get("forecast") or {}
    if fc.get("lines"):
        output.line(("forecast at the current rate", "bold"))
        for ln in fc["lines"]:
            output.line("  " + inert.line(ln))
    width = output.terminal_width()
    for title, rows, key in (("by session", rep["by_session"], "session"), ("by model", rep["by_model"], "model")):
        if rows:
            output.line((title, "bold"))
            cells = []
            # Each session's bar: its share of the limit (or, with no limit, of the largest session's spend).
            scale = rep["limit"] if rep["limit"] > 0 else max(r["usd"] for r in rows)
            for r in rows:
                label = r[key] if key != "session" or not r.get("alias") else f"{r['alias']} ({r['session']})"
                cells.append([str(label), f"{r['usd']:.4f}"] + ([bar(r["usd"], scale)] if key == "session" else []))
            columns = [(key, True), ("USD", True)] + (
                [("share of the limit" if rep["limit"] > 0 else "share", False)] if key == "session" else []
            )
            for ln in output.table(columns, cells, width):
                output.line("  " + ln)
    output.line("by category: " + ", ".join(f"{k} ${v:.2f}" for k, v in rep["by_category"].items()))
    for u in rep["unpriced"]:
        output.note(
            f"cocoplus: unpriced: model {u['model']} ({u['tokens']} tokens in {u['records']} record(s)) has no price; "
            f'add [pricing."{u["model"]}"] to cocoplus.toml'
        )
    output.problems(rep["problems"])


def status(json_out: JsonFlag = False) -> None:
    """Limit, spent, remaining, state, reserve threshold; spend by session, model and category."""
    output.show(ops.status(layout()), json_out, render_status)


def render_cost(rec: dict[str, Any]) -> None:
    output.line(f"recorded ${rec['usd']:.2f} ({rec['category']})" + (f": {rec['note']}" if rec.get("note") else ""))


def add_cost(
    usd: Annotated[float, typer.Argument(help="Amount in USD.")],
    category: Annotated[str, typer.Option("--category", help="execution, coordination or landing")] = "execution",
    note: Annotated[str | None, typer.Option("--note", help="What it was for.")] = None,
    json_out: JsonFlag = False,
) -> None:
    """Record spend from elsewhere (an API bill, a CI job)."""
    output.show(ops.add_cost(layout(), usd, category, note), json_out, render_cost)


def stage_start(
    name: Annotated[str, typer.Argument(help="Stage name.")],
    wrap_up: Annotated[
        bool, typer.Option("--wrap-up", help="A wrap-up stage: allowed while the budget is in reserve.")
    ] = False,
    json_out: JsonFlag = False,
) -> None:
    """Start a stage: a boundary. Refused while the cost budget is in reserve or exhausted."""

    def text(result: dict[str, Any]) -> None:
        b = result["budget"]
        output.line(f"stage {name} started (cost budget {b['state']}, ${b['spent']:.2f} spent)")

    output.show(ops.stage_start(layout(), name, wrap_up), json_out, text)


def stage_end(
    name: Annotated[str, typer.Argument(help="Stage name.")],
    outcome: Annotated[str, typer.Option("--outcome", help="ok or error")] = "ok",
    json_out: JsonFlag = False,
) -> None:
    """End a stage: a boundary, where the cost budget state is applied."""

    def text(result: dict[str, Any]) -> None:
        b = result["budget"]
        output.line(f"stage {name} ended ({outcome}); cost budget {b['state']}, ${b['spent']:.2f} spent")
        if b.get("stopped_now"):
            output.line(f"AGENT_STOP created: {b['reason']}")

    output.show(ops.stage_end(layout(), name, outcome), json_out, text)


def register(app: typer.Typer) -> None:
    budget = typer.Typer(help="Cost budget: measured spend, state, and manual costs.", no_args_is_help=True)
    app.add_typer(budget, name="budget")
    budget.command("status")(status)
    budget.command("add-cost")(add_cost)
    stage = typer.Typer(
        help="Stage boundaries for a workflow engine (cost checks run only here and at turn ends).",
        no_args_is_help=True,
    )
    app.add_typer(stage, name="stage")
    stage.command("start")(stage_start)
    stage.command("end")(stage_end)
