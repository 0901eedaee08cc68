"""`cocoplus mcp`: the main-brain and worker tools (docs/guides/mcp.md) as a stdio MCP server.

Built on the official `mcp` SDK (`MCPServer`).  Every tool calls one
operation of `cocoplus.ops` (`supervision`, `sessions`, `worker`), the
function the matching CLI command and REST endpoint call, and answers with
the JSON the CLI prints with `--json` (as text, and as structured content).
A handled failure (a `CocoplusError`: no valid id for only/except, an
unknown session, a bad status, no `.cocoplus/`) is a tool error carrying
cocoplus' one-line message; anything unexpected is a tool
error too, with the traceback in `.cocoplus/logs/cocoplus.log`.  The server
itself never stops because of a tool.

The project is found on every call with `cocoplus.core.paths.discover()`
(`--dir`/`COCOPLUS_DIR`, else the nearest `.cocoplus/` above the working
directory), so the server starts even before `cocoplus init`.
Worker tools speak for the session named by their `session` argument, else
the one the runtime's environment names (`signals.which_session`: Claude
Code gives its MCP servers `CLAUDE_CODE_SESSION_ID`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from mcp_types import INVALID_PARAMS, CallToolRequestParams, GetPromptRequestParams
from pydantic import Field

from cocoplus import __version__
from cocoplus.core import keys, vocab
from cocoplus.core.crashlog import log_exception
from cocoplus.core.errors import CocoplusError, UsageError
from cocoplus.core.paths import Layout, discover
from cocoplus.mcp import protocol, stdio
from cocoplus.ops import authority
from cocoplus.ops import dispatch as dispatch_ops
from cocoplus.ops import permissions as permissions_ops
from cocoplus.ops import session as session_ops
from cocoplus.ops import sessions as sessions_ops
from cocoplus.ops import supervision as supervision_ops
from cocoplus.ops import worker as worker_ops
from cocoplus.ops import workers as workers_ops

# Annotations below are evaluated at module level (postponed evaluation), so this lives here.
TURNS = keys.BY_DOTTED["supervision.max_turns"]

ROLES = vocab.MCP_ROLES
BRAIN_TOOLS = (
    "enable_supervision", "finish_supervision", "supervision_status", "set_supervision_scope", "list_sessions",
    "dispatch", "steer_session", "stop_session", "resume_session", "answer_worker", "launch_worker",
    "merge_worker", "approve_permission", "deny_permission",
)  # fmt: skip
WORKER_TOOLS = ("report_progress", "notify_blocked", "ask_human", "request_context")

INSTRUCTIONS = (
    "cocoplus keeps this project's agent-session state in .cocoplus/. "
    "If you are the main brain (the supervising agent), use enable_supervision, supervision_status, "
    "set_supervision_scope, list_sessions and finish_supervision, and act on one worker with dispatch (its next "
    "piece of work), answer_worker (answer its question), steer_session, stop_session and resume_session; "
    "launch_worker starts a new headless worker; merge_worker brings an ended worker's branch back. "
    "If you are a worker session, tell the supervisor how the work goes with report_progress, "
    "notify_blocked, ask_human and request_context; your session is found from the environment, "
    "or pass `session` (an alias such as cc1 from list_sessions, or a cs_ id)."
)

SESSION_ARG = Field(
    default=None,
    description=(
        "Which worker session you are: an alias such as cc1 (see list_sessions) or a cs_... id. "
        "Leave it out when your runtime tells cocoplus (Claude Code does); pass it if the tool says it cannot tell."
    ),
)
IDS_HELP = "Session ids: full cs_... ids or the short aliases list_sessions shows (cc1, cx1, gm1, cu1)."
TARGET = Field(
    description=(
        "The worker session: an alias such as cc1 (see list_sessions), a cs_... id or the runtime's session id; "
        "machine/project/alias (e.g. m2/web/cc1) for a session on another machine of the fleet."
    )
)


def _json_text(obj: Any) -> str:
    """Exactly what the CLI prints with --json (cocoplus.cli.output.emit_json, without the newline)."""
    return json.dumps(obj, indent=2, ensure_ascii=False, default=str)


def _log_unexpected(name: str, exc: BaseException) -> str | None:
    return log_exception(f"mcp tool {name}", exc)


Find = Callable[[], Layout]


def run_tool(name: str, fn: Callable[[Layout], Any], find: Find = discover) -> CallToolResult:
    """Find the project, call `fn(layout)`, and shape the answer (or the error) for MCP."""
    try:
        result = fn(find())
    except CocoplusError as exc:
        # The messages are the CLI's; here the worker's option is a tool argument.
        msg = exc.message.replace("pass --session", "pass the `session` argument") + (
            f" (hint: {exc.hint})" if exc.hint else ""
        )
        raise ToolError(msg) from None
    except Exception as exc:  # noqa: BLE001 - a tool failure must never take the server down
        where = _log_unexpected(name, exc)
        raise ToolError(
            f"internal error: {type(exc).__name__}: {exc}" + (f"; details in {where}" if where else "")
        ) from None
    text = _json_text(result)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=json.loads(text))


_run = run_tool


def effective_role(requested: str | None, environ: dict[str, str] | None = None) -> tuple[str, str | None]:
    """(the role served, a note if it is not the one asked for): `worker` unless the environment carries this
    user's capability (COCOPLUS_MCP_TOKEN), which cocoplus gives only to the main brain's controller."""
    role = requested or "worker"
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    if role == "worker" or authority.holds_capability(environ):
        return role, None
    return "worker", (
        f"cocoplus mcp: --role {role} needs this user's capability in COCOPLUS_MCP_TOKEN (cocoplus gives it to the "
        "main brain's controller; `cocoplus mcp token` prints it for the operator); serving the worker tools only"
    )


class Server(MCPServer):
    """The SDK's server, answering a call of a tool or prompt it does not have with -32602 (invalid params),
    as MCP has it, rather than a tool result (a tool) or an error with code 0 and a logged traceback (a prompt)."""

    async def _handle_call_tool(self, ctx: Any, params: CallToolRequestParams) -> Any:
        if self._tool_manager.get_tool(params.name) is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        return await super()._handle_call_tool(ctx, params)

    async def _handle_get_prompt(self, ctx: Any, params: GetPromptRequestParams) -> Any:
        if self._prompt_manager.get_prompt(params.name) is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: {params.name}")
        return await super()._handle_get_prompt(ctx, params)


def build(role: str = "worker", layout: Layout | None = None) -> MCPServer:
    """An MCPServer with the brain tools, the worker tools, or both (the role as given: see `effective_role`).

    With `layout`, that project is served (`cocoplus serve`'s `/mcp`, whose requests carry no runtime's
    environment, so a worker tool needs its `session` argument); without, the project is found on every call
    and a worker's session from the environment (`cocoplus mcp`)."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    # The SDK sets up the root logger (a rich handler printing tracebacks) as it builds a server: undone here, and
    # its own loggers write one line each (mcp/protocol.py).
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    server = Server(name="cocoplus", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    root.handlers[:] = handlers
    root.setLevel(level)
    protocol.quiet_sdk_log()
    who = authority.BRAIN if role in ("brain", "all") else authority.worker(None, None, "MCP role worker")
    find: Find = discover if layout is None else (lambda: layout)
    if role in ("brain", "all"):
        _brain_tools(server, find)
        _permission_tools(server, authority.BRAIN, find)
    if role in ("worker", "all"):
        _worker_tools(server, who, find, from_environment=layout is None)
    return server


def _brain_tools(server: MCPServer, find: Find) -> None:
    brain = authority.BRAIN

    def run_tool(name: str, fn: Callable[[Layout], Any]) -> CallToolResult:
        return _run(name, fn, find)

    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)

    @server.tool(
        description=(
            "Turn on autonomous supervision: from now on worker sessions that finish a turn, get blocked, need review, "
            "need authorization or ask the human wake you (the main brain) for a supervision round. "
            f"Default cap {TURNS.default} rounds; calling it again resets turns_used to 0. Optionally set the scope in "
            "the same step "
            '(scope_mode all|only|except with scope_session_ids). Returns {"autonomous": {enabled, turns_used, '
            "max_turns, task_hint, scope, ...}}."
        )
    )
    def enable_supervision(
        task_hint: Annotated[
            str | None, Field(description="The supervision goal, e.g. 'keep the docs PR going until it merges'.")
        ] = None,
        max_turns: Annotated[
            int | None,
            Field(
                description=f"Cap on supervision rounds ({TURNS.minimum:g}-{TURNS.maximum:g}; "
                f"default [supervision] max_turns, else {TURNS.default})."
            ),
        ] = None,
        scope_mode: Annotated[
            str | None,
            Field(
                description="Which sessions may wake you: all (every session), only (just scope_session_ids), "
                "except (all but scope_session_ids).",
                json_schema_extra={"enum": list(vocab.SCOPE_MODES)},
            ),
        ] = None,
        scope_session_ids: Annotated[
            list[str] | None, Field(description="For scope_mode only/except (at least one valid). " + IDS_HELP)
        ] = None,
    ) -> CallToolResult:
        return run_tool(
            "enable_supervision",
            lambda lay: supervision_ops.enable(
                lay, task_hint, max_turns, scope_mode, list(scope_session_ids or []), principal=brain
            ),
        )

    @server.tool(
        description=(
            "Turn autonomous supervision off and record a closing summary of what was achieved "
            "(no more supervision rounds until enable_supervision is called again)."
        )
    )
    def finish_supervision(
        summary: Annotated[str | None, Field(description="What was achieved and what is left, for the record.")] = None,
    ) -> CallToolResult:
        return run_tool(
            "finish_supervision",
            lambda lay: supervision_ops.finish(lay, summary, reason=supervision_ops.FINISHED_BY_BRAIN, principal=brain),
        )

    @server.tool(
        description=(
            "Read-only: is supervision on, turns used and left, the goal (task_hint), and the scope (mode, excluded "
            'sessions, sessions supervised now). {"autonomous": null} means it was never enabled.'
        ),
        annotations=read_only,
    )
    def supervision_status() -> CallToolResult:
        return run_tool("supervision_status", supervision_ops.status)

    @server.tool(
        description=(
            "Set which sessions may wake you. mode all: every session (clears exclusions); only: just the listed "
            "sessions, every other one (and new ones) excluded; except: all but the listed sessions. only and except "
            "need at least one session_ids entry that names a known session, else nothing changes and the call fails. "
            "Unknown ids are ignored and listed in unknown_ids."
        )
    )
    def set_supervision_scope(
        mode: Annotated[
            str, Field(description="all, only or except.", json_schema_extra={"enum": list(vocab.SCOPE_MODES)})
        ],
        session_ids: Annotated[list[str] | None, Field(description="For only/except. " + IDS_HELP)] = None,
    ) -> CallToolResult:
        return run_tool(
            "set_supervision_scope",
            lambda lay: supervision_ops.set_scope(
                lay, mode, list(session_ids or []), allow_invert=False, principal=brain
            ),
        )

    @server.tool(
        description=(
            "Every agent session cocoplus knows, with its short alias (cc1 = Claude Code, cx1 = Codex, gm1 = Gemini, "
            "cu1 = Cursor), runtime, state, attention (pending / awaiting_authorization / awaiting_decision), last "
            "event and signal, and whether it is excluded from supervision. Use the aliases in the other tools."
        ),
        annotations=read_only,
    )
    def list_sessions() -> CallToolResult:
        return run_tool("list_sessions", sessions_ops.list_sessions)

    @server.tool(
        description=(
            "Give one worker session its next piece of work. cocoplus takes the best route its state allows and "
            "says which (`route`): held (its turn end is waiting for you: it goes on at once, same process), steer "
            "(mid-turn: delivered at its turn end), resume (it exited: resumed headless with the instruction), or "
            "queued (delivered with its next prompt; `why` says why). The worker receives it as an operator "
            "instruction, never as a permission. Ask the human before anything irreversible."
        )
    )
    def dispatch(
        session: Annotated[str, TARGET],
        instruction: Annotated[str, Field(description="The next piece of work, self-contained.")],
    ) -> CallToolResult:
        return run_tool("dispatch", lambda lay: dispatch_ops.dispatch(lay, session, instruction, principal=brain))

    @server.tool(
        description=(
            "Answer a worker's ask_human question (its last one). The answer reaches the worker like a dispatch "
            "(same routes), the main conversation shows it against the question, and the session no longer awaits a "
            "decision. Answer only what you can decide; questions about irreversible actions belong to the human."
        )
    )
    def answer_worker(
        session: Annotated[str, TARGET],
        text: Annotated[str, Field(description="The answer.")],
    ) -> CallToolResult:
        return run_tool("answer_worker", lambda lay: dispatch_ops.answer(lay, session, text, principal=brain))

    @server.tool(
        description=(
            "A one-shot note for one worker session only: delivered once, at its held turn end, else at its next "
            "turn end or prompt. Other sessions never see it."
        )
    )
    def steer_session(
        session: Annotated[str, TARGET],
        text: Annotated[str, Field(description="The note.")],
    ) -> CallToolResult:
        return run_tool("steer_session", lambda lay: session_ops.steer_session(lay, session, text, principal=brain))

    @server.tool(
        description=(
            "Stop one worker session's tools (others carry on) until resume_session. Every tool call of that "
            "session is denied with the reason; a held turn end of it ends. The project-wide kill switch is separate."
        )
    )
    def stop_session(
        session: Annotated[str, TARGET],
        reason: Annotated[
            str, Field(description="Why it is stopped (the worker is told).")
        ] = "stopped by the main brain",
    ) -> CallToolResult:
        return run_tool("stop_session", lambda lay: session_ops.stop_session(lay, session, reason, principal=brain))

    @server.tool(
        description=(
            "Lift one worker session's own stop (from stop_session). The project-wide kill switch, if on, still "
            "stops every session: only the human lifts that."
        )
    )
    def resume_session(session: Annotated[str, TARGET]) -> CallToolResult:
        return run_tool("resume_session", lambda lay: session_ops.resume_session(lay, session, principal=brain))

    @server.tool(
        description=(
            "Start a new headless worker (claude -p, codex exec or gemini -p) in the project on `task`. It is "
            "registered like any session (list_sessions shows it once its runtime starts) and supervised; when its "
            "turn ends it is pending and dispatch gives it the next piece of work. At most [workers] max_parallel "
            "run at once: beyond that it is queued (`state`) and starts when one finishes."
        )
    )
    def launch_worker(
        runtime: Annotated[Literal[vocab.LAUNCH_RUNTIMES], Field(description="Which runtime runs the worker.")],  # type: ignore[valid-type]
        task: Annotated[str, Field(description="The worker's first prompt, self-contained.")],
        alias: Annotated[
            str | None, Field(description="The session's alias (default: the runtime's next, such as cc3).")
        ] = None,
    ) -> CallToolResult:
        return run_tool(
            "launch_worker", lambda lay: workers_ops.launch(lay, runtime, task, alias=alias, principal=brain)
        )

    @server.tool(
        description=(
            "Merge an ended worker's branch (a worker launched in a git worktree of its own) into the project's "
            "current branch. Merging is the human's decision: allowed only if the project sets [supervision] "
            "brain_may_merge = true, else refused (ask the human with ask_human). A branch that changes what runs "
            "(a runtime's settings or hooks, .mcp.json, cocoplus.toml, .cocoplus/) is refused whatever "
            "brain_may_merge says: ask the human. On a conflict the merge stops and `conflicts` lists the files; "
            "the tree is left for the human to resolve."
        )
    )
    def merge_worker(
        worker: Annotated[str, Field(description="The worker: its id (w1), its alias, or its session's alias.")],
    ) -> CallToolResult:
        return run_tool("merge_worker", lambda lay: workers_ops.merge(lay, worker, principal=brain))


