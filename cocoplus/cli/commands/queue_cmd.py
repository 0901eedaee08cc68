"""`cocoplus session queue promote ID`: make a queued request the current item (registered in session_cmd)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cocoplus.cli import output
from cocoplus.cli.commands import JsonFlag, layout
from cocoplus.ops import session as ops


def render_promoted(rec: dict[str, Any]) -> None:
    if rec["already_current"]:
        output.line(f"{rec['id']} is already the current item: ", rec["request"])
    else:
        output.line(f"{rec['id']} is now the current item (In Progress): ", rec["request"])
    for other in rec["demoted"]:
        output.line(f"{other} went back to Next")


def queue_promote(
    queue_id: Annotated[str, typer.Argument(help="The request id (q_...).")],
    json_out: JsonFlag = False,
) -> None:
    """Make a queued request the current item: In Progress in `session progress`, first in a new session's handoff."""
    output.show(ops.queue_promote(layout(), queue_id), json_out, render_promoted)


def render_queued_items(rep: dict[str, Any], title: str) -> None:
    """The queued requests `session progress` shows under `title` (In Progress: the current item; Next: the rest)."""
    for item in (rep.get("queue") or {}).get(title, []):
        output.line(f"[queue {item['id']}] ", item["request"])
