"""`cocoplus config show|example`."""

from __future__ import annotations

import os
import sys
from typing import Any

import typer

from cocoplus import config as config_mod
from cocoplus.cli import output
from cocoplus.cli.commands import JSON_HELP
from cocoplus.core import keys, keytypes, userfiles
from cocoplus.core.paths import find_state_dir


def show_data(cfg: Any) -> dict[str, Any]:
    """What `config show --json` prints: every key with its value, origin and the file it came from."""
    return {
        "file": cfg.path,
        "files": list(cfg.read),
        "values": {
            k.dotted: {
                "value": shown_value(k, cfg.get(k.dotted)),
                "origin": cfg.origins[k.dotted],
                "file": cfg.files.get(k.dotted),
                "needs_trust": k.needs_trust,
                "ignored": _ignored(cfg.ignored_value(k.dotted)),
            }
            for k in keys.KEYS
        },
        "pricing": cfg.pricing,
        "accounts": cfg.accounts,
        "entry_files": dict(cfg.entry_files),
        "user_file": userfiles.config_file(),
        "trust": dict(cfg.trust),
        "ignored": [_ignored(item) for item in cfg.ignored],
        "withheld": dict(cfg.withheld),
    }


def shown_value(key: Any, value: Any) -> Any:
    """A value as `config show` shows it: a secret (`Key.secret`: a channel's token) only as set or not."""
    if key.secret and value:
        return "(set, hidden)"
    return value


def _ignored(item: dict[str, Any] | None) -> dict[str, Any] | None:
    """A value the untrusted project file sets: key, label, value, file, why it was ignored."""
    if item is None:
        return None
    return {k: item[k] for k in ("key", "label", "value", "file", "reason")}


def origin_text(cfg: Any, project: str, dotted: str) -> str:
    """`default`, `env NAME`, `derived (...)`, or the file the value was read from (relative to the project)."""
    where = cfg.files.get(dotted) if cfg.origins.get(dotted) == "file" else cfg.entry_files.get(dotted)
    if where is None:
        return cfg.origins[dotted]
    return _shown(where, project)


def render_text(cfg: Any, project: str) -> str:
    """The effective configuration as TOML, each value followed by where it came from."""
    read = (
        ", ".join(_shown(p, project) for p in cfg.read)
        if cfg.read
        else "no configuration file, so every value is a default"
    )
    lines = [f"# effective cocoplus configuration ({read})"]
    if cfg.trust.get("reason") and any(i.get("reason") != config_mod.USER_ONLY_REASON for i in cfg.ignored):
        lines.append(
            f"# {_shown(cfg.trust['file'], project)} {cfg.trust['reason']}: the values it sets that run a program or"
            " send data are ignored (marked below); `cocoplus trust` shows them and trusts the file"
        )

    def add(left: str, origin: str) -> None:
        lines.append(f"{left:<{ALIGN}}  # {origin}" if len(left) < ALIGN else f"{left}  # {origin}")

    def ignored(key: str) -> str:
        item = cfg.ignored_value(key)
        if item is None:
            return ""
        value = keytypes.toml_value(item["value"])
        why = "yours alone" if item.get("reason") == config_mod.USER_ONLY_REASON else "not trusted"
        return f"; IGNORED {_shown(item['file'], project)}: {item['label']} = {value} ({why})"

    for section in keys.SECTIONS:
        lines += ["", f"[{section}]"]
        for k in keys.KEYS:
            if k.section == section:
                add(
                    f"{k.name} = {keytypes.toml_value(shown_value(k, cfg.get(k.dotted)))}",
                    origin_text(cfg, project, k.dotted) + ignored(k.dotted),
                )
    for spec in keys.TABLES:
        for name, entry in cfg.table(spec.section).items():
            lines.append("")
            add(spec.label(name), origin_text(cfg, project, f"{spec.section}.{name}"))
            for field, value in entry.items():
                lines.append(f"{field} = {keytypes.toml_value(value)}")
            for f in spec.fields:
                item = cfg.ignored_value(f"{spec.section}.{name}.{f.name}")
                if item is not None and item["file"] == cfg.entry_files.get(f"{spec.section}.{name}"):
                    lines.append(f"# {f.name} = {keytypes.toml_value(item['value'])}  # IGNORED (not trusted)")
    for why in cfg.withheld.values():
        lines += ["", f"# IGNORED {why}"]
    return "\n".join(lines) + "\n"


def _shown(path: str, project: str) -> str:
    """A configuration file as `config show` names it: relative to the project, or `~/...`."""
    rel = os.path.relpath(path, project)
    return rel if not rel.startswith("..") else userfiles.shown(path)


ALIGN = 44


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Show the effective configuration.", no_args_is_help=True)
    app.add_typer(group, name="config")

    @group.command("show")
    def show(json_out: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
        """Print every key's effective value (as TOML) and where it came from (default, a file, the environment)."""
        found = find_state_dir()
        project = os.path.dirname(found) if found else os.getcwd()
        cfg = config_mod.load(project)
        if json_out:
            output.emit_json(show_data(cfg))
            return
        sys.stdout.write(render_text(cfg, project))

    @group.command("example")
    def example() -> None:
        """Print a cocoplus.toml listing every key with its default, bounds, environment variable and meaning."""
        sys.stdout.write(config_mod.example_toml())
