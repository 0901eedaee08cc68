"""The marker that makes a worker's git worktree answer to its project's `.cocoplus/` (docs/guides/workers.md).

`cocoplus launch --worktree` (supervision/worktrees.py) gives the worker a
git worktree of its own and writes two files:

* in the worktree, `.cocoplus/WORKTREE` (`Layout.worktree_marker` of the
  worktree's `.cocoplus`, which git ignores): the project's state directory
  and the worker's id;
* in the project, `workers/<id>/worktree.key` (`Layout.worker_worktree_key`):
  the device and inode of the worktree's `.cocoplus` directory.

A hook (and every command) that finds a `.cocoplus` holding the marker
works in the state directory it names, once both agree: a marker a
repository committed, or one copied or moved elsewhere, names a project
whose key does not match this directory, and is refused.  A marker that
cannot be read, names no cocoplus state directory (one holding `LAYOUT`),
or has no key that matches, is damaged: whoever finds it fails closed (the
hook blocks every tool; a command says why).  A worker's runtime also
carries `COCOPLUS_WORKTREE` (its worktree), so a marker removed altogether
fails closed too; like `COCOPLUS_DIR`, that variable only adds a check,
never removes one.

The built-in `posix` module only, and no cocoplus import: the hook's fast
path imports this (only where a marker is found) before `os`.
"""

import posix

MARKER = "/WORKTREE"  # under the worktree's `.cocoplus/` (Layout.worktree_marker)
KEY = "/worktree.key"  # under the project's `workers/<id>/` (Layout.worker_worktree_key)
LAYOUT = "/LAYOUT"  # the project's layout marker (Layout.marker)
ENV = "COCOPLUS_WORKTREE"
HEADER = "cocoplus worktree marker 1"
_MAX = 8192
_ID = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")
_READ = posix.O_RDONLY | posix.O_NOFOLLOW | posix.O_CLOEXEC


def text(state_dir: str, worker_id: str) -> str:
    """The marker's content: which project governs the worktree, for which worker."""
    return f"{HEADER}\nstate={state_dir}\nworker={worker_id}\n"


def key_of(st: "posix.stat_result") -> str:
    """The key text for the worktree's `.cocoplus` directory (its `stat` result)."""
    return f"{st.st_dev}:{st.st_ino}\n"


def _read(path: str) -> str:
    fd = posix.open(path, _READ)
    try:
        data = posix.read(fd, _MAX)
    finally:
        posix.close(fd)
    return data.decode("utf-8", "strict")


def _valid_id(value: str) -> bool:
    return 0 < len(value) <= 128 and value[0] not in "_-." and ".." not in value and all(c in _ID for c in value)


def has_marker(place: str) -> bool:
    """Whether the `.cocoplus` directory `place` holds a marker (True when that cannot be known: it is checked)."""
    try:
        posix.lstat(place + MARKER)
    except FileNotFoundError:
        return False
    except (OSError, ValueError):
        return True
    return True


def follow(place: str) -> "tuple[str | None, str | None]":
    """(the state directory that governs the worktree whose `.cocoplus` is `place`, None) or (None, a problem).

    `place` must hold a marker (see `has_marker`)."""
    where = place + MARKER
    try:
        lines = _read(where).splitlines()
    except FileNotFoundError:
        return None, damaged(where, "is missing")
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        return None, damaged(where, f"cannot be read ({getattr(exc, 'strerror', None) or exc})")
    fields: "dict[str, str]" = {}
    for line in lines[1:]:
        name, sep, value = line.partition("=")
        if sep:
            fields[name] = value
    state = fields.get("state", "")
    wid = fields.get("worker", "")
    if not lines or lines[0] != HEADER or not state.startswith("/") or not _valid_id(wid):
        return None, damaged(where, "is not a marker cocoplus wrote")
    if state.rstrip("/").rpartition("/")[2] != ".cocoplus" or "/../" in state + "/":
        return None, damaged(where, f"names {state}, which is not a .cocoplus directory")
    try:
        posix.stat(state + LAYOUT)
    except (OSError, ValueError):
        return None, damaged(where, f"names {state}, which is not a cocoplus project's state directory")
    try:
        key = _read(state + "/workers/" + wid + KEY)
        mine = key_of(posix.stat(place))
    except (OSError, ValueError, UnicodeDecodeError):
        return None, damaged(where, f"names worker {wid} of {state}, which has no worktree key")
    if key != mine:
        return None, damaged(where, f"names worker {wid} of {state}, whose worktree is not this one")
    return state, None


def damaged(where: str, why: str) -> str:
    return (
        f"the worktree marker {where} {why}, so which project governs this worktree cannot be known; "
        "tools are blocked until the worker's worktree is made again (`cocoplus workers clean`, then launch)"
    )


def named_by_env(tree: "str | None") -> "tuple[str | None, str | None]":
    """(the state directory the worker's `COCOPLUS_WORKTREE` (its value, `tree`) leads to, a problem); (None, None)
    when unset."""
    if not tree:
        return None, None
    place = tree.rstrip("/") + "/.cocoplus"
    if not tree.startswith("/"):
        return None, damaged(place + MARKER, f"is named by {ENV}={tree}, which is not an absolute path")
    return follow(place)
