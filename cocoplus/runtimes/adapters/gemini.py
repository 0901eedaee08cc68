"""Gemini CLI (checked against 0.61.0; docs/runtimes.md).

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


def edited_paths(payload: "Mapping[str, Any]") -> "list[str]":
    """The file a `write_file` or `replace` call changed (or a patch in `run_shell_command`)."""
    return answers.edited_paths(payload, RULE_TOOLS)


# Files a repository can commit that set what a hook runs or its environment (docs/runtimes.md): the project
# settings (`hooks`) and the project's `.env` files, which Gemini CLI loads into its own environment (and so
# its hooks') for every variable not already set.
# What a tool call may not change without the operator (rules/protected.py): its settings (hooks, MCP servers) and
# the `.env` files it loads into its own environment; this user's settings and extensions.
PROTECTED = (".gemini", ".env")
USER_PROTECTED = (".gemini",)

# The sandbox (cocoplus/sandbox/bwrap.py): each entry is (variable naming the directory, its default under the home,
# a name in it). ~/.gemini stays writable (its chats), its settings and extensions read-only, its OAuth files
# read-only; its variables are the only runtime keys it gets.
SANDBOX_STATE: "tuple[tuple[str | None, str, str], ...]" = ((None, ".gemini", ""),)
SANDBOX_READONLY: "tuple[tuple[str | None, str, str], ...]" = (
    (None, ".gemini", "settings.json"),
    (None, ".gemini", "extensions"),
)
SANDBOX_CREDENTIALS: "tuple[tuple[str | None, str, str], ...]" = (
    (None, ".gemini", "oauth_creds.json"),
    (None, ".gemini", "google_accounts.json"),
)
SANDBOX_ENV: "tuple[str, ...]" = ("GEMINI_", "GOOGLE_")
# The model's addresses: the API (or the base URL that replaces it), and those a Google sign-in uses.
MODEL_ENDPOINTS: "tuple[tuple[str, str], ...]" = (
    ("GOOGLE_GEMINI_BASE_URL", "https://generativelanguage.googleapis.com"),
    ("", "https://cloudcode-pa.googleapis.com"),
    ("", "https://oauth2.googleapis.com"),
)
REPO_SETTINGS = (".gemini/settings.json", ".gemini/.env", ".env")
HOOKS_FILE = (".gemini", "settings.json")
HOOK_FILES_READ = (HOOKS_FILE,)
GROUPED = True
COUNTS_BEFORE_CALL = False  # its post-tool hook counts each call
LOCAL_HOOKS_FILE = None  # no per-user project file: the committed hooks are the launcher (install/launcher.py)
SETTINGS_DEFAULTS: "dict[str, Any]" = {}
SLASH_COMMAND_DIR = None


# Milliseconds; above 2147483647 Node's timer overflows and the hook times out at once.
MAX_TIMEOUT_MS = 2147483647


def hook_timeout(event: str, timeout_s: int) -> int:
    """The whole seconds Gemini CLI gives a hook whose timeout is `timeout_s`.

    Gemini CLI counts milliseconds, up to a limit."""
    return min(timeout_s, MAX_TIMEOUT_MS // 1000)


def hook_entry(command: str, event: str, timeout_s: int) -> "dict[str, Any]":
    return {
        "type": "command",
        "name": f"cocoplus-{event}",
        "command": command,
        "timeout": hook_timeout(event, timeout_s) * 1000,
    }


def entry_timeout(handler: "Mapping[str, Any]") -> "float | None":
    """The seconds an installed handler's `timeout` (milliseconds) gives its hook (None: it names none)."""
    ms = answers.seconds(handler.get("timeout"))
    return None if ms is None else ms / 1000


def settings_notes(settings: "Mapping[str, Any]") -> "list[str]":
    tools = settings.get("tools")
    if isinstance(tools, dict) and tools.get("enableHooks") is False:
        return ["hooks are disabled in this settings file (tools.enableHooks = false); enable them"]
    return []


def todo(project: str) -> "list[str]":
    return [
        "hooks load from .gemini/settings.json; if folder trust is on, trust this folder",
        "since June 18, 2026 Gemini CLI serves only enterprise and API-key accounts: Google AI Pro, Ultra and free "
        "accounts moved to the Antigravity CLI (`cocoplus install antigravity`)",
    ]


def plugin_active(environ: "Mapping[str, str]") -> "str | None":
    """Where this user's Gemini CLI has cocoplus' extension (`~/.gemini/extensions/cocoplus`), or None."""
    import os  # deferred: only doctor and `session stop` look for the extension

    path = os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".gemini", "extensions", "cocoplus")
    return path if os.path.isdir(path) else None


