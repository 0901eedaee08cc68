"""Snowflake Cortex Code, the `cortex` CLI (not checked against a real Cortex Code: no binary can be had here).

Built from Snowflake's documentation of Cortex Code hooks (docs/runtimes.md,
"Cortex Code").  Hooks in `.cortex/settings.json` (also
`.cortex/settings.local.json`), Claude Code's shape; timeouts in seconds.
Payloads and answers are Claude Code's, with lowercase tool names (`bash`,
`read`, `write`, `edit`, ...), so matchers are `*`.  Where it differs:

* it also runs the hooks in `.claude/settings*.json`, so a project wired for
  Claude Code runs cocoplus under Cortex too.  It is recognised from
  `CORTEX_SESSION_ID` / `CORTEX_PROJECT_DIR` before anything Claude-specific
  (HOSTS); when `.cortex/` is wired as well, the Claude entries step aside
  (only the kill switch is repeated), so nothing is counted twice;
* to keep a turn going at Stop it answers `continue: false` with the next
  instruction as `stopReason` (in Claude Code that halts the agent).

No usage records are documented, so its spend is not measured (record it
with `cocoplus budget add-cost`), and no project MCP config is documented.
"""

from cocoplus.runtimes import answers
from cocoplus.runtimes.adapters._defaults import (  # what Cortex Code does not do: it is never launched or priced
    ASKS_PERMISSION,
    ENDS_WITH_PROCESS,
    FAILS_CLOSED,
    HOOKS_NEED_REVIEW,
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
    USAGE,
    ask_person,
    asks_for_write,
    continue_cap,
    controller_argv,
    controller_reply,
    granted_argv,
    helper_programs,
    hooks_unreviewed,
    launch_argv,
    limit_of,
    output_limit,
    output_session,
    pass_answer,
    permission_argv,
    resume_argv,
    stream_entries,
    tool_call,
)  # fmt: skip

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Mapping
    from typing import Any

NAME = "cortex"
TITLE = "Cortex Code"
RANK = 5
ALIAS_PREFIX = "ct"

EVENTS = (
    ("PreToolUse", "pre_tool", "*"),
    ("PostToolUse", "post_tool", "*"),
    ("PermissionRequest", "permission", "*"),
    ("UserPromptSubmit", "prompt", ""),
    ("SessionStart", "session_start", ""),
    ("Stop", "stop", ""),
    ("Notification", "notification", ""),
    ("SessionEnd", "session_end", ""),
    ("SubagentStop", "subagent_stop", None),
    ("PreCompact", "other", None),
    ("Setup", "other", None),
)

PROJECT_ENV = ("CORTEX_PROJECT_DIR",)
SESSION_ENV = ("CORTEX_SESSION_ID",)
ENV_FILE = None  # CORTEX_ENV_FILE exists, but what it holds is not documented
HOSTS = ("claude",)
DETECT_PRIORITY = 100


def recognise(environ: "Mapping[str, str]") -> bool:
    return bool(environ.get("CORTEX_SESSION_ID") or environ.get("CORTEX_PROJECT_DIR"))


def detect(event: str, payload: "Mapping[str, Any]", environ: "Mapping[str, str]") -> bool:
    return recognise(environ)


def session_id(payload: "Mapping[str, Any]") -> "str | None":
    return answers.first_text(payload, "session_id")


def transcript(payload: "Mapping[str, Any]") -> "str | None":
    return answers.first_text(payload, "transcript_path")


project_dirs = answers.cwd


# Its tool names are lowercase (docs/runtimes.md, "Cortex Code"); Claude Code's are taken too (a Claude-shaped payload).
EDIT_NAMES = {
    "edit": "Edit",
    "write": "Write",
    "multi_edit": "MultiEdit",
    "notebook_edit": "NotebookEdit",
    "bash": "Bash",
}


def edited_paths(payload: "Mapping[str, Any]") -> "list[str]":
    """The file an `edit` or `write` call changed (or a patch in a `bash` command)."""
    return answers.edited_paths(payload, EDIT_NAMES)


