"""Gemini CLI (checked against 0.61.0; reference/hooks-protocols.md section 4, docs/runtimes.md).

Hooks in `.gemini/settings.json`: `hooks.<Event>[{matcher, hooks: [{type,
name, command, timeout}]}]`, timeout in milliseconds.  A deny is top-level
`decision: "deny"` + `reason`, and `continue: false` also ends the agent
loop; context goes in `hookSpecificOutput.additionalContext`.  Spend comes
from the chat recording (`tokens` per gemini message).
"""

from cocoplus.runtimes import answers

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Mapping
    from typing import Any

NAME = "gemini"
TITLE = "Gemini CLI"
RANK = 3
ALIAS_PREFIX = "gm"

EVENTS = (
    ("BeforeTool", "pre_tool", "*"),
    ("AfterTool", "post_tool", "*"),
    ("BeforeAgent", "prompt", ""),
    ("AfterAgent", "stop", ""),
    ("SessionStart", "session_start", ""),
    ("SessionEnd", "session_end", ""),
    ("Notification", "notification", ""),
    ("BeforeModel", "other", None),
    ("AfterModel", "other", None),
    ("BeforeToolSelection", "other", None),
    ("PreCompress", "other", None),
)
# Names no other runtime uses: a payload naming one is Gemini's.
_OWN_NAMES = frozenset(e for e, _k, _m in EVENTS if e not in ("SessionStart", "SessionEnd", "Notification"))

PROJECT_ENV = ("GEMINI_PROJECT_DIR",)
SESSION_ENV = ("GEMINI_SESSION_ID",)
ENV_FILE = None
HOSTS: tuple[str, ...] = ()
DETECT_PRIORITY = 30


def recognise(environ: "Mapping[str, str]") -> bool:
    return False


def detect(event: str, payload: "Mapping[str, Any]", environ: "Mapping[str, str]") -> bool:
    sent = payload.get("hook_event_name")
    return sent in _OWN_NAMES or event in _OWN_NAMES or ("timestamp" in payload and "turn_id" not in payload)


def session_id(payload: "Mapping[str, Any]") -> "str | None":
    return answers.first_text(payload, "session_id")


def transcript(payload: "Mapping[str, Any]") -> "str | None":
    return answers.first_text(payload, "transcript_path")


project_dirs = answers.cwd

HOOKS_FILE = (".gemini", "settings.json")
HOOK_FILES_READ = (HOOKS_FILE,)
GROUPED = True
LOCAL_HOOKS_FILE = None  # no per-user project file: the committed hooks are the launcher (runtimes/launcher.py)
SETTINGS_DEFAULTS: "dict[str, Any]" = {}
SLASH_COMMAND_DIR = None


def hook_entry(command: str, event: str, timeout_s: int) -> "dict[str, Any]":
    # Milliseconds; above 2147483647 Node's timer overflows and the hook times out at once.
    return {"type": "command", "name": f"cocoplus-{event}", "command": command, "timeout": min(timeout_s * 1000, 2147483647)}


def settings_notes(settings: "Mapping[str, Any]") -> "list[str]":
    tools = settings.get("tools")
    if isinstance(tools, dict) and tools.get("enableHooks") is False:
        return ["hooks are disabled in this settings file (tools.enableHooks = false); enable them"]
    return []


def todo(project: str) -> "list[str]":
    return ["hooks load from .gemini/settings.json; if folder trust is on, trust this folder"]


MCP_FILE = (".gemini", "settings.json")
MCP_FORMAT = "json"
MCP_OWN_FILE = False  # the same file holds the hooks and the user's settings


def mcp_entry(command: str, args: "list[str]") -> "dict[str, Any]":
    return {"command": command, "args": args}


ADDS_CONTEXT = True


def deny_tool(event: str, reason: str) -> "dict[str, Any]":
    # `decision: deny` alone blocks the tool and the model gets the reason as a tool error;
    # `continue: false` also ends the agent loop at once, as Claude's deny does.
    return {"decision": "deny", "reason": reason, **answers.halt(reason)}


deny_permission = answers.nothing  # Gemini CLI has no permission-request hook


def halt(event: str, reason: str, model_note: str | None = None) -> "dict[str, Any]":
    return answers.halt(reason)


add_context = answers.context
prompt_reply = answers.context


def continue_turn(event: str, instruction: str) -> "dict[str, Any]":
    return {"decision": "deny", "reason": instruction}  # AfterAgent deny: the agent retries with the reason


notice = answers.nothing

def continue_cap(environ: "Mapping[str, str]") -> "int | None":
    return 99  # the 100th continuation of one prompt is dropped (and a loop check may stop them earlier)


COMMAND = "gemini"
CHILD_ENV = ("GEMINI_SESSION_ID", "GEMINI_PROJECT_DIR", "GEMINI_PLANS_DIR", "GEMINI_CWD", "CLAUDE_PROJECT_DIR")
_VALUES = ("-m", "--model", "--approval-mode", "-o", "--output-format", "--policy")
_MANY = ("--allowed-tools", "--allowed-mcp-server-names", "--include-directories", "-e", "--extensions")
_FLAGS = ("-y", "--yolo", "-s", "--sandbox", "--skip-trust")


def resume_argv(program: "list[str]", session_id: str, instruction: str, argv: "list[str] | None") -> "list[str] | None":
    from cocoplus.runtimes import argv as words  # deferred: only a resume reads a command line

    kept = words.keep((argv or [])[len(words.program(argv)) :], values=_VALUES, many=_MANY, flags=_FLAGS)
    if not words.has(kept, "-o", "--output-format"):
        kept.append(("--output-format", ["stream-json"]))
    return [*program, "--resume", session_id, "-p", instruction, *words.flatten(kept)]



def launch_argv(program: "list[str]", task: str, model: "str | None", effort: "str | None") -> "list[str] | None":
    if effort:
        from cocoplus.core.errors import UsageError  # deferred: only a launch with an effort gets here

        raise UsageError("Gemini CLI has no reasoning-effort option: launch it without --effort")
    return [*program, "-p", task, "--output-format", "stream-json", *(["-m", model] if model else [])]

USAGE = "gemini-recording"
PROVIDER = "google"
