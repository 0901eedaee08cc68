"""Typed models of every JSON state file, for the CLI, the server and `session check`.

The hook does not import pydantic; it reads the files it needs through
`cocoplus.core.records`.  tests/report/test_contract.py keeps the two in step.
Unknown extra fields are allowed (newer writers may add some); wrong types
and out-of-range values are not.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
)

from cocoplus.core import vocab
from cocoplus.core.errors import StateCorrupt
from cocoplus.core.records import MAX_COUNT, MAX_MONEY, SCHEMA_VERSION
from cocoplus.runtimes import registry as runtimes

# The word lists live in core/vocab.py; Literal of a tuple is Literal of its items
# (mypy wants the items spelled out, hence the ignores).
RunState = Literal[vocab.RUN_STATES]  # type: ignore[valid-type]
BudgetState = Literal[vocab.BUDGET_STATES]  # type: ignore[valid-type]
Attention = Literal[vocab.ATTENTION_STATES]  # type: ignore[valid-type]
Enforcement = Literal[vocab.BUDGET_ENFORCEMENTS]  # type: ignore[valid-type]


def _known_runtime(name: str) -> str:
    if not runtimes.known(name):
        raise ValueError(f"Input should be one of {', '.join(runtimes.names())}")
    return name


Runtime = Annotated[StrictStr, AfterValidator(_known_runtime)]  # the runtimes are the adapters in cocoplus/runtimes
Version = Annotated[StrictInt, Field(ge=1, le=SCHEMA_VERSION)]
Money = Annotated[float, Field(ge=0, le=MAX_MONEY, allow_inf_nan=False, strict=False)]
Count = Annotated[StrictInt, Field(ge=0, le=MAX_COUNT)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class IterationBudget(_Model):
    schema_version: Version = SCHEMA_VERSION
    cap: Annotated[StrictInt, Field(ge=1, le=MAX_COUNT)]
    consumed: Count
    warn_at: Count
    warned: StrictBool
    stopped: StrictBool
    # May be missing, but not null: the hook's reader (records.check_iteration_budget) rejects null.
    updated_at: StrictStr = None  # type: ignore[assignment]


class CostBudget(_Model):
    schema_version: Version = SCHEMA_VERSION
    state: BudgetState
    limit: Money
    spent: Money
    reserve_fraction: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False, strict=False)]
    enforcement: Enforcement = "stage-boundary"
    updated_at: StrictStr | None = None

    @field_validator("limit", "spent", "reserve_fraction", mode="before")
    @classmethod
    def _number(cls, v: Any) -> Any:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError("expected a finite number")
        try:
            f = float(v)
        except OverflowError:  # an integer beyond any float
            raise ValueError("expected a finite number") from None
        if not math.isfinite(f):
            raise ValueError("expected a finite number")
        return f


class Status(_Model):
    schema_version: Version = SCHEMA_VERSION
    state: RunState
    reason: StrictStr | None = None
    updated_at: StrictStr


class PodState(Status):
    pass


class AgentStop(_Model):
    """AGENT_STOP as cocoplus writes it. Any content (or none) still stops."""

    schema_version: Version = SCHEMA_VERSION
    operator: StrictStr
    reason: StrictStr
    created_at: StrictStr
    source: StrictStr = "operator"


class SessionRecord(_Model):
    schema_version: Version = SCHEMA_VERSION
    id: Annotated[StrictStr, Field(pattern=r"^cs_")]
    runtime: Runtime
    runtime_session_id: StrictStr
    alias: StrictStr
    state: RunState
    attention: Attention | None = None
    last_event: StrictStr | None = None
    last_event_at: StrictStr | None = None
    tool_calls: Count = 0


M = TypeVar("M", bound=_Model)


def validate(model: type[M], obj: Any, path: str) -> M:
    """Check `obj` against `model`; StateCorrupt naming the file and first problem."""
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ())) or "document"
        raise StateCorrupt(path, f"{where}: {err.get('msg', 'invalid')}") from None
