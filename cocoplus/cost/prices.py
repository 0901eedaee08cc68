"""Turning tokens into dollars with the compiled price table: `[pricing]` overrides first.

genai-prices is the source of truth, but importing it costs a few hundred
milliseconds, too much for a hook.  So a cocoplus command compiles the part
of its data cocoplus needs into `.cocoplus/cost/price-table.json`
(`cocoplus.cost.price_table`), and this module, standard library only,
prices usage from that file the way genai-prices' `calc_price` does: the
same model matching rules (clauses, fallback providers, compact dates), the
price in force today, the usage split into disjoint units (input without
cache reads and writes, cache reads, 5-minute and 1-hour cache writes,
output), and threshold tiers on the total input.  tests/cost/test_prices.py
checks that both agree for every model of the compiled providers.

A model neither the overrides nor the table knows is reported, never priced
at zero.  Without a table (never compiled, or deleted) nothing is priced
from it: `Price.missing_table` says so, and the caller decides (see
`cocoplus.cost.enforce`).
"""

from __future__ import annotations

import os
import time

from cocoplus.core import fsio
from cocoplus.core.errors import StateCorrupt
from cocoplus.core.paths import Layout

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any

TABLE_VERSION = 1
CURRENT = "current"  # for a `table` argument: the compiled table, refreshed first where this process may (`refresh`)
# The usage keys cocoplus reports to the price calculation, as genai-prices names them.
REPORTED = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cache_write_1h_tokens")


class Price:
    __slots__ = ("error", "missing_table", "model_id", "source", "usd")

    def __init__(
        self,
        usd: float | None,
        source: str | None,
        model_id: str | None = None,
        error: str | None = None,
        missing_table: bool = False,
    ) -> None:
        self.usd = usd
        self.source = source
        self.model_id = model_id
        self.error = error
        self.missing_table = missing_table


# -- the table on disk ---------------------------------------------------------------------


def load(layout: Layout) -> dict[str, Any] | None:
    """The compiled table, or None if there is none (or it is damaged, or from an unknown version)."""
    try:
        doc = fsio.read_json(layout.price_table, limit=32 * 1024 * 1024)
    except StateCorrupt:
        return None
    if not doc or doc.get("schema_version") != TABLE_VERSION or not isinstance(doc.get("providers"), list):
        return None
    return doc


def source_stamp() -> dict[str, Any] | None:
    """Which genai-prices data a table would be compiled from, found without importing it."""
    import importlib.util  # deferred: only a cocoplus command checks the table's freshness

    spec = importlib.util.find_spec("genai_prices")
    if spec is None or not spec.submodule_search_locations:
        return None
    data = next(iter(spec.submodule_search_locations)) + "/data.py"
    try:
        st = os.stat(data)
    except OSError:
        return None
    return {"data_file": data, "data_stamp": [st.st_mtime_ns, st.st_size]}


def stale(layout: Layout, current: dict[str, Any] | None) -> bool:
    """Whether `current` (the compiled table, or None) must be compiled again: missing, or made from other
    genai-prices data than the installed package's.  The compiling is `price_table.refresh`'s."""
    stamp = source_stamp()
    return current is None or (stamp is not None and current.get("source", {}).get("data_stamp") != stamp["data_stamp"])


# -- matching ----------------------------------------------------------------------------------


def _clause(c: Any, text: str) -> bool:
    """genai-prices' match logic on a lower-cased model reference."""
    if "or" in c:
        return any(_clause(x, text) for x in c["or"])
    if "and" in c:
        return all(_clause(x, text) for x in c["and"])
    if "equals" in c:
        return text == c["equals"].lower()
    if "starts_with" in c:
        return text.startswith(c["starts_with"].lower())
    if "ends_with" in c:
        return text.endswith(c["ends_with"].lower())
    if "contains" in c:
        return c["contains"].lower() in text
    if "regex" in c:
        if not text.startswith(c.get("prefix", "")):
            return False  # every match starts with the literal prefix the compiler found
        import re  # deferred: most lookups never get here, and re costs start-up time

        return re.search(c["regex"], text) is not None
    return False


