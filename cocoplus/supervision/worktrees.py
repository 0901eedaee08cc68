"""A launched worker's own git worktree (`cocoplus launch --worktree`), and bringing its work back.

`create` makes, for worker `wid`, a git worktree on a new branch
`cocoplus/<alias or id>` from the project's HEAD, where `[workers]
worktree_dir` says (by default `.cocoplus/worktrees/<name>`, which git
ignores as all of `.cocoplus/`), with nothing but the checkout and:

* the worker's runtime's settings that `install` wrote and git does not
  carry (Claude Code's per-user `.claude/settings.local.json`; a hooks or
  MCP file not committed yet), so its hooks run there;
* the marker that makes its hooks and commands answer to the project's
  `.cocoplus/` (core/worktreemark.py): `.cocoplus/WORKTREE` in the
  worktree, `workers/<id>/worktree.key` in the project.

A project that is not a git work tree, has no commit, has staged changes,
or whose branch name is taken is refused in one line before anything is
made; a step that fails after `git worktree add` undoes what was made.

When a run ends, `commit_leftovers` commits what the worker left
uncommitted on its branch.  `diff` (the branch against where it started),
`merge` (into the project's current branch; a conflict stops it and leaves
git's conflict state) and `clean` (remove ended workers' worktrees, keep a
branch that is not merged) are `cocoplus workers diff|merge|clean`.

Both `diff` and `merge` list, as `protected`, the files the branch changes
(adds, edits, deletes, renames from or to) that are protected paths
(`rules.protected.project_relative_hit`: a runtime's settings and hooks,
`.mcp.json`, `cocoplus.toml`, `.cocoplus/`, ...): merging them changes what
runs.  `merge` hands them to its caller's `check` before git merges
anything, so that a merge the caller may not make (the main brain's) is
refused with nothing changed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cocoplus import config as config_mod
from cocoplus.core import clock, fsio, worktreemark
from cocoplus.core.errors import CocoplusError, UsageError
from cocoplus.core.paths import STATE_DIR_NAME, Layout
from cocoplus.install import hooks as install_hooks
from cocoplus.install import mcp_config
from cocoplus.rules import protected as protected_paths
from cocoplus.runtimes import registry as runtimes

if TYPE_CHECKING:
    from cocoplus.core.shapes import WorkerRecord

GIT_TIMEOUT_S = 120.0
BRANCH_PREFIX = "cocoplus/"
# What git would take from the caller's environment to work on another repository than the project's.
_GIT_ENV_DROP = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR")
FALLBACK_IDENT = ("-c", "user.name=cocoplus", "-c", "user.email=cocoplus@localhost")


def git(cwd: str, *args: str, ident: bool = False) -> subprocess.CompletedProcess[str]:
    """`git ARGS` in `cwd`; CocoplusError if git cannot be run.  `ident`: commit as cocoplus where no one is set."""
    env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV_DROP}
    pre: tuple[str, ...] = ()
    if ident and _no_identity(cwd, env):
        pre = FALLBACK_IDENT
    try:
        return subprocess.run(
            ["git", *pre, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=GIT_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except FileNotFoundError:
        raise CocoplusError("git is not installed (no `git` on PATH)") from None
    except (OSError, subprocess.SubprocessError) as exc:
        raise CocoplusError(f"git {args[0]}: {exc}") from None


def _no_identity(cwd: str, env: dict[str, str]) -> bool:
    try:
        r = subprocess.run(
            ["git", "var", "GIT_COMMITTER_IDENT"], cwd=cwd, env=env, capture_output=True, text=True, timeout=30,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return True
    return r.returncode != 0


def said(r: subprocess.CompletedProcess[str]) -> str:
    """git's own reason, on one line."""
    lines = [ln.strip() for ln in (r.stderr or r.stdout or "").splitlines() if ln.strip()]
    picked = [ln for ln in lines if ln.startswith(("fatal:", "error:"))] or lines
    return (picked[0] if picked else f"exit code {r.returncode}").removeprefix("fatal: ").removeprefix("error: ")


def branch_for(name: str) -> str:
    return BRANCH_PREFIX + name


def base_dir(layout: Layout, environ: dict[str, str] | None = None) -> str:
    """Where worktrees are made: `[workers] worktree_dir` (relative to the project), else `.cocoplus/worktrees`."""
    configured = str(config_mod.load_for(layout, environ).get("workers.worktree_dir") or "").strip()
    if not configured:
        return layout.worktrees_dir
    return os.path.abspath(os.path.join(layout.project, os.path.expanduser(configured)))


