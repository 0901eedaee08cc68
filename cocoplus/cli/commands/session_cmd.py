"""`cocoplus session status|progress|check|steer|stop|resume|queue ...`."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer

from cocoplus.cli import output
from cocoplus.cli.commands import JsonFlag, layout, queue_cmd
from cocoplus.cli.output import Styled
from cocoplus.core import inert
from cocoplus.core.errors import CocoplusError, UsageError
from cocoplus.ops import session as ops
from cocoplus.ops import sessions as sessions_ops
from cocoplus.session import control

# -- status ----------------------------------------------------------------------------------


def _damaged(part: dict[str, Any]) -> Styled | None:
    if not part.get("damaged"):
        return None
    return Styled.assemble(("DAMAGED", output.ALERT), f": {part['error']}")


def run_state_text(status: dict[str, Any], pod: dict[str, Any]) -> Styled:
    """One row for the run state: status.json, with pod-state.json only where it says something else."""

    def one(s: dict[str, Any]) -> Styled:
        if _damaged(s):
            return _damaged(s)  # type: ignore[return-value]
        if not s.get("exists"):
            return Styled(f"unknown ({s['path']} missing)")
        t = Styled(
            inert.line(s["state"])
            + (f" ({inert.line(s['reason'])})" if s.get("reason") else "")
            + f" since {inert.line(s['updated_at'])}"
        )
        if s.get("stale"):
            t.append("; ")
            t.append("STALE", style=output.WARN)
            t.append(f": no activity for {s.get('idle_for')} (stale after {s['stale_after_hours']:g} h)")
        return t

    t = one(status)
    same = {k: status.get(k) for k in ("state", "reason", "exists", "damaged")} == {
        k: pod.get(k) for k in ("state", "reason", "exists", "damaged")
    }
    if not same:
        t.append(f"\npod ({pod['path']}): " if pod.get("path") else "\npod: ")
        t.append_text(one(pod))
    return t


def cap_words(cap: Any, source: str | None, what: str = "cap") -> str:
    """`cap 5 from cocoplus.toml`, `cap 200, the default`: the effective cap and where it comes from."""
    if not source:
        return f"{what} {cap}"
    return f"{what} {cap}, the default" if source == "defaults" else f"{what} {cap} from {source}"


def iteration_text(ib: dict[str, Any]) -> Styled:
    if _damaged(ib):
        return _damaged(ib)  # type: ignore[return-value]
    cap = cap_words(ib.get("cap"), ib.get("limits_from"))
    if not ib.get("exists"):
        if not ib.get("cap"):
            return Styled("not started")
        return Styled(f"not started: 0 of {ib['cap']} tool calls used ({cap}; checkpoint at {ib['warn_at']})")
    shown = min(ib["consumed"], ib["cap"])
    text = f"{shown} of {ib['cap']} tool calls used, {ib['remaining']} left ({cap}; checkpoint at {ib['warn_at']})"
    flags = []
    if ib["consumed"] >= ib["cap"]:
        flags.append("cap reached" + (f"; {ib['over_cap']} more call(s) after the stop" if ib.get("over_cap") else ""))
    elif ib["stopped"]:
        flags.append("stopped at an earlier cap")
    if ib["warned"]:
        flags.append("checkpoint requested")
    if ib.get("recorded_cap") is not None and ib["recorded_cap"] != ib["cap"]:
        flags.append(
            f"the count was kept against cap {ib['recorded_cap']} before the configuration changed; "
            f"the next tool call counts against {ib['cap']}"
        )
    return Styled(text + (f"; {', '.join(flags)}" if flags else ""))


def cost_text(cb: dict[str, Any]) -> Styled | str:
    """The cost budget row: spend against the effective limit, and where the limit comes from."""
    if _damaged(cb):
        return _damaged(cb)  # type: ignore[return-value]
    limit = cb.get("limit") or 0
    source = cb.get("limit_from")
    if not cb.get("exists"):
        if limit > 0:
            return f"not started: $0.00 of ${limit:.2f} spent ({cap_words(f'${limit:.2f}', source, 'limit')})"
        return "not started" + (
            f" (no limit set: {cap_words(0, source, '[session] budget_limit =')})" if source else ""
        )
    if limit > 0:
        text = (
            f"{cb['state']}: ${cb['spent']:.2f} of ${limit:.2f} spent, ${cb['remaining']:.2f} left "
            f"({cap_words(f'${limit:.2f}', source, 'limit')}; reserve from ${cb['reserve_at']:.2f})"
        )
    else:
        where = cap_words(0, source, "[session] budget_limit =")
        text = f"{cb['state']}: ${cb['spent']:.2f} spent, no limit set ({where})"
    if cb.get("recorded_limit") is not None and cb["recorded_limit"] != limit:
        then = f"${cb['recorded_limit']:.2f}" if cb["recorded_limit"] > 0 else "no limit"
        text += f"; the state was set at the last stage boundary, against {then}; the next boundary applies this limit"
    return text


def status_rows(rep: dict[str, Any]) -> list[tuple[str, Styled | str]]:
    rows: list[tuple[str, Styled | str]] = []
    cfg = rep.get("config") or {"ok": True}
    if not cfg.get("ok"):
        rows.append(("config", Styled.assemble(("INVALID", output.ALERT), f": {cfg['error']}; {cfg['hooks']}")))

    h = rep["handoff"]
    if _damaged(h):
        rows.append(("handoff", _damaged(h)))  # type: ignore[arg-type]
    elif not h.get("exists"):
        rows.append(("handoff", f"{h['path']} missing"))
    else:
        t = Styled(f"{h['path']} updated {h['age']} ago (")
        t.append("STALE", style=output.WARN) if h["stale"] else t.append("fresh")
        t.append(f", stale after {h['stale_after_hours']:g} h)")
        if h["missing_sections"]:
            t.append(f"; missing sections: {', '.join(h['missing_sections'])}")
        rows.append(("handoff", t))

    p = rep["predicates"]
    if _damaged(p):
        rows.append(("predicates", _damaged(p)))  # type: ignore[arg-type]
    else:
        lines = [a["text"] for a in p.get("active", [])] + [f"bad line: {prob}" for prob in p.get("problems", [])]
        rows.append(("predicates", "\n".join(lines) if lines else "none"))

    q = rep["queue"]
    rows.append(
        (
            "queued work",
            _damaged(q)
            or f"{q['pending']} pending"
            + "".join(f"\n{inert.line(i['id'])}: {inert.line(i['request'])}" for i in q["items"][:5]),
        )
    )
    rows.append(("iteration budget", iteration_text(rep["iteration_budget"])))

    rows.append(("cost budget", cost_text(rep["cost_budget"])))
    fc = rep.get("forecast")
    if fc is not None:
        rows.append(("forecast", _damaged(fc) or "\n".join(inert.line(x) for x in fc.get("lines") or [])))

    rows.append(("run state", run_state_text(rep["status"], rep["pod_state"])))

    k = rep["kill_switch"]
    if _damaged(k):
        rows.append(("kill switch", _damaged(k)))  # type: ignore[arg-type]
    elif k["present"] is None:
        rows.append(
            ("kill switch", Styled.assemble(("UNKNOWN", output.ALERT), f": {k.get('unknown')}; tools are blocked"))
        )
    elif k["present"]:
        rows.append(
            (
                "kill switch",
                Styled.assemble(
                    ("STOPPED", output.ALERT),
                    f" by {inert.line(k.get('operator') or 'unknown')} at "
                    f"{inert.line(k.get('created_at') or 'unknown time')}: "
                    f"{inert.line(k.get('reason') or 'no reason given')}",
                ),
            )
        )
    else:
        rows.append(("kill switch", "off"))

    st = rep["steer"]
    if _damaged(st):
        rows.append(("pending steer", _damaged(st)))  # type: ignore[arg-type]
    elif st["pending"]:
        text = inert.text(st["text"].strip())
        rows.append(("pending steer", text if len(text) <= 300 else text[:297] + "..."))
    else:
        rows.append(
            ("pending steer", "none" + (f" ({st['in_flight']} being delivered)" if st.get("in_flight") else ""))
        )
    if st.get("set_aside"):
        rows.append(
            ("damaged steer", Styled.assemble(("NOT DELIVERED", output.ALERT), ": " + ", ".join(st["set_aside"])))
        )

    ss = rep.get("sessions")
    if ss is not None:
        if _damaged(ss):
            rows.append(("sessions", _damaged(ss)))  # type: ignore[arg-type]
        else:
            t = Styled(f"{ss['count']} recorded, {ss['active']} active")
            if ss.get("needs_attention"):
                t.append(f", {ss['needs_attention']} need attention")
            for paused in ss.get("paused") or []:
                t.append(f"\n{inert.line(paused['alias'])} {inert.line(paused['text'])}")
            for prob in ss.get("problems", []):
                t.append("\n")
                t.append_text(Styled.assemble(("DAMAGED", output.ALERT), f": {prob}"))
            rows.append(("sessions", t))
    sp = rep.get("steps")
    if sp is not None:
        if _damaged(sp):
            rows.append(("session log", _damaged(sp)))  # type: ignore[arg-type]
        else:
            last = f"; last: {sp['last_event']} at {sp['last_at']}" if sp.get("last_event") else ""
            rows.append(
                ("session log", f"{sp['events']} event(s){last}" + "".join(f"\n{p}" for p in sp.get("problems", [])))
            )
    if rep.get("ctx"):
        rows.append(("ctx", rep["ctx"].get("summary", "")))
    if rep["damaged_copies"]:
        rows.append(("damaged copies kept", "\n".join(rep["damaged_copies"])))
    return rows


def render_status(rep: dict[str, Any]) -> None:
    output.line(("cocoplus session status: ", "bold"), rep["project"])
    output.rows(status_rows(rep))
    cfg_error = (rep.get("config") or {}).get("error")
    output.problems([p for p in rep["problems"] if p != cfg_error])


def status(json_out: JsonFlag = False) -> None:
    """Handoff freshness, predicates, queued work, budgets, run state, kill switch, pending steer."""
    rep = ops.status(layout())
    cfg = rep.get("config") or {}
    if not cfg.get("ok", True):
        # The error first, then everything that still answers (exit 1).
        output.error_line(cfg["error"], f"{cfg['hooks']}; `cocoplus config show` checks the file")
    output.show(rep, json_out, render_status)
    if not cfg.get("ok", True):
        raise typer.Exit(1)


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
            "(`cocoplus install claude|codex|gemini|cursor|cortex`)"
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
    info = control.read_stop(lay)
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


def render_sessions(result: dict[str, Any]) -> None:
    """Sessions as a table that never cuts an id, a state or a time (see output.table)."""
    records = result["sessions"]
    if not records:
        output.line("no agent sessions recorded yet (hooks record them; see `cocoplus doctor`)")
    else:
        # "yes" for a session supervision watches now (active and in its scope: `supervised now` of supervision
        # status), "no (excluded)" for one outside its scope, "-" for one that has ended (it wakes nobody).
        now = set((result.get("scope") or {}).get("supervised") or [])
        marks = {
            r.get("id"): "yes"
            if (r.get("alias") or r.get("id")) in now
            else "no (excluded)"
            if r.get("excluded")
            else "-"
            for r in records
        }
        supervised = any("excluded" in r for r in records) and any(m != "-" for m in marks.values())
        columns = [
            ("alias", True),
            ("runtime", False),
            ("state", True),
            ("attention", True),
            ("last event", False),
            ("at", True),
            ("id", True),
        ]
        if supervised:
            columns.append(("supervised", False))
        rows = []
        for r in records:
            row = [
                r.get("alias") or "",
                r.get("runtime") or "",
                r.get("paused") or (r.get("state") or "") + (" (stale)" if r.get("stale") else ""),
                r.get("attention") or "-",
                r.get("last_event") or "",
                r.get("last_event_at") or "",
                r.get("id") or "",
            ]
            if supervised:
                row.append(marks[r.get("id")])
            rows.append(row)
        for ln in output.table(columns, rows, output.terminal_width()):
            output.line(ln)
    clashes = result.get("collisions") or []
    if clashes:
        output.line("")
        output.line(("collisions", "bold red"), " (two live sessions changed the same file):")
        for c in clashes:
            output.line(f"  {c['message']}")
    output.problems(result["problems"])


def sessions_list(json_out: JsonFlag = False) -> None:
    """The agent sessions the hooks have seen: id, alias, runtime, state, attention and last event."""
    output.show(sessions_ops.list_sessions(layout()), json_out, render_sessions)


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
    # `sessions list`, the name SPEC gives it, is `session list` under its older name (hidden in `--help`).
    sessions = typer.Typer(help="Same as `cocoplus session list` (the name SPEC keeps).", no_args_is_help=True)
    app.add_typer(sessions, name="sessions")
    sessions.command("list")(sessions_list)