# Files a repository can commit that set what a hook runs or its environment (docs/runtimes.md, from Cortex Code's
# documentation; not run here): its own settings and Claude Code's, which it also reads.
# What a tool call may not change without the operator (rules/protected.py): its settings and Claude Code's, which it
# also reads; this user's settings and `~/.snowflake/cortex` (its hooks.json).
PROTECTED = (".cortex", ".claude")
USER_PROTECTED = (".cortex", ".claude", ".snowflake/cortex")
REPO_SETTINGS = (
    ".cortex/settings.json",
    ".cortex/settings.local.json",
    ".claude/settings.json",
    ".claude/settings.local.json",
)
HOOKS_FILE = (".cortex", "settings.json")
LOCAL_HOOKS_FILE = (".cortex", "settings.local.json")
HOOK_FILES_READ = (HOOKS_FILE, LOCAL_HOOKS_FILE)
GROUPED = True
COUNTS_BEFORE_CALL = False  # its post-tool hook counts each call
SETTINGS_DEFAULTS: "dict[str, Any]" = {}
SLASH_COMMAND_DIR = None


def hook_timeout(event: str, timeout_s: int) -> int:
    """The seconds Cortex Code gives a hook whose `timeout` is `timeout_s` (no cap is documented)."""
    return timeout_s


def hook_entry(command: str, event: str, timeout_s: int) -> "dict[str, Any]":
    return {"type": "command", "command": command, "timeout": hook_timeout(event, timeout_s)}


def entry_timeout(handler: "Mapping[str, Any]") -> "float | None":
    """The seconds an installed handler's `timeout` gives its hook (None: it names none)."""
    return answers.seconds(handler.get("timeout"))


def settings_notes(settings: "Mapping[str, Any]") -> "list[str]":
    return []


def todo(project: str) -> "list[str]":
    return [
        "Cortex Code reads hooks once, at session start: start a new session to use them",
        "Cortex Code also runs .claude/settings*.json hooks: with both wired, cocoplus acts once, "
        "through these (the Claude Code entries only repeat the kill switch)",
        "not checked against a real Cortex Code (no binary here); built from its documented hook protocol",
    ]


def plugin_active(environ: "Mapping[str, str]") -> "str | None":
    return None  # its plugin is installed through Cortex Code, which leaves nothing cocoplus can read here


MCP_FILE = None  # no project MCP configuration is documented
MCP_FORMAT = "json"
MCP_OWN_FILE = False
MCP_APPROVAL = None
MCP_ASKS = None


def mcp_entry(command: str, args: "list[str]") -> "dict[str, Any]":
    return {"command": command, "args": args}


ADDS_CONTEXT = True  # UserPromptSubmit additionalContext is documented, not verified


def deny_tool(event: str, reason: str) -> "dict[str, Any]":
    return {**answers.halt(reason), **answers.permission_deny(reason)}


def refuse_tool(event: str, reason: str) -> "dict[str, Any]":
    """This one call is refused and the model told why; the agent goes on."""
    return answers.permission_deny(reason)


def deny_permission(reason: str) -> "dict[str, Any]":
    return {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }


def halt(event: str, reason: str, model_note: "str | None" = None) -> "dict[str, Any]":
    return answers.halt(reason)


add_context = answers.context
prompt_reply = answers.context


def continue_turn(event: str, instruction: str) -> "dict[str, Any]":
    # Cortex Code keeps going with `stopReason` as the next instruction; Claude Code would halt.
    return {"continue": False, "stopReason": instruction}


def notice(event: str, text: str) -> "dict[str, Any] | None":
    return answers.system_message(text)


# Not checked against a real Cortex Code: only a hook says the session ended.
COMMAND = "cortex"
CHILD_ENV = ("CORTEX_SESSION_ID", "CORTEX_PROJECT_DIR", "CORTEX_ENV_FILE")


def allow_permission(message: "str | None" = None) -> "dict[str, Any]":
    return answers.permission_request_allow(message)


# Rate and usage limits (session/limits.py): no hook event of its own reports one.
