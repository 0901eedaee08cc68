"""`cocoplus timeline [WORKER|SESSION] [--since DURATION]` and `cocoplus replay RUN --policy FILE`: the project's
record in time order, and a recorded run re-evaluated under another policy."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cocoplus.cli import output
from cocoplus.cli.commands import JsonFlag, layout
from cocoplus.core import inert
from cocoplus.ops import timeline as ops

# The colour of each kind of event (a stop red, a failover magenta, ...).
STYLES = {
    "stop": "bold red",
    "refusal": "red",
    "failover": "bold magenta",
    "limit": "magenta",
    "verdict": "yellow",
    "permission": "yellow",
    "steer": "cyan",
    "cost": "green",
    "round": "blue",
    "merge": "bold green",
    "worker": "bold",
    "tool": "dim",
    "edit": "dim",
}


def who(e: dict[str, Any]) -> str:
    """The event's actor as a line shows it: the worker, else the session's alias or id, else the project."""
    return str(e.get("worker") or e.get("alias") or e.get("session") or "project")


def render(rep: dict[str, Any]) -> None:
    events = rep["events"]
    if not events:
        output.line("no events recorded" + (f" for {rep['target']}" if rep.get("target") else ""))
    for e in events:
        ts = e["ts"] or "?"
        when = ("~" if e["detail"].get("ts_estimated") else " ") + ts.replace("T", " ")[:19]
        kind = e["kind"]
        runtime = f" [{e['runtime']}]" if e.get("runtime") else ""
        output.line(
            when + " ",
            (f"{kind:<10}", STYLES.get(kind, "")),
            f" {who(e)}{runtime}: ",
            (inert.line(e["text"]), STYLES.get(kind, "") if kind in ("stop", "failover") else ""),
        )
    if rep["total"] > len(events):
        output.note(f"the newest {len(events)} of {rep['total']} events (--limit 0 shows all)")
    output.problems(rep.get("problems") or [])


def timeline(
    target: Annotated[
        str | None, typer.Argument(metavar="[WORKER|SESSION]", help="A worker's id, or a session's cs_ id or alias.")
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", metavar="DURATION", help="Only events of the last 12h, 90m, 2d, ...")
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", metavar="N", help="How many of the newest events to show (0: all).")
    ] = ops.DEFAULT_LIMIT,
    json_out: JsonFlag = False,
) -> None:
    """The project's events in time order, newest last: tool calls, permission decisions, steers, stops and
    their lifts, loop-guard and stall verdicts, costs, limits, failovers (the runtime switch), rounds; read from
    the logs cocoplus keeps, secrets redacted.  This machine's records only (a fleet's other machines are not
    shown)."""
    output.show(ops.timeline(layout(), target, since, limit), json_out, render)


def render_replay(rep: dict[str, Any]) -> None:
    p = rep["policy"]
    output.line(
        (f"replay of {rep['kind']} {rep['run']}: ", "bold"),
        f"{rep['calls']} recorded tool call(s) in {len(rep['sessions'])} session(s); max_iterations "
        f"{p['max_iterations']}, iteration_warn_at {p['iteration_warn_at']}, project_max_iterations "
        f"{p['project_max_iterations']}, loop_guard_repeats {p['loop_guard_repeats']}"
        + (
            f", budget_limit ${p['budget_limit']:.2f} (reserve {p['budget_reserve_fraction']:.0%})"
            if p.get("budget_limit")
            else ""
        ),
    )
    for d in rep["decisions"]:
        what = ("stop", "bold red") if d["decision"] == "stop" else (d["decision"], "yellow")
        named = f" `{d['tool']} {d['subject']}`" if d.get("tool") else ""
        extra = (
            f", the same call{named} from call {d['first_call']} ({d['repeats']} in a row)"
            if d.get("first_call")
            else ""
        )
        cap = f", cap {d['cap']} ({d['by']})" if d.get("cap") else ""
        if d.get("boundary_at"):
            cap += f", ${d['spent_usd']:.4f} spent at the boundary of {d['boundary_at']}"
        output.line(f"  call {d['call']} ({d.get('alias') or d['session']}): ", what, f" by {d['why']}{cap}{extra}")
    stop = rep["stopped_at"]
    if stop is None:
        output.line("  it would not have been stopped")
    else:
        cost = rep["cost_usd_to_stop"]
        shown = (
            "unknown"
            if cost is None
            else f"${cost:.4f}" + (" (estimated: the calls carry no time)" if rep["cost_estimated"] else "")
        )
        output.line(f"  cost up to call {stop['call']}: {shown}; recorded in all ${rep['cost_usd_recorded']:.4f}")
    diff = rep["first_difference"]
    if diff is not None:
        rec, new = diff["recorded"], diff["replayed"]
        said = f"recorded {rec['decision']} ({rec['why']})" if rec else "nothing recorded"
        output.line(
            f"  first difference: {said}; replayed "
            + (f"{new['decision']} at call {new['call']}" if new else "nothing")
        )
    perms = rep.get("permissions")
    if perms is not None:
        c = perms["counts"]
        output.line(
            f"  permission requests under the rules: {c['allow']} allowed, {c['ask']} asked, {c['deny']} denied"
            + (f" ({c['not_replayed']} not decided again)" if c["not_replayed"] else "")
        )
        for item in perms["requests"]:
            new = item["replayed"] or "not decided again"
            changed = item["replayed"] is not None and item["replayed"] != item["recorded"]
            output.line(
                f"    {item['tool']} `{item['subject']}`: recorded {item['recorded']} ({item['recorded_by']}); ",
                (f"replayed {new}", "bold" if changed else ""),
                f": {item['why']}",
            )
        first = perms["first_difference"]
        if first is not None:
            output.line(
                f"  first rule decision that differs: request {first['request']}, recorded {first['recorded']}, "
                f"replayed {first['replayed']}"
            )
        output.problems(perms.get("problems") or [])
    stalls = rep.get("stalls") or {}
    for st in stalls.get("stalls") or []:
        waited = f", waited {st['waited_s']:.0f}s" if st.get("waited_s") is not None else ", still waiting at the end"
        output.line(f"  stall at {st['at']}: {st['session']} in {st['attention']} since {st['since']}{waited}")
    if stalls.get("recorded"):
        output.line(f"  stalls the watcher recorded: {len(stalls['recorded'])}")
    for item in rep["not_replayed"]:
        output.note(f"not replayed: {item}")
    output.problems(rep.get("problems") or [])


def replay(
    run: Annotated[
        str,
        typer.Argument(
            metavar="RUN", help="A worker's id (all its runs), a session's cs_ id or alias, or a goal's g_ id."
        ),
    ],
    policy: Annotated[
        str,
        typer.Option(
            "--policy", metavar="FILE", help="A TOML file with the [session] values and [permissions] rules to replay."
        ),
    ],
    json_out: JsonFlag = False,
) -> None:
    """A recorded run decided again under another policy (the iteration cap, per session and per project, the loop
    guard's repeat count, the cost budget and its reserve, the stall threshold, and the permission rules), by the
    functions the hooks
    use live: where it would have stopped and why, its cost to there, which permission requests the rules would
    allow, ask or deny, and the first decision that differs from the recorded ones.  No model is called."""
    output.show(ops.replay(layout(), run, policy), json_out, render_replay)


def register(app: typer.Typer) -> None:
    app.command("timeline")(timeline)
    app.command("replay")(replay)
