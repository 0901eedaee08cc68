"""`cocoplus summary [--since DURATION]`: what the night did, one screen."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cocoplus.cli import output
from cocoplus.cli.commands import JsonFlag, layout
from cocoplus.core import inert
from cocoplus.ops import summary as ops


def render(rep: dict[str, Any]) -> None:
    workers = rep["workers"]
    output.line(
        (f"since {rep['since']}: ", "bold"),
        f"{len(workers)} worker(s), ${rep['spent_usd']:.2f} spent in all",
    )
    for s in workers:
        name = s["worker"] + (f" ({s['alias']})" if s.get("alias") and s["alias"] != s["worker"] else "")
        output.line((f"{name} ", "bold"), f"{s['runtimes'] or s['runtime']}: asked {s['asked']!r}")
        output.line(f"  ended:   {s['ended']}")
        output.line(f"  cost:    ${s['cost_usd']:.2f}, {s['tool_calls']} tool call(s)")
        ch = s["changed"]
        merged = "" if ch["merged"] is None else ("; merged" if ch["merged"] else "; not merged")
        output.line(f"  changed: {ch['stat'] or '?'} in {ch['where']}{merged}")
        for d in s["waiting"]:
            output.line(f"  waiting: {inert.line(d['summary'] or d['kind'])} ({d['id']})")
    for d in rep["waiting"]:
        output.line(f"waiting: {inert.line(d['summary'] or d['kind'])} ({d['id']})")
    if not workers and not rep["waiting"]:
        output.line("nothing ran and nothing waits")
    output.problems(rep.get("problems") or [])


def summary(
    since: Annotated[
        str, typer.Option("--since", metavar="DURATION", help="How far back: 12h (the default), 90m, 2d.")
    ] = "12h",
    json_out: JsonFlag = False,
) -> None:
    """What each worker was asked, how it ended and why, what it cost, what it changed, and what still waits
    for you; from the records cocoplus keeps."""
    output.show(ops.summary(layout(), ops.parse_since(since)), json_out, render)


def register(app: typer.Typer) -> None:
    app.command("summary")(summary)
