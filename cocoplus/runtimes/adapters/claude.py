"""Claude Code (checked against 2.1.328; reference/hooks-protocols.md section 1).

Hooks in `.claude/settings.json` (committed by teams) and
`.claude/settings.local.json` (per user; Claude Code keeps it out of git):
`hooks.<Event>[{matcher, hooks: [{type, command, timeout}]}]`, timeout in
seconds.  `install` writes the direct command into the per-user file.  A PreToolUse deny goes in
`hookSpecificOutput` and `continue: false` also halts the agent; context
goes in `hookSpecificOutput.additionalContext`; a Stop `decision: block`
keeps the turn going.  Spend comes from the session transcript.
"""

from cocoplus.runtimes import answers

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Mapping
    from typing import Any

NAME = "claude"
TITLE = "Claude Code"
RANK = 1
ALIAS_PREFIX = "cc"

EVENTS = (
    ("PreToolUse", "pre_tool", "*"),
    ("PostToolUse", "post_tool", "*"),
    ("PostToolUseFailure", "post_tool_failure", "*"),
    ("UserPromptSubmit", "prompt", ""),
    ("SessionStart", "session_start", ""),
    ("Stop", "stop", ""),
    ("StopFailure", "stop_failure", ""),
    ("PermissionRequest", "permission", "*"),
    ("Notification", "notification", "permission_prompt|idle_prompt"),
    ("SessionEnd", "session_end", ""),
    ("SubagentStop", "subagent_stop", None),
    ("PreCompact", "other", None),
)

PROJECT_ENV = ("CLAUDE_PROJECT_DIR",)
SESSION_ENV = ("CLAUDE_SESSION_ID", "CLAUDE_CODE_SESSION_ID")
ENV_FILE = "CLAUDE_ENV_FILE"
HOSTS: tuple[str, ...] = ()
DETECT_PRIORITY = 0  # the fallback: a Claude-shaped payload is the common case


def recognise(environ: "Mapping[str, str]") -> bool:
    return False


def detect(event: str, payload: "Mapping[str, Any]", environ: "Mapping[str, str]") -> bool:
    return True


def session_id(payload: "Mapping[str, Any]") -> "str | None":
    return answers.first_text(payload, "session_id")


def transcript(payload: "Mapping[str, Any]") -> "str | None":
    return answers.first_text(payload, "transcript_path")


project_dirs = answers.cwd


HOOKS_FILE = (".claude", "settings.json")
LOCAL_HOOKS_FILE = (".claude", "settings.local.json")
HOOK_FILES_READ = (HOOKS_FILE, LOCAL_HOOKS_FILE)
GROUPED = True
SETTINGS_DEFAULTS: "dict[str, Any]" = {}
SLASH_COMMAND_DIR = (".claude", "commands")


def hook_entry(command: str, event: str, timeout_s: int) -> "dict[str, Any]":
    return {"type": "command", "command": command, "timeout": timeout_s}


def settings_notes(settings: "Mapping[str, Any]") -> "list[str]":
    return []


def todo(project: str) -> "list[str]":
    return [
        "interactive sessions run project hooks only after you accept the folder's trust dialog; `claude -p` trusts it",
        "check with `/hooks` inside Claude Code, then `cocoplus doctor` after the first tool call",
    ]


MCP_FILE = (".mcp.json",)
MCP_FORMAT = "json"
MCP_OWN_FILE = True


def mcp_entry(command: str, args: "list[str]") -> "dict[str, Any]":
    return {"type": "stdio", "command": command, "args": args}


ADDS_CONTEXT = True


def deny_tool(event: str, reason: str) -> "dict[str, Any]":
    return {**answers.halt(reason), **answers.permission_deny(reason)}


def deny_permission(reason: str) -> "dict[str, Any]":
    return answers.permission_request_deny(reason)


def halt(event: str, reason: str, model_note: str | None = None) -> "dict[str, Any]":
    return answers.halt(reason)


add_context = answers.context
prompt_reply = answers.context


def continue_turn(event: str, instruction: str) -> "dict[str, Any]":
    return answers.block_turn_end(instruction)


def notice(event: str, text: str) -> "dict[str, Any] | None":
    return answers.system_message(text)


def continue_cap(environ: "Mapping[str, str]") -> "int | None":
    # 8 in a row, then Claude Code ends the turn itself; CLAUDE_CODE_STOP_HOOK_BLOCK_CAP sets it, 0 removes it.
    raw = environ.get("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP")
    try:
        cap = int(raw) if raw else 8
    except ValueError:
        cap = 8
    return cap if cap > 0 else None


COMMAND = "claude"
CHILD_ENV = (
    "CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SESSION_ID", "CLAUDE_SESSION_ID", "CLAUDE_CODE_SESSION_ATTENDED",
    "CLAUDE_CODE_CHILD_SESSION", "CLAUDE_CODE_CHILD_NOTES_DIR", "CLAUDE_CODE_MESSAGING_TOKEN",
    "CLAUDE_CODE_MESSAGING_SOCKET", "CLAUDE_PID", "CLAUDE_PROJECT_DIR", "CLAUDE_ENV_FILE", "CLAUDE_EFFORT",
)  # fmt: skip
_VALUES = (
    "--model", "--permission-mode", "--output-format", "--settings", "--fallback-model", "--append-system-prompt",
    "--system-prompt", "--effort", "--agent", "--agents", "--max-budget-usd", "--permission-prompt-tool",
)  # fmt: skip
_MANY = ("--allowedTools", "--allowed-tools", "--disallowedTools", "--disallowed-tools", "--add-dir", "--mcp-config")
_FLAGS = ("--verbose", "--dangerously-skip-permissions", "--strict-mcp-config", "--include-partial-messages")


def resume_argv(program: "list[str]", session_id: str, instruction: str, argv: "list[str] | None") -> "list[str] | None":
    from cocoplus.runtimes import argv as words  # deferred: only a resume reads a command line

    kept = words.keep((argv or [])[len(words.program(argv)) :], values=_VALUES, many=_MANY, flags=_FLAGS)
    if not words.has(kept, "--output-format"):
        kept += [("--output-format", ["stream-json"]), ("--verbose", [])]
    # The many-valued options go last, so none of them swallows the instruction.
    return [*program, "-p", instruction, "--resume", session_id, *words.flatten(kept)]



def launch_argv(program: "list[str]", task: str, model: "str | None", effort: "str | None") -> "list[str] | None":
    extra = [*(["--model", model] if model else []), *(["--effort", effort] if effort else [])]
    return [*program, "-p", task, "--output-format", "stream-json", "--verbose", *extra]

USAGE = "claude-transcript"
PROVIDER = "anthropic"
