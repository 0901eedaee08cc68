"""`cocoplus shell-init`: shell functions for `session ...` and `/supervise ...`."""

from __future__ import annotations

import shlex
import sys

import typer

from cocoplus.core.errors import UsageError

TEMPLATE = """\
# cocoplus shell integration ({shell}). Load with: eval "$(cocoplus shell-init {shell})"
session() {{ {exe} session "$@"; }}
function /supervise {{ {exe} supervise "$*"; }}
"""


def register(app: typer.Typer) -> None:
    @app.command("shell-init")
    def shell_init(shell: str = typer.Argument("bash", help="bash or zsh")) -> None:
        """Print shell functions so `session status` and `/supervise GOAL` work in a terminal."""
        if shell not in ("bash", "zsh"):
            raise UsageError(f"shell-init: unsupported shell {shell!r}; use bash or zsh")
        exe = shlex.quote(sys.argv[0]) if sys.argv and sys.argv[0].endswith("cocoplus") else "cocoplus"
        sys.stdout.write(TEMPLATE.format(shell=shell, exe=exe))
