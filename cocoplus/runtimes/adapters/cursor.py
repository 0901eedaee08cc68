"""Cursor (not checked against a real Cursor; docs/runtimes.md).

Hooks in `.cursor/hooks.json`: `{"version": 1, "hooks": {"<event>":
[{"command"}]}}`.  A deny is `permission: "deny"` with `user_message` and
`agent_message`.  Cursor has no post-tool stop (the iteration cap holds
through AGENT_STOP at the next command) and cannot add context to a
prompt, so a steer stays pending.  No project directory in the hook's
environment is documented: the hook finds `.cocoplus/` from the payload's
`workspace_roots` and `cwd`.  The committed `.cursor/hooks.json` holds the
launcher (install/launcher.py).  No spend records.
"""

from cocoplus.runtimes import answers
from cocoplus.runtimes.adapters._defaults import (  # what Cursor does not do: it is never launched, resumed or priced
    ASKS_PERMISSION,
    ENDS_WITH_PROCESS,
    ENV_FILE,
    FAILS_CLOSED,
    HOOKS_NEED_REVIEW,
    HOSTS,
    MODEL_ENDPOINTS,
    NO_SESSION_WORDS,
    PLUGIN,
    PLUGIN_LOG,
    PROVIDER,
    RULE_TOOLS,
    SANDBOX_CREDENTIALS,
    SANDBOX_ENV,
    SANDBOX_READONLY,
    SANDBOX_STATE,
    SESSION_ENV,
    USAGE,
    allow_permission,
    ask_person,
    asks_for_write,
    controller_argv,
    controller_reply,
    deny_permission,
    granted_argv,
    helper_programs,
    hooks_unreviewed,
    launch_argv,
    limit_of,
    notice,
    output_limit,
    output_session,
    pass_answer,
    permission_argv,
    plugin_active,
    recognise,
    resume_argv,
    settings_notes,
    stream_entries,
    tool_call,
)  # fmt: skip

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Mapping
    from typing import Any

NAME = "cursor"
TITLE = "Cursor"
RANK = 4
ALIAS_PREFIX = "cu"

EVENTS = (
    ("beforeShellExecution", "pre_tool", ""),
    ("beforeMCPExecution", "pre_tool", ""),
    ("beforeReadFile", "pre_tool", ""),
    ("afterShellExecution", "post_tool", ""),
    ("afterMCPExecution", "post_tool", ""),
    ("afterFileEdit", "post_tool", ""),
    ("beforeSubmitPrompt", "prompt", ""),
    ("stop", "stop", ""),
)

PROJECT_ENV = ("CURSOR_PROJECT_DIR",)
DETECT_PRIORITY = 40


def detect(event: str, payload: "Mapping[str, Any]", environ: "Mapping[str, str]") -> bool:
    if "conversation_id" in payload or "cursor_version" in payload or "workspace_roots" in payload:
        return True
    sent = payload.get("hook_event_name")
    return isinstance(sent, str) and sent[:1].islower()  # Cursor's event names are camelCase


def session_id(payload: "Mapping[str, Any]") -> "str | None":
    return answers.first_text(payload, "conversation_id", "session_id")


def transcript(payload: "Mapping[str, Any]") -> "str | None":
    return answers.first_text(payload, "transcript_path")


def project_dirs(payload: "Mapping[str, Any]") -> "list[str]":
    roots = payload.get("workspace_roots")
    extra = [r for r in roots if isinstance(r, str) and r.startswith("/")] if isinstance(roots, list) else []
    return answers.cwd(payload) + extra


def edited_paths(payload: "Mapping[str, Any]") -> "list[str]":
    """The file an `afterFileEdit` event names (Cursor reports its edits there, not as a tool call)."""
    if payload.get("hook_event_name") != "afterFileEdit":
        return []
    path = payload.get("file_path")
    return [path] if isinstance(path, str) and path else []


# Files a repository can commit that set what a hook runs (docs/runtimes.md; not checked against a real Cursor).
# What a tool call may not change without the operator (rules/protected.py): its hooks and MCP servers.
PROTECTED = (".cursor",)
USER_PROTECTED = (".cursor",)
REPO_SETTINGS = (".cursor/hooks.json", ".cursor/mcp.json")
HOOKS_FILE = (".cursor", "hooks.json")
HOOK_FILES_READ = (HOOKS_FILE,)
GROUPED = False
COUNTS_BEFORE_CALL = False  # its post-tool hook counts each call
LOCAL_HOOKS_FILE = None  # no per-user project file: the committed hooks are the launcher (install/launcher.py)
SETTINGS_DEFAULTS: "dict[str, Any]" = {"version": 1}
SLASH_COMMAND_DIR = None


def hook_timeout(event: str, timeout_s: int) -> int:
    """The seconds cocoplus allows a Cursor hook: `[hooks] timeout_s` and the waits, as for the other runtimes.
    Cursor's own timeout is not written (its hooks.json takes `command` only, as documented here) and not
    known: the hook bounds its waits by this all the same."""
    return timeout_s


def hook_entry(command: str, event: str, timeout_s: int) -> "dict[str, Any]":
    return {"command": command}


def entry_timeout(handler: "Mapping[str, Any]") -> "float | None":
    """The seconds an installed handler's `timeout` gives its hook (None: it names none)."""
    return answers.seconds(handler.get("timeout"))


def todo(project: str) -> "list[str]":
    return [
        "Cursor has no post-tool stop: the iteration cap creates AGENT_STOP and the next command is denied",
        "Cursor cannot add context to a prompt: steers stay pending for another runtime or `session status`",
    ]


MCP_FILE = (".cursor", "mcp.json")
MCP_FORMAT = "json"
MCP_OWN_FILE = True
MCP_APPROVAL = None
MCP_ASKS = None


def mcp_entry(command: str, args: "list[str]") -> "dict[str, Any]":
    return {"type": "stdio", "command": command, "args": args}


ADDS_CONTEXT = False


def deny_tool(event: str, reason: str) -> "dict[str, Any]":
    return {"continue": True, "permission": "deny", "user_message": reason, "agent_message": reason}


refuse_tool = deny_tool  # `permission: deny` for this one call


halt = answers.nothing  # no post-tool stop
add_context = answers.nothing  # no context channel


def prompt_reply(event: str, text: str) -> "dict[str, Any]":
    return {"continue": True}  # beforeSubmitPrompt can only let the prompt through (or block it)


def continue_turn(event: str, instruction: str) -> "dict[str, Any]":
    return {"followup_message": instruction}  # `stop`: auto-submitted as the next prompt


def continue_cap(environ: "Mapping[str, str]") -> "int | None":
    return 5  # follow-ups are capped at 5 by default (newer builds: the hook's loop_limit)


# Not checked against a real Cursor: only a hook says the session ended.
COMMAND = "cursor-agent"
CHILD_ENV: tuple[str, ...] = ()


# Rate and usage limits (session/limits.py): no hook event of its own reports one.
