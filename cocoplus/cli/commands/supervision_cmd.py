"""Supervision: `supervision ...`, `supervise`, `supervisor ...`, worker signals, `workflow ...`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer

from cocoplus.cli import output
from cocoplus.cli.commands import JsonFlag, layout
from cocoplus.core import keys
from cocoplus.ops import supervision as ops
from cocoplus.ops import worker as worker_ops
from cocoplus.supervision import watcher

Session = Annotated[
    str | None,
    typer.Option(
        "--session", help="The session this worker is (cs_ id or alias); default: from the runtime's environment."
    ),
]

TURNS_HELP = f"Turn cap (default: [supervision] max_turns, else {keys.BY_DOTTED['supervision.max_turns'].default})."


def _who(entries: list[dict[str, Any]]) -> str:
    return ", ".join(e.get("alias") or e["id"] for e in entries)


def render_status(st: dict[str, Any]) -> None:
    """Supervision's state: on or off, turns, goal, scope, and the watcher."""
    auto = st.get("autonomous")
    sup = st.get("supervisor")
    if auto is None:
        output.line("supervision: never enabled")
    else:
        on = "on" if auto.get("enabled") else "off"
        output.line(
            f"supervision: {on}; turns {auto.get('turns_used')}/{auto.get('max_turns')}; goal: ",
            auto.get("task_hint") or "-",
        )
        if not auto.get("enabled") and auto.get("finish_reason"):
            output.line(
                f"ended: {auto.get('finish_reason')}"
                + (f"; summary: {auto['finish_summary']}" if auto.get("finish_summary") else "")
            )
        sc = auto.get("scope") or {}
        only = f" (only {_who(sc['only'])})" if sc.get("only") else ""
        output.line(
            f"scope: {sc.get('mode')}{only}; excluded: {_who(sc.get('excluded', [])) or 'none'}; "
            "supervised now: "
            + ((", ".join(sc.get("supervised", [])) or "none") if auto.get("enabled") else "none (supervision is off)")
        )
        if auto.get("goal_id"):
            output.line(f"goal id: {auto['goal_id']} (cocoplus replay {auto['goal_id']} --policy FILE)")
    if sup is not None:
        if sup.get("running"):
            w = sup.get("watching") or {}
            how = (
                f"; file events: {w['kind']}" + (f" because {w['why']}" if w.get("why") else "")
                if w.get("kind")
                else ""
            )
            output.line(f"watcher: {'started' if sup.get('started') else 'running'}, pid {sup['pid']}{how}")
        else:
            output.line(
                "watcher: not running"
                + ("; `cocoplus supervision watcher run` starts it" if auto and auto.get("enabled") else "")
            )
    render_rounds(st)


def render_rounds(st: dict[str, Any]) -> None:
    """The round in progress, the last round's outcome and actions (with how to undo each), other recent actions."""
    cur, last = st.get("round_in_progress"), st.get("last_round")
    if cur:
        output.line(f"round {cur['number']} in progress since {cur.get('started_at')}")
        for a in cur.get("actions") or []:
            _action_line(a)
    if last:
        failed = last.get("outcome") == "failed"
        output.line("last round: ", (last["text"], output.ALERT if failed else ""))
        for a in last.get("actions") or []:
            _action_line(a)
    numbers = {r.get("number") for r in (cur, last) if r}
    other = [a for a in st.get("recent_actions") or [] if a.get("round") is None or a.get("round") not in numbers]
    if other:
        output.line("other recent actions:")
        for a in other:
            _action_line(a)


def _action_line(a: dict[str, Any]) -> None:
    where = f"round {a['round']}" if a.get("round") is not None else "outside a round"
    text = f"  {str(a.get('ts') or '')[11:19]} {a['text']} (by {a.get('actor') or a.get('by') or '?'}, {where})"
    if a.get("undo"):
        text += f"; undo: `{a['undo']}`"
    output.line(text)


