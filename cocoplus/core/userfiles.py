"""The files cocoplus keeps for the user, outside every project.

`~/.config/cocoplus/` holds the user's own configuration (`config.toml`,
the same keys as a project's cocoplus.toml), the record of trusted project
files (`trusted.json`), this user's "always" permission rules
(`permissions.json`), the key that seals what cocoplus records to run or
grant later (`seal.key`, `core.seal`) and the capability.
`~/.local/state/cocoplus/` holds the per-user registry of projects and agent
processes (`session/agents.py`).

`~` is this user's home as the password database names it, never `$HOME`
or an `XDG_*` variable: a repository can set a hook's environment (Claude
Code's `.claude/settings.json` `env`, Gemini CLI's project `.env`), and the
hook, the CLI and every other door must read one and the same file.
Releases before this one used `$XDG_CONFIG_HOME/cocoplus/` when that was
set: `legacy_directories` names such places, and `cocoplus doctor` says how
to move what is left there.

Nothing here is ever written inside a repository.  Standard library only:
the hook looks at the user's configuration file to see whether it changed.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Mapping

DIR_NAME = "cocoplus"
CONFIG_NAME = "config.toml"
TRUST_NAME = "trusted.json"
CAPABILITY_NAME = "capability"
# The variable that carries this user's capability to the main brain's controller and its MCP server.
CAPABILITY_ENV = "COCOPLUS_MCP_TOKEN"
SEAL_KEY_NAME = "seal.key"


# The last answer of the password database (`home`): the lookup asked, the user id, the home.
_LOOKED_UP: tuple[object, int, str] | None = None


def home() -> str:
    """This user's home directory as the password database names it, never `$HOME` (a repository can set a
    hook's environment: Claude Code's `.claude/settings.json` `env`, Gemini CLI's project `.env`).  `$HOME` only
    where the database has no entry for this user.  Asked once a process (a permission hook names this user's
    files half a dozen times, and each lookup reads the database), again if the user id or the lookup changes."""
    global _LOOKED_UP
    import pwd  # deferred: built into the interpreter, and only asked where a user file is named

    uid = os.getuid()
    last = _LOOKED_UP
    if last is not None and last[0] is pwd.getpwuid and last[1] == uid:
        return last[2]
    try:
        found = pwd.getpwuid(uid).pw_dir
    except KeyError:
        found = ""
    if not os.path.isabs(found):
        return os.path.expanduser("~")  # not kept: `$HOME` may change
    _LOOKED_UP = (pwd.getpwuid, uid, found)
    return found


def directory() -> str:
    """`~/.config/cocoplus` under the password database's home (`home`): never `$XDG_CONFIG_HOME` or `$HOME`."""
    return os.path.join(home(), ".config", DIR_NAME)


def state_directory() -> str:
    """`~/.local/state/cocoplus` under the password database's home: the per-user registry (`session/agents.py`);
    never `$XDG_STATE_HOME`."""
    return os.path.join(home(), ".local", "state", DIR_NAME)


def legacy_directories(environ: Mapping[str, str] | None = None) -> list[str]:
    """Where releases before this one kept this user's files when the environment said so
    (`$XDG_CONFIG_HOME/cocoplus`, `$HOME/.config/cocoplus`), other than `directory()`, that exist: `doctor`
    says how to move what is there."""
    env = os.environ if environ is None else environ
    here = os.path.realpath(directory())
    out: list[str] = []
    for base in (env.get("XDG_CONFIG_HOME"), os.path.join(env["HOME"], ".config") if env.get("HOME") else None):
        if not base or not os.path.isabs(base):
            continue
        old = os.path.join(base, DIR_NAME)
        if os.path.isdir(old) and os.path.realpath(old) != here and old not in out:
            out.append(old)
    return out


def legacy_files(environ: Mapping[str, str] | None = None) -> list[tuple[str, str, bool]]:
    """(a file left at an old place, where this release reads it, whether a file is there already) for every file in
    `legacy_directories` (locks and temporary files left out)."""
    out: list[tuple[str, str, bool]] = []
    for old in legacy_directories(environ):
        try:
            names = sorted(os.listdir(old))
        except OSError:
            continue
        for name in names:
            if name.endswith(".lock") or ".tmp" in name:
                continue
            new = os.path.join(directory(), name)
            out.append((os.path.join(old, name), new, os.path.lexists(new)))
    return out


def config_file() -> str:
    return os.path.join(directory(), CONFIG_NAME)


def trust_file() -> str:
    return os.path.join(directory(), TRUST_NAME)


def seal_key_file() -> str:
    """This user's key for the seals on recorded commands (`core.seal`): 32 random bytes, 0600, made on first use."""
    return os.path.join(directory(), SEAL_KEY_NAME)


def trust_lock() -> str:
    """The sidecar lock taken while the trust record is changed."""
    return os.path.join(directory(), TRUST_NAME + ".lock")


def shown(path: str) -> str:
    """A path under this user's home directory (`home`) as `~/...` (how messages name the user's files)."""
    mine = home()
    if mine not in ("", "/") and path.startswith(mine.rstrip("/") + "/"):
        return "~" + path[len(mine.rstrip("/")) :]
    return path


def capability_file() -> str:
    """This user's capability (`core.seal.capability`)."""
    return os.path.join(directory(), CAPABILITY_NAME)


def plugin_directory(runtime: str) -> str:
    """Where `install` writes the plugin of a runtime that loads hooks only from installed plugins (the copy the
    runtime's own plugin command installs from): `~/.config/cocoplus/plugins/<runtime>`."""
    return os.path.join(directory(), "plugins", runtime)
