"""The state directories this process knows, so that every writer can refuse a symbolic link between one of them
and the file it writes.

A `Layout` adds its state directory when it is made (core/paths.py); the
writers (core/fsio.py, core/lock.py) ask `dirs_below_root` which
directories lie between a known state directory and a file.  Standard
library only, and no cocoplus import: the bottom of the package.
"""

from __future__ import annotations

import os

# Every state directory a Layout was made for in this process.
_ROOTS: set[str] = set()


def add(root: str) -> None:
    _ROOTS.add(root)


def dirs_below_root(path: str) -> list[str]:
    """The directories between a known state directory and `path`'s file, nearest the root first.

    Empty when `path` is not under the state directory of any Layout made
    in this process (then only the caller knows what to trust).
    """
    directory = os.path.dirname(os.path.abspath(path))
    for root in _ROOTS:
        if directory == root:
            return []
        if directory.startswith(root + os.sep):
            parts = directory[len(root) + 1 :].split(os.sep)
            out = []
            cur = root
            for part in parts:
                cur = os.path.join(cur, part)
                out.append(cur)
            return out
    return []
