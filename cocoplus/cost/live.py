"""A live estimate of spend during a turn, for a view that stays open (`cocoplus top`); never on the hook path.

The hooks price usage at a turn's end (`spend.measure`, from the turn-end
hook), so between two turn ends the spend log does not yet hold what a
session's turn has used so far.  `Estimate` reads, for each session still
at work, the usage its runtime wrote after the point where the last measure
stopped (that file's cursor in `cost/cursors.json`), prices it the same way
(`[pricing]` overrides, then the compiled price table), and keeps the sum
per session.  It writes nothing: its own cursors live in memory, and each
file is read only from where this estimate last stopped.  When a measure
moves a file's cursor (the turn's priced figure is now in the log), what
was estimated for that file before it is dropped and the estimate goes on
from the new cursor.

The figure is an estimate: a measure can land between two reads (then one
view shows a step twice until the next re-read, a tenth of a second later
in `top`), and usage priced with no price table and no override is not
counted (`unpriced` says so).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from cocoplus.core import fsio, vocab
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.cost import prices
from cocoplus.cost import spend as spend_mod
from cocoplus.runtimes import registry as runtimes

if TYPE_CHECKING:
    from cocoplus.core.shapes import SessionRecord

CURSOR_KEYS = ("offset", "inode", "seen", "last_total", "model")


def _stamp(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _base(cursor: dict[str, Any] | None) -> tuple[Any, Any]:
    """What identifies where a measure stopped in a file: its inode and offset."""
    cursor = cursor or {}
    return (cursor.get("inode"), cursor.get("offset"))


def _copy(cursor: dict[str, Any] | None) -> dict[str, Any]:
    cursor = cursor or {}
    out = {k: cursor[k] for k in CURSOR_KEYS if k in cursor}
    if isinstance(out.get("seen"), dict):
        out["seen"] = {k: list(v) for k, v in out["seen"].items()}
    if isinstance(out.get("last_total"), list):
        out["last_total"] = list(out["last_total"])
    return out


class Estimate:
    """Unmeasured spend per session, read incrementally and priced in memory (see the module docstring)."""

    def __init__(self, layout: Layout, overrides: dict[str, dict[str, float]] | None = None) -> None:
        self.layout = layout
        self._overrides = overrides
        self._table: dict[str, Any] | None = None
        self._table_stamp: tuple[int, int, int] | None = None
        self._cursors: dict[str, Any] = {}
        self._cursors_stamp: tuple[int, int, int] | None = None
        # path -> {"base": (inode, offset) of the measure's cursor, "cur": our cursor, "usd": float, "unpriced": int}
        self._files: dict[str, dict[str, Any]] = {}

    # -- what the measure knows -------------------------------------------------------------------
    def _load_overrides(self) -> dict[str, dict[str, float]]:
        if self._overrides is None:
            from cocoplus import config as config_mod  # deferred: the configuration is read once, at the first estimate

            try:
                self._overrides = dict(config_mod.load_for(self.layout).pricing)
            except CocoplusError:
                self._overrides = {}
        return self._overrides

    def _load_table(self) -> dict[str, Any] | None:
        stamp = _stamp(self.layout.price_table)
        if stamp != self._table_stamp:
            self._table_stamp = stamp
            self._table = prices.load(self.layout) if stamp is not None else None
        return self._table

    def _measured(self) -> dict[str, Any]:
        """The measure's cursor of each file (`cost/cursors.json`), read again only when the file changed."""
        stamp = _stamp(self.layout.cost_cursors)
        if stamp != self._cursors_stamp:
            self._cursors_stamp = stamp
            try:
                doc = fsio.read_json(self.layout.cost_cursors, limit=64 * 1024 * 1024) if stamp is not None else None
            except CocoplusError:
                doc = None  # a damaged file: the next measure rebuilds it; estimate from what was known
            else:
                files = (doc or {}).get("files")
                self._cursors = files if isinstance(files, dict) else {}
        return self._cursors

    # -- the estimate -----------------------------------------------------------------------------
    def update(self, records: list[SessionRecord]) -> dict[str, dict[str, Any]]:
        """`{cs_id: {"usd", "unpriced"}}` for every session still at work with usage not yet in the spend log."""
        measured = self._measured()
        table: Any = prices.CURRENT  # loaded at the first entry to price
        out: dict[str, dict[str, Any]] = {}
        alive: set[str] = set()
        for rec in records:
            if rec.get("state") not in vocab.ACTIVE_STATES:
                continue
            for path, runtime, reader in spend_mod.files_for(rec):
                alive.add(path)
                base = measured.get(path)
                mine = self._files.get(path)
                if mine is None or mine["base"] != _base(base):
                    mine = {"base": _base(base), "cur": _copy(base), "usd": 0.0, "unpriced": 0}
                    self._files[path] = mine
                try:
                    entries = reader.entries(path, mine["cur"])
                except OSError:
                    entries = []
                for e in entries:
                    if table == prices.CURRENT:
                        table = self._load_table()
                    p = prices.price(
                        e["model"], e["tokens"], runtimes.get(runtime).PROVIDER, self._load_overrides(), table
                    )
                    if p.usd is None:
                        mine["unpriced"] += 1
                    else:
                        mine["usd"] += p.usd
                if mine["usd"] > 0 or mine["unpriced"]:
                    got = out.setdefault(str(rec["id"]), {"usd": 0.0, "unpriced": 0})
                    got["usd"] += mine["usd"]
                    got["unpriced"] += mine["unpriced"]
        for gone in set(self._files) - alive:
            del self._files[gone]
        return out
