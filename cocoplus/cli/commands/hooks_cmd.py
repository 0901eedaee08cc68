"""`cocoplus hook`, `install`, `uninstall`, `doctor`, `plugin`: wiring cocoplus into the agent runtimes."""

from __future__ import annotations

import os
from typing import Any

import typer

from cocoplus.cli import output
from cocoplus.cli.commands import JSON_HELP, layout
from cocoplus.core.errors import UsageError
from cocoplus.hook.entry import main as hook_main
from cocoplus.install import bundles
from cocoplus.install import hooks as runtimes
from cocoplus.ops import project as project_ops
from cocoplus.runtimes import registry

RUNTIME_HELP = "one of " + registry.listing()


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


def show_doctor(result: dict[str, Any], json_out: bool) -> None:
    """`doctor`'s report, and its exit code: 1 where the hooks run another cocoplus than the one that wired them (or
    none, `failed`), or where the configuration does not load (its error line first)."""
    broken = (result.get("config") or {}).get("error")
    if broken and not json_out:  # the error first, then everything that still answers
        output.error_line(broken, "`cocoplus config show` checks the file")
        result["problems"] = [p for p in result["problems"] if p != broken]
    output.show(result, json_out, render_doctor)
    raise typer.Exit(1 if result.get("failed") or broken else 0)


def render_uninstall(result: dict[str, Any], project: str) -> None:
    runtime = result["runtime"]
    if result["changes"] and "todo" in result:  # a plugin of this user's, not the project's files
        output.line(f"{runtime}: removed cocoplus' plugin (for every project of yours)")
    elif result["changes"]:
        output.line(f"{runtime}: removed cocoplus entries from {os.path.relpath(result['settings'], project)}")
    else:
        output.line(f"{runtime}: no cocoplus entries found")
    for c in result["changes"]:
        output.line(f"  {c}")
    for t in result.get("todo") or []:
        output.line(f"  - {t}")


def render_doctor(result: dict[str, Any]) -> None:
    for name, info in result["runtimes"].items():
        if info.get("error"):
            output.line(f"{name:7} settings unreadable: {info['error']}")
        elif not info["wired"] and info.get("plugin"):
            output.line(
                f"{name:7} hooks come from this user's cocoplus plugin ({info['plugin']}): nothing to install here"
            )
        elif not info["wired"]:
            output.line(f"{name:7} not wired (run `cocoplus install {name}`, or install its cocoplus plugin)")
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
            elif info.get("mcp_approved") is False:
                notes.append(
                    f"MCP server not approved for you (`cocoplus install {name}` approves install's own entry; "
                    "otherwise the runtime asks)"
                )
            if info.get("upgrade_available"):
                notes.append(f"an upgrade of the hooks is available (run `cocoplus install {name}`)")
            output.line(f"{name:7} wired; {fired}" + (f"; {'; '.join(notes)}" if notes else ""))
            if info.get("twice"):
                output.line(f"        warning: {info['twice']}")
        for text in info.get("timeouts") or []:
            output.line(f"        timeouts: {text}")
        for text in info.get("plugin_notes") or []:
            output.line(f"        plugin: {text}")
    pointer = result["pointer"]
    pinned = result.get("project_pointer")
    if pinned and not pinned["problems"]:
        which = "this cocoplus" if pinned["this_installation"] else f"the cocoplus of {pinned['python']}"
        output.line(f"this project's hooks run {which} ({pinned['path']})")
    if pointer["exists"] and not pointer["problems"]:
        which = "this cocoplus" if pointer["this_installation"] else f"the cocoplus of {pointer['python']}"
        output.line(f"your other hooks and plugins run {which} ({pointer['path']})")
    render_file_events(result.get("file_events") or {})
    output.problems([p["text"] for p in result["hook_problems"]])
    output.problems(result["problems"])
    output.problems(result.get("ignored") or [], label="note")
    output.problems(result.get("grants") or [], label="note")
    output.problems(result.get("user_files") or [], label="note")
    output.problems(result.get("rules") or [], label="problem")
    output.problems(result.get("inbox") or [], label="note")
    render_sandbox(result.get("sandbox"))
    render_telemetry(result.get("telemetry") or {})


def render_telemetry(rep: dict[str, Any]) -> None:
    """The trace export, when configured: where to and who exports, or its problem."""
    if rep.get("problem"):
        output.problems([f"traces: {rep['problem']}"], label="problem")
    elif rep.get("configured"):
        last = rep.get("last") or {}
        when = f"; last export {last.get('at')}" if last.get("at") else ""
        output.line(f"traces: to {rep['endpoint']}, exported by {rep.get('process')} (pid {rep['exporting']}){when}")


def render_sandbox(box: dict[str, Any] | None) -> None:
    """The sandbox probe's line: a problem when this project's workers get a profile that cannot be applied."""
    if box:
        output.problems([box["text"]], label="problem" if box["problem"] else "note")


def render_file_events(fe: dict[str, Any]) -> None:
    """Not an error: without inotify the supervisor, the relay and the server poll (slower to notice, same results)."""
    probe = fe.get("probe") or {}
    if probe.get("inotify") is False:
        output.line(
            f"file events: not available now: {probe.get('why')}; the supervisor, the relay and the server poll instead"
        )
    for who in ("supervisor", "relay"):
        w = fe.get(who) or {}
        if w.get("kind") and w["kind"] != "inotify":
            output.line(f"{who}: file events: {w['kind']}" + (f" because {w['why']}" if w.get("why") else ""))


def register(app: typer.Typer) -> None:
    @app.command(
        "hook",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
        add_help_option=False,
    )
    def hook(ctx: typer.Context) -> None:
        """Run a hook event (called by agent runtimes): cocoplus hook <Event> [--runtime R]. Reads the payload on
        stdin."""
        raise typer.Exit(hook_main(list(ctx.args)))

    @app.command("install")
    def install(
        runtime: str = typer.Argument(
            None, help=RUNTIME_HELP + "; none: only point your hooks and plugins at this cocoplus"
        ),
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
        output.show(project_ops.install(layout(), runtime), json_out, render_install)

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
        render_uninstall(result, lay.project)

    @app.command("doctor")
    def doctor(json_out: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
        """Report which runtimes are wired to cocoplus, what is wrong with their hooks, and whether they fired.
        Exits 1 where this project's hooks run another cocoplus than the one that wired it, or none, and when the
        configuration (cocoplus.toml, or your config.toml) does not load."""
        show_doctor(project_ops.doctor(layout()), json_out)

    plugin = typer.Typer(
        help="cocoplus as a Claude Code plugin, a Gemini CLI extension, a Codex or Cortex Code plugin.",
        no_args_is_help=True,
    )
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
