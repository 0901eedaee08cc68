"""The shapes of cocoplus' records, for the type checker: sessions, workers, permission requests, stops, signals.

Each is a TypedDict of every key its writers write and its readers read; `total=False`, since a record written by
an earlier release, or one being built, may lack some (the readers that need a key check it; `core/records.py`
checks a session's on the hook path, `report/models.py` every file with pydantic).  A value that is null until
something happens (a limit, a resume, a worktree, how a run ended, its reason) is `Any`, with its shape in its
comment: the module that owns it reads it (session/limits.py, supervision/worktrees.py, ...), and a reader that
knows the record's state reads it as what it then is.

Imported only under `TYPE_CHECKING` (`if TYPE_CHECKING: from cocoplus.core.shapes import SessionRecord`), so the
hook path loads neither this module nor `typing` for it; annotations name the shapes as strings
(`from __future__ import annotations`).  Where a record is read from its file (`fsio.read_json` gives a plain
dict), its reader says what it is: `cast("WorkerRecord | None", ...)` off the hook path, and on it, where `cast`
would load `typing`, a `# type: ignore[return-value]` that names the writer.
"""

from __future__ import annotations

from typing import Any, TypedDict

# -- sessions/<cs_id>.json (session/registry.py) ------------------------------------------------------------------


class SessionRecord(TypedDict, total=False):
    """An agent-runtime session (`registry.ensure` creates it, the hooks and the doors update it)."""

    schema_version: int
    id: str  # cs_...
    runtime: str
    runtime_session_id: str
    alias: str
    state: str  # vocab.RUN_STATES
    attention: str | None  # vocab.ATTENTION_STATES
    attention_since: str | None
    started_at: str
    updated_at: str
    last_event: str | None
    last_event_at: str
    last_tool_event: str
    last_signal: Any  # the last attention change: kind, value, message, ts (or None)
    tool_calls: int
    calls_base: int  # the calls counted before its call log began (`registry.record_call`)
    calls_log: int  # which file that call log is (its inode): another one is a log begun again
    streak: dict[str, Any]  # the loop guard's: the last call's fingerprint and how often it came in a row
    exit_reason: Any  # why it ended, in words (None while it runs)
    stopped_by: Any  # the stop cocoplus made for it alone: principal, reason, at, stop (or None)
    budget_base: int  # its `tool_calls` when the iteration budget was last reset (its own count starts there)
    # Where it runs, from its SessionStart (or its worker's output, `workers.session_from_output`).
    cwd: str
    transcript_path: str
    model: str
    source: str
    process: dict[str, Any]  # the runtime's process: pid, start_ticks, argv, program, seal, host, pidns
    worker: str  # the managed worker it is a run of
    # Turn ends, holds and dispatch.
    continuations: int
    last_continuation: dict[str, Any]  # how and when its last turn end was continued: how, ts
    hold_skipped: dict[str, Any]  # why its turn end was not held: why, ts
    permission_request: dict[str, Any]  # the request it waits on: id, tool, rule, deadline
    resumed: Any  # the headless resume cocoplus started: pid, start_ticks, command, log, started_at, by (or None)
    limit: Any  # paused by its runtime's limit: reason, resets_at, estimate, resume, ... (session/limits.py; or None)


# -- supervision/signals.jsonl (session/registry.py `append_signal`) ----------------------------------------------


class SignalExtra(TypedDict, total=False):
    """What a signal may carry beside its kind and value (the keyword arguments of `registry.append_signal`)."""

    event: str  # the hook event that sent it
    detail: str | None
    message: str | None
    request: str | None  # the permission request a session waits on
    worker: str | None
    # A session paused by its runtime's limit (`limited`).
    resets_at: str | None
    estimate: bool | None
    clamped: str | None
    resume: str | None
    tries: int | None
    # Two sessions that changed the same file (`collision`).
    path: str
    other: str
    other_alias: str | None
    other_runtime: str | None
    other_worker: str | None
    principal: str


class Signal(SignalExtra, total=False):
    """One line of `supervision/signals.jsonl`: what the watcher wakes the brain for."""

    schema_version: int
    ts: str
    session: str | None  # None: a worker that failed before any session started
    alias: str | None
    runtime: str | None
    kind: str
    value: str


# -- workers/<id>/worker.json (supervision/workers/) --------------------------------------------------------------


class WorkerExit(TypedDict):
    """How a worker's run ended (`workers.decide_end`)."""

    code: int | None  # None when a signal ended it, or the status is unknown
    signal: str | None  # SIGTERM, ...
    status: str  # in words: `exit code 1`, `killed by SIGTERM`, `exit status unknown`