def check(layout: Layout, name: str, environ: dict[str, str] | None = None) -> dict[str, str]:
    """What `create` will make for `name`, once the project can have it; one line (a state error) if it cannot."""
    project = layout.project
    r = git(project, "rev-parse", "--show-toplevel", "--show-prefix")
    if r.returncode != 0:
        raise CocoplusError(f"launch --worktree: {project} is not in a git repository ({said(r)})")
    top, prefix = (r.stdout.splitlines() + ["", ""])[:2]
    if git(project, "rev-parse", "--verify", "-q", "HEAD^{commit}").returncode != 0:
        raise CocoplusError(f"launch --worktree: {top} has no commit yet: commit once, then launch")
    staged = git(project, "diff", "--cached", "--quiet")
    if staged.returncode != 0:
        raise CocoplusError(
            f"launch --worktree: {top} has staged changes (a dirty index): commit or unstage them first, "
            "so the worker starts from HEAD as it is"
        )
    branch = branch_for(name)
    if git(project, "check-ref-format", "--branch", branch).returncode != 0:
        raise UsageError(f"launch --worktree: {branch} is not a valid branch name")
    if git(project, "rev-parse", "--verify", "-q", f"refs/heads/{branch}").returncode == 0:
        raise CocoplusError(
            f"launch --worktree: the branch {branch} exists already (an earlier worker's?): "
            f"`cocoplus workers clean --force` or `git branch -D {branch}`, or launch with another --alias"
        )
    path = os.path.join(base_dir(layout, environ), name)
    if os.path.lexists(path):
        raise CocoplusError(f"launch --worktree: {path} exists already: remove it or launch with another --alias")
    head = git(project, "rev-parse", "HEAD").stdout.strip()
    return {"path": path, "cwd": os.path.join(path, prefix) if prefix else path, "branch": branch, "base": head}


def create(layout: Layout, wid: str, name: str, runtime: str, plan: dict[str, str]) -> dict[str, Any]:
    """Make the worktree `check` planned for worker `wid`; what the worker's record keeps of it.  All or nothing."""
    parent = os.path.dirname(plan["path"])
    if parent == layout.worktrees_dir:
        fsio.ensure_dir(parent)  # under .cocoplus: a real directory, never through a link
    else:
        os.makedirs(parent, mode=0o700, exist_ok=True)
    r = git(layout.project, "worktree", "add", "-q", "-b", plan["branch"], plan["path"], plan["base"])
    if r.returncode != 0:
        _undo(layout, wid, plan)
        raise CocoplusError(f"launch --worktree: git worktree add failed: {said(r)}")
    try:
        copied = _copy_setup(layout, runtime, plan["cwd"])
        _mark(layout, wid, plan["cwd"])
    except (CocoplusError, OSError) as exc:
        _undo(layout, wid, plan)
        raise CocoplusError(f"launch --worktree: {exc}") from None
    return {**plan, "copied": copied, "created_at": clock.iso()}


def _copy_setup(layout: Layout, runtime: str, cwd: str) -> list[str]:
    """The runtime's files that `install` wrote and the checkout does not hold, copied in; their relative paths."""
    adapter = runtimes.get(runtime)
    wanted = [os.path.join(*install_hooks.target_file(adapter))]
    mcp = mcp_config.config_path(adapter, layout.project)
    if mcp:
        wanted.append(os.path.relpath(mcp, layout.project))
    copied = []
    for rel in dict.fromkeys(wanted):
        src = os.path.join(layout.project, rel)
        dst = os.path.join(cwd, rel)
        if os.path.isfile(src) and not os.path.islink(src) and not os.path.lexists(dst):
            os.makedirs(os.path.dirname(dst), mode=0o700, exist_ok=True)
            shutil.copyfile(src, dst, follow_symlinks=False)
            copied.append(rel)
    return copied


def _mark(layout: Layout, wid: str, cwd: str) -> None:
    """The marker in the worktree's `.cocoplus/` and its key in the project (core/worktreemark.py)."""
    inner = os.path.join(cwd, STATE_DIR_NAME)
    if os.path.islink(inner) or (os.path.lexists(inner) and not os.path.isdir(inner)):
        raise CocoplusError(f"{inner}: the checkout holds a .cocoplus that is not a directory")
    os.makedirs(inner, mode=0o700, exist_ok=True)
    tree = Layout(inner)
    if not os.path.lexists(tree.gitignore):
        fsio.atomic_write_text(tree.gitignore, "# Written by cocoplus: this worktree's marker is never committed.\n*\n")
    fsio.atomic_write_text(layout.worker_worktree_key(wid), worktreemark.key_of(os.stat(inner)))
    fsio.atomic_write_text(tree.worktree_marker, worktreemark.text(layout.root, wid))


