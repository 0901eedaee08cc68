"""Compile genai-prices' data into `.cocoplus/cost/price-table.json` for `cocoplus.cost.prices`.

Only cocoplus commands import this module (it imports genai-prices, which
takes a few hundred milliseconds): `refresh` compiles the table when
`prices.stale` says it is missing or was made from other genai-prices data
(`cocoplus.cost.spend.measure` before pricing, and `install.compiled.refresh`:
init, install, trust).  A hook (`python -S`) never compiles the table.

What is kept: the providers whose models cocoplus' runtimes use (each
adapter's PROVIDER, plus their fallback providers), every model of theirs
with its match clause and every conditional price set (start dates, times
of day) with tiers, the units those prices are for, and every provider's
model-match clause (to find a provider when none is given).  A price set
that genai-prices would refuse (uncovered units) is kept with the reason.
Prices are written as decimal strings, exactly as genai-prices holds them.
"""

from __future__ import annotations

import dataclasses
import datetime
from decimal import Decimal
from typing import Any

from genai_prices import Usage, __version__, data_snapshot, types
from genai_prices.data_units import unit_data

from cocoplus.core import clock, fsio, jsonfast
from cocoplus.core.paths import Layout
from cocoplus.cost import prices
from cocoplus.runtimes import registry

_compiled: dict[str, Any] | None = None  # one compile per process; the data does not change under it


def providers_wanted() -> list[str]:
    return sorted({a.PROVIDER for a in registry.ordered() if a.PROVIDER})


def _clause(c: Any) -> dict[str, Any] | None:
    if c is None:
        return None
    if isinstance(c, types.ClauseOr):
        return {"or": [_clause(x) for x in c.or_]}
    if isinstance(c, types.ClauseAnd):
        return {"and": [_clause(x) for x in c.and_]}
    (field,) = (f.name for f in dataclasses.fields(c))
    out = {field: getattr(c, field)}
    if field == "regex":
        prefix = regex_prefix(c.regex)
        if prefix:
            out["prefix"] = prefix
    return out


_LITERAL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_@:/ ")


def regex_prefix(regex: str) -> str:
    """The literal text every match of an anchored regex starts with ("" if none can be told).

    `^claude-opus-5-\\d{8}$` gives `claude-opus-5-`: a reference that does
    not start with it cannot match, so the hook need not import `re` to say so.
    Conservative: no prefix for a regex with a top-level `|`, and a literal
    followed by a quantifier is not counted.
    """
    if not regex.startswith("^") or _top_level_alternation(regex):
        return ""
    out: list[str] = []
    i = 1
    while i < len(regex):
        ch = regex[i]
        if ch == "\\" and i + 1 < len(regex) and regex[i + 1] in ".-_@:/":
            lit, step = regex[i + 1], 2
        elif ch in _LITERAL:
            lit, step = ch, 1
        else:
            break
        if regex[i + step : i + step + 1] in ("?", "*", "{"):
            break  # optional or repeated: not a fixed prefix
        out.append(lit)
        i += step
    return "".join(out)


def _top_level_alternation(regex: str) -> bool:
    depth = 0
    i = 0
    while i < len(regex):
        ch = regex[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[":
            end = regex.find("]", i + 2)
            i = len(regex) if end < 0 else end + 1
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            return True
        i += 1
    return False


def _rate(v: Decimal | types.TieredPrices) -> str | dict[str, Any]:
    if isinstance(v, types.TieredPrices):
        return {"base": str(v.base), "tiers": [[t.start, str(t.price)] for t in sorted(v.tiers, key=lambda t: t.start)]}
    return str(v)


def _utc_time(t: datetime.time) -> str:
    if t.tzinfo is not None:
        t = datetime.datetime.combine(datetime.date(1970, 1, 1), t).astimezone(datetime.UTC).time()
    return t.strftime("%H:%M:%S")


def _when(constraint: Any) -> dict[str, str] | None:
    if constraint is None:
        return None
    if isinstance(constraint, types.StartDateConstraint):
        return {"start_date": constraint.start_date.isoformat()}
    return {"start_time": _utc_time(constraint.start_time), "end_time": _utc_time(constraint.end_time)}


def _price_set(model_price: types.ModelPrice, usage_key_of: dict[str, str], used: set[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for price_key, value in model_price.__dict__.items():
        if price_key.startswith("_") or value is None:
            continue
        key = usage_key_of[price_key]
        out[key] = _rate(value)
        used.add(key)
    entry: dict[str, Any] = {"prices": out}
    try:
        model_price.calc_price(Usage(input_tokens=0, output_tokens=0))  # genai-prices checks the units first
    except ValueError as exc:
        entry["invalid"] = str(exc)
    return entry


def compile_doc() -> dict[str, Any]:
    """The table document (not written)."""
    global _compiled
    if _compiled is not None:
        return _compiled
    snapshot = data_snapshot.get_snapshot()
    usage_key_of = {u.get("price_key", key): key for key, u in unit_data.items()}
    wanted = providers_wanted()
    for p in snapshot.providers:
        if p.id in wanted:
            wanted.extend(x for x in (p.fallback_model_providers or []) if x not in wanted)
    used: set[str] = set(prices.REPORTED)
    providers = []
    for p in snapshot.providers:
        if p.id not in wanted:
            continue
        models = []
        for m in p.models:
            sets = m.prices if isinstance(m.prices, list) else [types.ConditionalPrice(prices=m.prices)]
            models.append(
                {
                    "id": m.id,
                    "match": _clause(m.match),
                    "prices": [
                        {"when": _when(cp.constraint), **_price_set(cp.prices, usage_key_of, used)} for cp in sets
                    ],
                }
            )
        providers.append({"id": p.id, "fallback": list(p.fallback_model_providers or []), "models": models})
    units = {
        key: {"per": unit_data[key]["per"], "dims": dict(unit_data[key].get("dimensions", {}))} for key in sorted(used)
    }
    _compiled = {
        "schema_version": prices.TABLE_VERSION,
        "source": {"package": "genai-prices", "version": __version__, **(prices.source_stamp() or {})},
        "compiled_at": clock.iso(),
        "units": units,
        "providers": providers,
        "provider_match": [[p.id, _clause(p.model_match)] for p in snapshot.providers],
    }
    return _compiled


def write(layout: Layout) -> dict[str, Any]:
    doc = compile_doc()
    # Compact (a third of the pretty size): the turn-end hook parses it.
    fsio.atomic_write_bytes(layout.price_table, (jsonfast.dumps(doc, compact=True) + "\n").encode("utf-8"))
    return doc


def refresh(layout: Layout) -> dict[str, Any] | None:
    """The compiled table, compiled first if `prices.stale` says so."""
    current = prices.load(layout)
    return write(layout) if prices.stale(layout, current) else current