def render_change(out: dict[str, Any]) -> None:
    """What an enable did to the goal and the turns (a second /supervise, an enable without a goal)."""
    ch = out.get("change") or {}
    goal = ch.get("goal")
    if goal == "replaced":
        output.line(f"goal replaced (it was: {ch.get('previous_goal')})")
    elif goal == "kept":
        output.line(f"no goal given: kept the previous goal ({ch.get('previous_goal')})")
    if ch.get("turns_reset_from"):
        output.line(f"turns reset to 0 ({ch['turns_reset_from']} were used before)")


def render_enabled(out: dict[str, Any]) -> None:
    render_status(out)
    render_change(out)


def status(json_out: JsonFlag = False) -> None:
    """supervision_status: state, turns, scope, and whether the watcher runs."""
    output.show(ops.status(layout()), json_out, render_status)


def enable(
    task_hint: Annotated[str | None, typer.Option("--task-hint", help="The supervision goal.")] = None,
    max_turns: Annotated[int | None, typer.Option("--max-turns", help=TURNS_HELP)] = None,
    scope_mode: Annotated[str | None, typer.Option("--scope-mode", help="all, only or except.")] = None,
    session: Annotated[
        list[str] | None, typer.Option("--session", help="Session ids or aliases for --scope-mode (repeatable).")
    ] = None,
    start_supervisor: Annotated[
        bool, typer.Option("--start-supervisor", help="Also start the watcher if none runs.")
    ] = False,
    json_out: JsonFlag = False,
) -> None:
    """enable_supervision: turn supervision on (calling again resets turns_used)."""
    result = ops.enable(layout(), task_hint, max_turns, scope_mode, list(session or []), start_supervisor)
    output.show(result, json_out, render_enabled)


def finish(
    summary: Annotated[str | None, typer.Option("--summary", help="What was achieved.")] = None,
    reason: Annotated[
        str | None,
        typer.Option("--reason", help="Why supervision ends (recorded as finish_reason; default: who turned it off)."),
    ] = None,
    json_out: JsonFlag = False,
) -> None:
    """finish_supervision: turn supervision off and record the summary."""
    output.show(ops.finish(layout(), summary, reason), json_out, render_status)


def render_scope(view: dict[str, Any]) -> None:
    output.line(f"scope {view['mode']}; supervised now: {', '.join(view['supervised']) or 'none'}")
    for u in view.get("unknown_ids", []):
        output.note(f"cocoplus: note: no session {u!r}; ignored")


def scope(
    mode: Annotated[str, typer.Argument(help="all, only, except or invert")],
    ids: Annotated[
        list[str] | None, typer.Argument(help="Session ids or aliases (only/except need at least one valid one).")
    ] = None,
    json_out: JsonFlag = False,
) -> None:
    """set_supervision_scope: which sessions may wake the main brain."""
    output.show(ops.set_scope(layout(), mode, list(ids or [])), json_out, render_scope)


def render_excluded(view: dict[str, Any]) -> None:
    output.line(f"{view['alias']}: {'excluded from' if view['excluded'] else 'included in'} supervision")


SessionRef = Annotated[str, typer.Argument(help="Session id or alias.")]


def exclude(session_id: SessionRef, json_out: JsonFlag = False) -> None:
    """Stop this session from waking the main brain."""
    output.show(ops.set_excluded(layout(), session_id, True), json_out, render_excluded)


def include(session_id: SessionRef, json_out: JsonFlag = False) -> None:
    """Let this session wake the main brain again."""
    output.show(ops.set_excluded(layout(), session_id, False), json_out, render_excluded)


def render_supervise(out: dict[str, Any]) -> None:
    render_enabled(out)
    r = out["initial_round"]
    output.line("initial round: " + (f"started, round {r['round']}" if r.get("started") else str(r.get("why"))))
    relay = out.get("relay")
    if relay is not None:
        why = relay.get("last_error") or relay.get("error") or "starting"
        output.line("fleet relay: " + ("connected" if relay.get("connected") else f"not connected ({why})"))


def render_unchanged(out: dict[str, Any]) -> None:
    """A bare `supervise`: the current supervision, and how to start (or restart) it."""
    render_status(out)
    output.line(out["hint"])


