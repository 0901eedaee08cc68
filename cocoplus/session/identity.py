"""Who a hook is for: the managed worker (and whether no person watches it) that cocoplus vouches for.

`of_hook(layout, environ)` is the one answer the permission and session-start
hooks use.  PLACEHOLDER: for now it reads the environment and the worker
record as before; it becomes "the sealed worker record whose recorded process
is an ancestor of the hook" (issue: identities no repository or worker can
forge).  Standard library only.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Mapping
    from typing import Any

    from cocoplus.core.paths import Layout


class Identity:
    """What cocoplus vouches for about the session a hook runs for."""

    __slots__ = ("worker", "headless", "allow", "tree", "record", "problem")

    def __init__(
        self,
        worker: str | None = None,
        headless: bool = False,
        allow: list[str] | None = None,
        tree: str | None = None,
        record: dict[str, Any] | None = None,
        problem: str | None = None,
    ) -> None:
        self.worker = worker  # the managed worker's id, or None
        self.headless = headless  # no person watches this session (a launched worker, a headless resume)
        self.allow = allow or []  # the worker's own rules (`launch --allow`), only from a record whose seal holds
        self.tree = tree  # the worker's git worktree, where its path rules are meant for
        self.record = record
        self.problem = problem  # why a candidate named by the environment was not vouched for (logged)


def of_hook(layout: Layout, environ: Mapping[str, str]) -> Identity:
    from cocoplus.core import fsio  # deferred: only the events that need an identity read a worker record
    from cocoplus.core.errors import CocoplusError  # deferred: as fsio
    from cocoplus.core.paths import is_valid_id  # deferred: as fsio

    wid = environ.get("COCOPLUS_WORKER")
    if not (wid and is_valid_id(wid)):
        return Identity(headless=environ.get("COCOPLUS_HEADLESS") == "1")
    try:
        rec = fsio.read_json(layout.worker_record(wid)) or {}
    except CocoplusError:
        rec = {}
    allow = [r for r in rec.get("allow") or [] if isinstance(r, str)]
    tree = rec.get("worktree", {}).get("cwd") if isinstance(rec.get("worktree"), dict) else None
    return Identity(wid, True, allow, tree, rec)
