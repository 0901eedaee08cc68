"""Supervision: `supervision ...`, `supervise`, `supervisor ...`, worker signals, `workflow ...`."""

from __future__ import annotations

from typing import Any

import typer

from cocoplus.cli import output
from cocoplus.cli.commands import JSON_HELP, layout
from cocoplus.core import settings

TURNS_HELP = f"Turn cap (default: [supervision] max_turns, else {settings.BY_DOTTED['supervision.max_turns'].default})."

SESSION_HELP = "The session this worker is (cs_ id or alias); default: from the runtime's environment."


def _show_status(st: dict[str, Any]) -> None:
    con = output.out()
    auto = st.get("autonomous")
    if auto is None:
        con.print("supervision: never enabled", markup=False)
        return
    on = "on" if auto.get("enabled") else "off"
    con.print(f"supervision: {on}; turns {auto.get('turns_used')}/{auto.get('max_turns')}; goal: {auto.get('task_hint') or '-'}", markup=False)
    if not auto.get("enabled") and auto.get("finish_reason"):
        con.print(f"finished: {auto.get('finish_reason')}" + (f"; summary: {auto['finish_summary']}" if auto.get("finish_summary") else ""), markup=False)
    sc = auto.get("scope") or {}
    excl = ", ".join(e.get("alias") or e["id"] for e in sc.get("excluded", [])) or "none"
    only = ", ".join(e.get("alias") or e["id"] for e in sc.get("only") or []) if sc.get("only") is not None else None
    con.print(f"scope: {sc.get('mode')}" + (f" (only {only})" if only else "") + f"; excluded: {excl}; supervised now: {', '.join(sc.get('supervised', [])) or 'none'}", markup=False)


