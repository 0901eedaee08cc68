"""`cocoplus init`."""

from __future__ import annotations

import os
from typing import Annotated, Any

import typer

from cocoplus.cli import output
from cocoplus.cli.commands import JsonFlag, named_dir
from cocoplus.ops import project


def render_init(result: dict[str, Any]) -> None:
    output.line("cocoplus state directory: ", result["state_dir"])
    for p in result["created"]:
        output.line("  created  ", p)
    for p in result["kept"]:
        output.line("  kept     ", p)
    if not result["created"]:
        output.line("  nothing to create; everything was already in place")
    if result.get("nested_in"):
        output.line("  nested inside the project of ", result["nested_in"], " (commands run below here use this one)")
    output.line("next: `cocoplus install claude` (or codex, gemini, cursor) to wire the hooks")
    output.problems(result.get("ignored") or [], label="note")


def init(
    nested: Annotated[
        bool,
        typer.Option(
            "--nested", help="Create it even inside a project that already has one (it shadows that one below here)."
        ),
    ] = False,
    json_out: JsonFlag = False,
) -> None:
    """Create .cocoplus/ here with its templates. Safe to run again: nothing existing is overwritten."""
    named, named_by = named_dir()
    output.show(project.init(os.getcwd(), named, named_by, nested=nested), json_out, render_init)


def register(app: typer.Typer) -> None:
    app.command("init")(init)
