"""`session status` and `session list` (`sessions list`): what they print, and the commands themselves.

No typer here: the typer commands (cli/commands/session_cmd.py) and the fast path (cli/fast.py) both run these,
so a command line that the fast path answers prints what the typer app would.
"""

from __future__ import annotations

from typing import Any

from cocoplus.cli import output
from cocoplus.cli.output import Styled
from cocoplus.cli.project import layout
from cocoplus.core import inert
from cocoplus.ops import session as ops
from cocoplus.ops import sessions as sessions_ops

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
    if ib.get("shared") and not ib["stopped"]:  # several sessions were live at the cap: each has its own
        return Styled(
            f"{ib['consumed']} tool calls used by the project's sessions together; the cap is each session's own "
            f"count since several were live at it ({cap}; PROGRESS.md's Sessions line has each one's)"
        )
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


def status(json_out: bool) -> int:
    """`session status`: its exit code (1 when cocoplus.toml is not valid)."""
    rep = ops.status(layout())
    cfg = rep.get("config") or {}
    if not cfg.get("ok", True):
        # The error first, then everything that still answers (exit 1).
        output.error_line(cfg["error"], f"{cfg['hooks']}; `cocoplus config show` checks the file")
    output.show(rep, json_out, render_status)
    return 0 if cfg.get("ok", True) else 1


def render_sessions(result: dict[str, Any]) -> None:
    """Sessions as a table that never cuts an id, a state or a time (see output.table)."""
    records = result["sessions"]
    if not records:
        output.line("no agent sessions recorded yet (hooks record them; see `cocoplus doctor`)")
    else:
        # "yes" for a session supervision watches now (it is on, and the session is active and in its scope:
        # `supervised now` of supervision status), "no (excluded)" for one outside its scope, "-" for one that has
        # ended or while supervision is off (it wakes nobody).
        now = set((result.get("scope") or {}).get("supervised") or []) if result.get("supervision_on") else set()
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


def sessions_list(json_out: bool) -> int:
    """`session list` (`sessions list`): its exit code."""
    output.show(sessions_ops.list_sessions(layout()), json_out, render_sessions)
    return 0
