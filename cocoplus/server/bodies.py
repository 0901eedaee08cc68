"""The REST API's request bodies and parameter types: what a request may carry, checked before a handler runs.

Every model forbids unknown keys and is strict (no `"1"` for 1, no `1` for true); a body that does not
match is answered with 422 and where it failed (server/app.py).  The constraints here are also what the
OpenAPI document says, so a request the document allows is one the server accepts: an id has the shape
`core.paths.is_valid_id` allows, a text that must not be blank says so with a pattern, a time has one of the
forms `session resume-at` reads, and an integer may be written `3130.0` (JSON Schema's integer is a number
whose fraction is zero; `3130.5`, `"3130"` and `true` are refused).  Where the operation itself refuses a
value with its own message (400: an alias, a task, a model, a task id; 422: a blank text), the pattern is
the document's word for that check (`_says`), not a second check.  tests/server/test_fuzz.py holds the
document to the server with every schemathesis check.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import Path
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from cocoplus.core import keys, vocab
from cocoplus.core.paths import ID_MAX

# `core.paths.is_valid_id`: a letter or digit, then letters, digits, `_`, `-` and `.`, never `..`; at most ID_MAX.
ID_PATTERN = r"^[A-Za-z0-9](\.?[A-Za-z0-9_-])*\.?$"
CONV_PATTERN = ID_PATTERN
# A worker's alias: an id, neither a cs_ id nor a worker id such as w1 (supervision/workers/launching.py).
ALIAS_PATTERN = r"^(?!cs_)(?!w[0-9]+$)[A-Za-z0-9](\.?[A-Za-z0-9_-])*\.?$"
# Some character other than white space: what `str.strip()` leaves something of.
NOT_BLANK = r"\S"
# What `session resume-at` reads (supervision/resumes.py `parse_time`), in the forms it always accepts:
# HH:MM[:SS], an ISO 8601 time (`core.clock.parse_iso`) or +N with s, m or h.
_HHMM = r"([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9])?"
_ISO = (
    r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[T ]([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)"
    r"(\.[0-9]{1,14})?([Zz]|[+-][0-9]{2}:[0-9]{2})?"
)
TIME_PATTERN = rf"^({_HHMM}|{_ISO}|\+[0-9]{{1,6}}[smh])$"


def _says(pattern: str, min_length: int | None = None) -> dict[str, Any]:
    """JSON Schema keywords for the document only: the check they describe is made where its message is."""
    return {"pattern": pattern, **({} if min_length is None else {"minLength": min_length})}


MAX_ID = 200
MAX_IDS = 500
TURNS = keys.BY_DOTTED["supervision.max_turns"]

SessionRef = Annotated[str, Field(min_length=1, max_length=MAX_ID)]
SessionId = Annotated[
    str,
    Path(min_length=1, max_length=MAX_ID, description="An alias such as cc1, a cs_ id or the runtime's session id."),
]
Conv = Annotated[str, Path(pattern=CONV_PATTERN, description="The conversation (the seed's is `master-agent`).")]
Operator = Annotated[
    str | None,
    Field(None, min_length=1, max_length=100, description="Who acts (default: the login name of the server's user)."),
]


def _whole(value: Any) -> Any:
    """3130.0 is the integer 3130 (JSON Schema's `integer`); anything else goes on to the strict check."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


def _not_blank(value: str | None, what: str) -> str | None:
    if value is not None and not value.strip():
        raise ValueError(f"{what} is empty")
    return value


def _needs_ids(mode: str, ids: str, when: dict[str, Any] | None = None) -> dict[str, Any]:
    """The document's word that scope `only` and `except` need at least one id (scope.set_scope refuses none),
    `when` the other properties say so."""
    narrowing: dict[str, Any] = {"properties": {mode: {"enum": ["only", "except"]}}, "required": [mode]}
    if when:
        narrowing["properties"].update(when)
        narrowing["required"] += list(when)
    return {"if": narrowing, "then": {"properties": {ids: {"minItems": 1}}, "required": [ids]}}


class AutonomousBody(_Body):
    """Seed 000: `{"enabled": true, "task_hint"?, "max_turns"?}` or `{"enabled": false}`."""

    model_config = ConfigDict(
        json_schema_extra=_needs_ids("scope_mode", "scope_session_ids", when={"enabled": {"const": True}})
    )

    enabled: bool
    task_hint: str | None = Field(None, max_length=4000, description="The supervision goal (enable only).")
    max_turns: Annotated[int, Field(ge=TURNS.minimum, le=TURNS.maximum), BeforeValidator(_whole)] | None = Field(
        None, description=f"Turn cap (default from cocoplus.toml, else {TURNS.default})."
    )
    scope_mode: Literal[vocab.SCOPE_MODES] | None = Field(  # type: ignore[valid-type]
        None, description="Set the scope in the same step (enable only)."
    )
    scope_session_ids: list[SessionRef] | None = Field(None, max_length=MAX_IDS)
    summary: str | None = Field(None, max_length=4000, description="Finish summary (disable only).")
    reason: str | None = Field(
        None,
        min_length=1,
        max_length=1000,
        description="Why supervision ends, recorded as finish_reason "
        "(disable only; default: turned off by the operator).",
    )
    start_supervisor: bool = Field(
        False, description="Also start the watcher (`cocoplus supervision watcher run`) if none runs."
    )


class ExcludeBody(_Body):
    excluded: bool


class ScopeBody(_Body):
    model_config = ConfigDict(json_schema_extra=_needs_ids("mode", "session_ids"))

    mode: Literal[vocab.SCOPE_ACTIONS]  # type: ignore[valid-type]
    session_ids: list[SessionRef] = Field(default_factory=list, max_length=MAX_IDS)


class StopBody(_Body):
    reason: str = Field(
        "stopped by operator", min_length=1, max_length=1000, json_schema_extra=_says(pattern=NOT_BLANK)
    )
    operator: Operator = None

    @field_validator("reason")
    @classmethod
    def _reason(cls, v: str) -> str:
        return _not_blank(v, "reason")  # type: ignore[return-value]


class ResumeBody(_Body):
    reset_budget: bool = False
    operator: Operator = None


class SteerBody(_Body):
    text: str = Field(
        ...,
        min_length=1,
        max_length=64 * 1024,
        json_schema_extra=_says(pattern=NOT_BLANK),
        description="Injected once into the agent's next prompt.",
    )
    operator: Operator = None

    @field_validator("text")
    @classmethod
    def _text(cls, v: str) -> str:
        return _not_blank(v, "the instruction")  # type: ignore[return-value]


class DispatchBody(_Body):
    instruction: str = Field(
        ...,
        min_length=1,
        max_length=64 * 1024,
        json_schema_extra=_says(pattern=NOT_BLANK),
        description="The session's next piece of work.",
    )
    operator: Operator = None

    @field_validator("instruction")
    @classmethod
    def _text(cls, v: str) -> str:
        return _not_blank(v, "the instruction")  # type: ignore[return-value]


class AnswerBody(_Body):
    text: str = Field(
        ...,
        min_length=1,
        max_length=64 * 1024,
        json_schema_extra=_says(pattern=NOT_BLANK),
        description="The answer to the session's last ask-human question.",
    )
    operator: Operator = None

    @field_validator("text")
    @classmethod
    def _text(cls, v: str) -> str:
        return _not_blank(v, "the answer")  # type: ignore[return-value]


class LaunchBody(_Body):
    runtime: Literal[vocab.LAUNCH_RUNTIMES] = Field(..., description="Which runtime runs the worker.")  # type: ignore[valid-type]
    task: str = Field(
        ...,
        min_length=1,
        max_length=64 * 1024,
        json_schema_extra=_says(pattern=r"^\s*[^\s-]"),
        description="The worker's first prompt (not blank; it may not start with `-`, which a runtime reads as an "
        "option).",
    )
    alias: str | None = Field(
        None,
        max_length=ID_MAX,
        json_schema_extra=_says(pattern=ALIAS_PATTERN),
        description="The session's alias (default: the runtime's next): letters, digits, `_`, `-` and `.`; "
        "not a cs_ id, not a worker id such as w1.",
    )
    model: str | None = Field(
        None, max_length=200, json_schema_extra=_says(min_length=1, pattern="^[^-]"), description="A model name."
    )
    effort: Literal[vocab.EFFORTS] | None = None  # type: ignore[valid-type]
    operator: Operator = None

    @field_validator("task")
    @classmethod
    def _text(cls, v: str) -> str:
        return _not_blank(v, "the task")  # type: ignore[return-value]


class KillBody(_Body):
    operator: Operator = None


class PermissionBody(_Body):
    always: bool = Field(False, description="Also remember the rule for this project (this user's rules, outside it).")
    rule: str | None = Field(None, min_length=1, max_length=1000, description="With always: the rule to remember.")
    reason: str | None = Field(None, max_length=4000, description="For a deny: what the worker is told.")


class SessionResumeBody(_Body):
    operator: Operator = None


class ResumeAtBody(_Body):
    at: str = Field(
        ...,
        min_length=1,
        max_length=64,
        pattern=TIME_PATTERN,
        description="HH:MM (local), an ISO 8601 time, or +30m / +2h",
    )
    operator: Operator = None


class MessageBody(_Body):
    text: str = Field(..., min_length=1, max_length=64 * 1024, json_schema_extra=_says(pattern=NOT_BLANK))

    @field_validator("text")
    @classmethod
    def _text(cls, v: str) -> str:
        return _not_blank(v, "the message")  # type: ignore[return-value]


class OverridesBody(_Body):
    """Per conversation; a key set to null clears that override, an absent key leaves it (one at least)."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    modelOverride: str | None = Field(None, min_length=1, max_length=200, json_schema_extra=_says(pattern=NOT_BLANK))
    reasoningEffortOverride: Literal[vocab.EFFORTS] | None = None  # type: ignore[valid-type]

    @field_validator("modelOverride")
    @classmethod
    def _model(cls, v: str | None) -> str | None:
        return _not_blank(v, "modelOverride")


class RetryBody(_Body):
    task_id: str | None = Field(
        None,
        min_length=1,
        max_length=ID_MAX,
        json_schema_extra=_says(pattern=ID_PATTERN),
        description="Default: the last failed task.",
    )


# The actions a decision of the inbox takes (inbox/decisions.py ACTIONS: each kind takes some of them).
DECISION_ACTIONS = ("approve", "deny", "answer", "leave", "resume", "later")
DecisionId = Annotated[
    str,
    Path(
        min_length=1, max_length=MAX_ID, pattern=ID_PATTERN,
        description="The decision's id, as `cocoplus inbox` shows it (p_…, q_…, s_…, l_…).",
    ),
]  # fmt: skip
StateDir = Annotated[
    str,
    Field(
        min_length=1, max_length=4096,
        description="The project's state directory (`state_dir`, as GET /api/v1/inbox lists the projects).",
    ),
]  # fmt: skip


class DecideBody(_Body):
    action: Literal[DECISION_ACTIONS] = Field(  # type: ignore[valid-type]
        ..., description="One of the decision's `actions` (approve, deny, answer, leave, resume, later)."
    )
    text: str | None = Field(
        None, max_length=64 * 1024, description="The answer to a question, or the reason a denial gives."
    )
    always: bool = Field(
        False,
        description="With a permission request's approve: also remember its rule for this project (never for one "
        "that writes a protected path).",
    )


class DecisionSteerBody(_Body):
    text: str = Field(
        ...,
        min_length=1,
        max_length=64 * 1024,
        json_schema_extra=_says(pattern=NOT_BLANK),
        description="Injected once into the session's next turn (`session steer --session`).",
    )


class WorkerStopBody(_Body):
    project: StateDir
    worker: str = Field(
        ..., min_length=1, max_length=MAX_ID, json_schema_extra=_says(pattern=ID_PATTERN), description="Its id (w1)."
    )


class PanicBody(_Body):
    project: StateDir
