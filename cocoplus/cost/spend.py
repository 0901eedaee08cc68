"""The spend log (`.cocoplus/cost/spend.jsonl`): measured usage and manual costs.

`measure()` reads what the runtimes wrote since last time (cursors in
`cost/cursors.json`), prices it (`cocoplus.cost.prices`), and appends one
record per usage entry; usage that needs the price table when there is none
is left unread (its file's cursor does not move) for a later measure;
`add_cost()` appends spend from elsewhere (an API bill, a CI job).
`totals()` folds the log into the spend by session, model and category.
Dollar amounts are fixed when a record is written, so reading the log
never needs the price table.
"""

from __future__ import annotations

import os
import sys

from cocoplus.core import clock, fsio, jsonfast, jsonl
from cocoplus.core.errors import StateCorrupt, UsageError
from cocoplus.core.lock import Lock
from cocoplus.core.paths import Layout
from cocoplus.core.records import SCHEMA_VERSION
from cocoplus.core.vocab import SPEND_CATEGORIES as CATEGORIES
from cocoplus.cost import prices, usage
from cocoplus.runtimes import registry as runtimes
from cocoplus.session import registry

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path (the turn-end hook measures)
    from collections.abc import Mapping
    from typing import Any


def _finite(x: float) -> bool:
    return -float("inf") < x < float("inf")  # false for NaN too


def _adopt_legacy(layout: Layout) -> None:
    """Move a spend log written under its old name (`cost/ledger.jsonl`) to `cost/spend.jsonl`, once."""
    old, new = layout.legacy_spend_log, layout.spend_log
    if os.path.lexists(old) and not os.path.lexists(new):
        try:
            os.rename(old, new)
        except OSError:
            pass


def files_for(rec: Mapping[str, Any]) -> list[tuple[str, str, usage.Reader]]:
    """The usage files of a session (its transcript and what its runtime's reader adds), with runtime and reader."""
    tp = rec.get("transcript_path")
    runtime = rec.get("runtime")
    if not isinstance(tp, str) or not isinstance(runtime, str) or not runtimes.known(runtime):
        return []
    name = runtimes.get(runtime).USAGE
    reader = usage.READERS.get(name) if isinstance(name, str) else None
    if reader is None:
        return []
    return [(f, runtime, reader) for f in reader.files(tp)]


def measure(
    layout: Layout,
    overrides: dict[str, dict[str, float]],
    extra: list[dict[str, Any]] | None = None,
    table: Any = prices.CURRENT,
) -> dict[str, Any]:
    """Ingest new usage from every known session's records, priced with `table`; return what was added.

    `table`: the price table (None: there is none); by default the compiled
    one, compiled first if missing or stale (`prices.stale`).  `deferred`
    counts usage entries left unread because they need a table and there is none.
    """
    _adopt_legacy(layout)
    if table == prices.CURRENT:
        table = prices.load(layout)
        if not sys.flags.no_site and prices.stale(layout, table):  # a hook (`python -S`) never compiles
            from cocoplus.cost import price_table  # deferred: genai-prices (hundreds of ms), only to compile

            table = price_table.write(layout)
    records, _problems = registry.list_sessions(layout)
    sessions = list(records) + list(extra or [])
    added: list[dict[str, Any]] = []
    unpriced: dict[str, str] = {}
    with Lock(layout.lock("cost"), timeout=15):
        try:
            cursors = fsio.read_json(layout.cost_cursors) or {}
        except StateCorrupt:
            # Cursors are derived data: rebuilding them re-reads the files, and the
            # de-duplication keys in the log stop anything from counting twice.
            fsio.quarantine(layout.cost_cursors)
            cursors = {}
        files: dict[str, Any] = cursors.setdefault("files", {})
        known_keys: set[str] | None = None
        seen_files: set[str] = set()
        deferred = 0
        for rec in sessions:
            for path, runtime, reader in files_for(rec):
                if path in seen_files:
                    continue
                seen_files.add(path)
                before = files.get(path) or {"runtime": runtime, "session": rec.get("id")}
                cur = {**before, "seen": dict(before.get("seen") or {})} if "seen" in before else dict(before)
                fresh = "offset" not in cur
                try:
                    entries = reader.entries(path, cur)
                except OSError as exc:
                    files[path] = {**before, "error": str(exc)}
                    continue
                if fresh and entries and reader.keyed:
                    # A rebuilt cursor must not count what the log already has.
                    if known_keys is None:
                        known_keys = {
                            r["key"]
                            for r in jsonl.read_jsonl(layout.spend_log).records
                            if isinstance(r.get("key"), str)
                        }
                    entries = [e for e in entries if e.get("key") not in known_keys]
                priced = [_priced_record(e, rec, runtime, path, overrides, table) for e in entries]
                if any(r.pop("missing_table", False) for r in priced):
                    deferred += len(priced)  # the cursor stays where it was: read again once there is a table
                    files[path] = before
                    continue
                files[path] = cur
                for e, rec_out in zip(entries, priced):
                    if rec_out["usd"] is None:
                        unpriced[e["model"]] = rec_out.get("price_error") or "unknown model"
                    added.append(rec_out)
        measured_at = clock.iso()  # one boundary's records, together: `cocoplus replay` decides the budget per boundary
        for rec_out in added:
            rec_out["measured_at"] = measured_at
            jsonl.append_jsonl(layout.spend_log, rec_out, layout.lock("spend"), durable=False)
        if added:
            fsio.fsync_dir(layout.cost_dir)
        cursors["updated_at"] = clock.iso()
        cursors["schema_version"] = SCHEMA_VERSION
        # Compact: rewritten at every turn end, and only cocoplus reads it.
        fsio.atomic_write_bytes(layout.cost_cursors, (jsonfast.dumps(cursors, compact=True) + "\n").encode("utf-8"))
    return {"added": len(added), "usd": sum(r["usd"] or 0.0 for r in added), "unpriced": unpriced, "deferred": deferred}