def supervise(
    goal: Annotated[list[str] | None, typer.Argument(help="The supervision goal (task_hint).")] = None,
    max_turns: Annotated[int | None, typer.Option("--max-turns", help=TURNS_HELP)] = None,
    again: Annotated[
        bool, typer.Option("--again", help="Restart supervision with the last goal (turns start again from 0).")
    ] = False,
    json_out: JsonFlag = False,
) -> None:
    """/supervise GOAL: enable supervision, start the watcher, and run one round now. With no GOAL it changes
    nothing and shows the current supervision; --again restarts it with the last goal."""
    text = " ".join(goal or []).strip() or None
    out = ops.supervise(layout(), text, max_turns, again=again)
    output.show(out, json_out, render_unchanged if out.get("unchanged") else render_supervise)


def supervisor_run(
    polling: Annotated[bool, typer.Option("--polling", help="Poll instead of using inotify.")] = False,
) -> None:
    """Run the watcher in the foreground (one per project); it starts this user's `cocoplus inbox run` when phone
    channels are configured and it does not run."""
    from cocoplus.inbox import runner  # deferred: only the watcher's process starts the phone's service

    runner.ensure_running()
    raise typer.Exit(watcher.Supervisor(layout(), polling=polling or None).run())


def render_supervisor(st: dict[str, Any]) -> None:
    output.line("watcher: " + (f"running, pid {st['pid']}" if st["running"] else "not running"))
    if st.get("round"):
        output.line(f"round {st['round']['number']} in progress (task {st['round']['task']})")
    render_status({"autonomous": st.get("autonomous")})


def supervisor_status(json_out: JsonFlag = False) -> None:
    """Is the watcher running, and the current round."""
    output.show(ops.supervisor_status(layout()), json_out, render_supervisor)


def render_supervisor_stop(st: dict[str, Any]) -> None:
    output.line(f"watcher stopped (pid {st['pid']})" if st["stopped"] else f"watcher not stopped: {st.get('why')}")
    if st.get("finished"):
        output.line("supervision finished")
    if st.get("still_enabled"):
        output.note(
            "cocoplus: note: supervision is still on, but with no watcher no round runs; "
            "`cocoplus supervision watcher stop --finish` turns it off, "
            "`cocoplus supervision watcher run` starts a watcher"
        )


def supervisor_stop(
    finish_too: Annotated[bool, typer.Option("--finish", help="Also turn supervision off.")] = False,
    json_out: JsonFlag = False,
) -> None:
    """Stop the watcher (with --finish, also turn supervision off)."""
    output.show(ops.supervisor_stop(layout(), finish_too), json_out, render_supervisor_stop)


# -- worker signals ------------------------------------------------------------------------------


def report_progress(
    status_: Annotated[str, typer.Argument(metavar="STATUS", help="working, completed, blocked or needs_review")],
    message: Annotated[list[str] | None, typer.Argument(help="What happened.")] = None,
    session: Session = None,
    json_out: JsonFlag = False,
) -> None:
    """report_progress: working does not wake the main brain; completed, blocked and needs_review do."""
    out = worker_ops.report_progress(layout(), status_, " ".join(message or []) or None, session)
    output.show(out, json_out, lambda o: output.line(f"{o['alias']}: progress {status_} reported"))


def report_blocked(
    message: Annotated[list[str], typer.Argument(help="What blocks the work.")],
    session: Session = None,
    json_out: JsonFlag = False,
) -> None:
    """notify_blocked: always wakes the main brain."""
    out = worker_ops.notify_blocked(layout(), " ".join(message), session)
    output.show(out, json_out, lambda o: output.line(f"{o['alias']}: blocked reported"))


def ask_human(
    question: Annotated[list[str], typer.Argument(help="The question.")],
    session: Session = None,
    json_out: JsonFlag = False,
) -> None:
    """ask_human: the question goes to the master-agent conversation; the session awaits a decision."""
    out = worker_ops.ask_human(layout(), " ".join(question), session)
    output.show(out, json_out, lambda o: output.line(f"{o['alias']}: question sent to the master-agent conversation"))


