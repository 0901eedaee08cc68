"""The two forms of a hook command, and the per-user pointer that makes one of them work on every machine.

* **direct**: `<python> -E -S <.../cocoplus/hook/__main__.py> <Event> --runtime R --timeout N`,
  the fastest start there is (SPEC section 10), but with this machine's
  paths in it.  It goes only into a runtime's per-user project file
  (Claude Code's `.claude/settings.local.json`, which Claude Code keeps out
  of git), never into a file a team commits.
* **launcher**: a few lines of POSIX shell, the same on every machine, for
  the files a team commits (`.codex/hooks.json`, `.gemini/settings.json`,
  `.cursor/hooks.json`) and for the agent plugins and extensions.  It
  sources the project's pointer file, `~/.local/state/cocoplus/pointers<the
  project's path>/hook.sh`, which `cocoplus install RUNTIME` writes for that
  project and which names the interpreter and the hook script of the
  cocoplus that wired it, and execs them: one file read more than the direct
  form, in the shell the runtime starts anyway.  So two installations of one
  user (pipx and a checkout) each run the hooks of the projects they wired.
  A project with no pointer of its own (wired by an older cocoplus, or a
  plugin's hooks in a project never wired) falls back to this user's
  pointer, `~/.local/share/cocoplus/hook.sh`, which the last `cocoplus
  install` wrote. Without a pointer it runs `cocoplus hook` from PATH
  (slower, still correct).  With no cocoplus at all it keeps the kill
  switch: before a tool, an `AGENT_STOP` in the project's `.cocoplus/` (or a
  `.cocoplus/` it cannot search) blocks the tool with exit 2 and one line on
  stderr; every other event passes.

The runtimes run a hook command with `sh -c` (Claude Code) or `bash -c`
(Codex, Gemini CLI), so the launcher is plain POSIX shell with no `sh -c`
of its own.  Its variables are named `cocoplus_*`: Gemini CLI expands
`$NAME` in its settings from its own environment before the shell sees
them, so no name here may be one a user's environment has.

No `--dir` in any form: the hook finds the project from the runtime (its
project variable, the session's working directory, the payload's `cwd`).
Both forms pass `--timeout N`, the timeout written beside the command
(hook/timeouts.py): the hook ends every wait in time for it.
Standard library only.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping
from typing import Any

from cocoplus import __version__
from cocoplus.core import userfiles
from cocoplus.core.errors import CocoplusError
from cocoplus.install import files

# Where the pointer lives: under this user's home directory as the password database names it, not
# `$HOME` (a repository can set a hook's environment: Claude Code's `.claude/settings.json` `env`, Gemini
# CLI's project `.env`).  Not under XDG_DATA_HOME: runtimes start MCP servers (and may start hooks) with a
# reduced environment (Codex does).  `~user` is the shell's own look-up of the password database; the user
# name comes from `/usr/bin/id` by its absolute path (PATH is the repository's to set too).
POINTER_REL = ".local/share/cocoplus/hook.sh"
_HOME = (
    "cocoplus_u=$(/usr/bin/id -un 2>/dev/null); cocoplus_h=; "
    'case "$cocoplus_u" in ""|*[!A-Za-z0-9._-]*) ;; *) eval "cocoplus_h=~$cocoplus_u";; esac; '
    'case "$cocoplus_h" in /*) ;; *) cocoplus_h=;; esac; '
)
POINTER_SH = f'"$cocoplus_h/{POINTER_REL}"'
# A project's own pointer: under the same home, at the project's real path below this directory (the shell finds
# it walking up from the runtime's project variables and its working directory, with no program to run).
PROJECT_POINTERS_REL = ".local/state/cocoplus/pointers"
POINTER_NAME = "hook.sh"
# Text every launcher carries: how install, uninstall and doctor recognise one as cocoplus' own.
LAUNCHER_MARK = "/cocoplus/hook.sh"


def _source(project_env: tuple[str, ...] = ()) -> str:
    """Shell that sources the project's pointer (the nearest above the runtime's project variables, then the
    working directory), else this user's; nothing without a home from the password database."""
    starts = " ".join([*(f'"${name}"' for name in project_env), '"$PWD"'])
    return (
        _HOME
        + 'cocoplus_p=; if [ -n "$cocoplus_h" ]; then '
        + f"for cocoplus_s in {starts}; do "
        # Only an absolute path with no `.` or `..` in it: a project variable is the repository's to set, and a
        # `..` would lead the look-up out of this user's directory to a file the repository planted.
        + 'case "$cocoplus_s" in /*) ;; *) continue;; esac; '
        + 'case "$cocoplus_s" in */.|*/./*|*/..|*/../*) continue;; esac; '
        + 'while [ -n "$cocoplus_s" ]; do '
        + f'if [ -r "$cocoplus_h/{PROJECT_POINTERS_REL}$cocoplus_s/{POINTER_NAME}" ]; then '
        + f'cocoplus_p="$cocoplus_h/{PROJECT_POINTERS_REL}$cocoplus_s/{POINTER_NAME}"; break 2; fi; '
        + "cocoplus_s=${cocoplus_s%/*}; done; done; "
        + f'[ -n "$cocoplus_p" ] || cocoplus_p={POINTER_SH}; [ -r "$cocoplus_p" ] && . "$cocoplus_p"; fi; '
    )


