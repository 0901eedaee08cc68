"""`cocoplus hook`, `install`, `uninstall`, `doctor`, `sessions list`."""

from __future__ import annotations

import os
from typing import Any

import typer

from cocoplus import config as config_mod
from cocoplus.cli import output
from cocoplus.cli.commands import JSON_HELP, layout
from cocoplus.hook.entry import main as hook_main
from cocoplus.ops import sessions as sessions_ops
from cocoplus.runtimes import install as runtimes
from cocoplus.runtimes import registry

RUNTIME_HELP = "one of " + registry.listing()


def render_sessions(result: dict[str, Any]) -> None:
    """Sessions as a table that never cuts an id, a state or a time (see output.table)."""
    records = result["sessions"]
    if not records:
        output.line("no agent sessions recorded yet (hooks record them; see `cocoplus doctor`)")
    else:
        supervised = any("excluded" in r for r in records)
        columns = [("alias", True), ("runtime", False), ("state", True), ("attention", True), ("last event", False), ("at", True), ("id", True)]
        if supervised:
            columns.append(("supervised", False))
        rows = []
        for r in records:
            row = [
                r.get("alias") or "",
                r.get("runtime") or "",
                (r.get("state") or "") + (" (stale)" if r.get("stale") else ""),
                r.get("attention") or "-",
                r.get("last_event") or "",
                r.get("last_event_at") or "",
                r.get("id") or "",
            ]
            if supervised:
                row.append("no (excluded)" if r.get("excluded") else "yes")
            rows.append(row)
        for ln in output.table(columns, rows, output.terminal_width()):
            output.line(ln)
    output.problems(result["problems"])


def sessions_list(json_out: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
    """Sessions with id, alias, runtime, state, attention and last event."""
    output.show(sessions_ops.list_sessions(layout()), json_out, render_sessions)


def register(app: typer.Typer) -> None:
    @app.command(
        "hook",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
        add_help_option=False,
    )
    def hook(ctx: typer.Context) -> None:
        """Run a hook event (called by agent runtimes): cocoplus hook <Event> [--runtime R]. Reads the payload on stdin."""
        raise typer.Exit(hook_main(list(ctx.args)))

    @app.command("install")
    def install(
        runtime: str = typer.Argument(..., help=RUNTIME_HELP),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """Register cocoplus' hooks in a runtime's project settings (merging, idempotent)."""
        lay = layout()
        cfg = config_mod.load_for(lay)
        result = runtimes.install(runtime, lay.project, timeout_s=cfg.get("hooks.timeout_s"))
        config_mod.compile_for_hook(lay)
        if json_out:
            output.emit_json(result)
            return
        con = output.out()
        rel = os.path.relpath(result["settings"], lay.project)
        if result["changes"]:
            con.print(f"{runtime}: updated {rel}", markup=False)
            for c in result["changes"]:
                con.print(f"  {c}", markup=False)
        else:
            con.print(f"{runtime}: {rel} already up to date", markup=False)
        if result["todo"]:
            con.print("still to do:")
            for t in result["todo"]:
                con.print(f"  - {t}", markup=False)

    @app.command("uninstall")
    def uninstall(
        runtime: str = typer.Argument(..., help=RUNTIME_HELP),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """Remove cocoplus' hooks from a runtime's project settings; other hooks stay."""
        lay = layout()
        result = runtimes.uninstall(runtime, lay.project)
        if json_out:
            output.emit_json(result)
            return
        if result["changes"]:
            output.out().print(f"{runtime}: removed cocoplus entries from {os.path.relpath(result['settings'], lay.project)}", markup=False)
            for c in result["changes"]:
                output.out().print(f"  {c}", markup=False)
        else:
            output.out().print(f"{runtime}: no cocoplus entries found", markup=False)

    @app.command("doctor")
    def doctor(json_out: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
        """Report which runtimes are wired to cocoplus and whether their hooks have fired."""
        result = runtimes.doctor(layout())
        if json_out:
            output.emit_json(result)
            return
        con = output.out()
        for name, info in result["runtimes"].items():
            if info.get("error"):
                con.print(f"{name:7} settings unreadable: {info['error']}", markup=False)
            elif not info["wired"]:
                con.print(f"{name:7} not wired (run `cocoplus install {name}`)", markup=False)
            else:
                fired = (
                    f"hooks fired: {info['sessions_seen']} session(s), last at {info['last_hook_event_at']}"
                    if info["fired"]
                    else "hooks have not fired yet"
                )
                notes = []
                if info["missing"]:
                    notes.append("missing " + ", ".join(info["missing"]))
                if info["outdated"]:
                    notes.append("outdated " + ", ".join(info["outdated"]) + f" (run `cocoplus install {name}`)")
                if info.get("mcp_registered") is False:
                    notes.append("MCP server not registered")
                con.print(f"{name:7} wired; {fired}" + (f"; {'; '.join(notes)}" if notes else ""), markup=False)
        for p in result["problems"]:
            output.note(f"cocoplus: problem: {p}")

    sessions = typer.Typer(help="Agent-runtime sessions seen by the hooks.", no_args_is_help=True)
    app.add_typer(sessions, name="sessions")

    sessions.command("list")(sessions_list)
