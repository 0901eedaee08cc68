"""Shapes of the state files the hook reads and writes, checked without pydantic.

`cocoplus.report.models` holds the pydantic models for every file (used by
the CLI, server and `session check`); this module is the hook's stdlib
reader for the few files on its path.  tests/report/test_contract.py checks
that both accept and reject the same documents.
"""

from __future__ import annotations

from cocoplus.core import clock, jsonfast
from cocoplus.core.errors import StateCorrupt
from cocoplus.core.vocab import ATTENTION_STATES, BUDGET_ENFORCEMENTS, BUDGET_STATES, RUN_STATES
from cocoplus.runtimes import registry as runtimes

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Callable, Mapping
    from typing import Any

    from cocoplus.core.shapes import AgentStop, SessionRecord


SCHEMA_VERSION = 1

# Bounds no real run reaches: a counter or limit beyond them is damage, not data.
MAX_COUNT = 1_000_000_000  # tool calls in one run (cap, warn_at, consumed, per-session counts)
MAX_MONEY = 1_000_000_000.0  # US dollars (cost limit and spend)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int_in(v: Any, low: int, high: int) -> bool:
    return _is_int(v) and low <= v <= high


def _is_num(v: Any) -> bool:
    """A finite number (an integer too large for a float is not one: budgets compute in floats)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    try:
        f = float(v)
    except OverflowError:
        return False
    return f == f and f not in (float("inf"), float("-inf"))


def check_version(obj: dict[str, Any], path: str) -> None:
    v = obj.get("schema_version", SCHEMA_VERSION)
    if not _is_int(v):
        raise StateCorrupt(path, f"schema_version: expected an integer, got {v!r}")
    if v > SCHEMA_VERSION:
        raise StateCorrupt(path, f"written by a newer cocoplus (schema_version {v}; this one reads {SCHEMA_VERSION})")
    if v < 1:
        raise StateCorrupt(path, f"schema_version: expected >= 1, got {v}")


def _field(obj: dict[str, Any], path: str, name: str, ok: bool, expected: str) -> None:
    if not ok:
        raise StateCorrupt(path, f"{name}: expected {expected}, got {_show(obj.get(name, '<missing>'))}")


# -- iteration-budget.json ------------------------------------------------------


def new_iteration_budget(cap: int, warn_at: int) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "cap": cap,
        "consumed": 0,
        "warn_at": warn_at,
        "warned": False,
        "stopped": False,
        "updated_at": clock.iso(),
    }


def check_iteration_budget(obj: dict[str, Any], path: str) -> dict[str, Any]:
    check_version(obj, path)
    g: Callable[[str], Any] = obj.get  # values of any type, checked below
    _field(obj, path, "cap", _int_in(g("cap"), 1, MAX_COUNT), f"an integer from 1 to {MAX_COUNT}")
    _field(obj, path, "consumed", _int_in(g("consumed"), 0, MAX_COUNT), f"an integer from 0 to {MAX_COUNT}")
    _field(obj, path, "warn_at", _int_in(g("warn_at"), 0, MAX_COUNT), f"an integer from 0 to {MAX_COUNT}")
    _field(obj, path, "warned", isinstance(g("warned"), bool), "true or false")
    _field(obj, path, "stopped", isinstance(g("stopped"), bool), "true or false")
    if "updated_at" in obj:
        _field(obj, path, "updated_at", isinstance(g("updated_at"), str), "an ISO-8601 time")
    return obj


# -- status.json / pod-state.json -------------------------------------------------


def new_status(state: str, reason: str | None = None) -> dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, "state": state, "reason": reason, "updated_at": clock.iso()}


def check_status(obj: dict[str, Any], path: str) -> dict[str, Any]:
    check_version(obj, path)
    _field(obj, path, "state", obj.get("state") in RUN_STATES, "one of " + ", ".join(RUN_STATES))
    r = obj.get("reason")
    _field(obj, path, "reason", r is None or isinstance(r, str), "a string or null")
    _field(obj, path, "updated_at", isinstance(obj.get("updated_at"), str), "an ISO-8601 time")
    return obj


# -- budget-state.json ------------------------------------------------------------------


def check_budget_state(obj: dict[str, Any], path: str) -> dict[str, Any]:
    check_version(obj, path)
    g: Callable[[str], Any] = obj.get  # values of any type, checked below
    _field(obj, path, "state", g("state") in BUDGET_STATES, "one of " + ", ".join(BUDGET_STATES))
    _field(
        obj, path, "limit", _is_num(g("limit")) and 0 <= g("limit") <= MAX_MONEY, f"a number from 0 to {MAX_MONEY:.0f}"
    )
    _field(
        obj, path, "spent", _is_num(g("spent")) and 0 <= g("spent") <= MAX_MONEY, f"a number from 0 to {MAX_MONEY:.0f}"
    )
    rf = g("reserve_fraction")
    _field(obj, path, "reserve_fraction", _is_num(rf) and 0 <= rf < 1, "a number >= 0 and < 1")
    if "enforcement" in obj:
        _field(
            obj,
            path,
            "enforcement",
            g("enforcement") in BUDGET_ENFORCEMENTS,
            "one of " + ", ".join(f'"{e}"' for e in BUDGET_ENFORCEMENTS),
        )
    return obj


# -- sessions/<cs_id>.json -----------------------------------------------------------


def check_session(obj: dict[str, Any], path: str) -> SessionRecord:
    check_version(obj, path)
    g: Callable[[str], Any] = obj.get  # values of any type, checked below
    _field(obj, path, "id", isinstance(g("id"), str) and g("id").startswith("cs_"), "a cs_ id")
    _field(obj, path, "runtime", runtimes.known(g("runtime")), "one of " + ", ".join(runtimes.names()))
    _field(obj, path, "runtime_session_id", isinstance(g("runtime_session_id"), str), "a string")
    _field(obj, path, "alias", isinstance(g("alias"), str), "a string")
    _field(obj, path, "state", g("state") in RUN_STATES, "one of " + ", ".join(RUN_STATES))
    a = g("attention")
    _field(obj, path, "attention", a is None or a in ATTENTION_STATES, "null or one of " + ", ".join(ATTENTION_STATES))
    if "tool_calls" in obj:
        n = g("tool_calls")
        _field(obj, path, "tool_calls", _is_int(n) and 0 <= n <= MAX_COUNT, f"an integer from 0 to {MAX_COUNT}")
    return obj  # type: ignore[return-value]  # a session record: its keys are checked above


# -- AGENT_STOP ------------------------------------------------------------------------


# Which principal an automatic stop's source stands for (docs/authority.md); anything else is named by its caller.
_SOURCE_PRINCIPALS = {"iteration-budget": "budget", "cost-budget": "budget", "loop-guard": "loop-guard"}


def new_stop_id() -> str:
    """An id for one stop (`stop_<time>_<random>`): a resume can name the very stop it lifts."""
    import os  # deferred: only a stop being made needs it (the hook has it loaded by then)

    return f"stop_{clock.compact()}_{os.urandom(4).hex()}"


def render_stop(
    operator: str,
    reason: str,
    created_at: str | None = None,
    source: str = "operator",
    principal: str | None = None,
    stop_id: str | None = None,
) -> AgentStop:
    """An AGENT_STOP body: who (`principal`, one of vocab.PRINCIPALS or `fleet:<machine>`; `operator` is the
    name shown), why, when, and its id (`stop_id`: the one its sender chose, a fleet stop's)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "id": stop_id or new_stop_id(),
        "principal": principal or _SOURCE_PRINCIPALS.get(source, "operator"),
        "operator": operator,
        "reason": reason,
        "created_at": created_at or clock.iso(),
        "source": source,
    }


