"""`cocoplus session status|progress|check|steer|stop|resume|queue ...`."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer

from cocoplus.cli import output, session_views
from cocoplus.cli.commands import JsonFlag, layout, queue_cmd
from cocoplus.cli.session_views import cap_words
from cocoplus.core import inert
from cocoplus.core.errors import CocoplusError, UsageError
from cocoplus.ops import session as ops
from cocoplus.session import killswitch

# -- status ----------------------------------------------------------------------------------


def status(json_out: JsonFlag = False) -> None:
    """Handoff freshness, predicates, queued work, budgets, run state, kill switch, pending steer."""
    code = session_views.status(json_out)
    if code:
        raise typer.Exit(code)


# -- progress, check -------------------------------------------------------------------------


def render_progress(rep: dict[str, Any]) -> None:
    if not rep["exists"]:
        raise CocoplusError(f"{rep['path']}: missing", hint="run `cocoplus init` to create the handoff template")
    for title, sec in rep["sections"].items():
        output.rule(title)
        if sec is None:
            output.line("(section missing)")
        elif sec["text"]:
            output.line(sec["text"])
        elif not (rep.get("ctx", {}).get(title) or (rep.get("queue") or {}).get(title)):
            output.line("(empty)")
        for item in rep.get("ctx", {}).get(title, []):
            output.line(f"[ctx] {item}")
        queue_cmd.render_queued_items(rep, title)
    if rep.get("ctx_note"):
        output.line(rep["ctx_note"])


def progress(json_out: JsonFlag = False) -> None:
    """Print PROGRESS.md's Done / In Progress / Next / Notes."""
    output.show(ops.progress(layout()), json_out, render_progress)


def render_check(result: dict[str, Any]) -> None:
    for r in result["checks"]:
        output.line(("ok  ", "green") if r["ok"] else ("FAIL", output.ALERT), f"  {r['check']}: {r['detail']}")
    bad = [r for r in result["checks"] if not r["ok"]]
    if bad:
        output.error_line(f"{len(bad)} check(s) failed: " + "; ".join(r["detail"] for r in bad))


def check(json_out: JsonFlag = False) -> None:
    """Check the exit criteria: handoff sections, predicates,
    canonical states, budget states (exit 1 naming what is wrong)."""
    result = ops.check(layout())
    output.show(result, json_out, render_check)
    if not result["ok"]:
        raise typer.Exit(1)


# -- controls ----------------------------------------------------------------------------------


def _warnings(result: dict[str, Any]) -> None:
    """Bookkeeping that failed while the action itself succeeded (one line each, stderr)."""
    output.problems(result.get("problems") or [], "warning")


SessionOpt = Annotated[
    str | None,
    typer.Option(
        "--session",
        "-s",
        help="Only this session: an alias such as cc1, a cs_ id or the runtime's session id; machine/project/alias "
        "for one on another machine of the fleet.",
    ),
]


def render_fleet(result: dict[str, Any]) -> None:
    """A session on another machine: its answer, through the fleet."""
    f = result["fleet"]
    how = (
        f"acknowledged in {f['ack_latency_s'] * 1000:.0f} ms"
        if f.get("acknowledged") and f.get("ack_latency_s") is not None
        else "not acknowledged yet"
    )
    output.line(f"{f['target']} (fleet, {how}): ", result["message"])
    _warnings(result)


def render_steer(result: dict[str, Any]) -> None:
    if "fleet" in result:
        render_fleet(result)
    elif "session" in result:
        output.line(result["message"])
    else:
        what = "added after the pending steer" if result["appended"] else "written"
        output.line(f"steer {what}; it will be injected once into the agent's next prompt")
    _warnings(result)


def steer(
    instruction: Annotated[str, typer.Argument(help="The instruction for the agent's next prompt.")],
    session: SessionOpt = None,
    json_out: JsonFlag = False,
) -> None:
    """Queue a one-shot instruction, injected once into the agent's next prompt (with --session: that session's
    only)."""
    lay = layout()
    result = ops.steer(lay, instruction) if session is None else ops.steer_session(lay, session, instruction)
    output.show(result, json_out, render_steer)


