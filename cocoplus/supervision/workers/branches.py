"""A worktree worker's branch brought back: `workers diff`, `merge` and `clean` (supervision/worktrees.py does the
git), refused while the worker runs, with what it left uncommitted committed first and the outcome noted on its
record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cocoplus.core import clock
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.supervision import worktrees
from cocoplus.supervision.workers.store import LIVE, alive, lock, read, records, resolve, write

if TYPE_CHECKING:
    from cocoplus.core.shapes import WorkerRecord


def note_commit(layout: Layout, wid: str, commit: str) -> None:
    """Record on the worker the commit its run's leftovers went into."""
    with lock(layout):
        rec = read(layout, wid)
        if rec is not None and isinstance(rec.get("worktree"), dict):
            rec["worktree"]["committed"] = {"commit": commit, "at": clock.iso()}
            write(layout, rec)


def _ended(layout: Layout, rec: WorkerRecord, doing: str) -> None:
    if rec.get("state") in LIVE and (alive(rec) or rec.get("state") == "queued"):
        raise CocoplusError(
            f"workers {doing} {rec['id']}: the worker is still {rec['state']}; wait for it to end "
            f"or `cocoplus workers kill {rec['id']}`"
        )


def _present(layout: Layout, rec: WorkerRecord) -> dict[str, Any]:
    """The worker's worktree as its record keeps it, once its branch is known to be there: after `workers clean`
    deleted it (merged, or `--force`), or after anything else did, `diff`, `merge` and `clean` all say the same one
    line (state, exit 1), never git's own error."""
    tree = worktrees.of(rec)
    if worktrees.branch_exists(layout, tree["branch"]):
        return tree
    if tree.get("removed_at"):
        gone = f"its worktree and its branch {tree['branch']} were removed by `workers clean` at {tree['removed_at']}"
    else:
        gone = f"its branch {tree['branch']} no longer exists"
    raise CocoplusError(f"worker {rec['id']}: {gone}; there is nothing left to diff, merge or clean")


def _keep_leftovers(layout: Layout, rec: WorkerRecord) -> None:
    """What an ended worker left uncommitted, committed on its branch now if its runner could not (it died with
    its worker, or the commit failed): a merge or a clean never loses it."""
    commit = worktrees.commit_leftovers(rec)
    if commit:
        note_commit(layout, rec["id"], commit)


def _note_tree(layout: Layout, wid: str, **fields: Any) -> WorkerRecord | None:
    with lock(layout):
        rec = read(layout, wid)
        if rec is not None and isinstance(rec.get("worktree"), dict):
            rec["worktree"].update(fields)
            write(layout, rec)
        return rec


def diff(layout: Layout, ref: str) -> dict[str, Any]:
    """`workers diff W`: the worker's branch against the commit it started from."""
    rec = resolve(layout, ref)
    _present(layout, rec)
    return worktrees.diff(layout, rec)


def merge(layout: Layout, ref: str, by: str, check: Callable[[list[str]], None] | None = None) -> dict[str, Any]:
    """`workers merge W`: its branch into the project's current branch (refused while it runs).  `check`: called
    with the protected paths the merge would change, once what the worker left is committed and before git merges
    anything (worktrees.merge); it raises to refuse."""
    rec = resolve(layout, ref)
    _present(layout, rec)
    _ended(layout, rec, "merge")
    _keep_leftovers(layout, rec)
    out = worktrees.merge(layout, rec, check)
    if out["merged"]:
        merged = {"into": out["into"], "commit": out["commit"], "at": clock.iso(), "by": by, "stat": out.get("stat")}
        if out.get("protected"):
            merged["protected"] = out["protected"]
        _note_tree(layout, rec["id"], merged=merged)
    return out


def clean(layout: Layout, ref: str | None, force: bool = False) -> dict[str, Any]:
    """`workers clean [W]`: remove ended workers' worktrees; a branch not merged stays unless `force`."""
    if ref is not None:
        rec = resolve(layout, ref)
        _present(layout, rec)
        _ended(layout, rec, "clean")
        chosen = [rec]
        skipped: list[dict[str, Any]] = []
    else:
        chosen, skipped = [], []
        for rec in records(layout)[0]:
            tree = rec.get("worktree")
            if not isinstance(tree, dict) or tree.get("removed_at"):
                continue
            if rec.get("state") in LIVE and (alive(rec) or rec.get("state") == "queued"):
                skipped.append({"worker": rec["id"], "state": rec.get("state")})
            else:
                chosen.append(rec)
    done = []
    for rec in chosen:
        _keep_leftovers(layout, rec)
        out = worktrees.remove(layout, rec, force)
        _note_tree(layout, rec["id"], removed_at=clock.iso(), branch_kept=out["branch_kept"])
        done.append(out)
    return {"cleaned": done, "running": skipped}
