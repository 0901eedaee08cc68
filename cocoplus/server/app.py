"""The REST API of seeds 000 and 001 over the files the CLI uses.

Every handler parses its request and calls one operation of `cocoplus.ops`,
the function the matching CLI command and MCP tool call (named in each
docstring), and answers with its result as it is; nothing here decides
anything the CLI does not.  Handlers are plain `def`s, so FastAPI runs
them in its thread pool and a slow file lock never blocks the event loop;
the read routes kept in memory (server/cache.py) answer a kept result from
the loop and build a new one in the thread pool.

Errors are JSON `{"error": "...", "hint"?: "..."}` with no traceback:
usage errors and invalid ids 400, unknown sessions/tasks 404, a damaged
file or a state conflict 409, a lock held too long 503, a body that does
not match its schema 422 (with `errors`: where and what).  An unexpected
failure is 500 with one line; the traceback goes to
`.cocoplus/logs/cocoplus.log`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal

from fastapi import Body, Depends, FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse
from fastapi.security import HTTPBearer
from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from cocoplus import __version__
from cocoplus import config as config_mod
from cocoplus.core import settings, vocab
from cocoplus.core.crashlog import log_exception
from cocoplus.core.errors import (
    CocoplusError,
    ConfigInvalid,
    InvalidId,
    LockTimeout,
    NotFound,
    NotInitialized,
    Refused,
    StateCorrupt,
    UsageError,
)
from cocoplus.core.paths import Layout
from cocoplus.fleet.options import FleetUnreachable
from cocoplus.ops import authority
from cocoplus.ops import chat as chat_ops
from cocoplus.ops import dispatch as dispatch_ops
from cocoplus.ops import fleet as fleet_ops
from cocoplus.ops import permissions as permissions_ops
from cocoplus.ops import session as session_ops
from cocoplus.ops import sessions as sessions_ops
from cocoplus.ops import supervision as supervision_ops
from cocoplus.ops import view as view_ops
from cocoplus.ops import workers as workers_ops
from cocoplus.server import events as events_mod
from cocoplus.server.cache import Cache
from cocoplus.server.security import Guard

STATIC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
CONV_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
MAX_ID = 200
MAX_IDS = 500
TURNS = settings.BY_DOTTED["supervision.max_turns"]

# Documents the bearer token in the OpenAPI description; the Guard middleware enforces it.
bearer = HTTPBearer(
    auto_error=False, description="The token printed by `cocoplus serve` (also in .cocoplus/server-token)."
)
WRITE: dict[str, Any] = {"dependencies": [Depends(bearer)]}

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
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"description": "Invalid request (the message says why)"},
    401: {"description": "Missing or wrong token"},
    403: {"description": "Host or Origin is not this server"},
    404: {"description": "Not found"},
    409: {"description": "A state file is damaged or the change conflicts with the current state"},
    502: {"description": "The fleet's server cannot be reached"},
    415: {"description": "The body is not JSON"},
    422: {"description": "The body does not match its schema"},
    503: {"description": "A lock is held by another process; try again"},
}


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


def _status_for(exc: CocoplusError) -> int:
    if isinstance(exc, (UsageError, InvalidId)):
        return 400
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, Refused):
        return 403
    if isinstance(exc, LockTimeout):
        return 503
    if isinstance(exc, FleetUnreachable):
        return 502
    if isinstance(exc, NotInitialized):
        return 503
    if isinstance(exc, (StateCorrupt, ConfigInvalid)):
        return 409
    return 409


def _error(status: int, message: str, hint: str | None = None, **extra: Any) -> JSONResponse:
    body: dict[str, Any] = {"error": message}
    if hint:
        body["hint"] = hint
    body.update(extra)
    return JSONResponse(body, status_code=status)


def _log_crash(layout: Layout, request: Request, exc: BaseException) -> str:
    return log_exception(f"server {request.method} {request.url.path}", exc, layout) or layout.rel(layout.cli_log)


def create_app(
    layout: Layout,
    *,
    token: str,
    port: int,
    hub: events_mod.Hub | None = None,
    on_shutdown: Callable[[], None] | None = None,
) -> Any:
    """The ASGI application: FastAPI routes behind the Host/Origin/token guard.

    Whoever holds the token is the operator (docs/authority.md): every change is made with that principal.
    """
    hub = hub or events_mod.Hub(layout)
    OPERATOR = authority.operator()
    cache = Cache(layout, hub.generation)

    async def cached(key: str, topics: tuple[str, ...], build: Callable[[], Any]) -> Any:
        """A read route's answer from memory while no file event, stamp or age says it changed (server/cache.py):
        a kept answer straight from the event loop, a new one built in the thread pool (files and locks)."""
        body = cache.peek(key, topics)
        built = body is None
        if body is None:
            body, built = await run_in_threadpool(cache.answer, key, topics, build)
        return Response(
            content=body, media_type="application/json", headers={"X-Cocoplus-Cache": "built" if built else "hit"}
        )

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> Any:
        hub.start()
        try:
            yield
        finally:
            await hub.stop()
            if on_shutdown is not None:
                on_shutdown()

    app = FastAPI(
        title="cocoplus local server",
        version=__version__,
        description=(
            "Supervision, agent sessions, operator controls and the master-agent conversation of one project, "
            "over the same files the `cocoplus` CLI uses. Loopback only; every request that changes state needs "
            "`Authorization: Bearer <token>` (printed by `cocoplus serve`, stored in .cocoplus/server-token)."
        ),
        docs_url=None,
        redoc_url=None,
        openapi_url="/api/v1/openapi.json",
        lifespan=lifespan,
    )
    app.state.layout = layout
    app.state.hub = hub
    app.state.cache = cache
    app.state.port = port

    @app.exception_handler(CocoplusError)
    async def _cocoplus_error(_request: Request, exc: CocoplusError) -> JSONResponse:
        return _error(_status_for(exc), exc.message, exc.hint)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = []
        for e in exc.errors():
            loc = [str(p) for p in e.get("loc", ())]
            errors.append({"loc": loc, "msg": str(e.get("msg", "invalid")), "type": str(e.get("type", ""))})
        first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
        where = ".".join(first["loc"]) or "request"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return _error(422, f"invalid request: {where}: {first['msg']}{more}", errors=errors)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        resp = _error(exc.status_code, str(exc.detail))
        for k, v in (exc.headers or {}).items():
            resp.headers[k] = v
        return resp

    @app.exception_handler(Exception)
    async def _crash(request: Request, exc: Exception) -> JSONResponse:
        where = _log_crash(layout, request, exc)
        return _error(500, f"internal error ({type(exc).__name__}); details in {where}")

    # -- supervision (seed 000) -------------------------------------------------------
    @app.get("/api/v1/session-os/main-brain/autonomous", tags=["supervision"], responses=ERRORS)
    async def get_autonomous() -> dict[str, Any]:
        """supervision_status (`cocoplus supervision status`):
        `{"autonomous": null | {...}}`, plus whether the watcher runs."""
        return await cached("autonomous", ("supervision", "round", "sessions"), lambda: supervision_ops.status(layout))

    @app.post("/api/v1/session-os/main-brain/autonomous", tags=["supervision"], responses=ERRORS, **WRITE)
    def post_autonomous(body: AutonomousBody) -> dict[str, Any]:
        """enable_supervision / finish_supervision (`cocoplus supervision enable|finish`); the UI switch.
        `start_supervisor` also starts the watcher if none runs (`supervision enable --start-supervisor`)."""
        if body.enabled:
            return supervision_ops.enable(
                layout,
                body.task_hint,
                body.max_turns,
                body.scope_mode,
                list(body.scope_session_ids or []),
                body.start_supervisor,
                principal=OPERATOR,
            )
        return supervision_ops.finish(
            layout, body.summary, reason=body.reason or supervision_ops.FINISHED_BY_OPERATOR, principal=OPERATOR
        )

    @app.get("/api/v1/session-os/main-brain/rounds", tags=["supervision"], responses=ERRORS)
    async def get_rounds(limit: Annotated[int, Query(ge=1, le=1000)] = 20) -> dict[str, Any]:
        """The current round and the last `limit` entries of supervision/rounds.jsonl."""
        return await cached(
            f"rounds?limit={limit}", ("round", "supervision"), lambda: supervision_ops.rounds_view(layout, limit)
        )

    @app.get("/api/v1/coding-sessions", tags=["sessions"], responses=ERRORS)
    async def get_sessions() -> dict[str, Any]:
        """list_sessions (`cocoplus session list`): alias, runtime, state, attention, excluded, stale, what each
        collides on; every collision between live sessions; and the scope."""
        return await cached("coding-sessions", ("sessions", "supervision"), lambda: sessions_ops.list_sessions(layout))

    @app.get("/api/v1/history", tags=["sessions"], responses=ERRORS)
    def get_history() -> dict[str, Any]:
        """Each session's iterations and spend over time (`[[ts, value], ...]`), for the page's charts."""
        return view_ops.history(layout)

    @app.patch("/api/v1/coding-sessions/{session_id}/supervision", tags=["sessions"], responses=ERRORS, **WRITE)
    def patch_supervision(
        session_id: Annotated[str, Path(min_length=1, max_length=MAX_ID)], body: ExcludeBody
    ) -> dict[str, Any]:
        """`cocoplus supervision exclude|include ID`: the session's state (full cs_ id, alias or runtime id)."""
        return supervision_ops.set_excluded(layout, session_id, body.excluded, principal=OPERATOR)

    @app.post("/api/v1/coding-sessions/supervision-scope", tags=["sessions"], responses=ERRORS, **WRITE)
    def post_scope(body: ScopeBody) -> dict[str, Any]:
        """set_supervision_scope (`cocoplus supervision scope MODE IDS`), plus `invert` for the visible list;
        only/except without a valid id is a 400 and nothing is written."""
        return supervision_ops.set_scope(
            layout, body.mode, list(body.session_ids), allow_invert=True, principal=OPERATOR
        )

    # -- managed workers (SPEC 11) -----------------------------------------------------------------
    @app.get("/api/v1/workers", tags=["workers"])
    async def get_workers() -> dict[str, Any]:
        """`cocoplus workers list`: every launched worker, its state, process, exit and session."""
        return await cached("workers", ("sessions",), lambda: workers_ops.list_workers(layout))

    @app.post("/api/v1/workers", tags=["workers"], responses=ERRORS, **WRITE)
    def post_worker(body: LaunchBody) -> dict[str, Any]:
        """`cocoplus launch RUNTIME TASK` (brain tool `launch_worker`):
        started, or queued beyond `[workers] max_parallel`."""
        return workers_ops.launch(
            layout,
            body.runtime,
            body.task,
            alias=body.alias,
            model=body.model,
            effort=body.effort,
            by=body.operator,
            principal=OPERATOR,
        )

    @app.post("/api/v1/workers/{worker_id}/kill", tags=["workers"], responses=ERRORS, **WRITE)
    def post_worker_kill(
        worker_id: Annotated[str, Path(min_length=1, max_length=MAX_ID)],
        body: Annotated[KillBody | None, Body()] = None,
    ) -> dict[str, Any]:
        """`cocoplus workers kill ID`: its process group stopped; the record says `exited` and who killed it."""
        return workers_ops.kill(layout, worker_id, body.operator if body else None, principal=OPERATOR)

    # -- headless workers' permission requests (docs/authority.md) ---------------------------------
    @app.get("/api/v1/permissions", tags=["permissions"], responses=ERRORS)
    def get_permissions() -> dict[str, Any]:
        """`cocoplus permissions list`: the requests waiting for an answer."""
        return permissions_ops.pending(layout)

    @app.get("/api/v1/permissions/log", tags=["permissions"], responses=ERRORS)
    def get_permissions_log(limit: Annotated[int, Query(ge=1, le=10000)] = 200) -> dict[str, Any]:
        """`cocoplus permissions log`: every decision, who took it, which rule, when."""
        return permissions_ops.log(layout, limit)

    @app.post("/api/v1/permissions/{request_id}/approve", tags=["permissions"], responses=ERRORS, **WRITE)
    def post_approve(
        request_id: Annotated[str, Path(min_length=1, max_length=MAX_ID)],
        body: Annotated[PermissionBody | None, Body()] = None,
    ) -> dict[str, Any]:
        """`cocoplus approve ID`: the worker's tool call goes ahead."""
        b = body or PermissionBody.model_validate({})
        return permissions_ops.approve(layout, request_id, always=b.always, rule=b.rule, principal=OPERATOR)

    @app.post("/api/v1/permissions/{request_id}/deny", tags=["permissions"], responses=ERRORS, **WRITE)
    def post_deny(
        request_id: Annotated[str, Path(min_length=1, max_length=MAX_ID)],
        body: Annotated[PermissionBody | None, Body()] = None,
    ) -> dict[str, Any]:
        """`cocoplus deny ID`: the worker is told the reason."""
        b = body or PermissionBody.model_validate({})
        return permissions_ops.deny(
            layout, request_id, reason=b.reason, always=b.always, rule=b.rule, principal=OPERATOR
        )

    # -- one worker session: dispatch, answer, steer, stop, resume (SPEC 11) ----------------------
    @app.post("/api/v1/coding-sessions/{session_id}/dispatch", tags=["sessions"], responses=ERRORS, **WRITE)
    def post_dispatch(session_id: SessionId, body: DispatchBody) -> dict[str, Any]:
        """`cocoplus dispatch ID INSTRUCTION` (brain tool `dispatch`):
        the route taken (held, steer, resume, queued) and why."""
        return dispatch_ops.dispatch(layout, session_id, body.instruction, body.operator, principal=OPERATOR)

    @app.post("/api/v1/coding-sessions/{session_id}/answer", tags=["sessions"], responses=ERRORS, **WRITE)
    def post_answer(session_id: SessionId, body: AnswerBody) -> dict[str, Any]:
        """`cocoplus answer ID TEXT` (brain tool `answer_worker`): answer the session's last question."""
        return dispatch_ops.answer(layout, session_id, body.text, body.operator, principal=OPERATOR)

    @app.post("/api/v1/coding-sessions/{session_id}/steer", tags=["sessions"], responses=ERRORS, **WRITE)
    def post_session_steer(session_id: SessionId, body: SteerBody) -> dict[str, Any]:
        """`cocoplus session steer --session ID TEXT` (brain tool `steer_session`): once, to that session only."""
        return session_ops.steer_session(layout, session_id, body.text, body.operator, principal=OPERATOR)

    @app.post("/api/v1/coding-sessions/{session_id}/stop", tags=["sessions"], responses=ERRORS, **WRITE)
    def post_session_stop(session_id: SessionId, body: Annotated[StopBody | None, Body()] = None) -> dict[str, Any]:
        """`cocoplus session stop --session ID` (brain tool `stop_session`): that session's tools only."""
        body = body or StopBody.model_validate({})
        return session_ops.stop_session(layout, session_id, body.reason, body.operator, principal=OPERATOR)

    @app.post("/api/v1/coding-sessions/{session_id}/resume", tags=["sessions"], responses=ERRORS, **WRITE)
    def post_session_resume(
        session_id: SessionId, body: Annotated[SessionResumeBody | None, Body()] = None
    ) -> dict[str, Any]:
        """`cocoplus session resume --session ID --yes` (brain tool `resume_session`): lift that session's own stop."""
        return session_ops.resume_session(
            layout, session_id, (body or SessionResumeBody()).operator, principal=OPERATOR
        )

    @app.post("/api/v1/coding-sessions/{session_id}/resume-at", tags=["sessions"], responses=ERRORS, **WRITE)
    def post_session_resume_at(session_id: SessionId, body: ResumeAtBody) -> dict[str, Any]:
        """`cocoplus session resume-at ID TIME`: resume a session paused by its runtime's limit at that time."""
        return session_ops.resume_at(layout, session_id, body.at, body.operator, principal=OPERATOR)

    # -- session operator controls (seed 002) ------------------------------------------------
    @app.get("/api/v1/session", tags=["session"], responses=ERRORS)
    async def get_session() -> dict[str, Any]:
        """`cocoplus session status --json`.

        While cocoplus.toml is invalid, `config.ok` is false and `config.error` says why."""
        return await cached("session", ("session", "sessions", "supervision"), lambda: session_ops.status(layout))

    @app.post("/api/v1/session/stop", tags=["session"], responses=ERRORS, **WRITE)
    def post_stop(body: Annotated[StopBody | None, Body()] = None) -> dict[str, Any]:
        """`cocoplus session stop`: the kill switch (AGENT_STOP)."""
        body = body or StopBody.model_validate({})
        return session_ops.stop(layout, body.reason, body.operator, principal=OPERATOR)

    @app.post("/api/v1/session/resume", tags=["session"], responses=ERRORS, **WRITE)
    def post_resume(body: Annotated[ResumeBody | None, Body()] = None) -> dict[str, Any]:
        """`cocoplus session resume --yes`: remove AGENT_STOP.

        With nothing stopped, nothing changes: `resumed` is false."""
        body = body or ResumeBody()
        return session_ops.resume(layout, body.operator, reset_budget=body.reset_budget, principal=OPERATOR)

    @app.post("/api/v1/session/steer", tags=["session"], responses=ERRORS, **WRITE)
    def post_steer(body: SteerBody) -> dict[str, Any]:
        """`cocoplus session steer TEXT`: a one-shot instruction for the agent's next prompt."""
        return session_ops.steer(layout, body.text, body.operator, principal=OPERATOR)

    # -- master-agent conversation (seed 001) -------------------------------------------------
    @app.get("/api/v1/projects/{conversation}", tags=["master agent"], responses=ERRORS)
    def get_project(
        conversation: Conv,
        limit: Annotated[int | None, Query(ge=1, le=100000, description="Only the last N messages.")] = None,
    ) -> dict[str, Any]:
        """`chat info` + `chat log --json`: `modelOverride`, `reasoningEffortOverride`, the effective model and
        effort, messages, `thinking`, `failed`, and the options of the page's pickers."""
        return chat_ops.details(layout, conversation, limit)

    @app.patch("/api/v1/projects/{conversation}", tags=["master agent"], responses=ERRORS, **WRITE)
    def patch_project(conversation: Conv, body: OverridesBody) -> dict[str, Any]:
        """`chat set --model/--effort` and the "..." menu's pickers: saved for this conversation only (null clears
        one); answers like `chat set --json`: the overrides and what a reply now uses."""
        given = body.model_fields_set
        if not given:
            raise UsageError("give modelOverride and/or reasoningEffortOverride (null clears one)")
        return chat_ops.set_overrides(
            layout,
            conversation,
            model=body.modelOverride if "modelOverride" in given else None,
            effort=body.reasoningEffortOverride if "reasoningEffortOverride" in given else None,
            clear_model="modelOverride" in given and body.modelOverride is None,
            clear_effort="reasoningEffortOverride" in given and body.reasoningEffortOverride is None,
            principal=OPERATOR,
        )

    @app.post("/api/v1/projects/{conversation}/messages", tags=["master agent"], responses=ERRORS, **WRITE)
    def post_message(conversation: Conv, body: MessageBody) -> dict[str, Any]:
        """`chat send`: returns at once with `message`, `task`, `masterReplyState`; the reply lands in the ledger."""
        return chat_ops.send(layout, body.text, conversation, principal=OPERATOR)

    @app.post("/api/v1/projects/{conversation}/retry", tags=["master agent"], responses=ERRORS, **WRITE)
    def post_retry(conversation: Conv, body: Annotated[RetryBody | None, Body()] = None) -> dict[str, Any]:
        """`chat retry [TASK]`: queue a failed reply again."""
        return chat_ops.retry(layout, conversation, (body or RetryBody.model_validate({})).task_id, principal=OPERATOR)

    # -- the fleet (read-only here; it needs the token, since it shows other machines) ------------
    @app.get("/api/v1/fleet", tags=["fleet"], responses=ERRORS, **WRITE)
    def get_fleet() -> dict[str, Any]:
        """`cocoplus fleet status --json`.

        Every machine, project and session of the fleet, or `{"configured": false}`."""
        return fleet_ops.view(layout.project)

    # -- the page's vocabulary -----------------------------------------------------------------
    @app.get("/api/v1/meta", tags=["meta"], responses=ERRORS)
    def get_meta() -> dict[str, Any]:
        """The allowed values of every enumerated field and the turn cap's bounds.

        Enumerated fields are efforts, states, scope modes, and the like."""
        try:
            turns = int(config_mod.load_for(layout).get(TURNS.dotted))
        except CocoplusError:  # a broken cocoplus.toml is reported by `session status`; the page still needs a value
            turns = TURNS.default
        return {
            "version": __version__,
            "enums": vocab.as_dict(),
            "settings": {
                TURNS.dotted: {
                    "value": turns,
                    "default": TURNS.default,
                    "minimum": TURNS.minimum,
                    "maximum": TURNS.maximum,
                }
            },
        }

    # -- events and the page -------------------------------------------------------------------
    @app.get(
        "/api/v1/events",
        tags=["events"],
        response_class=StreamingResponse,
        responses={
            200: {
                "content": {"text/event-stream": {}},
                "description": "Server-sent events: hello, session, sessions, supervision, round, ledger, resync",
            }
        },
    )
    async def get_events() -> StreamingResponse:
        """Server-sent events: `hello` first (with `watching` and `watching_why`: file events or polling, and
        why), then `session`, `sessions`, `supervision`, `round`, `ledger` (with `conversations`) and `resync`:
        which topic changed, as hints to re-read the matching endpoint, from watching `.cocoplus/` (watchdog,
        with a periodic rescan)."""
        return StreamingResponse(
            events_mod.stream(hub),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    def _static(name: str, media: str) -> Any:
        def handler() -> FileResponse:
            return FileResponse(os.path.join(STATIC, name), media_type=media)

        return handler

    app.get("/", include_in_schema=False)(_static("index.html", "text/html; charset=utf-8"))
    app.get("/app.js", include_in_schema=False)(_static("app.js", "text/javascript; charset=utf-8"))
    app.get("/app.css", include_in_schema=False)(_static("app.css", "text/css; charset=utf-8"))
    app.get("/uplot.min.js", include_in_schema=False)(_static("uplot.min.js", "text/javascript; charset=utf-8"))

    return Guard(app, port=port, token=token)
