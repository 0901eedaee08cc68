"""`cocoplus session status|progress|steer|stop|resume|queue|check`."""

from __future__ import annotations

import sys
from typing import Any

import typer

from cocoplus.cli import output
from cocoplus.cli.commands import JSON_HELP, layout, operator_name
from cocoplus.core.errors import CocoplusError


def _damaged(part: dict[str, Any]) -> str | None:
    return f"DAMAGED: {part['error']}" if part.get("damaged") else None


def _row(table: Any, *cells: str) -> None:
    """A table row shown as plain text: steers, reasons and predicates may hold `[...]`."""
    from rich.text import Text

    table.add_row(*(Text(c) if isinstance(c, str) else c for c in cells))


def render_status(rep: dict[str, Any]) -> Any:
    from rich.table import Table

    from rich.text import Text

    t = Table(title=Text(f"cocoplus session status: {rep['project']}"), title_justify="left", show_header=False)
    t.add_column("what", style="bold")
    t.add_column("state")

    h = rep["handoff"]
    if _damaged(h):
        _row(t, "handoff", _damaged(h))
    elif not h.get("exists"):
        _row(t, "handoff", f"{h['path']} missing")
    else:
        fresh = "STALE" if h["stale"] else "fresh"
        extra = f"; missing sections: {', '.join(h['missing_sections'])}" if h["missing_sections"] else ""
        _row(t, "handoff", f"{h['path']} updated {h['age']} ago ({fresh}, stale after {h['stale_after_hours']:g} h){extra}")

    p = rep["predicates"]
    if _damaged(p):
        _row(t, "predicates", _damaged(p))
    else:
        lines = [a["text"] for a in p.get("active", [])]
        _row(t, "predicates", "\n".join(lines) if lines else "none")
        for prob in p.get("problems", []):
            _row(t, "", f"bad line: {prob}")

    q = rep["queue"]
    _row(t, "queued work", _damaged(q) or f"{q['pending']} pending" + "".join(f"\n  {i['id']}: {i['request']}" for i in q["items"][:5]))

    ib = rep["iteration_budget"]
    if _damaged(ib):
        _row(t, "iteration budget", _damaged(ib))
    elif not ib.get("exists"):
        _row(t, "iteration budget", "not started")
    else:
        flags = []
        if ib["warned"]:
            flags.append("checkpoint requested")
        if ib["stopped"]:
            flags.append("cap reached")
        _row(t, 
            "iteration budget",
            f"{ib['consumed']}/{ib['cap']} (warn at {ib['warn_at']}, {ib['remaining']} left)" + (f"; {', '.join(flags)}" if flags else ""),
        )

    cb = rep["cost_budget"]
    if _damaged(cb):
        _row(t, "cost budget", _damaged(cb))
    elif not cb.get("exists"):
        _row(t, "cost budget", "not started")
    elif cb["limit"] > 0:
        _row(t, 
            "cost budget",
            f"{cb['state']}: ${cb['spent']:.2f} of ${cb['limit']:.2f} (reserve from ${cb['reserve_at']:.2f}, ${cb['remaining']:.2f} left)",
        )
    else:
        _row(t, "cost budget", f"{cb['state']}: ${cb['spent']:.2f} spent, no limit set")

    for key, label in (("status", "terminal state"), ("pod_state", "pod state")):
        s = rep[key]
        if _damaged(s):
            _row(t, label, _damaged(s))
        elif not s.get("exists"):
            _row(t, label, "unknown (file missing)")
        else:
            _row(t, label, s["state"] + (f" ({s['reason']})" if s.get("reason") else "") + f" since {s['updated_at']}")

    k = rep["kill_switch"]
    if _damaged(k):
        _row(t, "kill switch", _damaged(k))
    elif k["present"]:
        _row(t, 
            "kill switch",
            f"STOPPED by {k.get('operator') or 'unknown'} at {k.get('created_at') or 'unknown time'}: {k.get('reason') or 'no reason given'}",
        )
    else:
        _row(t, "kill switch", "off")

    st = rep["steer"]
    if _damaged(st):
        _row(t, "pending steer", _damaged(st))
    elif st["pending"]:
        text = st["text"].strip()
        _row(t, "pending steer", text if len(text) <= 300 else text[:297] + "...")
    else:
        _row(t, "pending steer", "none" + (f" ({st['in_flight']} being delivered)" if st.get("in_flight") else ""))
    ss = rep.get("sessions")
    if ss is not None:
        if _damaged(ss):
            _row(t, "sessions", _damaged(ss))
        else:
            text = f"{ss['count']} recorded, {ss['active']} active"
            if ss.get("needs_attention"):
                text += f", {ss['needs_attention']} need attention"
            _row(t, "sessions", text + "".join(f"\nDAMAGED: {p}" for p in ss.get("problems", [])))
    sp = rep.get("steps")
    if sp is not None:
        if _damaged(sp):
            _row(t, "session log", _damaged(sp))
        else:
            last = f"; last: {sp['last_event']} at {sp['last_at']}" if sp.get("last_event") else ""
            _row(t, "session log", f"{sp['events']} event(s){last}" + "".join(f"\n{p}" for p in sp.get("problems", [])))
    if rep.get("ctx"):
        c = rep["ctx"]
        _row(t, "ctx", c.get("summary", ""))
    if rep["damaged_copies"]:
        _row(t, "damaged copies kept", "\n".join(rep["damaged_copies"]))
    return t