MCP_FILE = (".gemini", "settings.json")
MCP_FORMAT = "json"
MCP_OWN_FILE = False  # the same file holds the hooks and the user's settings
MCP_APPROVAL = None
MCP_ASKS = None


def mcp_entry(command: str, args: "list[str]") -> "dict[str, Any]":
    return {"command": command, "args": args}


ADDS_CONTEXT = True


def deny_tool(event: str, reason: str) -> "dict[str, Any]":
    # `decision: deny` alone blocks the tool and the model gets the reason as a tool error;
    # `continue: false` also ends the agent loop at once, as Claude's deny does.
    return {"decision": "deny", "reason": reason, **answers.halt(reason)}


def refuse_tool(event: str, reason: str) -> "dict[str, Any]":
    """`decision: deny` alone: the model gets the reason as the tool's error and the agent goes on."""
    return {"decision": "deny", "reason": reason}


def asks_for_write(payload: "Mapping[str, Any]", project: str, home: str) -> bool:
    return False  # a headless run never asks: what is not allowed up front is refused


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


# Not checked here which process a Gemini CLI hook runs under: only its SessionEnd says the session ended.
ENDS_WITH_PROCESS = False
HOOKS_NEED_REVIEW = False
# `gemini --resume ID` (0.61.0), also for a session it did write, limited at its first request
NO_SESSION_WORDS: "tuple[str, ...]" = ("No previous sessions found",)
COMMAND = "gemini"
CHILD_ENV = ("GEMINI_SESSION_ID", "GEMINI_PROJECT_DIR", "GEMINI_PLANS_DIR", "GEMINI_CWD", "CLAUDE_PROJECT_DIR")
_VALUES = ("-m", "--model", "--approval-mode", "-o", "--output-format", "--policy")
_MANY = ("--allowed-tools", "--allowed-mcp-server-names", "--include-directories", "-e", "--extensions")
_FLAGS = ("-y", "--yolo", "-s", "--sandbox", "--skip-trust")


def resume_argv(
    program: "list[str]", session_id: str, instruction: str, argv: "list[str] | None"
) -> "list[str] | None":
    from cocoplus.runtimes import argv as words  # deferred: only a resume reads a command line

    kept = words.keep((argv or [])[len(words.program(argv)) :], values=_VALUES, many=_MANY, flags=_FLAGS)
    if not words.has(kept, "-o", "--output-format"):
        kept.append(("--output-format", ["stream-json"]))
    return [*program, "--resume", session_id, "-p", instruction, *words.flatten(kept)]


def helper_programs(program: str) -> "dict[str, str]":
    return {}  # it needs none


def granted_argv(paths: "list[str]") -> "list[str]":
    return []  # its own sandbox is not turned on in a launched worker (docs/runtimes.md)


def launch_argv(program: "list[str]", task: str, model: "str | None", effort: "str | None") -> "list[str] | None":
    if effort:
        raise ValueError("Gemini CLI has no reasoning-effort option: launch it without --effort")
    return [*program, "-p", task, "--output-format", "stream-json", *(["-m", model] if model else [])]


# Gemini CLI has no permission hook: a headless run refuses what needs confirmation, unless allowed up front.
ASKS_PERMISSION = False
RULE_TOOLS = {
    "run_shell_command": "Bash", "replace": "Edit", "write_file": "Write", "read_file": "Read",
    "read_many_files": "Read", "glob": "Glob", "search_file_content": "Grep", "web_fetch": "WebFetch",
}  # fmt: skip


allow_permission = answers.nothing


def permission_argv(allow: "list[str]", deny: "list[str]") -> "list[str]":
    """The rules as `--allowed-tools` (`Bash(pytest *)` -> `run_shell_command(pytest)`); deny rules cannot be
    passed on: what is not allowed is refused anyway in a headless run."""
    names = {v: k for k, v in RULE_TOOLS.items() if k not in ("read_many_files",)}
    out = []
    for rule in allow:
        tool, _, rest = rule.partition("(")
        name = names.get(tool.strip())
        if name is None:
            continue
        pattern = rest[:-1].strip() if rest.endswith(")") else ""
        prefix = pattern.split("*", 1)[0].strip() if tool.strip() == "Bash" else ""
        out.append(f"{name}({prefix})" if prefix else name)
    return [f"--allowed-tools={','.join(out)}"] if out else []