def _compact_date(ref: str) -> str:
    """`-20251211` as `-2025-12-11` (genai-prices' fallback for LiteLLM-style dated references)."""
    out = []
    i = 0
    n = len(ref)
    while i < n:
        seg = ref[i + 1 : i + 9]
        end = i + 9
        if (
            ref[i] == "-"
            and len(seg) == 8
            and seg.isdigit()
            and seg.isascii()
            and seg.startswith("20")
            and (end == n or ref[end] in "-:")
            and _valid_date(int(seg[:4]), int(seg[4:6]), int(seg[6:]))
        ):
            out.append(f"-{seg[:4]}-{seg[4:6]}-{seg[6:]}")
            i = end
            continue
        out.append(ref[i])
        i += 1
    return "".join(out)


def _valid_date(y: int, m: int, d: int) -> bool:
    if not 1 <= m <= 12 or d < 1:
        return False
    days = (31, 29 if (y % 4 == 0 and y % 100 != 0) or y % 400 == 0 else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
    return d <= days[m - 1]


def _provider(table: dict[str, Any], pid: str) -> dict[str, Any] | None:
    for p in table["providers"]:
        if p["id"] == pid:
            return p
    return None


def _match_model(
    table: dict[str, Any], provider: dict[str, Any], ref: str, fallback: bool = True
) -> dict[str, Any] | None:
    for m in provider["models"]:
        if _clause(m["match"], ref):
            return m
    if fallback:
        for pid in provider.get("fallback") or ():
            other = _provider(table, pid)
            if other is not None:
                found = _match_model(table, other, ref, fallback=False)
                if found is not None:
                    return found
    return None


def find(table: dict[str, Any], model: str, provider_id: str | None) -> tuple[dict[str, Any] | None, str | None]:
    """(the model's table entry, or None and why), as genai-prices' find_provider_model."""
    ref = model.lower()
    if provider_id is not None:
        provider = _provider(table, provider_id)
        if provider is None:
            return None, f"Unable to find provider provider_id={provider_id!r}"
    else:
        provider = None
        for pid, clause in table["provider_match"]:
            if clause is not None and _clause(clause, ref):
                provider = _provider(table, pid)
                if provider is None:
                    return (
                        None,
                        f"model {model!r} belongs to provider {pid!r}, which the compiled price table does not carry",
                    )
                break
        if provider is None:
            return None, f"Unable to find provider with model matching {ref!r}"
    found = _match_model(table, provider, ref)
    if found is None:
        dated = _compact_date(ref)
        if dated != ref:
            found = _match_model(table, provider, dated)
    if found is None:
        return None, f"Unable to find model with model_ref={ref!r} in {provider['id']}"
    return found, None


# -- the calculation ---------------------------------------------------------------------------


def _active(when: Any, now: time.struct_time) -> bool:
    if when is None:
        return True
    if "start_date" in when:
        return bool(time.strftime("%Y-%m-%d", now) >= when["start_date"])
    start, end = when["start_time"], when["end_time"]
    t = time.strftime("%H:%M:%S", now)
    return bool(t >= start or t < end) if end < start else bool(start <= t < end)


def reported_usage(tokens: dict[str, int]) -> dict[str, int]:
    """cocoplus' token counts as genai-prices usage keys (input includes cache reads and writes)."""
    writes = tokens.get("cache_write_5m", 0) + tokens.get("cache_write_1h", 0)
    usage = {
        "input_tokens": tokens.get("input", 0) + tokens.get("cache_read", 0) + writes,
        "output_tokens": tokens.get("output", 0),
    }
    if tokens.get("cache_read"):
        usage["cache_read_tokens"] = tokens["cache_read"]
    if writes:
        usage["cache_write_tokens"] = writes
        if tokens.get("cache_write_1h"):
            usage["cache_write_1h_tokens"] = tokens["cache_write_1h"]
    return usage


def _descendant(units: dict[str, Any], ancestor: str, key: str) -> bool:
    a, d = units[ancestor]["dims"], units[key]["dims"]
    return all(d.get(k) == v for k, v in a.items())


def cost(
    table: dict[str, Any], entry: dict[str, Any], usage: dict[str, int], now: time.struct_time | None = None
) -> float:
    """USD for `usage` (genai-prices usage keys) on one model's table entry; ValueError as genai-prices raises."""
    now = now or time.gmtime()
    sets = entry["prices"]
    chosen = sets[0]
    for candidate in reversed(sets):  # the last price in force wins
        if _active(candidate["when"], now):
            chosen = candidate
            break
    if chosen.get("invalid"):
        raise ValueError(chosen["invalid"])
    units = table["units"]
    priced = chosen["prices"]  # usage key -> rate per `per` units, or {"base", "tiers": [[start, rate]]}

    def value(key: str) -> int:
        if key in usage:
            return usage[key]
        if any(usage.get(k, 0) > 0 and k != key and k in units and _descendant(units, key, k) for k in usage):
            raise ValueError(f"Missing usage for {key}: reported descendant usage keys require explicit {key}")
        return 0

    order = sorted((k for k in priced if k != "requests"), key=lambda k: (-len(units[k]["dims"]), k))
    leaves: dict[str, int] = {}
    for key in order:
        leaf = value(key) - sum(leaves[k] for k in order if k != key and k in leaves and _descendant(units, key, k))
        if leaf < 0:
            raise ValueError(f"Invalid usage data: more-specific usage exceeds {key}")
        leaves[key] = leaf
    if "requests" in priced:
        leaves["requests"] = 1
    tiered = any(isinstance(p, dict) for p in priced.values())
    total_input = value("input_tokens") if tiered else 0
    usd = 0.0
    for key, count in leaves.items():
        p = priced[key]
        if isinstance(p, dict):
            rate = p["base"]
            for start, tier_rate in reversed(p["tiers"]):
                if total_input > start:
                    rate = tier_rate
                    break
        else:
            rate = p
        usd += float(rate) * count / units[key]["per"]
    return usd


def from_override(table: dict[str, float], tokens: dict[str, int]) -> float:
    """USD for `tokens` at `[pricing."model"]` rates per million tokens (cache rates default to the input rate)."""
    inp = table["input"]
    write = table.get("cache_write", inp)
    return (
        tokens.get("input", 0) * inp
        + tokens.get("output", 0) * table["output"]
        + tokens.get("cache_read", 0) * table.get("cache_read", inp)
        + tokens.get("cache_write_5m", 0) * write
        + tokens.get("cache_write_1h", 0) * table.get("cache_write_1h", write)
    ) / 1_000_000


def price(
    model: str,
    tokens: dict[str, int],
    provider: str | None,
    overrides: dict[str, dict[str, float]],
    table: dict[str, Any] | None,
) -> Price:
    """USD for one usage entry: the override for `model`, else the table (under `provider`, then by model name)."""
    if model in overrides:
        return Price(from_override(overrides[model], tokens), "config", model)
    if table is None:
        return Price(None, None, error="no price table (.cocoplus/cost/price-table.json)", missing_table=True)
    last_error = None
    for prov in (provider, None) if provider else (None,):
        entry, why = find(table, model, prov)
        if entry is None:
            last_error = why
            continue
        try:
            usd = cost(table, entry, reported_usage(tokens))
        except ValueError as exc:
            return Price(None, None, error=f"cannot price {model}: {exc}")
        return Price(usd, "genai-prices", entry["id"])
    return Price(None, None, error=last_error or f"unknown model {model}")
