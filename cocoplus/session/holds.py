"""Turn-end holds: a supervised session's turn end waiting for the main brain's next instruction.

Two files per held session, both changed only under the `holds` lock:

* `holds/<cs_id>.json` (`Layout.hold`): written by the waiting turn-end hook
  when the hold begins, `{"id", "session", "alias", "runtime", "pid",
  "runtime_pid", "started_at", "until"}`, and removed when it ends;
* `holds/<cs_id>.decision.json` (`Layout.hold_decision`): written by
  `cocoplus dispatch` or `cocoplus answer` (`decide`) while the hold is
  live, `{"hold", "text", "instruction", "action", "by", "ts"}`; taken by
  the hook, which continues the turn with `text`.

Because both sides hold the lock, a decision is only ever written to a hold
whose hook is still waiting, and a hook that ends its hold takes any
decision written before it did (`end`): an instruction is delivered or
handed back, never dropped.  A decision left by a hook that was killed is
delivered at the session's next held turn end.

`wants_hold` is the hook's reading of supervision's state (enabled, the
session in scope, and a watcher running to wake the main brain: without
one nobody would decide, and the turn end would only wait), from the
files alone.  Standard library only: the hook
imports this module on turn ends of supervised sessions.
"""

from __future__ import annotations

import os

from cocoplus.core import clock, fsio
from cocoplus.core.errors import CocoplusError
from cocoplus.core.lock import DEFAULT_TIMEOUT, Budget, Lock, is_locked
from cocoplus.core.paths import Layout
from cocoplus.core.records import SCHEMA_VERSION
from cocoplus.session import procinfo

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any


def _lock(layout: Layout, budget: Budget | None = None, timeout: float = DEFAULT_TIMEOUT) -> Lock:
    return Lock(layout.lock("holds"), timeout, budget)


# -- what supervision says -----------------------------------------------------------


def supervised(doc: dict[str, Any], cs_id: str) -> bool:
    """The scope rule of `cocoplus.supervision.scope.supervised`, on a raw state document.

    The hook cannot import that module."""
    sc = doc.get("scope")
    if not isinstance(sc, dict):
        return True
    excluded = sc.get("excluded")
    if isinstance(excluded, list) and cs_id in excluded:
        return False
    if sc.get("mode") == "only":
        only = sc.get("only")
        return isinstance(only, list) and cs_id in only
    return True


def wants_hold(layout: Layout, cs_id: str) -> tuple[bool, str]:
    """(True, "") if supervision is on, supervises this session and its watcher runs; else (False, why not)."""
    try:
        doc = fsio.read_json(layout.supervision_state)
    except CocoplusError as exc:
        return False, f"supervision state unreadable ({exc})"
    auto = (doc or {}).get("autonomous")
    if not isinstance(auto, dict) or not auto.get("enabled"):
        return False, "supervision is off"
    if not supervised(doc or {}, cs_id):
        return False, "the session is outside the supervision scope"
    if not is_locked(layout.lock("supervisor")):
        return False, "no watcher runs to wake the main brain (`cocoplus supervision watcher run`)"
    return True, ""


# -- the hold -----------------------------------------------------------------------


def read(layout: Layout, cs_id: str) -> dict[str, Any] | None:
    """The hold record of this session, live or not (None if there is none or it cannot be read)."""
    try:
        return fsio.read_json(layout.hold(cs_id))
    except CocoplusError:
        return None


def live(hold: dict[str, Any] | None) -> bool:
    """Whether the hook that wrote this hold still waits."""
    return bool(hold) and procinfo.alive(hold.get("pid"), hold.get("start_ticks")) is True  # type: ignore[union-attr]


def current(layout: Layout, cs_id: str) -> dict[str, Any] | None:
    """The live hold of this session, or None."""
    hold = read(layout, cs_id)
    return hold if live(hold) else None


def begin(layout: Layout, hold: dict[str, Any], *, budget: Budget | None = None) -> dict[str, Any] | None:
    """Record a hold (replacing a dead one); returns a decision left for this session by a killed hook, if any."""
    fsio.ensure_dir(layout.holds_dir)
    with _lock(layout, budget):
        fsio.atomic_write_json(layout.hold(hold["session"]), {"schema_version": SCHEMA_VERSION, **hold})
        return _peek_decision(layout, hold["session"])


def _peek_decision(layout: Layout, cs_id: str) -> dict[str, Any] | None:
    try:
        return fsio.read_json(layout.hold_decision(cs_id))
    except CocoplusError:
        return None


def decision_waiting(layout: Layout, cs_id: str) -> bool:
    """One `lstat`: has a decision been written for this session? (The hook polls this.)"""
    try:
        os.lstat(layout.hold_decision(cs_id))
    except OSError:
        return False
    return True


def decide(
    layout: Layout, cs_id: str, text: str, *, instruction: str, action: str, by: str, budget: Budget | None = None
) -> dict[str, Any] | None:
    """Release a live hold with `text`. Returns the hold it went to, or None if the session is not held now.

    A second decision before the hook took the first is added after it.
    """
    with _lock(layout, budget):
        hold = current(layout, cs_id)
        if hold is None:
            return None
        prev = _peek_decision(layout, cs_id)
        if prev and prev.get("hold") == hold.get("id") and isinstance(prev.get("text"), str):
            text = prev["text"].rstrip("\n") + "\n\n" + text
            instruction = str(prev.get("instruction") or "").rstrip("\n") + "\n\n" + instruction
        doc = {
            "schema_version": SCHEMA_VERSION,
            "hold": hold.get("id"),
            "session": cs_id,
            "text": text,
            "instruction": instruction,
            "action": action,
            "by": by,
            "ts": clock.iso(),
        }
        fsio.atomic_write_json(layout.hold_decision(cs_id), doc)
    return hold


def end(layout: Layout, cs_id: str, hold_id: str, *, budget: Budget | None = None) -> dict[str, Any] | None:
    """The hook ends its hold: the hold record goes, and the decision written for it (if any) is returned, taken."""
    with _lock(layout, budget):
        decision = _peek_decision(layout, cs_id)
        if decision is not None or os.path.lexists(layout.hold_decision(cs_id)):
            _unlink(layout.hold_decision(cs_id))
        hold = read(layout, cs_id)
        if hold is None or hold.get("id") == hold_id:
            _unlink(layout.hold(cs_id))
    return decision


def list_holds(layout: Layout) -> list[dict[str, Any]]:
    """Every live hold (for `sessions list` and the page)."""
    try:
        names = sorted(os.listdir(layout.holds_dir))
    except OSError:
        return []
    out = []
    for name in names:
        if name.startswith("cs_") and name.endswith(".json") and not name.endswith(".decision.json"):
            hold = current(layout, name[:-5])
            if hold is not None:
                out.append(hold)
    return out


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
