"""`cocoplus notify test|status|run`: notifications that reach the human."""

from __future__ import annotations

from typing import Annotated, Any

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


def _notifier_line(rep: dict[str, Any]) -> str:
    who = rep.get("notifier") or {}
    where = f"in the {who['by']}" if who.get("by") and who["by"] != "notify run" else "in `cocoplus notify run`"
    if rep["running"]:
        pid = f", pid {who['pid']}" if who.get("pid") else ""
        return f"notifier: running {where}{pid}" if who else "notifier: running"
    how = (
        "it runs in `cocoplus supervision watcher run` and `cocoplus serve` once [notify] urls is set, "
        "or `cocoplus notify run`"
    )
    last = f"; last ran {where}, started {who['started_at']}" if who.get("started_at") else ""
    return f"notifier: not running ({how}){last}"


def render_status(rep: dict[str, Any]) -> None:
    output.line(_notifier_line(rep))
    if rep.get("since"):
        output.line(f"notifications from {rep['since']} ({rep.get('since_why') or 'the first notifier started'})")
    output.line("events: " + (", ".join(rep["events"]) or "none"))
    output.line(
        f"the same event for one session at most once in {rep['repeat_after_s']:g}s; "
        f"at most {rep['max_per_minute']} a minute per target"
    )
    if not rep["targets"]:
        output.line("no [notify] urls configured")
    for t in rep["targets"]:
        state = (
            f"{t['sent']} sent"
            + (f" (last {t['last_sent_at']})" if t.get("last_sent_at") else "")
            + f", {t['owed']} owed"
        )
        if t["failures"]:
            output.line(
                f"  {t['url']}: {state}, ",
                (f"{t['failures']} failure(s) in a row", output.ALERT),
                f" (next try {t.get('next_try_at') or 'soon'}): {t['last_error']}",
            )
        else:
            output.line(f"  {t['url']}: {state}")
    if rep["recent"]:
        output.line(f"last {len(rep['recent'])} deliveries (oldest first):")
    for d in rep["recent"]:
        to = d.get("url") or f"target {d.get('target')} (no longer configured)"
        head = f"  {d.get('ts')}  {d.get('nid')}  {d.get('kind')}  {d.get('title')}  -> {to}"
        if d.get("ok"):
            output.line(head, ": sent")
        else:
            gave_up = "; given up" if d.get("gave_up") else ""
            output.line(head, ": ", ("failed", output.ALERT), f" ({d.get('error')}){gave_up}")
    output.problems(rep["problems"])
    render_inbox(rep.get("inbox") or {})


def render_inbox(service: dict[str, Any]) -> None:
    """The phone channels' service (`cocoplus inbox run`): running or what to run, and its recent failures."""
    if service.get("running"):
        output.line(f"phone: the inbox's process runs (pid {service.get('pid')}), pushing to "
                    f"{', '.join(service.get('channels') or []) or 'no channel'}")  # fmt: skip
    elif service.get("channels"):
        output.line("phone: ", ("not running", output.ALERT), f": {service.get('note')}")
    for line in service.get("failures") or []:
        output.line("  phone: ", ("delivery failed", output.ALERT), f": {line}")


def status(
    json_out: JsonFlag = False,
    last: Annotated[
        int, typer.Option("--last", min=0, max=1000, help="How many of the last deliveries to show.")
    ] = ops.RECENT,
) -> None:
    """Which notifier runs, where it reads from, targets (secrets
    hidden), what was sent when, what failed and what is owed."""
    output.show(ops.status(layout(), last), json_out, render_status)


def run() -> None:
    """Run the notifier in the foreground (`cocoplus supervision watcher run` and `cocoplus serve` run one
    themselves)."""
    raise typer.Exit(ops.run(layout()))


def register(app: typer.Typer) -> None:
    notify = typer.Typer(help="Notifications to the human: [notify] urls (apprise) and events.", no_args_is_help=True)
    app.add_typer(notify, name="notify")
    notify.command("test")(test)
    notify.command("status")(status)
    notify.command("run")(run)