INSTALL_HINT = "pipx install cocoplus (or uv tool install cocoplus), then cocoplus install"
# The interpreter's own variables a repository could set to run its code (PYTHONPATH, a user site with
# .pth files, another home): the launcher drops them before a `cocoplus` console script starts.
PYTHON_ENV = ("PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONSTARTUP", "PYTHONPLATLIBDIR", "PYTHONEXECUTABLE")
# The flags of every interpreter a hook command starts: -E ignores PYTHON* variables (a committed setting can
# set them), -S skips site (the fastest start; the script puts the package on the path itself).
HOOK_FLAGS = ("-E", "-S")


def hook_script() -> str:
    """This installation's `cocoplus/hook/__main__.py`."""
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(os.path.dirname(here), "hook", "__main__.py")


def hook_args(runtime: str, event: str, timeout_s: int | None = None, flags: tuple[str, ...] = ()) -> str:
    """`<Event> --runtime R [--timeout N] [FLAGS]`: what every form passes the hook (N: the timeout it was installed
    with; FLAGS: how it was wired, `COUNT_BEFORE_CALL`)."""
    args = f"{shlex.quote(event)} --runtime {runtime}"
    args = args if timeout_s is None else f"{args} --timeout {int(timeout_s)}"
    return " ".join([args, *flags])


def direct(
    runtime: str,
    event: str,
    python: str | None = None,
    hook: str | None = None,
    timeout_s: int | None = None,
    flags: tuple[str, ...] = (),
) -> str:
    """The direct command, with this installation's interpreter and hook script (or the ones given)."""
    py = python or sys.executable
    return " ".join(
        [shlex.quote(py), *HOOK_FLAGS, shlex.quote(hook or hook_script()), hook_args(runtime, event, timeout_s, flags)]
    )


def _project_search(project_env: tuple[str, ...]) -> str:
    """Shell that sets `cocoplus_d` to the `.cocoplus/` above the runtime's project variables or the working
    directory (entry.py's places), or leaves it empty; `cocoplus_x` to `1` if AGENT_STOP exists in any place found
    (COCOPLUS_DIR too: an override only adds a place), `?` if a place cannot be searched."""
    starts = " ".join([*(f'"${name}"' for name in project_env), '"$(pwd -P)"', '"$COCOPLUS_DIR"'])
    return (
        f'cocoplus_d=; cocoplus_x=; for cocoplus_s in {starts}; do cocoplus_f=; while [ -n "$cocoplus_s" ]; do '
        'if [ -d "$cocoplus_s/.cocoplus" ]; then cocoplus_f="$cocoplus_s/.cocoplus"; break; fi; '
        'if [ "${cocoplus_s##*/}" = .cocoplus ] && [ -d "$cocoplus_s" ]; then cocoplus_f=$cocoplus_s; break; fi; '
        "cocoplus_s=${cocoplus_s%/*}; done; "
        'if [ -n "$cocoplus_f" ]; then [ -n "$cocoplus_d" ] || cocoplus_d=$cocoplus_f; '
        'if [ -e "$cocoplus_f/AGENT_STOP" ] || [ -L "$cocoplus_f/AGENT_STOP" ]; then cocoplus_x=1; '
        'elif ! [ -x "$cocoplus_f" ]; then [ -n "$cocoplus_x" ] || cocoplus_x="?$cocoplus_f"; fi; fi; done; '
    )


