"""`cocoplus budget status|add-cost` and `cocoplus stage start|end`."""

from __future__ import annotations

from typing import Any

import typer

from cocoplus.cli import output
from cocoplus.cli.commands import JSON_HELP, layout, operator_name


def _values() -> tuple[Any, dict[str, Any]]:
    from cocoplus import config as config_mod

    lay = layout()
    return lay, config_mod.load_for(lay).hook_values()


def budget_report(lay: Any, values: dict[str, Any]) -> dict[str, Any]:
    """Measure (no enforcement: only boundaries change the state) and report."""
    from cocoplus.cost import enforce

    result = enforce.boundary(lay, values, source="status", enforce=False)
    doc = enforce.read_budget(lay) or {}
    s = values["session"]
    limit = float(s["budget_limit"])
    fraction = float(s["budget_reserve_fraction"])
    spent = result["spent"]
    t = result["totals"]
    return {
        "limit": limit,
        "spent": round(spent, 6),
        "remaining": round(max(0.0, limit - spent), 6) if limit > 0 else None,
        "state": doc.get("state", "normal"),
        "state_at_next_boundary": enforce.target_state(spent, limit, fraction, s["budget_enforcement"]),
        "reserve_fraction": fraction,
        "reserve_threshold": round(limit * (1 - fraction), 6) if limit > 0 else None,
        "enforcement": s["budget_enforcement"],
        "last_boundary": doc.get("last_boundary"),
        "stage": enforce.current_stage(lay),
        "by_session": t["by_session"],
        "by_model": t["by_model"],
        "by_category": t["by_category"],
        "unpriced": t["unpriced"],
        "problems": t["problems"],
    }


def register(app: typer.Typer) -> None:
    budget = typer.Typer(help="Cost budget: measured spend, state, and manual costs.", no_args_is_help=True)
    app.add_typer(budget, name="budget")

    @budget.command("status")
    def status(json_out: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
        """Limit, spent, remaining, state, reserve threshold; spend by session, model and category."""
        lay, values = _values()
        rep = budget_report(lay, values)
        if json_out:
            output.emit_json(rep)
            return
        from rich.table import Table
        from rich.text import Text

        con = output.out()
        if rep["limit"] > 0:
            con.print(
                f"cost budget: {rep['state']} - ${rep['spent']:.2f} of ${rep['limit']:.2f} spent, ${rep['remaining']:.2f} left; "
                f"reserve from ${rep['reserve_threshold']:.2f} ({rep['reserve_fraction']:.0%} kept for wrap-up)",
                markup=False,
            )
            if rep["state_at_next_boundary"] != rep["state"]:
                con.print(f"at the next stage boundary the state becomes {rep['state_at_next_boundary']}", markup=False)
        else:
            con.print(f"cost budget: no limit set (budget_limit = 0); ${rep['spent']:.2f} spent", markup=False)
        for title, rows, key in (("by session", rep["by_session"], "session"), ("by model", rep["by_model"], "model")):
            if rows:
                t = Table(title=title, title_justify="left")
                t.add_column(key)
                t.add_column("USD", justify="right")
                for r in rows:
                    label = r[key] if key != "session" or not r.get("alias") else f"{r['alias']} ({r['session']})"
                    t.add_row(Text(str(label)), f"{r['usd']:.4f}")
                con.print(t)
        con.print("by category: " + ", ".join(f"{k} ${v:.2f}" for k, v in rep["by_category"].items()), markup=False)
        for u in rep["unpriced"]:
            output.note(
                f"cocoplus: unpriced: model {u['model']} ({u['tokens']} tokens in {u['records']} record(s)) has no price; "
                f'add [pricing."{u["model"]}"] to cocoplus.toml'
            )
        for p in rep["problems"]:
            output.note(f"cocoplus: problem: {p}")

    @budget.command("add-cost")
    def add_cost(
        usd: float = typer.Argument(..., help="Amount in USD."),
        category: str = typer.Option("execution", "--category", help="execution, coordination or landing"),
        note: str = typer.Option(None, "--note", help="What it was for."),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """Record spend from elsewhere (an API bill, a CI job)."""
        from cocoplus.cost import spend

        rec = spend.add_cost(layout(), usd, category, note, by=operator_name())
        if json_out:
            output.emit_json(rec)
            return
        output.out().print(f"recorded ${rec['usd']:.2f} ({rec['category']})" + (f": {note}" if note else ""), markup=False)

    stage = typer.Typer(help="Stage boundaries for a workflow engine (cost checks run only here and at turn ends).", no_args_is_help=True)
    app.add_typer(stage, name="stage")

    @stage.command("start")
    def stage_start(
        name: str = typer.Argument(..., help="Stage name."),
        wrap_up: bool = typer.Option(False, "--wrap-up", help="A wrap-up stage: allowed while the budget is in reserve."),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """Start a stage: a boundary. Refused while the cost budget is in reserve or exhausted."""
        from cocoplus.cost import enforce

        lay, values = _values()
        result = enforce.stage_start(lay, name, values, wrap_up=wrap_up)
        if json_out:
            output.emit_json(result)
            return
        output.out().print(f"stage {name} started (cost budget {result['budget']['state']}, ${result['budget']['spent']:.2f} spent)", markup=False)

    @stage.command("end")
    def stage_end(
        name: str = typer.Argument(..., help="Stage name."),
        outcome: str = typer.Option("ok", "--outcome", help="ok or error"),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """End a stage: a boundary, where the cost budget state is applied."""
        from cocoplus.cost import enforce

        lay, values = _values()
        result = enforce.stage_end(lay, name, values, outcome)
        if json_out:
            output.emit_json(result)
            return
        b = result["budget"]
        output.out().print(f"stage {name} ended ({outcome}); cost budget {b['state']}, ${b['spent']:.2f} spent", markup=False)
        if b.get("stopped_now"):
            output.out().print(f"AGENT_STOP created: {b['reason']}", markup=False)
