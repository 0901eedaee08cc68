"""The handoff a new session receives at SessionStart, built from files alone."""

from __future__ import annotations

from cocoplus.core import fsio, predicates
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.core.records import stop_sentence
from cocoplus.session import killswitch, queue

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Mapping
    from typing import Any

    from cocoplus.core.shapes import SessionRecord


MAX_PROGRESS_CHARS = 6000
MAX_REPORT_CHARS = 4000  # of a worker's last report, in a take-over's handoff
# A take-over's prompt is one argument of the new run's command line, and Linux takes at most 128 KiB in one
# (MAX_ARG_STRLEN): beyond this, the task and then the last steer are cut, saying where the whole text is.
MAX_TAKEOVER_BYTES = 96 * 1024


def context(layout: Layout, rec: SessionRecord | None, worktree: bool = False) -> str:
    """The handoff; `worktree`: the session works in a worker's git worktree, so the project's PROGRESS.md is
    named by its full path (a `.cocoplus/` of the worktree's own would not be the project's)."""
    parts: list[str] = []
    who = f" (you are session {rec['alias']})" if rec else ""
    progress = layout.progress if worktree else ".cocoplus/session/PROGRESS.md"
    parts.append(
        "cocoplus handoff for this project" + who + ", read from .cocoplus/ files. Resume the work from here; "
        f"keep {progress} current (Done, In Progress, Next, Notes)."
    )
    try:
        text = fsio.read_text(layout.progress)
    except CocoplusError as exc:
        text = None
        parts.append(f"PROGRESS.md could not be read: {exc}")
    if text is not None and text.strip():
        if len(text) > MAX_PROGRESS_CHARS:
            text = text[:MAX_PROGRESS_CHARS] + "\n[... PROGRESS.md continues; read the file for the rest]"
        parts.append("== .cocoplus/session/PROGRESS.md ==\n" + text.strip())
    try:
        ctext = fsio.read_text(layout.context)
    except CocoplusError:
        ctext = None
    if ctext:
        preds, _bad = predicates.parse(ctext)
        if preds:
            parts.append(
                "== Active predicates (.cocoplus/session/CONTEXT.md; quote them verbatim, "
                "do not restate them as new states) ==\n" + "\n".join(p.raw for p in preds)
            )
    try:
        pend, _ = queue.pending(layout)
    except CocoplusError:
        pend = []
    current = [i for i in pend if queue.placement(i) == "current"]
    if current:
        parts.append(
            "== Current item (the operator made this queued request the current one; work on it now) ==\n"
            + "\n".join(f"- {i['id']}: {i['request']}" for i in current)
        )
    rest = [i for i in pend if queue.placement(i) != "current"]
    if rest:
        parts.append(
            "== Queued requests (.cocoplus/session/task-queue.jsonl; they go to Next, "
            "they do not replace the current item) ==\n" + "\n".join(f"- {i['id']}: {i['request']}" for i in rest[:20])
        )
    if killswitch.stop_present(layout):
        parts.append("== Kill switch ==\n" + stop_sentence(killswitch.read_stop(layout) or {}))
    return "\n\n".join(parts)


def takeover(
    layout: Layout,
    worker: Mapping[str, Any],
    runtime_from: str,
    runtime_to: str,
    why: str,
    *,
    last_report: str | None = None,
    last_steer: str | None = None,
) -> str:
    """The first prompt of a run that takes a worker over from another runtime (a failover, or its work handed
    back): why it took over, the handoff `context` gives every new session, the worker's task, its last report
    and the last steer it was given.  Built from files alone, like `context`."""
    wid = worker.get("id") or "?"
    alias = worker.get("alias")
    named = f"cocoplus worker {wid}" + (f" ({alias})" if alias and alias != wid else "")
    parts = [
        f"You are taking over {named} from {runtime_from}: {why}. Its work goes on here, in {runtime_to}, as a "
        "new run of the same worker. Read the handoff below (PROGRESS.md first), quote the predicates of "
        ".cocoplus/session/CONTEXT.md verbatim, and carry on with the worker's task where it left off.",
        context(layout, None, worktree=bool(worker.get("worktree"))),
        "== The worker's task ==\n" + str(worker.get("task") or "").strip(),
    ]
    if last_report and last_report.strip():
        report = last_report.strip()
        if len(report) > MAX_REPORT_CHARS:
            report = "[...] " + report[-MAX_REPORT_CHARS:]
        parts.append(f"== Its last report (what its model last said, in {runtime_from}) ==\n" + report)
    if last_steer and last_steer.strip():
        parts.append("== The last instruction it was given (a steer or dispatch) ==\n" + last_steer.strip())
    steer = len(parts) - 1 if last_steer and last_steer.strip() else None
    for i, where in (
        (2, f"`cocoplus workers list --json`, worker {wid}"),
        (steer, ".cocoplus/supervision/rounds.jsonl"),
    ):
        over = len("\n\n".join(parts).encode("utf-8")) - MAX_TAKEOVER_BYTES
        if i is not None and over > 0:
            parts[i] = _cut(parts[i], over, where)
    return "\n\n".join(parts)


def _cut(text: str, over: int, where: str) -> str:
    """`text` shorter by at least `over` bytes (its head kept), saying where the whole of it is."""
    note = f"\n[... cut to fit one command-line argument; the whole of it: {where}]"
    keep = max(0, len(text.encode("utf-8")) - over - len(note.encode("utf-8")))
    return text.encode("utf-8")[:keep].decode("utf-8", "ignore") + note
