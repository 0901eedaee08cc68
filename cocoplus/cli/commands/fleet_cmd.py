"""The fleet: `relay run|status|stop` (this project's relay) and `fleet join|status|stop|resume|steer|dispatch`."""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any

import typer

from cocoplus.cli import output, project
from cocoplus.cli.commands import JsonFlag, layout
from cocoplus.core import clock
from cocoplus.core.errors import CocoplusError, NotInitialized
from cocoplus.ops import fleet as ops

Targets = Annotated[
    list[str] | None, typer.Argument(metavar="[TARGET]...", help="machine, machine/project or machine/project/alias.")
]
All = Annotated[bool, typer.Option("--all", help="Every project of every machine that has joined the fleet.")]
Wait = Annotated[
    float | None,
    typer.Option("--wait", metavar="S", help="Seconds to wait for acknowledgements (default: [fleet] ack_wait_s)."),
]
Operator = Annotated[str | None, typer.Option("--operator", help="Who is acting (default: your login name).")]


def _project_dir() -> str:
    """The project whose configuration names the fleet; outside any project, the working directory."""
    try:
        return layout().project
    except NotInitialized:
        if project.dir_flag is not None:  # a --dir that names no project is an error, not "no project"
            raise
        return os.getcwd()


def _ago(seconds: float | None) -> str:
    return "never" if seconds is None else clock.age_text(seconds) + " ago"


# -- relay --------------------------------------------------------------------------------------


def render_relay(st: dict[str, Any]) -> None:
    if not st.get("configured") and not st.get("running"):
        output.line("relay: no fleet is configured for this project (see 'The fleet' in the documentation)")
        return
    where = f"{st.get('fleet')}: {st.get('machine')}/{st.get('project')}"
    if not st.get("running"):
        output.line(f"relay: not running ({where}); `cocoplus fleet join` starts it")
    elif st.get("connected"):
        output.line(
            f"relay: {'started' if st.get('started') else 'running'}, pid {st['pid']}, "
            f"connected to {st.get('server')} ({where})"
        )
    else:
        output.line(f"relay: running, pid {st['pid']}, NOT connected ({where})")
    if st.get("last_error"):
        output.line(
            f"last error: {st['last_error']}" + (f"; retrying in {st['retry_in_s']}s" if st.get("retry_in_s") else "")
        )
    w = st.get("watching") or {}
    if st.get("running") and w.get("kind") and w["kind"] != "inotify":
        output.line(f"file events: {w['kind']}" + (f" because {w['why']}" if w.get("why") else ""))


def relay_run(
    polling: Annotated[bool, typer.Option("--polling", help="Poll the files instead of using inotify.")] = False,
) -> None:
    """Run this project's relay in the foreground (one per project)."""
    from cocoplus.fleet import options  # deferred: only `relay run` reads the fleet's options here
    from cocoplus.relay import service  # deferred: nats-py, for `relay run` alone

    lay = layout()
    raise typer.Exit(service.run(lay, options.load(lay.project), polling=polling))


def relay_status(json_out: JsonFlag = False) -> None:
    """Is the relay running, connected, and its last error."""
    output.show(ops.relay_status(layout()), json_out, render_relay)


def render_relay_stop(st: dict[str, Any]) -> None:
    if st["stopped"]:
        output.line(f"relay stopped (pid {st['pid']})")
    elif st.get("running"):
        output.line(f"relay not stopped: {st.get('why')}" + (f" (pid {st['pid']})" if st.get("pid") else ""))
    else:
        output.line(f"relay: {st.get('why')}")


def relay_stop(json_out: JsonFlag = False) -> None:
    """Stop this project's relay (exit 1 while it still runs)."""
    st = ops.relay_stop(layout())
    output.show(st, json_out, render_relay_stop)
    if st["running"]:
        raise typer.Exit(1)


def join(json_out: JsonFlag = False) -> None:
    """Join this project to the fleet: start its relay and say whether it connected."""
    st = ops.join(layout())
    output.show(st, json_out, render_relay)


