"""`cocoplus trust [--show|--revoke]`: what a project's cocoplus.toml would run or send, and the user's trust in it.

The record lives in the user's config directory (`cocoplus.trust`), keyed
by the project's real path and the SHA-256 of the file's bytes.  `trust`
records exactly the bytes that were shown: given the hash the user saw, it
refuses a file that changed in between.
"""

from __future__ import annotations

from typing import Any

from cocoplus import config as config_mod
from cocoplus import trust as trust_mod
from cocoplus.core import settings, userfiles
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout

# States of a project file, as `show` reports them.
NO_FILE = "no file"
NOTHING = "nothing to trust"
TRUSTED = "trusted"
NOT_TRUSTED = "not trusted"
CHANGED = "changed since trusted"


def show(project_dir: str) -> dict[str, Any]:
    """The project's file, what in it needs trust (label, value as TOML, what it does), and whether it is trusted.

    `{"project", "file", "exists", "sha256", "needs_trust": [{"key", "label", "value", "toml", "what"}],
    "state", "trusted", "trusted_at", "record_file"}`.
    """
    path, raw, flagged = config_mod.read_project_file(project_dir)
    rec = trust_mod.entry(project_dir)
    sha = trust_mod.digest(raw) if raw is not None else None
    if raw is None:
        state = NO_FILE
    elif not flagged:
        state = NOTHING
    elif rec is None:
        state = NOT_TRUSTED
    elif rec.get("sha256") != sha:
        state = CHANGED
    else:
        state = TRUSTED
    return {
        "project": trust_mod.project_key(project_dir),
        "file": path,
        "exists": raw is not None,
        "sha256": sha,
        "needs_trust": [{**f, "toml": settings.toml_value(f["value"])} for f in flagged],
        "state": state,
        "trusted": state == TRUSTED,
        "trusted_at": rec.get("trusted_at") if rec else None,
        "record_file": userfiles.trust_file(),
    }


def trust(project_dir: str, sha256: str | None = None, layout: Layout | None = None) -> dict[str, Any]:
    """Trust the project's file as it is now (as `sha256`, when given: the hash the user was shown).

    `show`'s fields plus `recorded` (whether a record was written) and
    `problems` (the hooks' copy in `layout`, the project's state directory,
    could not be rebuilt).
    """
    path, raw, flagged = config_mod.read_project_file(project_dir)
    if raw is None:
        raise CocoplusError(f"{path}: no such file; there is nothing to trust")
    if sha256 is not None and trust_mod.digest(raw) != sha256:
        raise CocoplusError(
            f"{path} changed while it was shown; nothing was trusted", hint="run `cocoplus trust` again and review it"
        )
    recorded = False
    if flagged:
        trust_mod.record(project_dir, path, raw, [f["label"] for f in flagged])
        recorded = True
    out = show(project_dir)
    if out["sha256"] != trust_mod.digest(raw):  # changed again after it was recorded: the record no longer matches
        raise CocoplusError(f"{path} changed while it was being trusted", hint="run `cocoplus trust` again and review it")
    return {**out, "recorded": recorded, "problems": _recompile(layout)}


def revoke(project_dir: str, layout: Layout | None = None) -> dict[str, Any]:
    """Withdraw the project's trust: `show`'s fields plus `revoked` and `previous` (the entry removed, if any)."""
    removed = trust_mod.revoke(project_dir)
    problems = _recompile(layout) if removed else []
    try:
        out = show(project_dir)
    except CocoplusError:  # an invalid file can still have its trust withdrawn
        out = {"project": trust_mod.project_key(project_dir), "file": config_mod.config_path(project_dir), "record_file": userfiles.trust_file()}
    return {**out, "revoked": removed is not None, "previous": removed, "problems": problems}


def _recompile(layout: Layout | None) -> list[str]:
    """Rebuild the hooks' copy of the configuration now that trust changed (trust changes no file stamp)."""
    if layout is None:
        return []
    try:
        config_mod.compile_for_hook(layout)
    except CocoplusError as exc:
        return [f"the hooks' copy of the configuration was not rebuilt: {exc}"]
    return []
