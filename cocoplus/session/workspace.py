"""`cocoplus init`: create `.cocoplus/` with its templates, idempotently.

Existing files are never overwritten (the handoff above all); missing ones
are created from cocoplus.toml's values.  A state directory that exists but
is not a directory, or is a symbolic link, is refused.
"""

from __future__ import annotations

import os
import time

from cocoplus import config as config_mod
from cocoplus.core import clock, fsio, predicates, progress
from cocoplus.core.errors import CocoplusError
from cocoplus.core.lock import Lock
from cocoplus.core.paths import MARKER_TEXT, Layout, check_state_dir
from cocoplus.core.records import SCHEMA_VERSION, new_iteration_budget, new_status
from cocoplus.session import freshness

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any


README = """\
# .cocoplus

This directory is maintained by cocoplus (continuity and operator control for
long-running coding agents). Humans and agents may edit session/PROGRESS.md and
session/CONTEXT.md; the rest is written by cocoplus commands and hooks.

- AGENT_STOP: kill switch. While it exists, agent tools are blocked.
  `cocoplus session stop` creates it, `cocoplus session resume` removes it.
- STEER.md: one pending operator instruction, injected once into the agent's
  next prompt (`cocoplus session steer "..."`).
- session/: PROGRESS.md (handoff), CONTEXT.md (predicates), task-queue.jsonl,
  iteration-budget.json, budget-state.json, status.json, steps.jsonl.
- sessions/: one record per agent-runtime session seen by the hooks.
- supervision/, chat/: supervision state and the master-agent conversation.
- locks/: lock files. Never delete them while cocoplus may be running.
"""


def gitignore_text(layout: Layout) -> str:
    """`.cocoplus/.gitignore`: everything here is this clone's state, except the handoff, which a team may commit."""
    shared = [layout.readme, layout.progress, layout.context, layout.task_queue, layout.handoff_stamp]
    subdirs = sorted({os.path.dirname(os.path.relpath(p, layout.root)) for p in shared} - {""})
    lines = [
        "# Written by `cocoplus init`. Everything in .cocoplus/ belongs to this clone (the kill switch, counts,",
        "# sessions, locks, logs, the server token) and is never committed, except the handoff below, which a",
        "# team may commit so that a session can be resumed from another clone.",
        "*",
        "!.gitignore",
    ]
    for d in subdirs:
        lines += [f"!{d}/", f"{d}/*"]
    lines += [f"!{os.path.relpath(p, layout.root)}" for p in shared]
    return "\n".join(lines) + "\n"


def new_budget_state(cfg: config_mod.Config) -> dict[str, Any]:
    s = cfg.session
    return {
        "schema_version": SCHEMA_VERSION,
        "state": "normal",
        "limit": s["budget_limit"],
        "spent": 0.0,
        "reserve_fraction": s["budget_reserve_fraction"],
        "enforcement": s["budget_enforcement"],
        "updated_at": clock.iso(),
    }


def init(state_dir: str, environ: dict[str, str] | None = None) -> dict[str, Any]:
    """Create what is missing under `state_dir`; report what was created and kept."""
    if os.path.islink(state_dir):
        raise CocoplusError(f"{state_dir}: is a symbolic link; refusing to use it as the state directory")
    if os.path.exists(state_dir) and not os.path.isdir(state_dir):
        raise CocoplusError(f"{state_dir}: exists and is not a directory")
    check_state_dir(state_dir)
    layout = Layout(state_dir)
    cfg = config_mod.load(layout.project, environ)
    created: list[str] = []
    kept: list[str] = []
    existed = os.path.isdir(state_dir)
    fsio.ensure_dir(layout.root)
    if not existed:
        os.chmod(layout.root, 0o700)
        created.append(layout.root)
    # The spool is made now so that counting on a full disk never needs a new directory.
    for d in (
        layout.session_dir,
        layout.sessions_dir,
        layout.supervision_dir,
        layout.chat_dir,
        layout.locks_dir,
        layout.logs_dir,
        layout.iteration_spool_dir,
    ):
        if not os.path.isdir(d):
            fsio.ensure_dir(d)
            created.append(d)

    # Lock files are made now too: on a disk with no inodes left, the kill switch
    # and the count must not need a new file before they can even start.
    for name in ("kill-switch", "iteration-budget", "progress", "steps", "steer", "sessions"):
        if not os.path.lexists(layout.lock(name)):
            with Lock(layout.lock(name), 0):
                pass

    s = cfg.session

    def put(path: str, content: str | bytes | dict[str, Any]) -> None:
        if os.path.lexists(path):
            kept.append(path)
            return
        if isinstance(content, dict):
            fsio.atomic_write_json(path, content)
        elif isinstance(content, bytes):
            fsio.atomic_write_bytes(path, content)
        else:
            fsio.atomic_write_text(path, content)
        created.append(path)

    put(layout.marker, MARKER_TEXT)
    put(layout.readme, README)
    put(layout.gitignore, gitignore_text(layout))
    if not os.path.lexists(layout.progress):
        freshness.note(layout, progress.template(s["max_iterations"], 0, s["iteration_warn_at"]), time.time())
    put(layout.progress, progress.template(s["max_iterations"], 0, s["iteration_warn_at"]))
    put(layout.context, predicates.TEMPLATE)
    problems: list[str] = []
    damaged = fsio.quarantined_copies(layout.iteration_budget) if not os.path.lexists(layout.iteration_budget) else []
    if damaged:
        # Set aside as damaged and not reset: a fresh file here would restart the count from 0.
        problems.append(
            f"{layout.rel(layout.iteration_budget)}: not recreated, it was set aside as damaged "
            f"({layout.rel(damaged[-1])}); run `cocoplus session resume --reset-budget` to start a new count"
        )
    else:
        put(layout.iteration_budget, new_iteration_budget(s["max_iterations"], s["iteration_warn_at"]))
    put(layout.budget_state, new_budget_state(cfg))
    put(layout.status, new_status("idle", "initialised"))
    put(layout.pod_state, new_status("idle", "initialised"))
    for path in (layout.task_queue, layout.steps):
        if not os.path.lexists(path):
            fsio.atomic_write_bytes(path, b"")
            created.append(path)
    config_mod.compile_for_hook(layout)
    return {
        "state_dir": layout.root,
        "created": [layout.rel(p) for p in created],
        "kept": [layout.rel(p) for p in kept],
        "problems": problems,
        "config": layout.rel(cfg.path) if cfg.path else None,
    }