def render_stop(result: dict[str, Any]) -> None:
    if "fleet" in result:
        render_fleet(result)
        return
    if "session" in result:
        who = result.get("alias") or result["session"]
        s = result["stop"]
        output.line(f"{who} stopped by ", s["operator"], " at ", s["created_at"], ": ", s["reason"])
        output.line(
            f"its tools are now blocked, other sessions carry on; `cocoplus session resume --session {who}` lifts it"
        )
        _warnings(result)
        return
    s = result["stop"]
    if result.get("kept_existing"):
        output.line("AGENT_STOP was already present and is kept (it could not be rewritten)")
    else:
        output.line("AGENT_STOP created by ", s["operator"], " at ", s["created_at"], ": ", s["reason"])
    carried = result.get("carried_by") or {}
    if carried:
        output.line("agent tools are now blocked (" + "; ".join(f"{rt}: {how}" for rt, how in carried.items()) + ")")
        output.line("`cocoplus session resume` lifts the stop")
    else:
        output.line(
            "AGENT_STOP is in place, but no runtime's cocoplus hooks are installed for this project (nor a cocoplus "
            "plugin for you): no agent will see it until they are "
            "(`cocoplus install claude|codex|gemini|cursor|cortex|antigravity`)"
        )
    _warnings(result)


def stop(
    reason: Annotated[str, typer.Option("--reason", "-r", help="Why the agent is stopped.")] = "stopped by operator",
    operator: Annotated[
        str | None, typer.Option("--operator", "-o", help="Who stops it (default: your login name).")
    ] = None,
    session: SessionOpt = None,
    json_out: JsonFlag = False,
) -> None:
    """Create AGENT_STOP: every agent tool call is blocked until `session resume` (with --session: that session's
    only)."""
    lay = layout()
    result = ops.stop(lay, reason, operator) if session is None else ops.stop_session(lay, session, reason, operator)
    output.show(result, json_out, render_stop)


def render_resume(result: dict[str, Any]) -> None:
    if "fleet" in result:
        render_fleet(result)
        return
    if "session" in result:
        output.line(result["message"])
        _warnings(result)
        return
    if result["resumed"]:
        output.line("AGENT_STOP removed; status running")
    elif result.get("kept"):
        output.line(result["message"])
    else:
        output.line("nothing to resume: no AGENT_STOP is present; nothing was changed")
    reset = result.get("budget_reset")
    if reset:
        cap = cap_words(reset["cap"], reset.get("limits_from"))
        output.line(f"iteration budget reset: {reset['consumed']} of {reset['cap']} tool calls used ({cap})")
    _warnings(result)
    ib = result.get("iteration_budget")
    if result.get("iteration_budget_exhausted") and ib:
        output.note(
            f"cocoplus: note: the iteration budget is used up: {min(ib['consumed'], ib['cap'])} of {ib['cap']} tool "
            f"calls ({cap_words(ib['cap'], ib.get('limits_from'))}); the next tool call stops the agent again. Use "
            "`session resume --reset-budget`, or raise [session] max_iterations."
        )


def resume(
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    reset_budget: Annotated[
        bool,
        typer.Option(
            "--reset-budget",
            help="Also start the iteration count again from 0, against the cap cocoplus.toml sets now.",
        ),
    ] = False,
    session: SessionOpt = None,
    json_out: JsonFlag = False,
) -> None:
    """Remove AGENT_STOP after confirming, so the agent may use
    tools again (with --session: lift that session's stop only)."""
    lay = layout()
    if session is not None:
        if not yes:
            if not sys.stdin.isatty():
                raise CocoplusError(
                    "resume needs confirmation and stdin is not a terminal", hint="pass --yes to resume without asking"
                )
            if not typer.confirm(f"Let session {session} use tools again?", default=False):
                raise CocoplusError("resume cancelled; the session stays stopped")
        if reset_budget:
            raise UsageError("--reset-budget applies to the project-wide resume, not to one session")
        output.show(ops.resume_session(lay, session), json_out, render_resume)
        return
    info = killswitch.read_stop(lay)
    if info is not None and not yes:
        if not sys.stdin.isatty():
            raise CocoplusError(
                "resume needs confirmation and stdin is not a terminal", hint="pass --yes to resume without asking"
            )
        what = f"AGENT_STOP by {info.get('operator') or 'unknown'}: {info.get('reason') or 'no reason'}"
        if not typer.confirm(f"{what}. Resume the agent?", default=False):
            raise CocoplusError("resume cancelled; AGENT_STOP left in place")
        # Remove the stop that was confirmed, not one made while the question was on screen.
        output.show(ops.resume(lay, reset_budget=reset_budget, expect=info.get("token")), json_out, render_resume)
        return
    output.show(ops.resume(lay, reset_budget=reset_budget), json_out, render_resume)


