"""`.cocoplus/supervision/state.json` as a file: read it (with the scope's defaults filled in), and change it
under its lock.  What the `autonomous` object and the scope mean is autonomy.py's and scope.py's.
"""

from __future__ import annotations

from typing import Any

from cocoplus.core import fsio, vocab
from cocoplus.core.errors import StateCorrupt
from cocoplus.core.lock import Lock
from cocoplus.core.paths import Layout
from cocoplus.core.records import SCHEMA_VERSION
from cocoplus.session import events


def _empty() -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "autonomous": None,
        "scope": {"mode": "all", "only": None, "excluded": []},
    }


def read(layout: Layout) -> dict[str, Any]:
    doc = fsio.read_json(layout.supervision_state)
    if doc is None:
        return _empty()
    doc.setdefault("autonomous", None)
    scope: dict[str, Any] = doc["scope"] if isinstance(doc.get("scope"), dict) else {}
    doc["scope"] = {
        "mode": scope.get("mode") if scope.get("mode") in vocab.SCOPE_MODES else "all",
        "only": list(scope["only"]) if isinstance(scope.get("only"), list) else None,
        "excluded": list(scope.get("excluded") or []),
    }
    return doc


def update(layout: Layout, change: Any) -> dict[str, Any]:
    """Read-modify-write state.json under its lock; `change(doc)` edits in place."""

    fsio.ensure_dir(layout.supervision_dir)
    with Lock(layout.lock("supervision-state")):
        try:
            doc = read(layout)
        except StateCorrupt as exc:
            kept = fsio.quarantine(layout.supervision_state)
            events.log_step(layout, "supervision_state_damaged", cause=exc.cause, kept_at=kept)
            doc = _empty()
        change(doc)
        doc["schema_version"] = SCHEMA_VERSION
        fsio.atomic_write_json(layout.supervision_state, doc)
    return doc
