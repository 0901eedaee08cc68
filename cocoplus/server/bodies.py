"""The REST API's request bodies and parameter types: what a request may carry, checked before a handler runs.

Every model forbids unknown keys and is strict (no `"1"` for 1, no `1` for true); a body that does not
match is answered with 422 and where it failed (server/app.py).  The constraints here are also what the
OpenAPI document says, so a request the document allows is one the server accepts.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Path
from pydantic import BaseModel, ConfigDict, Field, field_validator

from cocoplus.core import settings, vocab

CONV_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
MAX_ID = 200
MAX_IDS = 500
TURNS = settings.BY_DOTTED["supervision.max_turns"]

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


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


def _not_blank(value: str | None, what: str) -> str | None:
    if value is not None and not value.strip():
        raise ValueError(f"{what} is empty")
    return value


class AutonomousBody(_Body):
    """Seed 000: `{"enabled": true, "task_hint"?, "max_turns"?}` or `{"enabled": false}`."""

    enabled: bool
    task_hint: str | None = Field(None, max_length=4000, description="The supervision goal (enable only).")
    max_turns: int | None = Field(
        None,
        ge=TURNS.minimum,
        le=TURNS.maximum,
        description=f"Turn cap (default from cocoplus.toml, else {TURNS.default}).",
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
    mode: Literal[vocab.SCOPE_ACTIONS]  # type: ignore[valid-type]
    session_ids: list[SessionRef] = Field(default_factory=list, max_length=MAX_IDS)


class StopBody(_Body):
    reason: str = Field("stopped by operator", min_length=1, max_length=1000)
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
        ..., min_length=1, max_length=64 * 1024, description="Injected once into the agent's next prompt."
    )
    operator: Operator = None

    @field_validator("text")
    @classmethod
    def _text(cls, v: str) -> str:
        return _not_blank(v, "the instruction")  # type: ignore[return-value]


class DispatchBody(_Body):
    instruction: str = Field(..., min_length=1, max_length=64 * 1024, description="The session's next piece of work.")
    operator: Operator = None

    @field_validator("instruction")
    @classmethod
    def _text(cls, v: str) -> str:
        return _not_blank(v, "the instruction")  # type: ignore[return-value]


class AnswerBody(_Body):
    text: str = Field(
        ..., min_length=1, max_length=64 * 1024, description="The answer to the session's last ask-human question."
    )
    operator: Operator = None

    @field_validator("text")
    @classmethod
    def _text(cls, v: str) -> str:
        return _not_blank(v, "the answer")  # type: ignore[return-value]


class LaunchBody(_Body):
    runtime: Literal[vocab.LAUNCH_RUNTIMES] = Field(..., description="Which runtime runs the worker.")  # type: ignore[valid-type]
    task: str = Field(..., min_length=1, max_length=64 * 1024, description="The worker's first prompt.")
    alias: str | None = Field(None, max_length=MAX_ID, description="The session's alias (default: the runtime's next).")
    model: str | None = Field(None, max_length=200)
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
    at: str = Field(..., min_length=1, max_length=64, description="HH:MM (local), an ISO 8601 time, or +30m / +2h")
    operator: Operator = None


class MessageBody(_Body):
    text: str = Field(..., min_length=1, max_length=64 * 1024)

    @field_validator("text")
    @classmethod
    def _text(cls, v: str) -> str:
        return _not_blank(v, "the message")  # type: ignore[return-value]


class OverridesBody(_Body):
    """Per conversation; a key set to null clears that override, an absent key leaves it."""

    modelOverride: str | None = Field(None, min_length=1, max_length=200)
    reasoningEffortOverride: Literal[vocab.EFFORTS] | None = None  # type: ignore[valid-type]

    @field_validator("modelOverride")
    @classmethod
    def _model(cls, v: str | None) -> str | None:
        return _not_blank(v, "modelOverride")


class RetryBody(_Body):
    task_id: str | None = Field(None, min_length=1, max_length=MAX_ID, description="Default: the last failed task.")