def request_context(
    what: Annotated[list[str] | None, typer.Argument(help="What context is needed.")] = None,
    session: Session = None,
    json_out: JsonFlag = False,
) -> None:
    """request_context: prints the handoff; never wakes the main brain."""
    out = worker_ops.request_context(layout(), " ".join(what or []) or None, session)
    output.show(out, json_out, lambda o: output.line(o["context"]))


# -- workflow runs -------------------------------------------------------------------------------


def workflow_start(
    run_id: Annotated[str, typer.Argument(help="The workflow run id.")],
    no_auto_supervise: Annotated[
        bool, typer.Option("--no-auto-supervise", help="Do not enable supervision for this run.")
    ] = False,
    task_hint: Annotated[
        str | None, typer.Option("--task-hint", help="Goal for the supervision the run enables.")
    ] = None,
    json_out: JsonFlag = False,
) -> None:
    """A workflow run starts: enables supervision (auto_supervise) unless a user already did."""
    out = ops.workflow_start(layout(), run_id, False if no_auto_supervise else None, task_hint)
    output.show(out, json_out, render_workflow_start)


def render_workflow_start(o: dict[str, Any]) -> None:
    if o["supervision"] == "refused":
        output.line(f"run {o['run']} started without supervision")
        output.note(
            f"cocoplus: warning: supervision not enabled: no controller account can run the rounds ({o['refused']})"
        )
        return
    sup = o.get("supervisor") or {}
    watching = (
        f"; watcher {'started' if sup.get('started') else 'running'}, pid {sup.get('pid')}"
        if sup.get("running")
        else ""
    )
    output.line(f"run {o['run']} started; supervision {o['supervision']}{watching}")


def workflow_end(
    run_id: Annotated[str, typer.Argument(help="The workflow run id.")],
    summary: Annotated[str | None, typer.Option("--summary", help="Finish summary.")] = None,
    json_out: JsonFlag = False,
) -> None:
    """A workflow run converged: closes supervision only if this run enabled it."""
    out = ops.workflow_end(layout(), run_id, summary)
    output.show(
        out,
        json_out,
        lambda o: output.line(
            f"run {run_id} ended; supervision {'closed' if o['closed_supervision'] else 'left as it was'}"
        ),
    )


def register(app: typer.Typer) -> None:
    sup = typer.Typer(help="Autonomous supervision: the main brain's controls.", no_args_is_help=True)
    app.add_typer(sup, name="supervision")
    commands: tuple[tuple[str, Callable[..., None]], ...] = (
        ("enable", enable),
        ("finish", finish),
        ("status", status),
        ("scope", scope),
        ("exclude", exclude),
        ("include", include),
    )
    for name, fn in commands:
        sup.command(name)(fn)
    app.command("supervise")(supervise)
    # The watcher: `supervision watcher ...`, and `supervisor ...`, its first name, kept (hidden in `--help`).
    for parent, name, what in (
        (sup, "watcher", "The watcher process that wakes the main brain (one per project)."),
        (app, "supervisor", "Same as `cocoplus supervision watcher` (its first name, kept)."),
    ):
        runner = typer.Typer(help=what, no_args_is_help=True)
        parent.add_typer(runner, name=name)
        runner.command("run")(supervisor_run)
        runner.command("status")(supervisor_status)
        runner.command("stop")(supervisor_stop)
    report = typer.Typer(help="Worker signals to the supervisor.", no_args_is_help=True)
    app.add_typer(report, name="report")
    report.command("progress")(report_progress)
    report.command("blocked")(report_blocked)
    app.command("ask-human")(ask_human)
    app.command("request-context")(request_context)
    wf = typer.Typer(help="Workflow runs and auto-supervision.", no_args_is_help=True)
    app.add_typer(wf, name="workflow")
    wf.command("start")(workflow_start)
    wf.command("end")(workflow_end)