def _cocoplus_on_path() -> str:
    """Shell that sets `cocoplus_c` to `cocoplus` on PATH, unless PATH leads into the project (the nearest
    directory above the working directory holding `.cocoplus` or `.git`) or to a relative path; then drops
    the interpreter variables a repository could set."""
    return (
        "cocoplus_c=$(command -v cocoplus 2>/dev/null); "
        'case "$cocoplus_c" in /*) cocoplus_c="$(cd "${cocoplus_c%/*}" 2>/dev/null && pwd -P)/${cocoplus_c##*/}";; '
        "*) cocoplus_c=;; esac; "
        'cocoplus_r=$(pwd -P); cocoplus_s=$cocoplus_r; while [ -n "$cocoplus_s" ]; do '
        'if [ -e "$cocoplus_s/.cocoplus" ] || [ -e "$cocoplus_s/.git" ]; then cocoplus_r=$cocoplus_s; break; fi; '
        "cocoplus_s=${cocoplus_s%/*}; done; "
        'case "$cocoplus_c" in "$cocoplus_r"/*|/cocoplus) cocoplus_c=;; esac; '
        f"unset {' '.join(PYTHON_ENV)}; "
    )


def _missing(kind: str, title: str, project_env: tuple[str, ...]) -> str:
    """What the launcher does when this user has no cocoplus: keep the kill switch before a tool, else pass."""
    if kind in ("pre_tool", "permission"):
        return (
            'if [ "$cocoplus_x" = 1 ]; then '
            "printf 'cocoplus: the agent is stopped (%s/AGENT_STOP exists); cocoplus is not installed for this user "
            f'(to see why and resume: {INSTALL_HINT})\\n\' "$cocoplus_d" >&2; exit 2; fi; '
            'if [ -n "$cocoplus_x" ]; then '
            "printf 'cocoplus: cannot tell whether the agent is stopped (%s cannot be searched); tools are blocked\\n' "
            '"${cocoplus_x#?}" >&2; exit 2; fi; exit 0'
        )
    if kind == "session_start":
        return (
            f"echo 'cocoplus: this project runs cocoplus hooks in {title}, but cocoplus is not installed for this user "
            f"(the kill switch still holds): {INSTALL_HINT}' >&2; exit 0"
        )
    return "exit 0"


def hook_launcher(
    runtime: str,
    event: str,
    kind: str,
    title: str,
    project_env: tuple[str, ...],
    timeout_s: int | None = None,
    flags: tuple[str, ...] = (),
) -> str:
    """The launcher command for one event: the same text on every machine.

    The project's pointer, else this user's (both under the home directory the password database names), else
    `cocoplus` on
    PATH if it is not the project's own file; a command in no cocoplus project does nothing; with no
    cocoplus at all the kill switch still holds before a tool.
    """
    args = hook_args(runtime, event, timeout_s, flags)
    python_flags = " ".join(HOOK_FLAGS)
    return (
        _source(project_env)
        + '[ -x "$cocoplus_python" ] && [ -r "$cocoplus_hook" ] && '
        + f'exec "$cocoplus_python" {python_flags} "$cocoplus_hook" {args}; '
        + _project_search(project_env)
        + '[ -n "$cocoplus_d" ] || exit 0; '
        + _cocoplus_on_path()
        + f'[ -n "$cocoplus_c" ] && exec "$cocoplus_c" hook {args}; '
        + _missing(kind, title, project_env)
    )


def plugin_launcher(runtime: str, event: str, timeout_s: int, flags: tuple[str, ...], fallback: str) -> str:
    """The command of a global plugin's hook (a runtime that loads hooks only from plugins, and refuses a tool whose
    hook printed no answer): this user's pointer, else `cocoplus` on PATH; with no cocoplus at all it prints
    `fallback`, the runtime's own well-formed answer (a deny before a tool, saying how to remove the plugin)."""
    args = hook_args(runtime, event, timeout_s, flags)
    python_flags = " ".join(HOOK_FLAGS)
    return (
        _source()
        + '[ -x "$cocoplus_python" ] && [ -r "$cocoplus_hook" ] && '
        + f'exec "$cocoplus_python" {python_flags} "$cocoplus_hook" {args}; '
        + _cocoplus_on_path()
        + f'[ -n "$cocoplus_c" ] && exec "$cocoplus_c" hook {args}; '
        + f"printf '%s\\n' {shlex.quote(fallback)}; exit 0"
    )