def stream_entries(event: "Mapping[str, Any]") -> "list[dict[str, Any]]":
    """One event of `gemini -p --output-format stream-json` as transcript entries (`cocoplus.runtimes.streams`)."""
    from cocoplus.runtimes import streams as s  # deferred: only reading a run's output parses it

    kind = event.get("type")
    if kind == "init":
        return [s.entry("session", f"session {event.get('session_id')} ({event.get('model') or 'model not named'})")]
    if kind == "message":
        if event.get("role") != "assistant":
            return []  # the prompt it was given
        return [s.entry("text", s.text_of(event.get("content")), delta=bool(event.get("delta")))]
    if kind == "tool_use":
        return [
            s.entry(
                "tool",
                s.arguments(event.get("parameters")),
                tool=str(event.get("tool_name")),
                call=event.get("tool_id"),
            )
        ]
    if kind == "tool_result":
        err = s.mapping(event, "error")
        said = s.text_of(event.get("output")) or str(err.get("message") or "")
        return [s.entry("result", said, error=event.get("status") == "error" or bool(err), call=event.get("tool_id"))]
    if kind == "error":
        return [s.entry("error" if event.get("severity") == "error" else "warning", str(event.get("message")))]
    if kind == "result":
        err = s.mapping(event, "error")
        if event.get("status") == "error" or err:
            return [s.entry("end", str(err.get("message") or "failed"), error=True)]
        stats = s.mapping(event, "stats")
        counts = [
            f"{stats[k]} {k.replace('_', ' ')}" for k in ("tool_calls", "total_tokens") if isinstance(stats.get(k), int)
        ]
        return [s.entry("end", "finished" + (f": {', '.join(counts)}" if counts else ""))]
    return []


# Rate and usage limits (session/limits.py).  Gemini CLI 0.61.0 retries a 429 `RESOURCE_EXHAUSTED` itself while
# the API's `RetryInfo` `retryDelay` is at most 300 s (MAX_RETRYABLE_DELAY_SECONDS); beyond that, or for a daily
# quota, it ends the run at once (exit 1) with a `result` of status `error` whose message says the wait
# ("Please retry in 597.59s.", "Suggested retry after 598s."): the reset is that long after the run ended.
# No hook event reports it.
QUOTA_WORDS = ("exceeded your current quota", "exhausted your daily quota", "RESOURCE_EXHAUSTED", "status 429")


def limit_of(kind: str, payload: "Mapping[str, Any]") -> "dict[str, Any] | None":
    return None


def _seconds_after(text: str, marker: str) -> "float | None":
    at = text.find(marker)
    if at < 0:
        return None
    rest = text[at + len(marker) :].lstrip()
    n = 0
    while n < len(rest) and (rest[n].isdigit() or rest[n] == "."):
        n += 1
    try:
        return float(rest[:n]) if n and rest[n : n + 1] == "s" else None
    except ValueError:
        return None


def output_limit(event: "Mapping[str, Any]") -> "dict[str, Any] | None":
    if event.get("type") != "result" or event.get("status") != "error":
        return None
    err = event.get("error")
    message = str(err.get("message") or "") if isinstance(err, dict) else ""
    if not any(w in message for w in QUOTA_WORDS):
        return None
    wait = _seconds_after(message, "Suggested retry after") or _seconds_after(message, "Please retry in")
    # From when the output is read (just after the run ended): the result's `timestamp` can be the turn's start,
    # seen 15 s before the request that was refused.
    return {
        "reason": "usage limit" if "daily quota" in message else "rate limit",
        "resets_at": None,
        "resets_in": wait,
        "detail": message[:300],
    }


def output_session(event: "Mapping[str, Any]", environ: "Mapping[str, str]") -> "dict[str, Any] | None":
    return None  # its hooks record its session (SessionStart): never needed from its output


USAGE = "gemini-recording"
PROVIDER = "google"


def controller_argv(
    program: "list[str]", model: "str | None", effort: "str | None", brain: "Mapping[str, Any] | None", reply: str
) -> "list[str] | None":
    """None: this runtime is not a controller kind (cocoplus/controllers)."""
    return None


def controller_reply(code: int, stdout: str, reply: str) -> "str | None":
    return None


# A missing answer lets the tool run; its hooks go into the project's hook file; its permission requests come through
# its permission event (or not at all).  Written here, not taken from `_defaults`: one module less before every tool.
FAILS_CLOSED = False
PLUGIN = None
PLUGIN_LOG = None
ask_person = answers.nothing
pass_answer = answers.nothing
tool_call = answers.tool_call
hooks_unreviewed = answers.nothing  # it runs a project's hooks without a review
