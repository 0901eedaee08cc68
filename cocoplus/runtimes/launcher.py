"""The two forms of a hook command, and the per-user pointer that makes one of them work on every machine.

* **direct**: `<python> -S <.../cocoplus/hook/__main__.py> <Event> --runtime R`,
  the fastest start there is (SPEC section 10), but with this machine's
  paths in it.  It goes only into a runtime's per-user project file
  (Claude Code's `.claude/settings.local.json`, which Claude Code keeps out
  of git), never into a file a team commits.
* **launcher**: a few lines of POSIX shell, the same on every machine, for
  the files a team commits (`.codex/hooks.json`, `.gemini/settings.json`,
  `.cursor/hooks.json`) and for the agent plugins and extensions.  It
  sources this user's pointer file, `~/.local/share/cocoplus/hook.sh`,
  which `cocoplus install` writes and which names the interpreter and the
  hook script of the cocoplus this user installed, and execs them: one
  file read more than the direct form, in the shell the runtime starts
  anyway.  Without a pointer it runs `cocoplus hook` from PATH (slower,
  still correct).  With no cocoplus at all it keeps the kill switch: before
  a tool, an `AGENT_STOP` in the project's `.cocoplus/` (or a `.cocoplus/`
  it cannot search) blocks the tool with exit 2 and one line on stderr;
  every other event passes.

The runtimes run a hook command with `sh -c` (Claude Code) or `bash -c`
(Codex, Gemini CLI), so the launcher is plain POSIX shell with no `sh -c`
of its own.  Its variables are named `cocoplus_*`: Gemini CLI expands
`$NAME` in its settings from its own environment before the shell sees
them, so no name here may be one a user's environment has.

No `--dir` in any form: the hook finds the project from the runtime (its
project variable, the session's working directory, the payload's `cwd`).
Standard library only.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping
from typing import Any

from cocoplus import __version__
from cocoplus.core.errors import CocoplusError
from cocoplus.runtimes import files

# Where the pointer lives, as the shell spells it (the launcher) and as Python finds it (pointer_path).
# Under HOME, not XDG_DATA_HOME: runtimes start MCP servers (and may start hooks) with a reduced
# environment that keeps HOME and PATH but not the XDG variables (Codex does).
POINTER_SH = '"$HOME/.local/share/cocoplus/hook.sh"'
# Text every launcher carries: how install, uninstall and doctor recognise one as cocoplus' own.
LAUNCHER_MARK = "/cocoplus/hook.sh"
_SOURCE = f'cocoplus_p={POINTER_SH}; [ -r "$cocoplus_p" ] && . "$cocoplus_p"; '
INSTALL_HINT = "pipx install cocoplus (or uv tool install cocoplus), then cocoplus install"


def hook_script() -> str:
    """This installation's `cocoplus/hook/__main__.py`."""
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(os.path.dirname(here), "hook", "__main__.py")


def direct(runtime: str, event: str, python: str | None = None, hook: str | None = None) -> str:
    """The direct command, with this installation's interpreter and hook script (or the ones given)."""
    py = python or sys.executable
    return " ".join([shlex.quote(py), "-S", shlex.quote(hook or hook_script()), shlex.quote(event), "--runtime", runtime])


def _project_search(project_env: tuple[str, ...]) -> str:
    """Shell that sets `cocoplus_d` to the project's `.cocoplus/` (entry.py's order: COCOPLUS_DIR, the runtime's
    project variables, the working directory; each walked up), or leaves it empty."""
    starts = " ".join(['"$COCOPLUS_DIR"', *(f'"${name}"' for name in project_env), '"$(pwd -P)"'])
    return (
        f"cocoplus_d=; for cocoplus_s in {starts}; do while [ -n \"$cocoplus_s\" ]; do "
        'if [ -d "$cocoplus_s/.cocoplus" ]; then cocoplus_d="$cocoplus_s/.cocoplus"; break 2; fi; '
        'if [ "${cocoplus_s##*/}" = .cocoplus ] && [ -d "$cocoplus_s" ]; then cocoplus_d=$cocoplus_s; break 2; fi; '
        'cocoplus_s=${cocoplus_s%/*}; done; done; '
    )


