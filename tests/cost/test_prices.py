"""The hook-side price evaluator agrees with genai-prices, model by model.

`cocoplus.cost.prices` prices usage from the table `cocoplus.cost.price_table`
compiles out of genai-prices' data, without importing genai-prices.  Here
both price the same usages (plain, with cache reads and 5-minute and 1-hour
cache writes, and past the input tiers) for every model of every provider
the table carries, under every name the model's match rule spells out.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from genai_prices import Usage, calc_price, data_snapshot, types

from cocoplus.core.paths import Layout
from cocoplus.cost import price_table, prices
from tests.support.typed import present

USAGES = [
    {"input": 1_000, "output": 500},
    {"input": 3_000, "output": 1_200, "cache_read": 50_000, "cache_write_5m": 2_000, "cache_write_1h": 8_000},
    {"input": 240_000, "output": 4_000, "cache_read": 30_000, "cache_write_5m": 1_000},  # past the 200k/272k tiers
    {"input": 5, "output": 0, "cache_read": 1_200_000},  # tiers reached through cache reads alone
    {"input": 0, "output": 0},
]


def refs(clause: Any) -> list[str]:
    """Every literal model name a match rule spells out (equals and starts_with values are names themselves)."""
    if isinstance(clause, (types.ClauseOr, types.ClauseAnd)):
        return [r for c in (clause.or_ if isinstance(clause, types.ClauseOr) else clause.and_) for r in refs(c)]
    if isinstance(clause, (types.ClauseEquals, types.ClauseStartsWith)):
        return [clause.equals if isinstance(clause, types.ClauseEquals) else clause.starts_with]
    return []


def genai(model: str, tokens: dict[str, int], provider: str | None) -> float | str:
    try:
        return float(
            calc_price(Usage(**prices.reported_usage(tokens)), model_ref=model, provider_id=provider).total_price
        )
    except (LookupError, ValueError) as exc:
        return f"error: {exc}"


def ours(table: dict[str, Any], model: str, tokens: dict[str, int], provider: str | None) -> float | str:
    entry, why = prices.find(table, model, provider)
    if entry is None:
        return f"error: {why}"
    try:
        return prices.cost(table, entry, prices.reported_usage(tokens))
    except ValueError as exc:
        return f"error: {exc}"


def same(a: float | str, b: float | str) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str)
    return abs(a - b) <= 1e-9 * max(1.0, abs(a))


def test_the_table_carries_the_providers_of_every_runtime() -> None:
    table = price_table.compile_doc()
    carried = {p["id"] for p in table["providers"]}
    assert {"anthropic", "openai", "google"} <= carried
    json.dumps(table)  # plain JSON: the hook reads it with the standard library


def test_every_model_prices_as_genai_prices_does() -> None:
    table = price_table.compile_doc()
    snapshot = data_snapshot.get_snapshot()
    checked = 0
    disagree = []
    for provider in snapshot.providers:
        if provider.id not in {p["id"] for p in table["providers"]}:
            continue
        for model in provider.models:
            for ref in {model.id, *refs(model.match)}:
                for tokens in USAGES:
                    want, got = genai(ref, tokens, provider.id), ours(table, ref, tokens, provider.id)
                    checked += 1
                    if not same(want, got):
                        disagree.append((provider.id, ref, tokens, want, got))
    assert not disagree, disagree[:5]
    assert checked > 1000
    priced = [t for t in USAGES if isinstance(ours(table, "claude-sonnet-4-5", t, "anthropic"), float)]
    assert len(priced) == len(USAGES)  # the comparison is between prices, not between errors


@pytest.mark.parametrize(
    "ref",
    [
        "claude-sonnet-4-5-20250929",
        "Claude-Opus-4-1",
        "gpt-5.5",
        "gpt-4o-mini-2024-07-18",
        "gpt-5.2-20251211",
        "o3-mini",
        "gemini-2.5-flash",
        "gemini-2.5-pro",
        "claude-3-5-haiku-latest",
        "no-such-model-1",
    ],
)
def test_names_a_runtime_reports_match_the_same_model(ref: str) -> None:
    table = price_table.compile_doc()
    tokens = USAGES[2]
    for provider in ("anthropic", "openai", "google", None):
        assert same(genai(ref, tokens, provider), ours(table, ref, tokens, provider)), (ref, provider)


def test_overrides_win_and_an_unknown_model_is_reported(project: Layout) -> None:
    table = price_table.compile_doc()
    over = {"claude-sonnet-4-5": {"input": 1.0, "output": 2.0}}
    p = prices.price("claude-sonnet-4-5", {"input": 1_000_000, "output": 1_000_000}, "anthropic", over, table)
    assert (p.usd, p.source) == (3.0, "config")
    unknown = prices.price("acme-9000", {"input": 10}, "anthropic", {}, table)
    assert unknown.usd is None and "acme-9000" in (unknown.error or "")
    missing = prices.price("claude-sonnet-4-5", {"input": 10}, "anthropic", {}, None)
    assert missing.usd is None and missing.missing_table


def test_init_compiles_the_table_and_a_stale_table_is_replaced(project: Layout) -> None:
    from cocoplus.cost import price_table
    from cocoplus.ops import project as project_ops

    os.unlink(project.price_table) if os.path.exists(project.price_table) else None
    project_ops.prices_for_hooks(project)  # what init and install do
    doc = prices.load(project)
    assert doc is not None and doc["source"]["version"]
    stale = dict(doc, source={**doc["source"], "data_stamp": [0, 0]})
    with open(project.price_table, "w") as fh:
        json.dump(stale, fh)
    assert prices.stale(project, prices.load(project))
    assert present(price_table.refresh(project))["source"]["data_stamp"] == doc["source"]["data_stamp"]
    assert not prices.stale(project, prices.load(project))
    os.unlink(project.price_table)
    assert price_table.refresh(project) is not None and os.path.exists(project.price_table)
