"""`cocoplus config show|example`."""

from __future__ import annotations

import os
import sys

import typer

from cocoplus.cli import output
from cocoplus.cli.commands import JSON_HELP


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Show the effective configuration.", no_args_is_help=True)
    app.add_typer(group, name="config")

    @group.command("show")
    def show(json_out: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
        """Print every key's effective value and where it came from (default, file, environment)."""
        from cocoplus import config as config_mod
        from cocoplus.core import settings
        from cocoplus.core.paths import find_state_dir

        found = find_state_dir()
        project = os.path.dirname(found) if found else os.getcwd()
        cfg = config_mod.load(project)
        if json_out:
            output.emit_json(
                {
                    "file": cfg.path,
                    "values": {
                        k.dotted: {"value": cfg.get(k.dotted), "origin": cfg.origins[k.dotted]} for k in settings.KEYS
                    },
                    "pricing": cfg.pricing,
                    "accounts": cfg.accounts,
                }
            )
            return
        from rich.table import Table

        from rich.text import Text

        table = Table(title=Text(f"cocoplus config ({cfg.path or 'no cocoplus.toml; defaults'})"), title_justify="left")
        table.add_column("key")
        table.add_column("value")
        table.add_column("from")
        for k in settings.KEYS:
            value = cfg.get(k.dotted)
            table.add_row(k.dotted, Text(repr(value) if isinstance(value, str) else str(value)), cfg.origins[k.dotted])
        output.out().print(table)
        if cfg.pricing:
            output.out().print("pricing overrides: " + ", ".join(sorted(cfg.pricing)), markup=False)
        if cfg.accounts:
            output.out().print("accounts: " + ", ".join(f"{n} ({a['kind']})" for n, a in cfg.accounts.items()), markup=False)

    @group.command("example")
    def example() -> None:
        """Print a cocoplus.toml listing every key with its default and meaning."""
        from cocoplus import config as config_mod

        sys.stdout.write(config_mod.example_toml())
