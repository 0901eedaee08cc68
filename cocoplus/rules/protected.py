"""The files no rule may let a tool call change, and the secrets no rule may let it read.

Protected, for writes: the files that decide what the agent runtimes run, or
what cocoplus enforces:

* every runtime's settings and hook files, its MCP configuration and the
  files it loads into its environment, in the project and in this user's
  home (each adapter declares its own: `PROTECTED`, `USER_PROTECTED`;
  `RUNTIMES` and `USER_RUNTIMES` below are their union, which
  tests/rules/test_protected.py keeps equal to the adapters');
* `.mcp.json`, `cocoplus.toml` and all of `.cocoplus/` (the kill switch, the
  worker records and their grants);
* `.git/hooks`, `.git/config` (and `config.worktree`), this user's git
  configuration: git runs what they name;
* this user's cocoplus files: configuration and rules, trust, keys, the
  hook pointer and the per-user registry.

Protected, for reads (secrets): this user's cocoplus configuration directory,
which holds the seal key, the capability and the channels' secrets, and the
project's server token (the page's authority is the operator's).

A write to a protected path is never allowed by a rule, by `launch --allow`,
by an "always" answer or by the main brain: only by the operator's approval
of that one request.  The paths are compared as real paths, and so is each
protected path (a protected directory that is itself a link is protected at
both ends).  Standard library only: PreToolUse imports this module for the
file tools of a launched worker.
"""

from __future__ import annotations

import os

from cocoplus.core import userfiles

# The union of the adapters' PROTECTED (project-relative) and USER_PROTECTED (home-relative).
RUNTIMES = (".claude", ".codex", ".cortex", ".cursor", ".env", ".gemini", ".mcp.json")
USER_RUNTIMES = (".claude", ".claude.json", ".codex", ".cortex", ".cursor", ".gemini", ".snowflake/cortex")
# cocoplus's own, and git's.
PROJECT_OWN = (".cocoplus", "cocoplus.toml", ".git/hooks", ".git/config", ".git/config.worktree")
USER_OWN = (".config/cocoplus", ".local/share/cocoplus", ".local/state/cocoplus", ".gitconfig", ".config/git")
SECRETS = (".config/cocoplus",)
PROJECT_SECRETS = (".cocoplus/server-token",)  # the page's and the REST API's token: the operator's authority

WHY = "changes what runs"  # said beside every protected path a request would write


def _both(path: str) -> list[str]:
    real = os.path.realpath(path)
    return [path] if real == path else [path, real]


def project_paths(*trees: str) -> list[tuple[str, str]]:
    """(absolute path, how it is shown) of every protected path of the project and of the worker trees given
    (the project's real path first)."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for tree in trees:
        if not tree:
            continue
        base = os.path.realpath(tree)
        for rel in (*RUNTIMES, *PROJECT_OWN):
            for p in _both(os.path.join(base, rel)):
                if p not in seen:
                    seen.add(p)
                    out.append((p, rel))
    return out


def user_paths() -> list[tuple[str, str]]:
    home = os.path.realpath(userfiles.home())
    out: list[tuple[str, str]] = []
    for rel in (*USER_RUNTIMES, *USER_OWN):
        for p in _both(os.path.join(home, rel)):
            out.append((p, "~/" + rel))
    cfg = userfiles.directory()  # where this user's cocoplus files are now (the password database's home)
    for p in _both(cfg):
        if all(p != q for q, _ in out):
            out.append((p, userfiles.shown(cfg)))
    return out


def secret_paths(*trees: str) -> list[tuple[str, str]]:
    home = os.path.realpath(userfiles.home())
    out = [(p, "~/" + rel) for rel in SECRETS for p in _both(os.path.join(home, rel))]
    for tree in trees:
        if tree:
            out += [(p, rel) for rel in PROJECT_SECRETS for p in _both(os.path.join(os.path.realpath(tree), rel))]
    cfg = userfiles.directory()
    for p in _both(cfg):
        if all(p != q for q, _ in out):
            out.append((p, userfiles.shown(cfg)))
    return out


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def hit(path: str, table: list[tuple[str, str]]) -> str | None:
    """How `path` (a real path) is shown when it is one of `table`'s paths or under one; else None."""
    for root, shown in table:
        if _under(path, root):
            rest = path[len(root) :].lstrip("/")
            return f"{shown}/{rest}" if rest else shown
    return None


def holds(path: str, table: list[tuple[str, str]]) -> str | None:
    """The first of `table`'s paths that lies under `path` (removing or moving `path` takes it along)."""
    for root, shown in table:
        if _under(root, path):
            return shown
    return None


class Table:
    """The protected paths for one decision: the project's (and a worker's tree's), this user's, the secrets."""

    def __init__(self, project: str, tree: str | None = None) -> None:
        self.writes = [*project_paths(project, *([tree] if tree else [])), *user_paths()]
        self.secrets = secret_paths(project)

    def write(self, path: str) -> str | None:
        return hit(path, self.writes)

    def inside(self, path: str) -> str | None:
        """A protected path that `path` holds (a directory whose removal or move takes it along)."""
        return holds(path, self.writes)

    def read(self, path: str) -> str | None:
        return hit(path, self.secrets)