# -- fleet ---------------------------------------------------------------------------------------


def _kill(ks: dict[str, Any] | None) -> tuple[str, str] | str:
    ks = ks or {}
    if ks.get("present") is None:
        return ("kill switch unknown", output.ALERT)
    if ks.get("present"):
        return (f"STOPPED by {ks.get('operator') or 'unknown'}: {ks.get('reason') or 'no reason'}", output.ALERT)
    return "not stopped"


def render_status(st: dict[str, Any]) -> None:
    s = st["summary"]
    output.line(
        f"fleet {st['fleet']} via {st.get('server')}: {s['machines']} machine(s), {s['online']} online; "
        f"{s['projects']} project(s), {s['stopped']} stopped; {s['pending_commands']} command(s) pending"
    )
    for mach in st["machines"]:
        up = "online" if mach["online"] else ("OFFLINE", output.WARN)
        output.line(f"{mach['machine']}  ", up, f"  heard {_ago(mach['last_heard_s'])}")
        for p in mach["projects"]:
            run = (p.get("run_state") or {}).get("state") or "-"
            output.line(
                f"  {p['project']}  {run}  ",
                _kill(p.get("kill_switch")),
                "" if p["online"] else f"  (offline, heard {_ago(p['last_heard_s'])})",
            )
            for c in p["pending_commands"]:
                output.line(
                    f"    pending: {c['type']} {c['id']} from {c.get('operator')} on {c.get('from')} at "
                    f"{c.get('sent_at')}"
                )
            if (p["pending_count"] or 0) > len(p["pending_commands"]):
                output.line(f"    ... {p['pending_count'] - len(p['pending_commands'])} more pending")
            sup = p.get("supervision") or {}
            if sup.get("enabled"):
                output.line(f"    supervision on, turns {sup.get('turns_used')}/{sup.get('max_turns')}")
            for sess in p["sessions"]:
                att = sess.get("attention") or "-"
                output.line(
                    f"    {sess.get('alias')}  {sess.get('runtime')}  {sess.get('state')}  attention {att}  last "
                    f"{sess.get('last_event') or '-'}"
                )


def status(json_out: JsonFlag = False) -> None:
    """Every machine, project and session: state, attention, kill switch, pending commands, last heard."""
    output.show(ops.status(_project_dir()), json_out, render_status)


def render_sent(res: dict[str, Any]) -> None:
    cmd = res["command"]
    skipped = f", {res['skipped']} skipped" if res.get("skipped") else ""
    output.line(f"fleet {cmd['type']} {cmd['batch']}: {res['acknowledged']} of {res['total']} acknowledged{skipped}")
    for r in res["targets"]:
        if r.get("skipped"):
            output.line(f"  {r['target']}  skipped: {r['skipped']}")
        elif r["acknowledged"]:
            ms = f"  {r['ack_latency_s'] * 1000:.0f} ms" if r.get("ack_latency_s") is not None else ""
            if r["ok"]:
                got = r.get("result") or {}
                said = got.get("message") if r.get("session") else None
                if said and got.get("route"):
                    said = f"{got['route']}, {said}"
                output.line(f"  {r['target']}  acknowledged{ms}" + (f": {said}" if said else ""))
            else:
                output.line(f"  {r['target']}  ", ("FAILED: " + str(r.get("error")), output.ALERT), ms)
        elif not r["sent"]:
            output.line(f"  {r['target']}  ", (str(r.get("error")), output.ALERT))
        elif r["online"]:
            output.line(
                f"  {r['target']}  ",
                ("no answer yet", output.WARN),
                f"; pending, applied when its relay takes it ({_ago(r['last_heard_s'])} heard)",
            )
        else:
            output.line(
                f"  {r['target']}  ",
                ("offline", output.WARN),
                f", last heard {_ago(r['last_heard_s'])}; pending, applied when its relay returns",
            )
    if res["not_answered"]:
        output.line(
            "not answered yet: "
            + ", ".join(res["not_answered"])
            + " (`cocoplus fleet status` shows the pending commands)"
        )