def _undo(layout: Layout, wid: str, plan: dict[str, str]) -> None:
    git(layout.project, "worktree", "remove", "--force", plan["path"])
    if os.path.isdir(plan["path"]) and not os.path.islink(plan["path"]):
        shutil.rmtree(plan["path"], ignore_errors=True)
    git(layout.project, "worktree", "prune")
    git(layout.project, "branch", "-D", plan["branch"])
    try:
        os.unlink(layout.worker_worktree_key(wid))
    except OSError:
        pass


# -- bringing the work back -------------------------------------------------------------------------------


def _ours(tree: dict[str, Any]) -> list[str]:
    """Pathspecs (from the worktree's top) of what cocoplus put there: its marker directory and the copied setup."""
    prefix = os.path.relpath(tree["cwd"], tree["path"])
    at = "" if prefix == "." else prefix + "/"
    return [f":(top){at}{rel}" for rel in (STATE_DIR_NAME, *(tree.get("copied") or []))]


def commit_leftovers(rec: WorkerRecord) -> str | None:
    """Commit on the worker's branch what its run left uncommitted in its worktree; the new commit, or None."""
    tree = rec.get("worktree")
    if not isinstance(tree, dict) or not os.path.isdir(tree.get("cwd") or ""):
        return None
    cwd = tree["cwd"]
    r = git(cwd, "add", "-A", "--", ":/")
    if r.returncode == 0:  # what cocoplus put there is never the worker's work (git ignores most of it anyway)
        r = git(cwd, "reset", "-q", "--", *_ours(tree))
    if r.returncode != 0:
        raise CocoplusError(f"worker {rec['id']}: cannot stage what it left in {cwd}: {said(r)}")
    if git(cwd, "diff", "--cached", "--quiet").returncode == 0:
        return None
    task = " ".join(str(rec.get("task") or "").split())
    named = f"worker {rec['id']}" + (f" ({rec['alias']})" if rec.get("alias") else "")
    message = f"cocoplus: what {named} left uncommitted\n\nTask: {task[:2000]}\n"
    r = git(cwd, "commit", "-q", "--no-verify", "-m", message, ident=True)
    if r.returncode != 0:
        raise CocoplusError(f"worker {rec['id']}: cannot commit what it left in {cwd}: {said(r)}")
    return git(cwd, "rev-parse", "HEAD").stdout.strip() or None


def of(rec: WorkerRecord) -> dict[str, Any]:
    """The worker's worktree as its record keeps it; a state error if it was launched without one."""
    tree = rec.get("worktree")
    if not isinstance(tree, dict) or not isinstance(tree.get("branch"), str):
        raise CocoplusError(f"worker {rec['id']} runs in the project itself, not in a worktree (launch --worktree)")
    return tree


def branch_exists(layout: Layout, branch: str) -> bool:
    return git(layout.project, "rev-parse", "--verify", "-q", f"refs/heads/{branch}").returncode == 0


def protected(layout: Layout, rec: WorkerRecord, span: str) -> list[str]:
    """The protected paths among the files `span` of the worker's branch changes: added, edited, deleted, and both
    ends of a rename (a rename away from `.claude/settings.json` changes what runs too)."""
    r = git(layout.project, "diff", "--name-only", "--no-renames", "-z", span)
    if r.returncode != 0:
        raise CocoplusError(f"worker {rec['id']}: cannot list what its branch changes: {said(r)}")
    return [p for p in dict.fromkeys(r.stdout.split("\0")) if p and protected_paths.project_relative_hit(p)]


def diff(layout: Layout, rec: WorkerRecord) -> dict[str, Any]:
    """The worker's branch against the commit it started from: files changed (the protected ones too), a summary
    and the patch."""
    tree = of(rec)
    span = f"{tree['base']}..{tree['branch']}"
    r = git(layout.project, "diff", "--no-color", "--no-ext-diff", span)
    if r.returncode != 0:
        raise CocoplusError(f"workers diff {rec['id']}: {said(r)}")
    files = git(layout.project, "diff", "--name-only", span).stdout.split()
    stat = git(layout.project, "diff", "--stat", "--no-color", span).stdout
    commits = git(layout.project, "log", "--format=%h %s", span).stdout.splitlines()
    return {
        "worker": rec["id"], "branch": tree["branch"], "base": tree["base"], "files": files, "stat": stat,
        "commits": commits, "diff": r.stdout, "protected": protected(layout, rec, span),
    }  # fmt: skip


