"""The files cocoplus keeps for the user, outside every project.

`$XDG_CONFIG_HOME/cocoplus/` (default `~/.config/cocoplus/`) holds the
user's own configuration (`config.toml`, the same keys as a project's
cocoplus.toml), the record of trusted project files (`trusted.json`) and
the key that seals the commands cocoplus records to run later
(`seal.key`, `core.seal`).
Nothing here is ever written inside a repository.  Standard library only:
the hook looks at the user's configuration file to see whether it changed.
"""

from __future__ import annotations

import os

DIR_NAME = "cocoplus"
CONFIG_NAME = "config.toml"
TRUST_NAME = "trusted.json"
CAPABILITY_NAME = "capability"
# The variable that carries this user's capability to the main brain's controller and its MCP server.
CAPABILITY_ENV = "COCOPLUS_MCP_TOKEN"
SEAL_KEY_NAME = "seal.key"


def home() -> str:
    """This user's home directory as the password database names it, never `$HOME` (a repository can set a
    hook's environment: Claude Code's `.claude/settings.json` `env`, Gemini CLI's project `.env`).  `$HOME` only
    where the database has no entry for this user."""
    import pwd  # deferred: built into the interpreter, and only asked where a user file is named

    try:
        found = pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        found = ""
    return found if os.path.isabs(found) else os.path.expanduser("~")


def directory() -> str:
    """`$XDG_CONFIG_HOME/cocoplus`, or `~/.config/cocoplus` (a
    relative XDG_CONFIG_HOME is ignored, as the XDG spec says)."""
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, DIR_NAME)
    return os.path.join(os.path.expanduser("~"), ".config", DIR_NAME)


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
    """A path under the home directory as `~/...` (how messages name the user's files)."""
    home = os.path.expanduser("~")
    if home not in ("", "/") and path.startswith(home.rstrip("/") + "/"):
        return "~" + path[len(home.rstrip("/")) :]
    return path


def capability_file() -> str:
    """This user's capability (`core.seal.capability`)."""
    return os.path.join(directory(), CAPABILITY_NAME)
