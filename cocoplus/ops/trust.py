"""`cocoplus trust [--show|--revoke]`: what a project's cocoplus.toml would run or send, and the user's trust in it.

The record lives in the user's config directory (`cocoplus.trust`), keyed
by the project's real path: the SHA-256 of the file's bytes, and of each
program the file names in the project.  `trust` records exactly what was
shown: given the hashes the user saw, it refuses a file or a program that
changed in between.
"""

from __future__ import annotations

import os
from typing import Any

from cocoplus import config as config_mod
from cocoplus import trust as trust_mod
from cocoplus.core import keytypes, userfiles
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import CONFIG_FILE_NAME, Layout
from cocoplus.notify import runner

# States of a project file, as `show` reports them.
NO_FILE = "no file"
NOTHING = "nothing to trust"
TRUSTED = "trusted"
NOT_TRUSTED = "not trusted"
CHANGED = "changed since trusted"


def show(project_dir: str) -> dict[str, Any]:
    """The project's file, what in it needs trust (label, value as TOML, what it does), the programs it names in
    the project (pinned with it), and whether it is trusted.

    `{"project", "file", "exists", "sha256", "needs_trust": [{"key", "label", "value", "toml", "what"}],
    "programs": [{"path", "file", "named_by", "sha256", "trusted_sha256", "changed"}], "changes",
    "state", "trusted", "trusted_at", "record_file"}`.  `sha256` of a program is None where it is
    missing; `changes` says in words what differs from what was trusted (the file, a program).
    """
    path, raw, flagged = config_mod.read_project_file(project_dir)
    rec = trust_mod.entry(project_dir)
    sha = trust_mod.digest(raw) if raw is not None else None
    named = trust_mod.programs_named(project_dir, flagged)
    now = trust_mod.pin(named)
    pinned = rec.get("programs") if rec else None
    programs = []
    for shown, file in named.items():
        before = pinned.get(shown) if isinstance(pinned, dict) else None
        changed = rec is not None and (not isinstance(pinned, dict) or shown not in pinned or before != now[shown])
        by = [f["label"] for f in flagged if shown in trust_mod.programs_named(project_dir, [f])]
        programs.append(
            {
                "path": shown,
                "file": file,
                "named_by": by,
                "sha256": now[shown],
                "trusted_sha256": before,
                "changed": changed,
            }
        )
    changes: list[str] = []
    if rec is not None and raw is not None and rec.get("sha256") != sha:
        changes.append(f"{os.path.basename(path)}: sha256 {rec.get('sha256')} -> {sha}")
    for p in programs:
        if p["changed"]:
            was = p["trusted_sha256"] or (
                "missing" if isinstance(pinned, dict) and p["path"] in pinned else "not pinned"
            )
            changes.append(f"{p['path']}: sha256 {was} -> {p['sha256'] or 'missing'}")
    if raw is None:
        state = NO_FILE
    elif not flagged:
        state = NOTHING
    elif rec is None:
        state = NOT_TRUSTED
    elif changes:
        state = CHANGED
    else:
        state = TRUSTED
    return {
        "project": trust_mod.project_key(project_dir),
        "file": path,
        "exists": raw is not None,
        "sha256": sha,
        "needs_trust": [{**f, "toml": keytypes.toml_value(f["value"])} for f in flagged],
        "programs": programs,
        "changes": changes,
        "state": state,
        "trusted": state == TRUSTED,
        "trusted_at": rec.get("trusted_at") if rec else None,
        "record_file": userfiles.trust_file(),
    }


def trust(
    project_dir: str,
    sha256: str | None = None,
    layout: Layout | None = None,
    programs: dict[str, str | None] | None = None,
) -> dict[str, Any]:
    """Trust the project's file as it is now, and the programs it names in the project as they are now
    (as `sha256` and `programs`, {path: sha256 or None}, when given: the hashes the user was shown).

    `show`'s fields plus `recorded` (whether a record was written) and
    `problems` (the hooks' copy in `layout`, the project's state directory,
    could not be rebuilt).
    """
    path, raw, flagged = config_mod.read_project_file(project_dir)
    if raw is None:
        raise CocoplusError(f"{path}: no such file; there is nothing to trust")
    again = "run `cocoplus trust` again and review it"
    if sha256 is not None and trust_mod.digest(raw) != sha256:
        raise CocoplusError(f"{path} changed while it was shown; nothing was trusted", hint=again)
    pins = trust_mod.pin(trust_mod.programs_named(project_dir, flagged))
    if programs is not None:
        moved = [shown for shown in sorted(set(pins) | set(programs)) if pins.get(shown) != programs.get(shown)]
        if moved:
            raise CocoplusError(f"{', '.join(moved)} changed while it was shown; nothing was trusted", hint=again)
    recorded = False
    if flagged:
        trust_mod.record(project_dir, path, raw, [f["label"] for f in flagged], pins)
        recorded = True
    out = show(project_dir)
    if out["sha256"] != trust_mod.digest(raw):  # changed again after it was recorded: the record no longer matches
        raise CocoplusError(f"{path} changed while it was being trusted", hint=again)
    if recorded and out["changes"]:
        raise CocoplusError(
            f"{', '.join(p['path'] for p in out['programs'] if p['changed'])} changed while it was being trusted",
            hint=again,
        )
    problems = _recompile(layout)
    notify = None
    if recorded and layout is not None and any(f["key"] == "notify.urls" and f["value"] for f in flagged):
        problems += _notify_from_now(layout)
        notify = {"running": runner.running(layout)}
    return {**out, "recorded": recorded, "notify": notify, "problems": problems}


def _notify_from_now(layout: Layout) -> list[str]:
    """The file's `[notify] urls` take effect now: the first notifier starts from here, whenever it starts."""
    if not os.path.isdir(layout.root):
        return []
    try:
        runner.begin(layout, f"when {CONFIG_FILE_NAME} was trusted")
    except CocoplusError as exc:
        return [f"the notifier's starting position was not saved: {exc}"]
    return []


def revoke(project_dir: str, layout: Layout | None = None) -> dict[str, Any]:
    """Withdraw the project's trust: `show`'s fields plus `revoked` and `previous` (the entry removed, if any)."""
    removed = trust_mod.revoke(project_dir)
    problems = _recompile(layout) if removed else []
    try:
        out = show(project_dir)
    except CocoplusError:  # an invalid file can still have its trust withdrawn
        out = {
            "project": trust_mod.project_key(project_dir),
            "file": config_mod.config_path(project_dir),
            "record_file": userfiles.trust_file(),
        }
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
