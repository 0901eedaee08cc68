"""Which sessions may wake the main brain: scope modes, exclusions, aliases.

* `all`: clear the exclusions; every session can wake the brain.
* `only IDS`: supervise just these; every other session is excluded (new ones too).
* `except IDS`: exclude these; the rest are supervised.
* `invert` (REST/UI): flip supervised/excluded over the currently visible (active) sessions.

`only` and `except` need at least one id that resolves to a known session
(a `cs_` id, an alias such as `cc1`, or the runtime's id); with none they
fail and write nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cocoplus.core import vocab
from cocoplus.core.errors import CocoplusError, NotFound, UsageError
from cocoplus.core.paths import Layout
from cocoplus.session import events, registry
from cocoplus.supervision import state

if TYPE_CHECKING:
    from cocoplus.core.shapes import SessionRecord

ACTIVE = vocab.ACTIVE_STATES


def supervised(doc: dict[str, Any], cs_id: str) -> bool:
    """Whether the session may wake the brain: in the scope, not excluded, not the one supervision started from."""
    if cs_id == (doc.get("autonomous") or {}).get("started_from"):
        return False
    sc = doc["scope"]
    if cs_id in sc["excluded"]:
        return False
    if sc["mode"] == "only":
        return cs_id in (sc["only"] or [])
    return True


def _resolve_all(layout: Layout, ids: list[str]) -> tuple[list[str], list[str]]:
    found: list[str] = []
    unknown: list[str] = []
    for ref in ids:
        try:
            rec = registry.resolve(layout, str(ref))
        except (NotFound, CocoplusError):
            unknown.append(str(ref))
            continue
        if rec["id"] not in found:
            found.append(rec["id"])
    return found, unknown


def set_scope(
    layout: Layout, mode: str, session_ids: list[str] | None = None, *, allow_invert: bool = True
) -> dict[str, Any]:
    allowed = vocab.SCOPE_ACTIONS if allow_invert else vocab.SCOPE_MODES
    if mode not in allowed:
        raise UsageError(f"scope mode must be one of {', '.join(allowed)}, got {mode!r}")
    ids = list(session_ids or [])
    found, unknown = _resolve_all(layout, ids) if mode in ("only", "except", "invert") else ([], [])
    if mode in ("only", "except") and not found:
        shown = ", ".join(repr(i) for i in ids) if ids else "none given"
        raise UsageError(
            f"scope {mode} needs at least one valid session id (cs_... id or alias such as cc1); got {shown}; "
            "nothing was changed"
        )
    records, _ = registry.list_sessions(layout)
    visible = [r["id"] for r in records if r.get("state") in ACTIVE]
    if mode == "invert" and ids:
        visible = found

    def change(doc: dict[str, Any]) -> None:
        sc = doc["scope"]
        if mode == "all":
            doc["scope"] = {"mode": "all", "only": None, "excluded": []}
        elif mode == "only":
            doc["scope"] = {"mode": "only", "only": found, "excluded": []}
        elif mode == "except":
            doc["scope"] = {"mode": "except", "only": None, "excluded": found}
        else:
            now_sup = {v for v in visible if supervised(doc, v)}
            if sc["mode"] == "only":
                keep = [i for i in (sc["only"] or []) if i not in visible]
                sc["only"] = keep + [v for v in visible if v not in now_sup]
                sc["excluded"] = [e for e in sc["excluded"] if e not in visible]
            else:
                excluded = [e for e in sc["excluded"] if e not in visible]
                excluded += [v for v in visible if v in now_sup]
                sc["excluded"] = excluded
                sc["mode"] = "except" if excluded else "all"

    doc = state.update(layout, change)
    events.log_step(layout, "supervision_scope", mode=mode, sessions=found or None, unknown=unknown or None)
    out = view(layout, doc)
    if unknown:
        out["unknown_ids"] = unknown
    return out


def exclude(layout: Layout, ref: str, excluded: bool = True) -> dict[str, Any]:
    """PATCH .../supervision {"excluded": bool} for one session (full id, alias or runtime id)."""
    rec = registry.resolve(layout, ref)
    cs = rec["id"]

    def change(doc: dict[str, Any]) -> None:
        sc = doc["scope"]
        if excluded:
            if cs not in sc["excluded"]:
                sc["excluded"].append(cs)
        else:
            sc["excluded"] = [e for e in sc["excluded"] if e != cs]
            if sc["mode"] == "only" and cs not in (sc["only"] or []):
                sc["only"] = (sc["only"] or []) + [cs]

    doc = state.update(layout, change)
    events.log_step(
        layout, "supervision_exclude" if excluded else "supervision_include", session=cs, alias=rec.get("alias")
    )
    return session_view(rec, doc)


def session_view(rec: SessionRecord, doc: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": rec["id"],
        "alias": rec.get("alias"),
        "runtime": rec.get("runtime"),
        "runtime_session_id": rec.get("runtime_session_id"),
        "state": rec.get("state"),
        "attention": rec.get("attention"),
        "last_event": rec.get("last_event"),
        "last_event_at": rec.get("last_event_at"),
        "last_signal": rec.get("last_signal"),
        "excluded": not supervised(doc, rec["id"]),
    }


def view(layout: Layout, doc: dict[str, Any] | None = None) -> dict[str, Any]:
    doc = doc or state.read(layout)
    records, _ = registry.list_sessions(layout)
    alias = {r["id"]: r.get("alias") for r in records}
    sc = doc["scope"]
    return {
        "mode": sc["mode"],
        "only": [{"id": i, "alias": alias.get(i)} for i in sc["only"]] if sc["only"] is not None else None,
        "excluded": [{"id": i, "alias": alias.get(i)} for i in sc["excluded"]],
        "supervised": [
            alias.get(r["id"]) or r["id"] for r in records if r.get("state") in ACTIVE and supervised(doc, r["id"])
        ],
    }
