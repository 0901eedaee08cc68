"""`cocoplus inbox`, `cocoplus decide ID ACTION`, `cocoplus inbox run`, `cocoplus inbox pair` and `cocoplus inbox
devices`: the decisions waiting for the operator in all their projects, the process that pushes them to the phone,
and the phone that answers them on the decision page."""

from __future__ import annotations

import io
import sys
from typing import Annotated, Any

import typer

from cocoplus.cli import output
from cocoplus.cli.commands import JsonFlag, optional_layout
from cocoplus.core import inert
from cocoplus.core.errors import CocoplusError
from cocoplus.ops import inbox as ops


def who(d: dict[str, Any]) -> str:
    """Who waits: the session's alias, its worker, and the worker's own subagent that asks (`cc1 w1/Explore`)."""
    worker = f"{d['worker']}/{d['agent']}" if d.get("worker") and d.get("agent") else d.get("worker")
    words = [str(w) for w in (d.get("alias"), worker) if w]
    return inert.line(" ".join(dict.fromkeys(words))) if words else "-"


def render_inbox(result: dict[str, Any]) -> None:
    found = result["decisions"]
    if not found:
        output.line("nothing is waiting for you")
    rows = [[d["id"], d["kind"], _project(d), who(d), d["summary"], d.get("deadline") or "-"] for d in found]
    if rows:
        cols = [("ID", True), ("KIND", True), ("PROJECT", True), ("WHO", True), ("WAITS FOR", False),
                ("DEFAULT AT", True)]  # fmt: skip
        for text in output.table(cols, rows, output.terminal_width()):
            output.line(text)
    render_service(result.get("service") or {})
    output.problems(result.get("problems") or [])


def render_service(service: dict[str, Any]) -> None:
    """The inbox process's state: running or what to run, where to subscribe, the recent delivery failures."""
    from cocoplus.inbox import runner  # deferred: only a listing shows the service

    if service.get("running"):
        output.line(f"the inbox's process runs (pid {service.get('pid')}): pushes go to "
                    f"{', '.join(service.get('channels') or []) or 'no channel'}")  # fmt: skip
    subscribe = runner.subscribe_line(service.get("settings"))
    if subscribe:
        output.line(subscribe)
    if service.get("note"):
        output.problems([service["note"]], label="note")
    if service.get("problem"):
        output.problems([service["problem"]])
    if service.get("failures"):
        output.problems(service["failures"], label="delivery failed")


def _project(d: dict[str, Any]) -> str:
    from cocoplus.inbox import decisions  # deferred: only a listing names projects

    return decisions.project_name(d)


def inbox(ctx: typer.Context, json_out: JsonFlag = False) -> None:
    """Everything waiting for you in all your projects: permission requests, questions, stops, paused workers."""
    if ctx.invoked_subcommand is None:
        output.show(ops.inbox(optional_layout()), json_out, render_inbox)


def decide(
    ident: Annotated[str, typer.Argument(help="The decision's id, as `cocoplus inbox` shows it.")],
    action: Annotated[str, typer.Argument(help="One of the actions the decision takes (approve, deny, answer, ...).")],
    text: Annotated[
        str | None, typer.Option("--text", help="The answer to a question, or the reason a denial gives.")
    ] = None,
    json_out: JsonFlag = False,
) -> None:
    """Answer one decision of the inbox: approve, deny, answer, resume, leave."""
    result = ops.decide(ident, action, text=text, channel="cli", layout=optional_layout())
    output.show(result, json_out, lambda r: output.line(r["message"]))


def run() -> None:
    """Run this user's inbox process in the foreground: push each open decision to your phone channels and apply
    the taps that come back (one per user; `cocoplus launch`, the watcher and `cocoplus serve` start it detached)."""
    from cocoplus.inbox import runner, settings  # deferred: only the process reads the channels' settings
    from cocoplus.ops import inbox_service  # deferred: as settings

    configured = settings.read()
    if not configured.configured:
        raise CocoplusError(
            f"{configured.shown()['file']}: no [inbox] channels are configured, so there is nothing to push to",
            hint='set `channels = ["ntfy"]` under [inbox] there (docs/guides/phone.md)',
        )
    channels, problems = settings.channels(configured)
    for line in problems:
        output.problems([line])
    if not channels:
        raise CocoplusError("no [inbox] channel can be used (see above)")
    subscribe = runner.subscribe_line(configured.shown())
    output.line(f"cocoplus inbox run: pushing to {', '.join(c.channel for c in channels)}")
    if subscribe:
        output.line(subscribe)
    inbox_service.serve(configured, channels, say=_say)


def _say(text: str) -> None:
    import sys  # deferred: only the long-running process flushes each line (its log is a file)

    output.line(text)
    sys.stdout.flush()


def render_pair(result: dict[str, Any]) -> None:
    import segno  # deferred: only pairing draws a QR code

    buf = io.StringIO()
    segno.make(result["link"], error="m").terminal(out=buf, compact=True, border=2)
    sys.stdout.write(buf.getvalue())
    output.line(f"Scan it with your phone, or open this link on it (once, until {result['expires_at']}):")
    output.line(result["link"])
    output.line(f"The phone is then paired as \u201c{result['name']}\u201d; `cocoplus inbox devices` lists devices.")


def pair(
    name: Annotated[str, typer.Option("--name", help="What to call the device in `cocoplus inbox devices`.")] = "phone",
    json_out: JsonFlag = False,
) -> None:
    """Pair your phone with the decision page: a QR code and a one-time link (10 minutes) that give it a device
    token; needs `cocoplus serve --public URL` running."""
    from cocoplus.ops import devices as devices_ops  # deferred: only pairing needs it

    output.show(devices_ops.pair(name), json_out, render_pair)


def render_devices(result: dict[str, Any]) -> None:
    found = result.get("devices") or []
    if result.get("device"):
        output.line(result["message"])
        return
    if not found:
        output.line("no device is paired (`cocoplus inbox pair` pairs one)")
        return
    rows = [[d["id"], inert.line(d.get("name") or "-"), d.get("paired_at") or "-",
             f"revoked {d['revoked_at']}" if d.get("revoked_at") else "paired"] for d in found]  # fmt: skip
    for text in output.table([("ID", True), ("NAME", False), ("PAIRED AT", True), ("STATE", True)], rows,
                             output.terminal_width()):  # fmt: skip
        output.line(text)


def devices(
    revoke: Annotated[
        str | None, typer.Option("--revoke", help="Revoke this device (its id): its next request is refused.")
    ] = None,
    json_out: JsonFlag = False,
) -> None:
    """The devices paired with the decision page; --revoke ID takes one's access away at once."""
    from cocoplus.ops import devices as devices_ops  # deferred: as pair

    result = devices_ops.revoke(revoke) if revoke else devices_ops.listing()
    output.show(result, json_out, render_devices)


def register(app: typer.Typer) -> None:
    group = typer.Typer(
        help="Everything waiting for you in all your projects: permission requests, questions, stops, paused workers.",
        invoke_without_command=True,
    )
    group.callback()(inbox)
    group.command("run")(run)
    group.command("pair")(pair)
    group.command("devices")(devices)
    app.add_typer(group, name="inbox")
    app.command("decide")(decide)