def _finish(res: dict[str, Any], json_out: bool) -> None:
    output.show(res, json_out, render_sent)
    if res["acknowledged"] + res.get("skipped", 0) < res["total"] or res["failed"]:
        raise typer.Exit(1)


def stop(
    targets: Targets = None,
    every: All = False,
    reason: Annotated[str | None, typer.Option("--reason", help="Why (shown to the agents and in AGENT_STOP).")] = None,
    operator: Operator = None,
    wait: Wait = None,
    json_out: JsonFlag = False,
) -> None:
    """Stop agents on other machines: AGENT_STOP on each target, once its relay acknowledges (exit 1 until all have)."""
    _finish(ops.stop(_project_dir(), list(targets or []), every, reason, operator, wait), json_out)


def _confirm_stops(rows: list[dict[str, Any]]) -> bool:
    """Show the stop each target's resume names, and ask once: only these are lifted, never a newer one."""
    for r in rows:
        stop = r.get("stop") or {}
        output.line(
            f"  {r['target']}: stopped by {stop.get('operator') or 'unknown'} at {stop.get('created_at') or '?'}: "
            f"{stop.get('reason') or 'no reason'} ({stop.get('id')})"
            + ("; sent from here, not yet heard to have arrived" if stop.get("sent_from_here") else "")
        )
    return bool(typer.confirm(f"Lift {'this stop' if len(rows) == 1 else 'these stops'}?", default=False))


def resume(
    targets: Targets = None,
    every: All = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    operator: Operator = None,
    wait: Wait = None,
    json_out: JsonFlag = False,
) -> None:
    """Lift the stop each target last reported, after confirming: a stop made there since is kept (exit 1 until
    every target has acknowledged; a target that was not stopped is skipped). A stop this machine sent a target
    that has not been heard from since is the one named: it is lifted when both arrive, and never another."""
    if not yes and not sys.stdin.isatty():
        raise CocoplusError(
            "fleet resume needs confirmation and stdin is not a terminal", hint="pass --yes to resume without asking"
        )
    confirm = None if yes else _confirm_stops
    _finish(ops.resume(_project_dir(), list(targets or []), every, operator, wait, confirm=confirm), json_out)


def steer(
    target: Annotated[str, typer.Argument(help="machine, machine/project or machine/project/alias.")],
    text: Annotated[list[str], typer.Argument(help="The instruction.")],
    operator: Operator = None,
    wait: Wait = None,
    json_out: JsonFlag = False,
) -> None:
    """A one-shot instruction for the target's next prompt, written there as `session steer` writes it."""
    _finish(ops.steer(_project_dir(), target, " ".join(text), operator, wait), json_out)


def dispatch(
    target: Annotated[str, typer.Argument(help="machine/project/alias: one session on another machine.")],
    instruction: Annotated[list[str], typer.Argument(help="The next piece of work for that session.")],
    operator: Operator = None,
    wait: Wait = None,
    json_out: JsonFlag = False,
) -> None:
    """The next piece of work for one session of the fleet, as `cocoplus dispatch` there (the answer names the
    route)."""
    _finish(ops.dispatch(_project_dir(), target, " ".join(instruction), operator, wait), json_out)


def register(app: typer.Typer) -> None:
    relay = typer.Typer(
        help="This project's fleet relay: mirrors .cocoplus/ to the fleet, applies fleet commands.",
        no_args_is_help=True,
    )
    app.add_typer(relay, name="relay")
    relay.command("run")(relay_run)
    relay.command("status")(relay_status)
    relay.command("stop")(relay_stop)
    fleet = typer.Typer(help="Projects on many machines joined over NATS JetStream.", no_args_is_help=True)
    app.add_typer(fleet, name="fleet")
    fleet.command("join")(join)
    fleet.command("status")(status)
    fleet.command("stop")(stop)
    fleet.command("resume")(resume)
    fleet.command("steer")(steer)
    fleet.command("dispatch")(dispatch)