def parse_stop(data: bytes | None) -> AgentStop:
    """What an AGENT_STOP file says, whatever its content (it stops either way).

    Returns operator/reason/created_at (None where unknown) and `readable`.
    """
    info: AgentStop = {
        "operator": None, "reason": None, "created_at": None, "readable": False, "principal": None, "id": None,
    }  # fmt: skip
    if not data:
        return info
    try:
        obj = jsonfast.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        obj = None
    if isinstance(obj, dict):
        for k in ("operator", "reason", "created_at", "principal", "id", "source"):
            v = obj.get(k)
            if isinstance(v, str) and v:
                info[k] = v[:500]
        info["readable"] = True
        return info
    # A hand-made file: "reason text" or "key: value" lines.
    try:
        text = data[:4000].decode("utf-8", errors="replace").strip()
    except Exception:  # noqa: BLE001  # pragma: no cover - errors="replace" cannot fail
        text = ""
    for line in text.splitlines():
        key, sep, val = line.partition(":")
        k = key.strip().lower()
        if sep and k in ("operator", "reason", "created_at", "time"):
            info["created_at" if k == "time" else k] = val.strip()[:500]  # type: ignore[literal-required]  # k: one of 3
    if info["reason"] is None and text:
        info["reason"] = text.splitlines()[0][:500]
    return info


def stop_sentence(info: Mapping[str, Any], created_fallback: str | None = None) -> str:
    """One sentence naming who stopped the agent, when, why, and how to resume."""
    who = info.get("operator") or "an operator"
    when = info.get("created_at") or created_fallback or "an unknown time"
    why = info.get("reason") or "no reason given"
    return (
        f"cocoplus: the agent was stopped by {who} at {when} (reason: {why}); "
        "no tools may run until the operator runs `cocoplus session resume`."
    )


def _show(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."
