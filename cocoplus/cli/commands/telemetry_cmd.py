"""`cocoplus telemetry status|export`: the timeline sent as OpenTelemetry traces."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cocoplus.cli import output
from cocoplus.cli.commands import JsonFlag, layout
from cocoplus.ops import telemetry as ops


def render_status(rep: dict[str, Any]) -> None:
    if not rep.get("configured"):
        why = rep.get("off") or "no endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or [telemetry] endpoint)"
        output.line(f"traces: not configured: {why}")
    else:
        output.line(f"traces: to {rep['endpoint']} (from {rep.get('source')})")
    if rep.get("exporting"):
        output.line(f"exporting: {rep.get('process') or 'a process'} (pid {rep['exporting']})")
    last = rep.get("last")
    if last:
        state = f"{last.get('spans')} span(s) sent" if last.get("ok") else "failed"
        output.line(f"last export: {last.get('at')}: {state}")
    if rep.get("problem"):
        output.line(("problem", output.ALERT), f": {rep['problem']}")


def render_export(rep: dict[str, Any]) -> None:
    if rep.get("ok"):
        output.line(f"{rep.get('spans', 0)} span(s) sent to {rep.get('endpoint')}")
    else:
        output.line(("export failed", output.ALERT), f": {rep.get('error')}")


def status(json_out: JsonFlag = False) -> None:
    """Where traces go (endpoint shown without credentials), which process exports them, and how the last export
    went; exit 1 when something is wrong (nothing exports, or the last export failed)."""
    rep = ops.status(layout())
    output.show(rep, json_out, render_status)
    if not rep["ok"]:
        raise typer.Exit(1)


def export(
    once: Annotated[bool, typer.Option("--once", help="Send what has ended once, then exit.")] = False,
    json_out: JsonFlag = False,
) -> None:
    """Send the project's timeline as OpenTelemetry traces (OTLP over HTTP/protobuf), batched, each span once it
    has ended, every [telemetry] interval_s until stopped; exit 1 if an export fails (with --once)."""
    rep = ops.export(layout(), once=once)
    output.show(rep, json_out, render_export)
    if not rep.get("ok"):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    telemetry = typer.Typer(
        help="The timeline as OpenTelemetry traces: status, export ([telemetry] or OTEL_EXPORTER_OTLP_*).",
        no_args_is_help=True,
    )
    app.add_typer(telemetry, name="telemetry")
    telemetry.command("status")(status)
    telemetry.command("export")(export)