def _missing(kind: str, title: str, project_env: tuple[str, ...]) -> str:
    """What the launcher does when this user has no cocoplus: keep the kill switch before a tool, else pass."""
    if kind in ("pre_tool", "permission"):
        return (
            _project_search(project_env)
            + 'if [ -n "$cocoplus_d" ]; then '
            'if [ -e "$cocoplus_d/AGENT_STOP" ] || [ -L "$cocoplus_d/AGENT_STOP" ]; then '
            "printf 'cocoplus: the agent is stopped (%s/AGENT_STOP exists); cocoplus is not installed for this user "
            f"(to see why and resume: {INSTALL_HINT})\\n' \"$cocoplus_d\" >&2; exit 2; fi; "
            'if ! [ -x "$cocoplus_d" ]; then '
            "printf 'cocoplus: cannot tell whether the agent is stopped (%s cannot be searched); tools are blocked\\n' "
            '"$cocoplus_d" >&2; exit 2; fi; fi; exit 0'
        )
    if kind == "session_start":
        return (
            f"echo 'cocoplus: this project runs cocoplus hooks in {title}, but cocoplus is not installed for this user "
            f"(the kill switch still holds): {INSTALL_HINT}' >&2; exit 0"
        )
    return "exit 0"


def hook_launcher(runtime: str, event: str, kind: str, title: str, project_env: tuple[str, ...]) -> str:
    """The launcher command for one event: the same text on every machine."""
    args = f"{shlex.quote(event)} --runtime {runtime}"
    return (
        _SOURCE
        + f'[ -x "$cocoplus_python" ] && [ -r "$cocoplus_hook" ] && exec "$cocoplus_python" -S "$cocoplus_hook" {args}; '
        + f"command -v cocoplus >/dev/null 2>&1 && exec cocoplus hook {args}; "
        + _missing(kind, title, project_env)
    )


def program_launcher(*args: str) -> str:
    """Shell that runs `cocoplus ARGS` with this user's cocoplus (the MCP server): the pointer's interpreter, else PATH."""
    words = " ".join(shlex.quote(a) for a in args)
    return (
        _SOURCE
        + f'[ -x "$cocoplus_python" ] && exec "$cocoplus_python" -m cocoplus {words}; '
        + f"command -v cocoplus >/dev/null 2>&1 && exec cocoplus {words}; "
        + f"echo 'cocoplus is not installed for this user: {INSTALL_HINT}' >&2; exit 127"
    )


def is_launcher(command: Any) -> bool:
    return isinstance(command, str) and LAUNCHER_MARK in command and "cocoplus_p=" in command


# -- the pointer -----------------------------------------------------------------------------


def pointer_path(environ: Mapping[str, str] | None = None) -> str:
    """`$HOME/.local/share/cocoplus/hook.sh`, as the launcher finds it."""
    env = os.environ if environ is None else environ
    return os.path.join(env.get("HOME") or os.path.expanduser("~"), ".local", "share", "cocoplus", "hook.sh")


def pointer_text(python: str | None = None, hook: str | None = None) -> str:
    return (
        f"# The cocoplus this user's agent hooks run (written by `cocoplus install`, cocoplus {__version__}).\n"
        "# Hook commands in projects and plugins source this file; run `cocoplus install` again after moving cocoplus.\n"
        f"cocoplus_python={shlex.quote(python or sys.executable)}\n"
        f"cocoplus_hook={shlex.quote(hook or hook_script())}\n"
    )


def write_pointer(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Point this user's hooks at this installation: `{"path", "changed", "previous"}`."""
    path = pointer_path(environ)
    text = pointer_text()
    current = files.read_text(path) if os.path.lexists(path) else None
    if current == text:
        return {"path": path, "changed": False, "previous": None}
    previous = parse_pointer(current) if current else None
    files.write_text(path, text)
    return {"path": path, "changed": True, "previous": previous}


def parse_pointer(text: str) -> dict[str, str]:
    """`{"python", "hook"}` from a pointer file's text (what is there of them)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        name, eq, value = line.partition("=")
        if eq and name in ("cocoplus_python", "cocoplus_hook"):
            try:
                words = shlex.split(value)
            except ValueError:
                continue
            if len(words) == 1:
                out[name.removeprefix("cocoplus_")] = words[0]
    return out


def read_pointer(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The pointer as doctor reports it: path, exists, python, hook, problems, and whether it names this installation."""
    path = pointer_path(environ)
    info: dict[str, Any] = {"path": path, "exists": os.path.lexists(path), "python": None, "hook": None, "problems": []}
    if not info["exists"]:
        info["this_installation"] = False
        return info
    try:
        parsed = parse_pointer(files.read_text(path))
    except CocoplusError as exc:
        info["problems"].append(str(exc))
        parsed = {}
    info.update(parsed)
    for key, what in (("python", "interpreter"), ("hook", "hook script")):
        value = info.get(key)
        if not value:
            info["problems"].append(f"{path}: names no {what}")
        elif not os.path.exists(value):
            info["problems"].append(f"{path}: names {value}, which does not exist (a removed or moved cocoplus)")
    info["this_installation"] = info.get("python") == sys.executable and info.get("hook") == hook_script()
    return info
