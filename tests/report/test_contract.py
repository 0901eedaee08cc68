"""The hook's stdlib checks (cocoplus.core.records) and the pydantic models agree.

The hook reads iteration-budget.json, budget-state.json, status.json,
pod-state.json and sessions/<id>.json through `records`; `session check`, the CLI and the
server read them through `cocoplus.report.models`.  A document one accepts
and the other rejects would make the hook stop an agent that `session
check` calls healthy, or the reverse.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cocoplus.core import records
from cocoplus.core.errors import StateCorrupt
from cocoplus.report import models
from cocoplus.runtimes import registry as runtimes

PATH = "/p/.cocoplus/session/x.json"

iso_text = st.one_of(
    st.just("2026-11-29T21:05:48.123Z"),
    st.datetimes().map(lambda d: d.isoformat() + "Z"),
    st.text(max_size=30),  # neither side parses it, both require a string
)
json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=10)
)
extras = st.dictionaries(
    st.text(min_size=1, max_size=12).filter(
        lambda k: (
            k
            not in {
                "schema_version",
                "cap",
                "consumed",
                "warn_at",
                "warned",
                "stopped",
                "updated_at",
                "state",
                "reason",
                "id",
                "runtime",
                "runtime_session_id",
                "alias",
                "attention",
                "last_event",
                "last_event_at",
                "limit",
                "spent",
                "reserve_fraction",
                "enforcement",
            }
        )
    ),
    json_scalars,
    max_size=3,
)


def maybe(key: str, strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(st.just({}), strategy.map(lambda v: {key: v}))


def combine(*parts: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.tuples(*parts).map(lambda ds: {k: v for d in ds for k, v in d.items()})


version = maybe("schema_version", st.just(records.SCHEMA_VERSION))

iteration_budgets = combine(
    version,
    st.fixed_dictionaries(
        {
            "cap": st.integers(min_value=1, max_value=records.MAX_COUNT),
            "consumed": st.integers(min_value=0, max_value=records.MAX_COUNT),
            "warn_at": st.integers(min_value=0, max_value=records.MAX_COUNT),
            "warned": st.booleans(),
            "stopped": st.booleans(),
        }
    ),
    maybe("updated_at", iso_text),
    extras,
)

statuses = combine(
    version,
    st.fixed_dictionaries(
        {
            "state": st.sampled_from(records.RUN_STATES),
            "updated_at": iso_text,
        }
    ),
    maybe("reason", st.one_of(st.none(), st.text(max_size=40))),
    extras,
)

session_records = combine(
    version,
    st.fixed_dictionaries(
        {
            "id": st.text(max_size=20).map(lambda s: "cs_" + s),
            "runtime": st.sampled_from(runtimes.names()),
            "runtime_session_id": st.text(max_size=40),
            "alias": st.text(max_size=8),
            "state": st.sampled_from(records.RUN_STATES),
        }
    ),
    maybe("attention", st.one_of(st.none(), st.sampled_from(records.ATTENTION_STATES))),
    maybe("last_event", st.one_of(st.none(), st.text(max_size=20))),
    maybe("last_event_at", st.one_of(st.none(), iso_text)),
    maybe("tool_calls", st.integers(min_value=0, max_value=records.MAX_COUNT)),
    extras,
)

money = st.one_of(
    st.integers(min_value=0, max_value=int(records.MAX_MONEY)),
    st.floats(min_value=0, max_value=records.MAX_MONEY, allow_nan=False, allow_infinity=False),
    st.just(records.MAX_MONEY),
)
# JSON allows integers no float can hold; a budget cannot compute with them.
# Beyond the bounds no run reaches, a number is damage too.
TOO_BIG = [10**309, 2**1024, 10**400, 2**200, 10**308, records.MAX_MONEY * 1.5]
BEYOND_COUNT = [records.MAX_COUNT + 1, 2**200, 10**20, 99999999999999999999]
cost_budgets = combine(
    version,
    st.fixed_dictionaries(
        {
            "state": st.sampled_from(records.BUDGET_STATES),
            "limit": money,
            "spent": money,
            "reserve_fraction": st.one_of(st.just(0), st.floats(min_value=0, max_value=1, exclude_max=True)),
        }
    ),
    maybe("enforcement", st.sampled_from(["stage-boundary", "off"])),
    maybe("updated_at", st.one_of(st.none(), iso_text)),
    extras,
)

KINDS = {
    "iteration-budget": (records.check_iteration_budget, models.IterationBudget, iteration_budgets),
    "status": (records.check_status, models.Status, statuses),
    "pod-state": (records.check_status, models.PodState, statuses),
    "session": (records.check_session, models.SessionRecord, session_records),
    "budget-state": (records.check_budget_state, models.CostBudget, cost_budgets),
}

# Wrong values for every field `records` checks (each must be rejected by both sides).
NOT_INT = ["10", 1.5, 10.0, True, False, None, [], {}]
NOT_BOOL = [0, 1, "true", "false", None, [], 1.0]
NOT_STR = [5, 1.5, True, [], {}]
WRONG: dict[str, dict[str, list[Any]]] = {
    "iteration-budget": {
        "schema_version": ["1", 1.0, True, 0, -1, records.SCHEMA_VERSION + 1, None],
        "cap": [*NOT_INT, 0, -5, *BEYOND_COUNT],
        "consumed": [*NOT_INT, -1, *BEYOND_COUNT],
        "warn_at": [*NOT_INT, -1, *BEYOND_COUNT],
        "warned": NOT_BOOL,
        "stopped": NOT_BOOL,
        "updated_at": [*NOT_STR, None],
    },
    "status": {
        "schema_version": ["1", 1.0, True, 0, records.SCHEMA_VERSION + 1],
        "state": ["crashed", "RUNNING", "", None, 1, ["running"], "budget_stop"],
        "reason": NOT_STR,
        "updated_at": [*NOT_STR, None],
    },
    "session": {
        "schema_version": ["1", 1.0, True, 0, records.SCHEMA_VERSION + 1],
        "id": ["abc", "", "CS_x", 5, None, ["cs_x"]],
        "runtime": ["vim", "Claude", None, 1, ""],
        "runtime_session_id": [*NOT_STR, None],
        "alias": [*NOT_STR, None],
        "state": ["crashed", None, 3, "stopped"],
        "attention": ["urgent", 1, True, "", ["pending"]],
        "tool_calls": [*NOT_INT, -1, *BEYOND_COUNT],
    },
}
WRONG["pod-state"] = WRONG["status"]
NOT_MONEY: list[Any] = ["1.5", True, False, None, [], {}, -1, -0.5, *TOO_BIG]
WRONG["budget-state"] = {
    "schema_version": ["1", 1.0, True, 0, records.SCHEMA_VERSION + 1],
    "state": ["broke", "Normal", None, 0, ""],
    "limit": NOT_MONEY,
    "spent": NOT_MONEY,
    "reserve_fraction": [*NOT_MONEY, 1, 1.0, 2],
    "enforcement": ["always", None, 1, ""],
}
REQUIRED = {
    "iteration-budget": ("cap", "consumed", "warn_at", "warned", "stopped"),
    "status": ("state", "updated_at"),
    "pod-state": ("state", "updated_at"),
    "session": ("id", "runtime", "runtime_session_id", "alias", "state"),
    "budget-state": ("state", "limit", "spent", "reserve_fraction"),
}


def records_accepts(check, doc) -> bool:
    try:
        check(copy.deepcopy(doc), PATH)
    except StateCorrupt:
        return False
    return True


def models_accepts(model, doc) -> bool:
    try:
        models.validate(model, copy.deepcopy(doc), PATH)
    except StateCorrupt:
        return False
    return True


@pytest.mark.parametrize("kind", list(KINDS))
@settings(max_examples=300)
@given(data=st.data())
def test_valid_documents_are_accepted_by_both(kind, data):
    check, model, strategy = KINDS[kind]
    doc = data.draw(strategy)
    assert records_accepts(check, doc), doc
    assert models_accepts(model, doc), doc


WRONG_CASES = [
    (kind, field, value) for kind, fields in WRONG.items() for field, values in fields.items() for value in values
]


@pytest.mark.parametrize("kind, field, value", WRONG_CASES, ids=repr)
@settings(max_examples=10)
@given(data=st.data())
def test_wrong_types_are_rejected_by_both(kind, field, value, data):
    check, model, strategy = KINDS[kind]
    doc = data.draw(strategy)
    doc[field] = value
    assert not records_accepts(check, doc), doc
    assert not models_accepts(model, doc), doc


@pytest.mark.parametrize("kind, field", [(k, f) for k, fs in REQUIRED.items() for f in fs])
@settings(max_examples=20)
@given(data=st.data())
def test_missing_required_field_is_rejected_by_both(kind, field, data):
    check, model, strategy = KINDS[kind]
    doc = data.draw(strategy)
    del doc[field]
    assert not records_accepts(check, doc), doc
    assert not models_accepts(model, doc), doc


def test_errors_name_the_file_and_the_field():
    doc = {"cap": "200", "consumed": 0, "warn_at": 0, "warned": False, "stopped": False}
    for check in (records.check_iteration_budget, lambda d, p: models.validate(models.IterationBudget, d, p)):
        with pytest.raises(StateCorrupt) as info:
            check(doc, PATH)
        assert PATH in str(info.value) and "cap" in str(info.value)
        assert "\n" not in str(info.value)


def test_what_cocoplus_writes_is_valid_for_both():
    ib = records.new_iteration_budget(200, 160)
    st_doc = records.new_status("exited", "iteration budget reached")
    assert records.check_iteration_budget(ib, PATH) and models.validate(models.IterationBudget, ib, PATH)
    assert records.check_status(st_doc, PATH) and models.validate(models.Status, st_doc, PATH)
    stop = records.render_stop("tester", "why")
    assert models.validate(models.AgentStop, stop, PATH)
    assert records.parse_stop(__import__("json").dumps(stop).encode())["operator"] == "tester"
