"""The project a command acts on: the root's `--dir`, else COCOPLUS_DIR, else the nearest `.cocoplus/` above the
working directory.

No typer here: the fast path (cli/fast.py) finds the project with these too.
"""

from __future__ import annotations

import os

from cocoplus.core.errors import NotInitialized
from cocoplus.core.paths import ENV_DIR, Layout, discover

# The `--dir` the command line gave (cli/guard.py sets it), so errors can name the flag the user typed.
dir_flag: str | None = None


def layout() -> Layout:
    """The project's Layout: `--dir`, else COCOPLUS_DIR, else the nearest `.cocoplus/` above the working directory."""
    try:
        return discover()
    except NotInitialized:
        if dir_flag is None:
            raise
        raise dir_error(dir_flag) from None


def dir_error(given: str) -> NotInitialized:
    path = os.path.abspath(given)
    if not os.path.exists(path):
        return NotInitialized(
            f"--dir {given}: no such directory", hint="give a project directory or its .cocoplus directory"
        )
    if not os.path.isdir(path):
        return NotInitialized(
            f"--dir {given}: not a directory", hint="give a project directory or its .cocoplus directory"
        )
    return NotInitialized(
        f"--dir {given}: no .cocoplus directory there", hint=f"run `cocoplus --dir {given} init` to create one"
    )


def named_dir() -> tuple[str | None, str]:
    """The state or project directory named on the command line or in the environment, and by what."""
    if dir_flag is not None:
        return dir_flag, "--dir"
    return os.environ.get(ENV_DIR) or None, ENV_DIR


def optional_layout() -> Layout | None:
    """The project's Layout, or None where there is no project (a command that can work without one); a `--dir`
    that names no project is still an error."""
    try:
        return layout()
    except NotInitialized:
        if dir_flag is not None:
            raise
        return None
