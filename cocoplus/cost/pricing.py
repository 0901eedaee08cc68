"""Turning tokens into dollars: `[pricing]` overrides first, then genai-prices.

genai-prices carries its price table in the package (no network is used:
cocoplus never calls its update functions).  It is imported only here, and
only when there is something to price, because importing it takes a few
hundred milliseconds.  A model neither knows is reported, never priced at
zero.
"""

from __future__ import annotations

from typing import Any

PROVIDER = {"claude": "anthropic", "codex": "openai", "gemini": "google"}


class Price:
    __slots__ = ("usd", "source", "model_id", "error")

    def __init__(self, usd: float | None, source: str | None, model_id: str | None = None, error: str | None = None) -> None:
        self.usd = usd
        self.source = source
        self.model_id = model_id
        self.error = error


def from_table(table: dict[str, float], tokens: dict[str, int]) -> float:
    """USD for `tokens` at per-million-token rates (cache rates default to the input rate)."""
    inp = table["input"]
    write = table.get("cache_write", inp)
    return (
        tokens.get("input", 0) * inp
        + tokens.get("output", 0) * table["output"]
        + tokens.get("cache_read", 0) * table.get("cache_read", inp)
        + tokens.get("cache_write_5m", 0) * write
        + tokens.get("cache_write_1h", 0) * table.get("cache_write_1h", write)
    ) / 1_000_000


def _genai() -> tuple[Any, Any]:
    try:
        from genai_prices import Usage, calc_price
    except ImportError:
        # Hooks run as `python -S`, without site-packages on the path; turn it
        # on here, on the one hook path (turn end) that needs a dependency.
        import site
        import sys

        if sys.flags.no_site:
            site.main()
        from genai_prices import Usage, calc_price
    return Usage, calc_price


def price(model: str, tokens: dict[str, int], runtime: str | None, overrides: dict[str, dict[str, float]]) -> Price:
    if model in overrides:
        return Price(from_table(overrides[model], tokens), "config", model)
    try:
        Usage, calc_price = _genai()
    except ImportError as exc:  # pragma: no cover - genai-prices is a dependency
        return Price(None, None, error=f"genai-prices unavailable: {exc}")
    writes = tokens.get("cache_write_5m", 0) + tokens.get("cache_write_1h", 0)
    kwargs: dict[str, Any] = {
        "input_tokens": tokens.get("input", 0) + tokens.get("cache_read", 0) + writes,
        "output_tokens": tokens.get("output", 0),
    }
    if tokens.get("cache_read"):
        kwargs["cache_read_tokens"] = tokens["cache_read"]
    if writes:
        kwargs["cache_write_tokens"] = writes
        if tokens.get("cache_write_1h"):
            kwargs["cache_write_1h_tokens"] = tokens["cache_write_1h"]
    provider = PROVIDER.get(runtime or "")
    last_error = None
    for prov in (provider, None) if provider else (None,):
        try:
            calc = calc_price(Usage(**kwargs), model_ref=model, provider_id=prov)
        except LookupError as exc:
            last_error = str(exc)
            continue
        except ValueError as exc:
            return Price(None, None, error=f"cannot price {model}: {exc}")
        return Price(float(calc.total_price), "genai-prices", calc.model.id)
    return Price(None, None, error=last_error or f"unknown model {model}")