def register(app: typer.Typer) -> None:
    sup = typer.Typer(help="Autonomous supervision: the main brain's controls.", no_args_is_help=True)
    app.add_typer(sup, name="supervision")

    @sup.command("enable")
    def enable(
        task_hint: str = typer.Option(None, "--task-hint", help="The supervision goal."),
        max_turns: int = typer.Option(None, "--max-turns", help=TURNS_HELP),
        scope_mode: str = typer.Option(None, "--scope-mode", help="all, only or except."),
        session: list[str] = typer.Option(None, "--session", help="Session ids or aliases for --scope-mode (repeatable)."),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """enable_supervision: turn supervision on (calling again resets turns_used)."""
        from cocoplus.supervision import autonomy

        st = autonomy.enable(layout(), task_hint=task_hint, max_turns=max_turns, scope_mode=scope_mode, scope_session_ids=list(session or []))
        output.emit_json(st) if json_out else _show_status(st)

    @sup.command("finish")
    def finish(
        summary: str = typer.Option(None, "--summary", help="What was achieved."),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """finish_supervision: turn supervision off and record the summary."""
        from cocoplus.supervision import autonomy

        st = autonomy.finish(layout(), summary)
        output.emit_json(st) if json_out else _show_status(st)

    @sup.command("status")
    def status(json_out: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
        """supervision_status: state, turns and scope."""
        from cocoplus.supervision import autonomy

        st = autonomy.status(layout())
        output.emit_json(st) if json_out else _show_status(st)

    @sup.command("scope")
    def scope(
        mode: str = typer.Argument(..., help="all, only, except or invert"),
        ids: list[str] = typer.Argument(None, help="Session ids or aliases (only/except need at least one valid one)."),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """set_supervision_scope: which sessions may wake the main brain."""
        from cocoplus.supervision import scope as scope_mod

        view = scope_mod.set_scope(layout(), mode, list(ids or []))
        if json_out:
            output.emit_json(view)
            return
        output.out().print(f"scope {view['mode']}; supervised now: {', '.join(view['supervised']) or 'none'}", markup=False)
        for u in view.get("unknown_ids", []):
            output.note(f"cocoplus: note: no session {u!r}; ignored")

    for name, excluded in (("exclude", True), ("include", False)):

        def make(excluded: bool = excluded) -> Any:
            def cmd(
                session_id: str = typer.Argument(..., help="Session id or alias."),
                json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
            ) -> None:
                from cocoplus.supervision import scope as scope_mod

                view = scope_mod.exclude(layout(), session_id, excluded)
                if json_out:
                    output.emit_json(view)
                    return
                output.out().print(f"{view['alias']}: {'excluded from' if view['excluded'] else 'included in'} supervision", markup=False)

            cmd.__doc__ = "Stop this session from waking the main brain." if excluded else "Let this session wake the main brain again."
            return cmd

        sup.command(name)(make())

    @app.command("supervise")
    def supervise(
        goal: list[str] = typer.Argument(None, help="The supervision goal (task_hint)."),
        max_turns: int = typer.Option(None, "--max-turns", help=TURNS_HELP),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """/supervise GOAL: enable supervision, start the watcher, and run one round now."""
        from cocoplus.supervision import watcher

        text = " ".join(goal or []).strip() or None
        out = watcher.supervise(layout(), text, max_turns)
        if json_out:
            output.emit_json(out)
            return
        _show_status(out)
        s = out["supervisor"]
        output.out().print(f"watcher: {'started' if s['started'] else 'already running'} (pid {s['pid']})", markup=False)
        r = out["initial_round"]
        output.out().print(f"initial round: {'started, round ' + str(r['round']) if r.get('started') else r.get('why')}", markup=False)

    runner = typer.Typer(help="The watcher process that wakes the main brain.", no_args_is_help=True)
    app.add_typer(runner, name="supervisor")

    @runner.command("run")
    def run(polling: bool = typer.Option(False, "--polling", help="Poll instead of using inotify.")) -> None:
        """Run the watcher in the foreground (one per project)."""
        from cocoplus.supervision import watcher

        raise typer.Exit(watcher.Supervisor(layout(), polling=polling or None).run())

    @runner.command("status")
    def sv_status(json_out: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
        """Is the watcher running, and the current round."""
        from cocoplus.supervision import watcher

        st = watcher.status(layout())
        if json_out:
            output.emit_json(st)
            return
        output.out().print(f"watcher: {'running, pid ' + str(st['pid']) if st['running'] else 'not running'}", markup=False)
        if st.get("round"):
            output.out().print(f"round {st['round']['number']} in progress (task {st['round']['task']})", markup=False)
        _show_status(st)

    @runner.command("stop")
    def sv_stop(json_out: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
        """Stop the watcher."""
        from cocoplus.supervision import watcher

        st = watcher.stop(layout())
        if json_out:
            output.emit_json(st)
            return
        output.out().print(f"watcher stopped (pid {st['pid']})" if st["stopped"] else f"not stopped: {st.get('why')}", markup=False)

    report = typer.Typer(help="Worker signals to the supervisor.", no_args_is_help=True)
    app.add_typer(report, name="report")

    @report.command("progress")
    def progress_cmd(
        status_: str = typer.Argument(..., metavar="STATUS", help="working, completed, blocked or needs_review"),
        message: list[str] = typer.Argument(None, help="What happened."),
        session: str = typer.Option(None, "--session", help=SESSION_HELP),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """report_progress: working does not wake the main brain; completed, blocked and needs_review do."""
        from cocoplus.supervision import signals

        out = signals.report_progress(layout(), status_, " ".join(message or []) or None, session)
        output.emit_json(out) if json_out else output.out().print(f"{out['alias']}: progress {status_} reported", markup=False)

    @report.command("blocked")
    def blocked(
        message: list[str] = typer.Argument(..., help="What blocks the work."),
        session: str = typer.Option(None, "--session", help=SESSION_HELP),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """notify_blocked: always wakes the main brain."""
        from cocoplus.supervision import signals

        out = signals.notify_blocked(layout(), " ".join(message), session)
        output.emit_json(out) if json_out else output.out().print(f"{out['alias']}: blocked reported", markup=False)

    @app.command("ask-human")
    def ask_human(
        question: list[str] = typer.Argument(..., help="The question."),
        session: str = typer.Option(None, "--session", help=SESSION_HELP),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """ask_human: the question goes to the master-agent conversation; the session awaits a decision."""
        from cocoplus.supervision import signals

        out = signals.ask_human(layout(), " ".join(question), session)
        output.emit_json(out) if json_out else output.out().print(f"{out['alias']}: question sent to the master-agent conversation", markup=False)

    @app.command("request-context")
    def request_context(
        what: list[str] = typer.Argument(None, help="What context is needed."),
        session: str = typer.Option(None, "--session", help=SESSION_HELP),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """request_context: prints the handoff; never wakes the main brain."""
        from cocoplus.supervision import signals

        out = signals.request_context(layout(), " ".join(what or []) or None, session)
        output.emit_json(out) if json_out else output.out().print(out["context"], markup=False)

    wf = typer.Typer(help="Workflow runs and auto-supervision.", no_args_is_help=True)
    app.add_typer(wf, name="workflow")

    @wf.command("start")
    def wf_start(
        run_id: str = typer.Argument(..., help="The workflow run id."),
        no_auto_supervise: bool = typer.Option(False, "--no-auto-supervise", help="Do not enable supervision for this run."),
        task_hint: str = typer.Option(None, "--task-hint", help="Goal for the supervision the run enables."),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """A workflow run starts: enables supervision (auto_supervise) unless a user already did."""
        from cocoplus.supervision import workflow

        out = workflow.start(layout(), run_id, False if no_auto_supervise else None, task_hint)
        output.emit_json(out) if json_out else output.out().print(f"run {run_id} started; supervision {out['supervision']}", markup=False)

    @wf.command("end")
    def wf_end(
        run_id: str = typer.Argument(..., help="The workflow run id."),
        summary: str = typer.Option(None, "--summary", help="Finish summary."),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """A workflow run converged: closes supervision only if this run enabled it."""
        from cocoplus.supervision import workflow

        out = workflow.end(layout(), run_id, summary)
        output.emit_json(out) if json_out else output.out().print(
            f"run {run_id} ended; supervision {'closed' if out['closed_supervision'] else 'left as it was'}", markup=False
        )