# -- queue -------------------------------------------------------------------------------------


def render_resume_at(result: dict[str, Any]) -> None:
    who = inert.line(result.get("alias") or result["session"])
    output.line(f"{who}: {inert.line(result.get('paused') or 'resume scheduled')}")
    if result.get("note"):
        output.note(f"cocoplus: note: {result['note']}")


def resume_at(
    session: Annotated[str, typer.Argument(help="The session paused by a limit: an alias such as cc1, or its id.")],
    when: Annotated[
        str,
        typer.Argument(
            metavar="TIME", help="HH:MM (local time, the next such moment), an ISO 8601 time, or +30m / +2h / +90s."
        ),
    ],
    json_out: JsonFlag = False,
) -> None:
    """Resume a session paused by its runtime's rate or usage limit at TIME (the watcher dispatches it then)."""
    output.show(ops.resume_at(layout(), session, when), json_out, render_resume_at)


def render_queued(rec: dict[str, Any]) -> None:
    output.line(f"queued {rec['id']}: ", rec["request"])


def queue_add(
    request: Annotated[str, typer.Argument(help="The request; it goes to Next, not replacing the current item.")],
    json_out: JsonFlag = False,
) -> None:
    """Append a request to the task queue."""
    output.show(ops.queue_add(layout(), request), json_out, render_queued)


def render_queue(result: dict[str, Any]) -> None:
    if not result["items"]:
        output.line("no pending requests")
    for i in result["items"]:
        output.line(f"{i['id']}  {i['state']:<7}  ", i["request"])
    output.problems(result["problems"])


def queue_list(
    all_items: Annotated[bool, typer.Option("--all", help="Include done and dropped requests.")] = False,
    json_out: JsonFlag = False,
) -> None:
    """Show pending requests."""
    output.show(ops.queue_list(layout(), all_items), json_out, render_queue)


def render_queue_done(rec: dict[str, Any]) -> None:
    output.line(f"{rec['id']}: {rec['state']}")


def queue_done(
    queue_id: Annotated[str, typer.Argument(help="The request id (q_...).")],
    drop: Annotated[bool, typer.Option("--drop", help="Mark it dropped instead of done.")] = False,
    json_out: JsonFlag = False,
) -> None:
    """Mark a queued request done (or dropped)."""
    output.show(ops.queue_done(layout(), queue_id, drop), json_out, render_queue_done)


def sessions_list(json_out: JsonFlag = False) -> None:
    """The agent sessions the hooks have seen: id, alias, runtime, state, attention and last event."""
    session_views.sessions_list(json_out)


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Operator view and controls of the current work session.", no_args_is_help=True)
    app.add_typer(group, name="session")
    commands: tuple[tuple[str, Callable[..., None]], ...] = (
        ("status", status),
        ("list", sessions_list),
        ("progress", progress),
        ("steer", steer),
        ("stop", stop),
        ("resume", resume),
        ("resume-at", resume_at),
        ("check", check),
    )
    for name, fn in commands:
        group.command(name)(fn)
    qgroup = typer.Typer(help="Mid-session requests (task-queue.jsonl).", no_args_is_help=True)
    group.add_typer(qgroup, name="queue")
    queue_commands: tuple[tuple[str, Callable[..., None]], ...] = (
        ("add", queue_add),
        ("list", queue_list),
        ("done", queue_done),
        ("promote", queue_cmd.queue_promote),
    )
    for name, fn in queue_commands:
        qgroup.command(name)(fn)
    # `sessions list`, its first name, is `session list` under its older name (hidden in `--help`).
    sessions = typer.Typer(help="Same as `cocoplus session list` (its first name, kept).", no_args_is_help=True)
    app.add_typer(sessions, name="sessions")
    sessions.command("list")(sessions_list)
