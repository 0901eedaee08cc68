"""`cocoplus sandbox doctor`: whether workers can be sandboxed here, and the one fix when they cannot."""

from __future__ import annotations

from typing import Any

import typer

from cocoplus.cli import output
from cocoplus.cli.commands import JsonFlag
from cocoplus.ops import sandbox as ops


def render_doctor(found: dict[str, Any]) -> None:
    """What the probe found, one line each, then the cause and the fix (or that a sandbox runs)."""
    ctl = found.get("sysctls") or {}
    output.line(
        f"bubblewrap: {found.get('bwrap') or 'not found'}" + (f" ({found['version']})" if found.get("version") else "")
    )
    for name, value in ctl.items():
        output.line(f"  {name}: {value if value is not None else '(not on this kernel)'}")
    output.line(f"  running as root: {'yes' if found.get('root') else 'no'}")
    output.line(f"  container: {found.get('container') or 'none detected'}")
    if found.get("loopback"):
        output.line(f"  loopback in a throwaway sandbox: {found['loopback']}")
    if found.get("ok"):
        output.line("sandbox: a throwaway sandbox ran with loopback up; the `workspace` profile can be applied")
    else:
        output.line("sandbox: ", ("cannot be applied", output.ALERT), f": {found.get('cause')}")
        output.line(f"fix: {found.get('fix')}")
    held = found.get("srt") or {}
    if not found.get("ok") or not held:
        return
    output.line(f"srt: {held.get('srt') or 'not found'}" + (f" ({held['version']})" if held.get("version") else ""))
    if held.get("ok"):
        output.line("srt: a throwaway srt sandbox ran; the `srt` profile can be applied")
        return
    output.line("srt: ", ("cannot be applied", output.ALERT), f": {held.get('cause')}")
    output.line(f"  to use it: {held.get('fix')}")


def doctor(json_out: JsonFlag = False) -> None:
    """Probe whether a worker can be sandboxed here: the bubblewrap version, the user-namespace sysctls and
    AppArmor's restriction, a container, and loopback in a throwaway sandbox; print the one fix that applies and
    exit 1 when a sandbox cannot be applied. Then Anthropic's sandbox runtime (`srt`, for the `srt` profile): its
    version and a throwaway srt sandbox, or its one fix (exit 0 when only srt is missing: `workspace` still
    applies; `launch --sandbox srt` refuses with that fix)."""
    found = ops.doctor()
    output.show(found, json_out, render_doctor)
    if not found.get("ok"):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    sandbox = typer.Typer(help="Operating-system sandboxes for workers: doctor.", no_args_is_help=True)
    app.add_typer(sandbox, name="sandbox")
    sandbox.command("doctor")(doctor)
