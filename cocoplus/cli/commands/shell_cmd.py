"""`cocoplus shell-init`: shell functions for `session ...` and `supervise ...` (`/supervise ...` where the shell
allows).

One script serves every POSIX shell (sh, dash, bash, zsh): `session` and
`supervise` are plain functions; `/supervise` is not a valid function name
in POSIX sh, so it is defined (through eval, so dash never parses it) only
in bash and zsh.  fish gets its own syntax.
"""

from __future__ import annotations

import shlex
import sys
from typing import Annotated

import typer

from cocoplus.core.errors import UsageError

SHELLS = ("sh", "dash", "bash", "zsh", "fish")

POSIX = """\
# cocoplus shell integration ({shell}). Load with: eval "$(cocoplus shell-init {shell})"
session() {{ {exe} session "$@"; }}
supervise() {{ {exe} supervise "$*"; }}
if [ -n "${{BASH_VERSION-}}${{ZSH_VERSION-}}" ]; then
  eval 'function /supervise {{ {exe_q} supervise "$*"; }}'
fi
"""

FISH = """\
# cocoplus shell integration (fish). Load with: cocoplus shell-init fish | source
function session --description 'cocoplus session ...'
    {exe} session $argv
end
function supervise --description 'cocoplus supervise GOAL'
    {exe} supervise (string join ' ' -- $argv)
end
"""


def script(shell: str, exe: str) -> str:
    """The functions for `shell`, calling `exe` (already quoted for the shell)."""
    if shell not in SHELLS:
        raise UsageError(f"shell-init: unsupported shell {shell!r}; use one of {', '.join(SHELLS)}")
    if shell == "fish":
        return FISH.format(exe=exe)
    # Inside the single-quoted eval string a quoted path needs its quotes escaped.
    return POSIX.format(shell=shell, exe=exe, exe_q=exe.replace("'", "'\\''"))


def shell_init(shell: Annotated[str, typer.Argument(help="sh (also dash), bash, zsh or fish")] = "sh") -> None:
    """Print shell functions so `session status` and `supervise GOAL`
    (`/supervise GOAL` in bash and zsh) work in a terminal."""
    exe = shlex.quote(sys.argv[0]) if sys.argv and sys.argv[0].endswith("cocoplus") else "cocoplus"
    sys.stdout.write(script(shell, exe))


def register(app: typer.Typer) -> None:
    app.command("shell-init")(shell_init)
