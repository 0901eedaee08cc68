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
of that one request.  Likewise a worker's branch that changes one
(`project_relative_hit`, for the paths git names): `workers diff` and
`workers merge` list them, and only the operator may merge it
(supervision/worktrees.py).  The paths are compared as real paths, and so is each
protected path (a protected directory that is itself a link is protected at
both ends).  Standard library only: PreToolUse imports this module for the
file tools of a launched worker.
"""

from __future__ import annotations

import os

from cocoplus.core import userfiles

# The union of the adapters' PROTECTED (project-relative) and USER_PROTECTED (home-relative).
RUNTIMES = (".agents", ".claude", ".codex", ".cortex", ".cursor", ".env", ".gemini", ".mcp.json")
USER_RUNTIMES = (".claude", ".claude.json", ".codex", ".cortex", ".cursor", ".gemini", ".snowflake/cortex")
# cocoplus's own, and git's.
PROJECT_OWN = (".cocoplus", "cocoplus.toml", ".git/hooks", ".git/config", ".git/config.worktree")
USER_OWN = (".config/cocoplus", ".local/share/cocoplus", ".local/state/cocoplus", ".gitconfig", ".config/git")
SECRETS = (".config/cocoplus",)
# The page's and the REST API's token (the operator's authority) is in `.cocoplus/secrets/`; `.cocoplus/server-token`
# is where an earlier version kept it.
PROJECT_SECRETS = (".cocoplus/secrets", ".cocoplus/server-token")

WHY = "changes what runs"  # said beside every protected path a request would write


class _Root:
    """A real directory and the protected names under it (relative paths; none: the whole directory), compared
    with a real path by its text."""

    __slots__ = ("base", "names", "shown")

    def __init__(self, base: str, names: tuple[str, ...], shown: str) -> None:
        self.base = base.rstrip("/") or "/"
        self.names = names
        self.shown = shown  # how the base is shown: "" for the project, "~/" for the home, "~/.x/" for a link's end

    def _rel(self, path: str) -> str | None:
        if path == self.base:
            return ""
        if path.startswith(self.base + "/") or self.base == "/":
            return path[len(self.base) :].lstrip("/")
        return None

    def hit(self, path: str) -> str | None:
        """How `path` is shown when it is a protected path of this root, or under one."""
        rel = self._rel(path)
        if rel is None:
            return None
        if not self.names:
            return (self.shown + rel).rstrip("/")
        for name in self.names:
            if rel == name or rel.startswith(name + "/"):
                return self.shown + rel
        return None

    def held(self, path: str) -> str | None:
        """A protected path of this root that lies under `path` (or is `path`)."""
        top = path.rstrip("/") or "/"
        if top == "/" or self.base == top or self.base.startswith(top + "/"):
            return (self.shown + (self.names[0] if self.names else "")).rstrip("/")
        rel = self._rel(path)
        if rel is None:
            return None
        for name in self.names:
            if name == rel or name.startswith(rel + "/"):
                return self.shown + name
        return None


def _linked(root: _Root) -> list[_Root]:
    """The protected names of `root` whose first component is a link: protected at the other end too.  One
    directory read (`scandir`) rather than an `lstat` for each name."""
    firsts = {name.split("/", 1)[0] for name in root.names}
    out: list[_Root] = []
    try:
        with os.scandir(root.base) as entries:
            links = [e.name for e in entries if e.name in firsts and e.is_symlink()]
    except OSError:
        return out
    for first in links:
        end = os.path.realpath(root.base + "/" + first)
        rest = tuple(n[len(first) + 1 :] for n in root.names if n.startswith(first + "/"))
        whole = first in root.names
        out.append(_Root(end, () if whole else rest, root.shown + first + "/"))
    return out


def project_relative_hit(relpath: str) -> str | None:
    """The protected path that a repository-relative path (as git names it: `/`-separated, from the top of the work
    tree) is or lies under, as that path spells it, or None.  The project's protected paths (RUNTIMES, PROJECT_OWN)
    count at the top and in any directory below it (the project may be a directory of the repository, and an
    agent started in a directory reads its runtime's files there), compared without regard to case (a file
    system that ignores case reads `.Claude` as `.claude`)."""
    parts = [p for p in relpath.replace("\\", "/").split("/") if p not in ("", ".")]
    folded = [p.casefold() for p in parts]
    for i in range(len(parts)):
        for rel in (*RUNTIMES, *PROJECT_OWN):
            want = rel.casefold().split("/")
            if folded[i : i + len(want)] == want:
                return "/".join(parts[: i + len(want)])
    return None


class Table:
    """The protected paths for one decision: the project's (and a worker's tree's), this user's, the secrets.

    Every path asked about is a real path (`rules.paths.resolve`); the table compares it with a few real
    directories by their text, so building it costs a `realpath` of the project, the tree and the home and an
    `lstat` of each protected name (a protected name that is a link is protected at the other end too)."""

    def __init__(self, project: str, tree: str | None = None) -> None:
        home = os.path.realpath(userfiles.home())
        cfg = os.path.realpath(userfiles.directory())
        at_home = _Root(home, USER_OWN, "~/")
        writes = [_Root(os.path.realpath(t), (*PROJECT_OWN, *RUNTIMES), "") for t in (project, tree) if t]
        writes.append(_Root(home, (*USER_OWN, *USER_RUNTIMES), "~/"))
        if at_home.hit(cfg) is None:  # this user's cocoplus directory elsewhere (XDG_CONFIG_HOME)
            writes.append(_Root(cfg, (), userfiles.shown(cfg) + "/"))
        self.writes = writes + [r for w in writes for r in _linked(w)]
        # A worker's git worktree may lie under the project's protected `.cocoplus/` (`[workers] worktree_dir`):
        # inside it, its own protected names apply, not the project's.
        self._project = writes[0]
        self._tree = writes[1] if tree else None
        self.secrets = [_Root(home, SECRETS, "~/"), _Root(writes[0].base, PROJECT_SECRETS, "")]
        if _Root(home, SECRETS, "~/").hit(cfg) is None:
            self.secrets.append(_Root(cfg, (), userfiles.shown(cfg) + "/"))

    def _roots(self, path: str) -> list[_Root]:
        if self._tree is not None and (path == self._tree.base or path.startswith(self._tree.base + "/")):
            return [r for r in self.writes if r is not self._project]
        return self.writes

    def write(self, path: str) -> str | None:
        return next((h for r in self._roots(path) if (h := r.hit(path)) is not None), None)

    def inside(self, path: str) -> str | None:
        """A protected path that `path` holds (a directory whose removal or move takes it along)."""
        return next((h for r in self._roots(path) if (h := r.held(path)) is not None), None)

    def read(self, path: str) -> str | None:
        return next((h for r in self.secrets if (h := r.hit(path)) is not None), None)
