"""Paths as the rules see them: where a path really leads, and whether a path rule's pattern covers it.

A path is judged by where it leads, never by how it is spelled: `resolve`
makes it absolute (relative to the call's working directory; `~` is this
user's home from the password database), follows every symbolic link and
`..` that exists, and keeps what does not exist yet as written.  A write
through `src/cfg -> ../.claude` is a write to `.claude`.

Patterns (`Write(src/**)`, `Read(//etc/hosts)`) follow Claude Code's forms,
gitignore-like:

* `//abs/path` is an absolute path; `~/path` is under the home;
* `/path`, `./path` and `path` are relative to the root the rules are for
  (the project, or a worker's git worktree).  A path that resolves outside
  that root matches none of them;
* `*` stands for any run of characters within one path component, `**` for
  any number of components, `?` for one character; a pattern naming a
  directory covers everything below it.

Claude Code reads `path` relative to its working directory; cocoplus's rules
live in configuration and have none, so both mean the root (docs/guides/
permissions.md).  Standard library only.
"""

from __future__ import annotations

import os

from cocoplus.core import userfiles


def resolve(path: str, cwd: str | None = None) -> str:
    """`path` as an absolute real path: relative to `cwd`, `~` expanded to this user's home, links followed."""
    if path == "~" or path.startswith("~/"):
        path = userfiles.home() + path[1:]
    if not os.path.isabs(path):
        path = os.path.join(cwd or os.getcwd(), path)
    return os.path.realpath(path)


def inside(path: str, root: str) -> bool:
    """Whether the real path `path` is `root` or under it (both real, absolute)."""
    root = root.rstrip("/") or "/"
    return path == root or path.startswith(root + "/") or root == "/"


def relative(path: str, root: str) -> str | None:
    """`path` relative to `root` (`.` for the root itself), or None when it is outside."""
    if not inside(path, root):
        return None
    rel = path[len(root.rstrip("/")) :].lstrip("/")
    return rel or "."


def glob_match(text: str, pattern: str) -> bool:
    """gitignore-like: `**` any number of components (none included), `*` and `?` within one component."""
    return _match(text.split("/"), pattern.split("/"))


def _match(parts: list[str], pats: list[str]) -> bool:
    if not pats:
        return not parts
    head = pats[0]
    if head == "**":
        if len(pats) == 1:
            return True
        return any(_match(parts[i:], pats[1:]) for i in range(len(parts) + 1))
    if not parts:
        return False
    return component_match(parts[0], head) and _match(parts[1:], pats[1:])


def component_match(text: str, pattern: str) -> bool:
    """One path component against `*`, `?` and `[...]` (a bracket matches one character of its set)."""
    t = p = 0
    star = -1
    mark = 0
    while t < len(text):
        if p < len(pattern) and pattern[p] == "[":
            end = pattern.find("]", p + 2)
            if end > 0:
                chars = pattern[p + 1 : end]
                neg = chars[:1] in ("!", "^")
                hit = _in_set(text[t], chars[1:] if neg else chars)
                if hit != neg:
                    t += 1
                    p = end + 1
                    continue
        if p < len(pattern) and (pattern[p] == "?" or (pattern[p] == text[t] and pattern[p] not in "*[")):
            t += 1
            p += 1
        elif p < len(pattern) and pattern[p] == "*":
            star, mark = p, t
            p += 1
        elif star >= 0:
            p = star + 1
            mark += 1
            t = mark
        else:
            return False
    while p < len(pattern) and pattern[p] == "*":
        p += 1
    return p == len(pattern)


def _in_set(ch: str, chars: str) -> bool:
    i = 0
    while i < len(chars):
        if i + 2 < len(chars) and chars[i + 1] == "-":
            if chars[i] <= ch <= chars[i + 2]:
                return True
            i += 3
            continue
        if chars[i] == ch:
            return True
        i += 1
    return False


def pattern_covers(pattern: str, path: str, root: str) -> bool:
    """Whether a path rule's `pattern` covers the real path `path`, for rules meant for `root`."""
    pattern = pattern.strip()
    if not pattern or pattern in ("*", "**"):
        return inside(path, root) if pattern else False
    if pattern.startswith("//"):
        base, pat = "/", pattern[2:]
        rel = path.lstrip("/")
    elif pattern == "~" or pattern.startswith("~/"):
        base = os.path.realpath(userfiles.home())
        pat = pattern[2:]
        rel = relative(path, base)  # type: ignore[assignment]
    else:
        pat = pattern[2:] if pattern.startswith("./") else pattern.lstrip("/")
        rel = relative(path, os.path.realpath(root))  # type: ignore[assignment]
    if rel is None:
        return False
    pat = pat.rstrip("/")
    if not pat:
        return True
    if ".." in pat.split("/"):
        return False  # a pattern never reaches out of its base
    return glob_match(rel, pat) or glob_match(rel, pat + "/**")
