"""`cocoplus hook`, `install`, `uninstall`, `doctor`, `sessions list`."""

from __future__ import annotations

import os
from typing import Any

import typer

from cocoplus import config as config_mod
from cocoplus.cli import output
from cocoplus.cli.commands import JSON_HELP, layout
from cocoplus.core.errors import UsageError
from cocoplus.hook.entry import main as hook_main
from cocoplus.ops import sessions as sessions_ops
from cocoplus.runtimes import bundles, registry
from cocoplus.runtimes import install as runtimes

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


def render_install(result: dict[str, Any]) -> None:
    runtime = result["runtime"]
    rel = result["settings_rel"]
    if result["changes"]:
        output.line(f"{runtime}: updated {rel}")
        for c in result["changes"]:
            output.line(f"  {c}")
    else:
        output.line(f"{runtime}: {rel} already up to date")
    if result["commit"]:
        output.line("commit (the same for everyone): " + ", ".join(result["commit"]))
    if result["do_not_commit"]:
        output.line("do not commit (yours, with paths on this machine): " + ", ".join(result["do_not_commit"]))
    output.line(f"teammates: install cocoplus, then run `cocoplus install {runtime}` in their clone")
    if result["todo"]:
        output.line("still to do:")
        for t in result["todo"]:
            output.line(f"  - {t}")


def render_doctor(result: dict[str, Any]) -> None:
    for name, info in result["runtimes"].items():
        if info.get("error"):
            output.line(f"{name:7} settings unreadable: {info['error']}")
        elif not info["wired"]:
            output.line(f"{name:7} not wired (run `cocoplus install {name}`)")
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
                notes.append("outdated " + ", ".join(info["outdated"]))
            if info.get("mcp_registered") is False:
                notes.append("MCP server not registered")
            if info.get("upgrade_available"):
                notes.append(f"an upgrade of the hooks is available (run `cocoplus install {name}`)")
            output.line(f"{name:7} wired; {fired}" + (f"; {'; '.join(notes)}" if notes else ""))
    pointer = result["pointer"]
    if pointer["exists"] and not pointer["problems"]:
        which = "this cocoplus" if pointer["this_installation"] else f"the cocoplus of {pointer['python']}"
        output.line(f"your hooks and plugins run {which} ({pointer['path']})")
    output.problems([p["text"] for p in result["hook_problems"]])
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
        runtime: str = typer.Argument(None, help=RUNTIME_HELP + "; none: only point your hooks and plugins at this cocoplus"),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """Wire cocoplus' hooks into a runtime's project settings (merging, idempotent) and say what to commit."""
        if runtime is None:
            result = runtimes.install_user()
            if json_out:
                output.emit_json(result)
                return
            state = "now run" if result["changed"] else "already run"
            output.line(f"your agents' hooks and plugins {state} this cocoplus ({result['pointer']})")
            for t in result["todo"]:
                output.line(f"  - {t}")
            return
        lay = layout()
        cfg = config_mod.load_for(lay)
        result = runtimes.install(runtime, lay.project, timeout_s=cfg.get("hooks.timeout_s"))
        config_mod.compile_for_hook(lay)
        output.show(result, json_out, render_install)

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
        """Report which runtimes are wired to cocoplus, what is wrong with their hooks, and whether they fired."""
        output.show(runtimes.doctor(layout()), json_out, render_doctor)

    plugin = typer.Typer(help="cocoplus as a Claude Code plugin, a Gemini CLI extension, a Codex or Cortex Code plugin.", no_args_is_help=True)
    app.add_typer(plugin, name="plugin")

    @plugin.command("path")
    def plugin_path(runtime: str = typer.Argument(..., help="one of " + ", ".join(bundles.RUNTIMES))) -> None:
        """Print the directory the runtime installs cocoplus' plugin (or extension, or marketplace) from."""
        if runtime not in bundles.RUNTIMES:
            raise UsageError(f"no plugin for {runtime!r}: use one of {', '.join(bundles.RUNTIMES)}")
        output.line(bundles.install_dir(runtime))

    @plugin.command("build")
    def plugin_build(directory: str = typer.Argument(..., help="where to write the plugin trees")) -> None:
        """Write every plugin tree into DIRECTORY, built from the same declarations as `cocoplus install`."""
        for rel in bundles.build(os.path.abspath(directory)):
            output.line(os.path.join(directory, rel))

    sessions = typer.Typer(help="Agent-runtime sessions seen by the hooks.", no_args_is_help=True)
    app.add_typer(sessions, name="sessions")

    sessions.command("list")(sessions_list)