class WorkerRecord(TypedDict, total=False):
    """A managed worker (`workers.launch` creates it; its runner, `workers kill` and the watcher update it)."""

    schema_version: int
    id: str  # w1, w2, ...
    runtime: str
    task: str
    alias: str | None
    model: str | None
    effort: str | None
    by: str
    principal: str
    allow: list[str]  # its own permission rules (`launch --allow`)
    created_at: str
    updated_at: str
    state: str  # vocab.WORKER_STATES
    command: list[str]
    headless: bool
    unsupervised: bool  # `launch --unsupervised`: started where its runtime runs no cocoplus hooks for it
    goal: str | None  # the supervised goal it was launched under (supervision's enabled_at): its trace
    seal: str  # core/seal.py: over its id, project, command and what it grants
    runner: Any  # the runner process it is bound to: pid, start_ticks, host, pidns (or None)
    worktree: Any  # its git worktree: path, cwd, branch, base, and what became of it (supervision/worktrees.py)
    sandbox: str  # its sandbox profile (vocab.SANDBOX_PROFILES; absent: none), kept by every later run
    network: str | list[str]  # what its sandbox reaches (sandbox/network.py; absent: all), sealed
    sandbox_probed_at: float | None  # when its launch probed the sandbox (epoch seconds): its first run's probe
    # Its runs.
    runs: int
    queued_at: str
    resumed_by: str
    waiting_since: str | None
    held: Any  # why it waits for its runtime's limit: reason, until, estimate, session (`workers.held_by`; or None)
    started_at: Any  # str (None before its first run starts)
    pid: int | None
    pgid: int | None
    start_ticks: int | None
    ended_at: Any  # str (None while it runs)
    exit: Any  # WorkerExit (or None before a run ends)
    reason: Any  # how its last run ended, in words (None before it ends)
    killed_by: str | None
    stopped_by: Any  # the stop that ended its last run: principal, scope (session, worker, project), reason, at
    kill_requested: Any  # who asked `workers kill` for it, and when: by, at (or None)
    denied: int
    left_behind: Any  # what its runtime left running: a list of pid, command, ended (or None)
    limit: Any  # the limit its last run ended by (or None)
    # Its session, and every runtime it ran in (a failover, `workers.take_over`).
    session: Any  # its session's cs_ id (None before one is known)
    session_alias: str | None
    runtimes: list[dict[str, Any]]


# -- permissions/requests/<id>.json (session/permissions.py) -------------------------------------------------------


class PermissionRequest(TypedDict, total=False):
    """A headless worker's tool call waiting for an answer (`permissions.open_request`, `permissions.answer`)."""

    id: str  # p_...
    state: str  # pending, allowed, denied, expired, gone
    session: str | None
    alias: str | None
    worker: str | None
    agent: str | None
    runtime: str
    tool: str
    input: str  # the call's input as shown (cut at MAX_SHOWN)
    call: Any  # the whole input, as the runtime sent it (None beyond MAX_CALL)
    rule: str  # the call in rule form: `Bash(pytest -q)`
    rules: list[str]
    why: str | None
    protected: list[str]
    cwd: str | None
    tree: str | None
    hook: dict[str, Any] | None  # the waiting hook's process; None: nothing waits (a refused write)
    created_at: str
    deadline: str
    wait_s: float
    # Its answer.
    decided_at: str
    principal: str | None
    by: str
    reason: str | None
    decided_rule: str | None
    channel: str | None


class PermissionAnswer(PermissionRequest, total=False):
    """A request as `permissions.answer` leaves it, and what became of the answer."""

    already_decided: bool  # it was decided before this answer came
    gone: bool  # its hook had ended: nothing was allowed


# -- AGENT_STOP (session/control.py) and session-stops/<cs_id>.json (session/stops.py) -----------------------------


class Stop(TypedDict, total=False):
    """What a stop says: who made it, why, when, and its id."""

    schema_version: int
    id: str | None
    principal: str | None
    operator: Any  # str (None where an AGENT_STOP's content does not say)
    reason: Any  # str (likewise)
    created_at: Any  # str (likewise)


class AgentStop(Stop, total=False):
    """AGENT_STOP: its body (`records.render_stop`) and what `control.read_stop` makes of any content."""

    source: str  # operator, iteration-budget, cost-budget, loop-guard, ...
    readable: bool  # its content was a JSON object
    present: bool | None  # None: whether it exists cannot be known (it stops all the same)
    unknown: str  # why it cannot be known
    token: str | None  # identifies this very file (`control.resume(expect=...)`)
    created_at_fallback: str | None  # its file's time, where its content says none
    body_written: bool  # False: an empty AGENT_STOP was made (a full disk)


class SessionStop(Stop, total=False):
    """One session's stop (`stops.stop`), as `stops.read` and `stops.list_stops` give it."""

    session: str
    alias: str | None
    runtime: str | None
    runtime_session_id: str | None
    source: str  # a stop cocoplus made itself: iteration-budget, loop-guard (`stops.auto_stop`)
    present: bool | None  # None: whether it exists cannot be known (it stops all the same)
    unknown: str
    damaged: str  # its content cannot be read (it stops all the same)
