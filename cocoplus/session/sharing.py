"""The iteration cap shared among live sessions (docs/guides/budgets.md, "Parallel sessions"): which sessions are
live, each session's own count, and what PROGRESS.md and a reset do with them.

Loaded only once the project's count reaches the cap (or at a reset, a turn end's sync): the count itself
(`session/iteration.py`) runs on every tool call and loads none of this.  Standard library only.
"""

from __future__ import annotations

import os

from cocoplus.core import fsio
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.session import procinfo, registry

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Mapping
    from typing import Any

    from cocoplus.core.lock import Budget
    from cocoplus.core.shapes import SessionRecord


def live(rec: Mapping[str, Any]) -> bool:
    """Whether the session is live: its recorded process (pid and start ticks, on this machine and in this pid
    namespace) still runs.  A record that is merely `running`, or whose process cannot be told here, is not."""
    proc = rec.get("process")
    if not isinstance(proc, dict) or not isinstance(proc.get("start_ticks"), int):
        return False
    where = procinfo.here()
    if any(proc.get(k) is not None and proc.get(k) != where[k] for k in ("host", "pidns")):
        return False
    return procinfo.alive(proc.get("pid"), proc["start_ticks"]) is True


def others_live(layout: Layout, cs_id: str | None) -> list[SessionRecord]:
    """The live sessions (`live`) run by another process than `cs_id`'s, in no order; a record that cannot be read
    is left out.  A runtime's process runs one session at a time (a new one after `/clear` replaces the last): a
    session recorded with the same process as `cs_id`'s (else as this hook's runtime) is not another."""
    try:
        names = os.listdir(layout.sessions_dir)
    except OSError:
        return []
    mine: Any = None
    if cs_id is not None:
        try:
            mine = (fsio.read_json(layout.session_record(cs_id)) or {}).get("process")
        except CocoplusError:
            mine = None
    if not isinstance(mine, dict):
        mine = procinfo.runtime_process()
    own = (mine.get("pid"), mine.get("start_ticks"))
    out: list[SessionRecord] = []
    for name in names:
        if not (name.startswith("cs_") and name.endswith(".json")) or name[:-5] == cs_id:
            continue
        try:
            rec = fsio.read_json(os.path.join(layout.sessions_dir, name))
        except CocoplusError:
            continue
        if not isinstance(rec, dict) or not isinstance(proc := rec.get("process"), dict):
            continue
        if (proc.get("pid"), proc.get("start_ticks")) != own and live(rec):
            out.append(rec)  # type: ignore[arg-type]  # a session record (only its process is read)
    return out


def own_count(rec: Mapping[str, Any]) -> int:
    """The tool calls a session has made since the iteration budget was last reset (`budget_base`): its own count,
    which its cap applies to while other sessions are live (session/iteration.py)."""
    return max(0, int(rec.get("tool_calls") or 0) - int(rec.get("budget_base") or 0))


def session_exhausted_reason(cap: int, alias: str) -> str:
    """Why one session is stopped at the cap while others are live (its own count reached it)."""
    return (
        f"iteration budget exhausted for session {alias}: {cap} of {cap} of its own tool calls used (cap {cap}, "
        "[session] max_iterations, per session while several are live)"
    )


SESSIONS_SHOWN = 12  # PROGRESS.md's Sessions line names this many sessions at most (the most calls first)


def sessions_line(layout: Layout) -> str | None:
    """Each session's own count for PROGRESS.md (`cc1 12, cx1 40 (live)`), the most calls first; None unless two
    sessions or more have counted calls since the last reset (one session's count is the project's: the section
    stays the seed's three lines)."""
    records, _problems = registry.list_sessions(layout, settle=False)
    counted = sorted(
        ((own_count(r), str(r.get("alias") or r["id"]), live(r)) for r in records),
        key=lambda t: (-t[0], t[1]),
    )
    shown = [f"{alias} {n}" + (" (live)" if is_live else "") for n, alias, is_live in counted if n > 0]
    if len(shown) < 2:
        return None
    more = f", and {len(shown) - SESSIONS_SHOWN} more" if len(shown) > SESSIONS_SHOWN else ""
    return ", ".join(shown[:SESSIONS_SHOWN]) + more


def rebase(layout: Layout, budget: Budget | None = None) -> None:
    """Each session's own count starts again with the project's (`budget_base`: its calls so far)."""
    try:
        names = os.listdir(layout.sessions_dir)
    except OSError:
        return
    for name in names:
        if not (name.startswith("cs_") and name.endswith(".json")):
            continue

        def change(r: Any) -> None:
            r["budget_base"] = int(r.get("tool_calls") or 0)

        try:
            registry.update(layout, name[:-5], change, budget=budget)
        except CocoplusError:
            continue  # (a record that cannot be read keeps its count; `session status` shows it)