def _priced_record(
    e: dict[str, Any],
    rec: Mapping[str, Any],
    runtime: str,
    path: str,
    overrides: dict[str, dict[str, float]],
    table: dict[str, Any] | None,
) -> dict[str, Any]:
    p = prices.price(e["model"], e["tokens"], runtimes.get(runtime).PROVIDER, overrides, table)
    out: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "ts": clock.iso(),
        "kind": "usage",
        "session": rec.get("id"),
        "alias": rec.get("alias"),
        "runtime": runtime,
        "model": e["model"],
        "tokens": e["tokens"],
        "usd": None if p.usd is None else round(p.usd, 10),
        "price_source": p.source,
        "category": "execution",
        "source_file": path,
    }
    if e.get("key"):
        out["key"] = e["key"]
    if p.error:
        out["price_error"] = p.error[:300]
    if p.missing_table:
        out["missing_table"] = True
    return out


def add_cost(
    layout: Layout, usd: float, category: str = "execution", note: str | None = None, by: str | None = None
) -> dict[str, Any]:
    if not isinstance(usd, (int, float)) or isinstance(usd, bool) or not _finite(usd) or usd < 0:
        raise UsageError(f"add-cost: amount must be a finite number >= 0, got {usd!r}")
    if category not in CATEGORIES:
        raise UsageError(f"add-cost: category must be one of {', '.join(CATEGORIES)}, got {category!r}")
    _adopt_legacy(layout)
    record = {
        "schema_version": SCHEMA_VERSION,
        "ts": clock.iso(),
        "kind": "manual",
        "session": None,
        "model": None,
        "usd": round(float(usd), 10),
        "price_source": "manual",
        "category": category,
        "note": note,
        "by": by,
    }
    jsonl.append_jsonl(layout.spend_log, record, layout.lock("spend"))
    return record


def totals(layout: Layout) -> dict[str, Any]:
    """Spend folded from the log: total, by session, by model, by category, and unpriced usage."""
    _adopt_legacy(layout)
    log = jsonl.read_jsonl(layout.spend_log)
    spent = 0.0
    by_session: dict[str, float] = {}
    by_model: dict[str, float] = {}
    by_category: dict[str, float] = {c: 0.0 for c in CATEGORIES}
    unpriced: dict[str, dict[str, Any]] = {}
    aliases: dict[str, str] = {}
    for r in log.records:
        usd = r.get("usd")
        model = r.get("model")
        if usd is None:
            if r.get("kind") == "usage" and isinstance(model, str):
                u = unpriced.setdefault(model, {"tokens": 0, "records": 0, "error": r.get("price_error")})
                u["tokens"] += usage.total(r.get("tokens") or {})
                u["records"] += 1
            continue
        if not isinstance(usd, (int, float)) or isinstance(usd, bool) or not _finite(usd):
            continue
        spent += usd
        cat: str = r["category"] if r.get("category") in CATEGORIES else "execution"
        by_category[cat] += usd
        key = r.get("session") or "(manual)"
        by_session[key] = by_session.get(key, 0.0) + usd
        if isinstance(r.get("alias"), str) and r.get("session"):
            aliases[r["session"]] = r["alias"]
        mkey = model if isinstance(model, str) else "(manual)"
        by_model[mkey] = by_model.get(mkey, 0.0) + usd
    return {
        "spent": spent,
        "by_session": [
            {"session": s, "alias": aliases.get(s), "usd": v}
            for s, v in sorted(by_session.items(), key=lambda kv: -kv[1])
        ],
        "by_model": [{"model": m, "usd": v} for m, v in sorted(by_model.items(), key=lambda kv: -kv[1])],
        "by_category": by_category,
        "unpriced": [{"model": m, **v} for m, v in sorted(unpriced.items())],
        "problems": log.problems,
    }
