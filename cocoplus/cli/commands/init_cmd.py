"""`cocoplus init`."""

from __future__ import annotations

import typer

from cocoplus.cli import output
from cocoplus.cli.commands import JSON_HELP


def register(app: typer.Typer) -> None:
    @app.command("init")
    def init(json_out: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
        """Create .cocoplus/ here with its templates. Safe to run again: nothing existing is overwritten."""
        from cocoplus.core.paths import init_target
        from cocoplus.session.workspace import init as do_init

        result = do_init(init_target())
        if json_out:
            output.emit_json(result)
            return
        con = output.out()
        con.print(f"cocoplus state directory: {result['state_dir']}", markup=False)
        for p in result["created"]:
            con.print(f"  created  {p}", markup=False)
        for p in result["kept"]:
            con.print(f"  kept     {p}", markup=False)
        if not result["created"]:
            con.print("  nothing to create; everything was already in place")
        con.print("next: `cocoplus install claude` (or codex, gemini, cursor) to wire the hooks")