def program_launcher(*args: str) -> str:
    """Shell that runs `cocoplus ARGS` with this user's cocoplus (the MCP server): the pointer's interpreter
    (`-E -P`: no PYTHON* variables, not the working directory's `cocoplus/` package), else `cocoplus` on PATH if
    it is not the project's own file."""
    words = " ".join(shlex.quote(a) for a in args)
    return (
        _source()
        + f'[ -x "$cocoplus_python" ] && exec "$cocoplus_python" -E -P -m cocoplus {words}; '
        + _cocoplus_on_path()
        + f'[ -n "$cocoplus_c" ] && exec "$cocoplus_c" {words}; '
        + f"echo 'cocoplus is not installed for this user: {INSTALL_HINT}' >&2; exit 127"
    )


def is_launcher(command: Any) -> bool:
    return isinstance(command, str) and LAUNCHER_MARK in command and "cocoplus_p=" in command


# -- the pointer -----------------------------------------------------------------------------


def pointer_path(environ: Mapping[str, str] | None = None) -> str:
    """`~/.local/share/cocoplus/hook.sh` under this user's home as the password database names it
    (`userfiles.home`), as the launcher finds it; `environ` is not consulted (kept for callers that pass one)."""
    return os.path.join(userfiles.home(), POINTER_REL)


def pointer_text(python: str | None = None, hook: str | None = None) -> str:
    return (
        f"# The cocoplus this user's agent hooks run (written by `cocoplus install`, cocoplus {__version__}).\n"
        "# Hook commands in projects and plugins source this file; run `cocoplus install` again after moving "
        f"cocoplus.\ncocoplus_python={shlex.quote(python or sys.executable)}\n"
        f"cocoplus_hook={shlex.quote(hook or hook_script())}\n"
    )


def project_pointer_path(project: str) -> str:
    """The pointer of `project` (its real path) under this user's home, as the launcher finds it."""
    return os.path.join(userfiles.home(), PROJECT_POINTERS_REL + os.path.realpath(project), POINTER_NAME)


def write_project_pointer(project: str) -> dict[str, Any]:
    """Point `project`'s launchers at this installation: `{"path", "changed", "previous"}`.  Written at the
    project's real path and, where the path it is named by differs (a symbolic link on the way), there too."""
    out: dict[str, Any] = {"path": project_pointer_path(project), "changed": False, "previous": None}
    text = pointer_text()
    named = os.path.join(userfiles.home(), PROJECT_POINTERS_REL + os.path.abspath(project), POINTER_NAME)
    for path in dict.fromkeys([out["path"], named]):
        current = files.read_text(path) if os.path.lexists(path) else None
        if current != text:
            if path == out["path"]:
                out.update(changed=True, previous=parse_pointer(current) if current else None)
            files.write_text(path, text)
    return out


def write_pointer(environ: Mapping[str, str] | None = None, only_if_unusable: bool = False) -> dict[str, Any]:
    """Point this user's hooks at this installation: `{"path", "changed", "previous"}`.  `only_if_unusable`: leave
    a pointer that names an existing cocoplus as it is (another installation's: `cocoplus install RUNTIME` pins its
    project with a pointer of its own and never switches this user's other projects)."""
    path = pointer_path(environ)
    text = pointer_text()
    current = files.read_text(path) if os.path.lexists(path) else None
    if only_if_unusable and current is not None and not read_pointer(environ)["problems"]:
        return {"path": path, "changed": False, "previous": None}
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


def read_pointer(environ: Mapping[str, str] | None = None, path: str | None = None) -> dict[str, Any]:
    """The pointer (this user's, or the one at `path`) as doctor reports it: path, exists, python, hook, problems,
    and whether it names this installation."""
    path = path or pointer_path(environ)
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
