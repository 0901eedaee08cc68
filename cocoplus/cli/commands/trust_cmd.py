"""`cocoplus trust [--show|--revoke]`: review and trust what this project's cocoplus.toml runs or sends."""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any

import typer

from cocoplus.cli import output
from cocoplus.cli.commands import JsonFlag
from cocoplus.core.errors import CocoplusError, UsageError
from cocoplus.core.paths import Layout, find_state_dir
from cocoplus.ops import trust as ops


def where() -> tuple[str, Layout | None]:
    """The project (the parent of the `.cocoplus/` found like every command finds it, else the working directory)."""
    found = find_state_dir()
    if found is None:
        return os.getcwd(), None
    layout = Layout(found)
    return layout.project, layout


def render_listing(result: dict[str, Any]) -> None:
    """The file, what in it needs trust with the exact values, and whether it is trusted."""
    from cocoplus.core import userfiles  # deferred: only the text rendering names the record file

    if not result.get("exists", True):
        output.line(f"{result['file']}: no such file; there is nothing to trust")
        return
    output.line(f"{result['file']} (sha256 {result['sha256']})")
    if not result["needs_trust"]:
        output.line("  names no program to run and sends nothing anywhere: nothing in it needs trust")
        return
    output.line("  runs or sends, once trusted:")
    width = max(len(f"{f['label']} = {f['toml']}") for f in result["needs_trust"])
    for f in result["needs_trust"]:
        output.line("    ", f"{f['label']} = {f['toml']}".ljust(width), "  # ", f["what"])
    if result.get("programs"):
        output.line("  programs it names in the project (their content is trusted with the file):")
        width = max(len(p["path"]) for p in result["programs"])
        for p in result["programs"]:
            sha = f"sha256 {p['sha256']}" if p["sha256"] else "missing"
            output.line("    ", p["path"].ljust(width), f"  {sha}", "  # ", ", ".join(p["named_by"]))
    state = result["state"]
    when = f" (trusted at {result['trusted_at']})" if result.get("trusted_at") else ""
    if state == ops.TRUSTED:
        output.line(f"  state: trusted{when}")
    elif state == ops.CHANGED:
        output.line(f"  state: changed since it was trusted{when}; these values are ignored until it is trusted again")
        for change in result.get("changes") or []:
            output.line(f"    changed: {change}")
    else:
        output.line("  state: not trusted; these values are ignored")
    output.line(f"  trust record: {userfiles.shown(result['record_file'])}")


def render_trusted(result: dict[str, Any]) -> None:
    if not result["recorded"]:
        return  # the listing said there is nothing to trust
    named = " and the programs it names in the project" if result.get("programs") else ""
    output.line(
        f"trusted: these values take effect for this file{named} as they are now; "
        "any change needs `cocoplus trust` again"
    )
    if result.get("notify"):
        runs = (
            "a notifier runs and sends them"
            if result["notify"]["running"]
            else "they are sent once a notifier runs "
            "(`cocoplus supervision watcher run`, `cocoplus serve` or `cocoplus notify run`)"
        )
        output.line(f"notifications: [notify] urls take effect now; {runs}")
    output.problems(result.get("problems") or [])


def render_revoked(result: dict[str, Any]) -> None:
    if result["revoked"]:
        output.line(
            f"trust withdrawn for {result['project']}: values in {result['file']} that need trust are ignored again"
        )
    else:
        output.line(f"{result['project']} was not trusted; nothing changed")
    output.problems(result.get("problems") or [])


def trust(
    show: Annotated[
        bool, typer.Option("--show", help="Show what the file runs or sends and whether it is trusted; change nothing.")
    ] = False,
    revoke: Annotated[
        bool, typer.Option("--revoke", help="Withdraw the trust in this project's cocoplus.toml.")
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Do not ask for confirmation (the list is still printed).")
    ] = False,
    json_out: JsonFlag = False,
) -> None:
    """Trust this project's cocoplus.toml as it is now: the programs it names and the places it sends data take effect.

    Prints exactly what the file would run or send first, and asks (on a terminal; --yes for scripts).
    The record is kept in ~/.config/cocoplus/trusted.json (by project path, the file's SHA-256 and that of
    each program it names by a path in the project): any change to them needs `cocoplus trust` again.
    """
    from cocoplus import trust as trust_mod  # deferred: the trust record, for this command only

    trust_mod.quiet()  # this command shows what is ignored itself; no note on top
    if show and revoke:
        raise UsageError("trust: --show and --revoke cannot be used together")
    project, layout = where()
    if revoke:
        output.show(ops.revoke(project, layout), json_out, render_revoked)
        return
    listing = ops.show(project)
    if show:
        output.show(listing, json_out, render_listing)
        return
    if not listing["exists"]:  # one error line, not the listing's line as well
        raise CocoplusError(f"{listing['file']}: no such file; there is nothing to trust")
    if not json_out:
        render_listing(listing)
    if listing["needs_trust"] and listing["state"] != ops.TRUSTED and not yes:
        if not sys.stdin.isatty():
            raise CocoplusError(
                "trust needs confirmation and stdin is not a terminal; nothing was trusted",
                hint="review the list above (`cocoplus trust --show`), then pass --yes",
            )
        if not typer.confirm(f"Trust {listing['file']} as it is now?", default=False):
            raise typer.Abort()
    shown = {p["path"]: p["sha256"] for p in listing["programs"]}
    output.show(ops.trust(project, listing["sha256"], layout, programs=shown), json_out, render_trusted)


def register(app: typer.Typer) -> None:
    app.command("trust")(trust)
