"""PreToolUse's check of protected paths for a launched worker's file tools (cocoplus/rules/protected.py).

A worker cocoplus launched runs headless; its runtime may admit a file write
by its own flags, mode or settings (Codex's and Gemini CLI's headless runs
never ask; Claude Code in `acceptEdits`, or with an allow rule in a settings
file a repository committed) without the call ever reaching cocoplus's
permission event.  So before a launched worker's edit or write tool runs,
its target is resolved (links and `..` followed) and, when it is a protected
path, the call is refused unless the runtime will ask first (then the
permission event routes it to the operator).  No parser, no rule: a few
`stat` calls.  The check is switched on by the worker's environment markers
(`COCOPLUS_WORKER`, `COCOPLUS_HEADLESS`): a marker can only make it stricter,
since a session without one keeps its runtime's own dialog.  Standard
library only, and no `from __future__` (a module more on this path).
"""

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Mapping
    from typing import Any

    from cocoplus.runtimes.protocol import Adapter

MARKERS = ("COCOPLUS_WORKER", "COCOPLUS_HEADLESS")


def marked(environ: "Any") -> bool:
    return any(environ.get(name) for name in MARKERS)


# Where a shell command's words are cut into candidate paths (no parser here: see `_shell_hits`).
_CUTS = ";&|<>()`'\"=\n\t{}"
MAX_WORDS = 256
# Programs that take a directory's contents along when they remove or move it (`rm -rf .`).
_REMOVES = frozenset({"rm", "rmdir", "mv", "chmod", "chown", "chgrp", "shred", "rsync", "find"})


def refusal(adapter: "Adapter", payload: "Mapping[str, Any]", state: str, environ: "Any") -> "str | None":
    """Why this pre-tool call must not run (it writes a protected path and the runtime will not ask), or None."""
    targets = [t for t in adapter.edited_paths(payload) if isinstance(t, str)]
    command = None if targets else _shell_command(adapter, payload)
    if not targets and command is None:
        return None
    project = state.rpartition("/")[0] or "/"
    tree = environ.get("COCOPLUS_WORKTREE") or None
    sent = payload.get("cwd")
    cwd: str = sent if isinstance(sent, str) and sent.startswith("/") else (tree or project)
    if command is None and all(_plain(t if t.startswith("/") else f"{cwd}/{t}") for t in targets):
        return None  # the usual edit: no protected name on its way and no link to follow (a few `lstat`)
    from cocoplus.core import userfiles  # deferred: only a path that may be protected, or a shell that never asks
    from cocoplus.rules import paths, protected  # deferred: as userfiles

    table = protected.Table(project, tree)
    if command is not None:
        hits = _shell_hits(command, cwd, table, paths)
    else:
        hits = [h for h in (table.write(paths.resolve(t, cwd)) for t in targets) if h]
    if not hits:
        return None
    if command is None and adapter.asks_for_write(payload, project, userfiles.home()):
        return None  # its permission request reaches cocoplus, which asks the operator
    return (
        f"cocoplus: this call writes {', '.join(hits)}, which {protected.WHY}; a worker may not change it without "
        f"the operator's approval of that one request, and {adapter.TITLE} would not ask. Ask the human with "
        "ask_human if the change is needed."
    )


# The first component of every protected name (rules/protected.py), and the directory of this user's cocoplus files:
# a path with none of them on its way, and no link or `..` either, names no protected file.
_NAMES = frozenset(
    {
        ".claude", ".codex", ".cortex", ".cursor", ".env", ".gemini", ".mcp.json", ".cocoplus", "cocoplus.toml",
        ".git", ".claude.json", ".snowflake", ".config", ".local", ".gitconfig", "cocoplus",
    }
)  # fmt: skip
_S_IFMT = 0o170000
_S_IFLNK = 0o120000


def _plain(path: str) -> bool:
    """True when the absolute `path` certainly names no protected file: none of its components is a protected
    name or `..`, and none of those that exist is a link (checked with `posix.lstat`, no `os` needed)."""
    import posix  # deferred: built into the interpreter, already loaded by the hook's fast path

    parts = [p for p in path.split("/") if p and p != "."]
    if any(p in _NAMES or p == ".." for p in parts):
        return False
    cur = ""
    for p in parts:
        cur += "/" + p
        try:
            mode = posix.lstat(cur).st_mode
        except FileNotFoundError:
            return True  # what is not there yet holds no link
        except (OSError, ValueError):
            return False
        if mode & _S_IFMT == _S_IFLNK:
            return False
    return True


def _shell_command(adapter: "Adapter", payload: "Mapping[str, Any]") -> "str | None":
    """The command of a shell call, for a runtime whose headless run never asks (Codex, Gemini CLI): no permission
    event will see it, so its words are looked at here."""
    if adapter.ASKS_PERMISSION:
        return None  # Claude Code: the permission event parses the command (rules/engine.py)
    name = payload.get("tool_name")
    if not isinstance(name, str) or adapter.RULE_TOOLS.get(name, name) != "Bash":
        return None
    inp = payload.get("tool_input")
    value = inp.get("command") if isinstance(inp, dict) else None
    if isinstance(value, list):
        value = " ".join(v for v in value if isinstance(v, str))
    return value if isinstance(value, str) else None


def _shell_hits(command: str, cwd: str, table: "Any", paths: "Any") -> "list[str]":
    """The protected paths (written) or secrets (read) a shell command's words name, links followed: every word
    is taken as a path that may be written.  Stricter than the rule engine, which reads the command with a
    parser: this runs before every shell call of a worker whose runtime never asks."""
    text = command
    for c in _CUTS:
        text = text.replace(c, " ")
    out: "list[str]" = []
    words = text.split()[:MAX_WORDS]
    removes = any(w.rsplit("/", 1)[-1] in _REMOVES for w in words)
    for word in words:
        if word.startswith("-") or "://" in word or word.startswith("$"):
            continue
        real = paths.resolve(word, cwd)
        hit = table.write(real) or (table.inside(real) if removes else None) or table.read(real)
        if hit and hit not in out:
            out.append(hit)
    return out
