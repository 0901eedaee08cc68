"""`cocoplus notify test|status|run`: notifications that reach the human."""

from __future__ import annotations

from typing import Any

import typer

from cocoplus.cli import output
from cocoplus.cli.commands import JsonFlag, layout
from cocoplus.ops import notify as ops


def render_test(rep: dict[str, Any]) -> None:
    for t in rep["targets"]:
        if t["ok"]:
            output.line("sent to ", t["url"])
        else:
            output.line(("failed", output.ALERT), f": {t['url']}: {t['error']}")
    output.line(f"{rep['sent']} of {len(rep['targets'])} target(s) took the test notification")


def test(json_out: JsonFlag = False) -> None:
    """Send one test notification to every `[notify] urls` target; exit 1 if any failed."""
    rep = ops.test(layout())
    output.show(rep, json_out, render_test)
    if rep["sent"] < len(rep["targets"]):
        raise typer.Exit(1)


def render_status(rep: dict[str, Any]) -> None:
    output.line("notifier: " + ("running" if rep["running"] else "not running (the supervisor runs one; or `cocoplus notify run`)"))
    output.line("events: " + (", ".join(rep["events"]) or "none"))
    output.line(f"the same event for one session at most once in {rep['repeat_after_s']:g}s; at most {rep['max_per_minute']} a minute per target")
    if not rep["targets"]:
        output.line("no [notify] urls configured")
    for t in rep["targets"]:
        state = f"{t['sent']} sent, {t['owed']} owed"
        if t["failures"]:
            state += f", {t['failures']} failure(s) in a row: {t['last_error']}"
        output.line(f"  {t['url']}: {state}")
    output.problems(rep["problems"])


def status(json_out: JsonFlag = False) -> None:
    """Targets (secrets hidden), what was sent and what is still owed, and whether a notifier runs."""
    output.show(ops.status(layout()), json_out, render_status)


def run() -> None:
    """Run the notifier in the foreground (the supervisor already runs one in its own process)."""
    raise typer.Exit(ops.run(layout()))


def register(app: typer.Typer) -> None:
    notify = typer.Typer(help="Notifications to the human: [notify] urls (apprise) and events.", no_args_is_help=True)
    app.add_typer(notify, name="notify")
    notify.command("test")(test)
    notify.command("status")(status)
    notify.command("run")(run)