def _warn(result: dict[str, Any]) -> None:
    """Bookkeeping that failed while the action itself succeeded (one line each, stderr)."""
    for problem in result.get("problems") or []:
        output.note(f"cocoplus: warning: {problem}")


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Operator view and controls of the current work session.", no_args_is_help=True)
    app.add_typer(group, name="session")

    @group.command("status")
    def status(json_out: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
        """Handoff freshness, predicates, queued work, budgets, terminal state, kill switch, pending steer."""
        from cocoplus.report.views import status_report

        from cocoplus.report import ctx

        lay = layout()
        rep = status_report(lay)
        ctx.supplement_status(rep, lay)
        if json_out:
            output.emit_json(rep)
            return
        output.out().print(render_status(rep))
        for prob in rep["problems"]:
            output.note(f"cocoplus: problem: {prob}")

    @group.command("progress")
    def progress_cmd(json_out: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
        """Print PROGRESS.md's Done / In Progress / Next / Notes."""
        from cocoplus.report.views import sections

        lay = layout()
        rep = sections(lay)
        from cocoplus.report import ctx

        ctx.supplement_progress(rep, lay)
        if json_out:
            output.emit_json(rep)
            return
        if not rep["exists"]:
            raise CocoplusError(f"{rep['path']}: missing", hint="run `cocoplus init` to create the handoff template")
        con = output.out()
        for title, sec in rep["sections"].items():
            con.rule(title, align="left")
            if sec is None:
                con.print("(section missing)")
            elif sec["text"]:
                con.print(sec["text"], markup=False)
            else:
                con.print("(empty)")
            for line in rep.get("ctx", {}).get(title, []):
                con.print(f"[ctx] {line}", markup=False)
        if rep.get("ctx_note"):
            con.print(rep["ctx_note"], markup=False)

    @group.command("steer")
    def steer(
        instruction: str = typer.Argument(..., help="The instruction for the agent's next prompt."),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """Queue a one-shot instruction, injected once into the agent's next prompt."""
        from cocoplus.session import control

        result = control.steer(layout(), instruction, operator=operator_name())
        if json_out:
            output.emit_json(result)
            return
        what = "added after the pending steer" if result["appended"] else "written"
        output.out().print(f"steer {what}; it will be injected once into the agent's next prompt")
        _warn(result)

    @group.command("stop")
    def stop(
        reason: str = typer.Option("stopped by operator", "--reason", "-r", help="Why the agent is stopped."),
        operator: str = typer.Option(None, "--operator", "-o", help="Who stops it (default: your login name)."),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """Create AGENT_STOP: every agent tool call is blocked until `session resume`."""
        from cocoplus.session import control

        result = control.stop(layout(), operator or operator_name(), reason)
        if json_out:
            output.emit_json(result)
            return
        s = result["stop"]
        if result.get("kept_existing"):
            output.out().print("AGENT_STOP was already present and is kept (it could not be rewritten)", markup=False)
        else:
            output.out().print(f"AGENT_STOP created by {s['operator']} at {s['created_at']}: {s['reason']}", markup=False)
        output.out().print("agent tools are now blocked; `cocoplus session resume` lifts the stop")
        _warn(result)

    @group.command("resume")
    def resume(
        yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
        reset_budget: bool = typer.Option(False, "--reset-budget", help="Also start the iteration count again from 0."),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """Remove AGENT_STOP after confirming, so the agent may use tools again."""
        from cocoplus.session import control, iteration

        lay = layout()
        info = control.read_stop(lay)
        if not yes:
            if not sys.stdin.isatty():
                raise CocoplusError(
                    "resume needs confirmation and stdin is not a terminal", hint="pass --yes to resume without asking"
                )
            what = (
                f"AGENT_STOP by {info.get('operator') or 'unknown'}: {info.get('reason') or 'no reason'}"
                if info
                else "no AGENT_STOP is present"
            )
            if not typer.confirm(f"{what}. Resume the agent?", default=False):
                raise CocoplusError("resume cancelled; AGENT_STOP left in place")
        result = control.resume(lay, operator_name(), reset_budget=reset_budget)
        try:
            ib = iteration.read(lay)
        except CocoplusError:
            ib = None
        exhausted = bool(ib and ib["consumed"] >= ib["cap"])
        result["iteration_budget_exhausted"] = exhausted
        if json_out:
            output.emit_json(result)
            return
        output.out().print("AGENT_STOP removed; status running" if result["resumed"] else "no AGENT_STOP was present; status running")
        _warn(result)
        if exhausted:
            output.note(
                f"cocoplus: note: the iteration budget is used up ({ib['consumed']}/{ib['cap']}); the next tool call "
                "stops the agent again. Use `session resume --reset-budget` or raise max_iterations."
            )

    qgroup = typer.Typer(help="Mid-session requests (task-queue.jsonl).", no_args_is_help=True)
    group.add_typer(qgroup, name="queue")

    @qgroup.command("add")
    def queue_add(
        request: str = typer.Argument(..., help="The request; it goes to Next, not replacing the current item."),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """Append a request to the task queue."""
        from cocoplus.session import queue

        rec = queue.add(layout(), request, by=operator_name())
        if json_out:
            output.emit_json(rec)
            return
        output.out().print(f"queued {rec['id']}: {rec['request']}", markup=False)

    @qgroup.command("list")
    def queue_list(
        all_items: bool = typer.Option(False, "--all", help="Include done and dropped requests."),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """Show pending requests."""
        from cocoplus.session import queue

        items, problems = queue.read(layout())
        shown = items if all_items else [i for i in items if i["state"] == "queued"]
        if json_out:
            output.emit_json({"items": shown, "problems": problems})
            return
        if not shown:
            output.out().print("no pending requests")
        for i in shown:
            output.out().print(f"{i['id']}  {i['state']:<7}  {i['request']}", markup=False)
        for p in problems:
            output.note(f"cocoplus: problem: {p}")

    @qgroup.command("done")
    def queue_done(
        queue_id: str = typer.Argument(..., help="The request id (q_...)."),
        drop: bool = typer.Option(False, "--drop", help="Mark it dropped instead of done."),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """Mark a queued request done (or dropped)."""
        from cocoplus.session import queue

        rec = queue.finish(layout(), queue_id, "dropped" if drop else "done", by=operator_name())
        if json_out:
            output.emit_json(rec)
            return
        output.out().print(f"{queue_id}: {rec['state']}", markup=False)

    @group.command("check")
    def check(json_out: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
        """Check the exit criteria: handoff sections, predicates, canonical states, budget states."""
        from cocoplus.report.views import check as do_check

        result = do_check(layout())
        if json_out:
            output.emit_json(result)
        else:
            con = output.out()
            for r in result["checks"]:
                mark = "ok  " if r["ok"] else "FAIL"
                con.print(f"{mark}  {r['check']}: {r['detail']}", markup=False)
        if not result["ok"]:
            bad = [r for r in result["checks"] if not r["ok"]]
            if not json_out:
                output.error_line(f"{len(bad)} check(s) failed: " + "; ".join(r["detail"] for r in bad))
            raise typer.Exit(1)
