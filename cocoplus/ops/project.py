"""`cocoplus init`: where the state directory goes, and creating it."""

from __future__ import annotations

import os
from typing import Any

from cocoplus.core.errors import CocoplusError, UsageError
from cocoplus.core.paths import STATE_DIR_NAME, is_state_dir, walk_up
from cocoplus.session import workspace


def init_target(start: str, named: str | None = None, named_by: str = "--dir") -> str:
    """The state directory `init` creates: in `start`, or the one `named` (by `named_by`: --dir or COCOPLUS_DIR).

    A named directory is the state directory itself when it is called
    `.cocoplus` or already holds cocoplus' files, else a project directory
    that gets a `.cocoplus/`.
    """
    if not named:
        return os.path.join(os.path.abspath(start), STATE_DIR_NAME)
    path = os.path.abspath(named)
    if os.path.basename(path) == STATE_DIR_NAME:
        if not os.path.isdir(os.path.dirname(path)):
            raise UsageError(f"{named_by} {named}: no such directory ({os.path.dirname(path)})")
        return path
    if not os.path.exists(path):
        raise UsageError(f"{named_by} {named}: no such directory")
    if not os.path.isdir(path):
        raise UsageError(f"{named_by} {named}: not a directory")
    inner = os.path.join(path, STATE_DIR_NAME)
    if os.path.isdir(inner) or not is_state_dir(path):
        return inner
    return path


def enclosing_project(state_dir: str) -> str | None:
    """The `.cocoplus/` of a project that already encloses the one `state_dir` would start, if any."""
    project = os.path.dirname(os.path.abspath(state_dir))
    parent = os.path.dirname(project)
    if parent == project:
        return None
    return walk_up(parent)


def init(start: str, named: str | None = None, named_by: str = "--dir", nested: bool = False) -> dict[str, Any]:
    """Create `.cocoplus/` (idempotent; nothing existing is overwritten).

    Inside a project that already has one, a new one would shadow it for
    everything below, so that is refused unless `nested`.
    """
    state_dir = init_target(start, named, named_by)
    if not os.path.isdir(state_dir) and not nested:
        outer = enclosing_project(state_dir)
        if outer is not None:
            raise CocoplusError(
                f"{os.path.dirname(outer)} is already a cocoplus project ({outer}); a new .cocoplus/ in "
                f"{os.path.dirname(state_dir)} would shadow it for everything below",
                hint="cocoplus commands run here already use the enclosing project; pass --nested to start a separate one",
            )
    result = workspace.init(state_dir)
    result["nested_in"] = enclosing_project(state_dir)
    return result