REQUEST = Field(
    description=(
        "The permission request's id (p_...), from the worker's awaiting_authorization, or the worker's alias when it "
        "has exactly one pending."
    )
)


def _permission_tools(server: MCPServer, brain: authority.Principal, find: Find) -> None:
    def run_tool(name: str, fn: Callable[[Layout], Any]) -> CallToolResult:
        return _run(name, fn, find)

    @server.tool(
        description=(
            "Allow a headless worker's permission request: its tool call goes ahead. Only what [permissions] "
            "brain_may_allow covers; anything else is refused to you, and belongs to the human (ask them)."
        )
    )
    def approve_permission(request_id: Annotated[str, REQUEST]) -> CallToolResult:
        return run_tool("approve_permission", lambda lay: permissions_ops.approve(lay, request_id, principal=brain))

    @server.tool(description="Deny a headless worker's permission request; the worker is told the reason.")
    def deny_permission(
        request_id: Annotated[str, REQUEST],
        reason: Annotated[str | None, Field(description="What the worker is told.")] = None,
    ) -> CallToolResult:
        return run_tool("deny_permission", lambda lay: permissions_ops.deny(lay, request_id, reason, principal=brain))


def _worker_tools(server: MCPServer, who: authority.Principal, find: Find, from_environment: bool) -> None:
    def run_tool(name: str, fn: Callable[[Layout], Any]) -> CallToolResult:
        return _run(name, fn, find)

    def named(session: str | None) -> str | None:
        """The session a worker tool speaks for: without a runtime's environment, the argument must name it."""
        if session is None and not from_environment:
            raise UsageError(
                "which session is this? pass --session (a cs_ id or an alias such as cc1): over HTTP no runtime's "
                "environment tells cocoplus"
            )
        return session

    @server.tool(
        description=(
            "Tell the supervisor (the main brain) how your work is going. status working is a heartbeat and does "
            "not wake it; completed (a milestone is done, check it or hand out the next task), blocked and "
            "needs_review wake it."
        )
    )
    def report_progress(
        status: Annotated[
            str,
            Field(
                description="working, completed, blocked or needs_review.",
                json_schema_extra={"enum": list(vocab.PROGRESS_STATUSES)},
            ),
        ],
        message: Annotated[str | None, Field(description="What happened, in a sentence or two.")] = None,
        session: Annotated[str | None, SESSION_ARG] = None,
    ) -> CallToolResult:
        return run_tool(
            "report_progress",
            lambda lay: worker_ops.report_progress(lay, status, message, named(session), principal=who),
        )

    @server.tool(description="Say you are blocked and why. Always wakes the main brain to deal with it.")
    def notify_blocked(
        message: Annotated[str, Field(description="What blocks the work and what you need to go on.")],
        session: Annotated[str | None, SESSION_ARG] = None,
    ) -> CallToolResult:
        return run_tool(
            "notify_blocked", lambda lay: worker_ops.notify_blocked(lay, message, named(session), principal=who)
        )

    @server.tool(
        description=(
            "Ask the human a question (a decision, a missing fact, permission for something irreversible). The "
            "question goes to the main conversation, your session is marked awaiting a decision, and the main "
            "brain is woken. The answer comes back later as an instruction; do not wait for it in this call."
        )
    )
    def ask_human(
        question: Annotated[str, Field(description="The question, self-contained.")],
        session: Annotated[str | None, SESSION_ARG] = None,
    ) -> CallToolResult:
        return run_tool("ask_human", lambda lay: worker_ops.ask_human(lay, question, named(session), principal=who))

    @server.tool(
        description=(
            "Get the project's handoff now: PROGRESS.md (done / in progress / next), the active CONTEXT.md "
            "predicates and pending queue items, in the `context` field. Records what you asked for; never wakes "
            "the main brain."
        )
    )
    def request_context(
        what: Annotated[str | None, Field(description="What context you need (recorded for the supervisor).")] = None,
        session: Annotated[str | None, SESSION_ARG] = None,
    ) -> CallToolResult:
        return run_tool(
            "request_context", lambda lay: worker_ops.request_context(lay, what, named(session), principal=who)
        )


def run(role: str | None = None) -> None:
    """Serve on stdin/stdout until the client closes the connection; every request gets an answer.

    The role served is `effective_role(role)`: a role other than worker without the capability serves the
    worker tools, and says so once on stderr."""
    import sys  # deferred: with anyio below, only `cocoplus mcp` serves

    import anyio  # deferred: only `cocoplus mcp` serves

    served, note = effective_role(role)
    if note:
        sys.stderr.write(note + "\n")
    anyio.run(stdio.serve, build(served))