def merge(layout: Layout, rec: WorkerRecord, check: Callable[[list[str]], None] | None = None) -> dict[str, Any]:
    """Merge the worker's branch into the project's current branch; on a conflict, stop with git's state left.
    `check(protected)`: called with the protected paths the merge would change, before git merges anything (it
    raises to refuse the merge)."""
    tree = of(rec)
    branch = tree["branch"]
    if git(layout.project, "rev-parse", "--verify", "-q", f"refs/heads/{branch}").returncode != 0:
        raise CocoplusError(f"workers merge {rec['id']}: its branch {branch} is gone")
    current = git(layout.project, "rev-parse", "--abbrev-ref", "HEAD").stdout.strip()
    if git(layout.project, "rev-parse", "-q", "--verify", "MERGE_HEAD").returncode == 0:
        raise CocoplusError(
            f"workers merge {rec['id']}: a merge is in progress in {layout.project}: conclude it (resolve and "
            "commit) or `git merge --abort` first"
        )
    if git(layout.project, "merge-base", "--is-ancestor", branch, "HEAD").returncode == 0:
        return {"worker": rec["id"], "branch": branch, "into": current, "merged": True, "already": True,
                "conflicts": [], "commit": None, "protected": []}  # fmt: skip
    # What the merge brings in: the branch since its common ancestor with HEAD (else since the worker's start).
    common = git(layout.project, "merge-base", "HEAD", branch).returncode == 0
    touched = protected(layout, rec, f"HEAD...{branch}" if common else f"{tree['base']}..{branch}")
    if check is not None:
        check(touched)
    message = f"Merge {branch} (cocoplus worker {rec['id']})"
    r = git(layout.project, "merge", "--no-ff", "--no-edit", "-m", message, branch, ident=True)
    if r.returncode == 0:
        head = git(layout.project, "rev-parse", "HEAD").stdout.strip()
        # What the merge brought in, against the branch it went into: "3 files changed, 10 insertions(+), ..."
        stat = git(layout.project, "diff", "--shortstat", "HEAD^1", "HEAD").stdout.strip() or None
        return {"worker": rec["id"], "branch": branch, "into": current, "merged": True, "already": False,
                "conflicts": [], "commit": head, "protected": touched, "stat": stat}  # fmt: skip
    conflicts = git(layout.project, "diff", "--name-only", "--diff-filter=U").stdout.split()
    if conflicts:
        return {"worker": rec["id"], "branch": branch, "into": current, "merged": False, "already": False,
                "conflicts": conflicts, "commit": None, "protected": touched}  # fmt: skip
    raise CocoplusError(f"workers merge {rec['id']}: git merge {branch} refused: {said(r)}")


def remove(layout: Layout, rec: WorkerRecord, force: bool = False) -> dict[str, Any]:
    """Remove the worker's worktree; delete its branch if merged (or with `force`).  What was done."""
    tree = of(rec)
    out: dict[str, Any] = {"worker": rec["id"], "path": tree["path"], "branch": tree["branch"]}
    if os.path.lexists(tree["path"]):
        for rel in tree.get("copied") or []:  # cocoplus' copies, unless the worker committed them
            if git(tree["cwd"], "ls-files", "--error-unmatch", "--", rel).returncode != 0:
                try:
                    os.unlink(os.path.join(tree["cwd"], rel))
                except OSError:
                    pass
        r = git(layout.project, "worktree", "remove", *(["--force"] if force else []), tree["path"])
        if r.returncode != 0:
            raise CocoplusError(
                f"workers clean {rec['id']}: {said(r)} (it holds work not committed: --force removes it anyway)"
            )
    git(layout.project, "worktree", "prune")
    out["removed"] = True
    exists = branch_exists(layout, tree["branch"])
    merged = exists and git(layout.project, "merge-base", "--is-ancestor", tree["branch"], "HEAD").returncode == 0
    if exists and (merged or force):
        r = git(layout.project, "branch", "-D", tree["branch"])
        out["branch_deleted"] = r.returncode == 0
    else:
        out["branch_deleted"] = False
    out["branch_kept"] = exists and not out["branch_deleted"]
    out["merged"] = merged
    try:
        os.unlink(layout.worker_worktree_key(rec["id"]))
    except OSError:
        pass
    return out
