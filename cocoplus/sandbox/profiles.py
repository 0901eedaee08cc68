"""Which sandbox profile a worker gets: the operator's choice, which a project may only strengthen.

`launch --sandbox PROFILE` decides (the operator on the command line). Otherwise `[workers] sandbox`: the user's
own configuration file sets it, and a project's cocoplus.toml may choose a stronger profile but never a weaker
one (a repository cannot turn a sandbox off). Nothing an agent writes chooses a profile: the key has no
environment variable, and inside a sandbox `.cocoplus/` and cocoplus.toml are read-only.
"""

from __future__ import annotations

from cocoplus import config as config_mod
from cocoplus.core import vocab
from cocoplus.core.errors import UsageError
from cocoplus.core.paths import Layout

NONE = "none"
WORKSPACE = "workspace"
SRT = "srt"


def strength(profile: str) -> int:
    return vocab.SANDBOX_PROFILES.index(profile)


def check(profile: str) -> str:
    if profile not in vocab.SANDBOX_PROFILES:
        raise UsageError(f"--sandbox {profile!r}: choose one of {', '.join(vocab.SANDBOX_PROFILES)}")
    return profile


def effective(layout: Layout, given: str | None = None, environ: dict[str, str] | None = None) -> str:
    """The profile a worker launched now gets: `given` (the command line), else the stronger of the user's
    `[workers] sandbox` and the project's."""
    if given is not None:
        return check(given)
    user = str(config_mod.load_user().get("workers.sandbox"))
    merged = str(config_mod.load_for(layout, environ).get("workers.sandbox"))
    return max(user, merged, key=strength)
