"""Claude Code (checked against 2.1.328; docs/runtimes.md).

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
    ("PostToolUse", "post_tool", None),  # not installed: PreToolUse does its work (COUNTS_BEFORE_CALL)
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


# The files an Edit, Write, MultiEdit or NotebookEdit call changed, or an apply_patch envelope in a Bash command.
edited_paths = answers.edited_paths


# Files a repository can commit that set what a hook runs or its environment (docs/runtimes.md): the project
# settings (`hooks`, and `env`, which Claude Code passes to hooks but for HOME and CLAUDE_PROJECT_DIR) and the
# project's MCP servers.
# What a tool call may not change without the operator (rules/protected.py): its settings, hooks, commands and
# agents, and the MCP servers it starts; this user's settings, plugins and `~/.claude.json` (user MCP servers).
PROTECTED = (".claude", ".mcp.json")
USER_PROTECTED = (".claude", ".claude.json")

# The sandbox (cocoplus/sandbox/bwrap.py): each entry is (variable naming the directory, its default under the home,
# a name in it). Its state stays writable (and visible to cocoplus outside: transcripts, ~/.claude.json), its
# settings and hooks in it read-only, its credential file read-only; its variables are the only runtime keys it gets.
SANDBOX_STATE: "tuple[tuple[str | None, str, str], ...]" = (
    ("CLAUDE_CONFIG_DIR", ".claude", ""),
    (None, "", ".claude.json"),
)
SANDBOX_READONLY: "tuple[tuple[str | None, str, str], ...]" = tuple(
    ("CLAUDE_CONFIG_DIR", ".claude", name)
    for name in ("settings.json", "settings.local.json", "hooks", "plugins", "commands", "agents", "skills")
)
SANDBOX_CREDENTIALS: "tuple[tuple[str | None, str, str], ...]" = (
    ("CLAUDE_CONFIG_DIR", ".claude", ".credentials.json"),
)
SANDBOX_ENV: "tuple[str, ...]" = ("ANTHROPIC_", "CLAUDE_")
MODEL_ENDPOINTS: "tuple[tuple[str, str], ...]" = (("ANTHROPIC_BASE_URL", "https://api.anthropic.com"),)
REPO_SETTINGS = (".claude/settings.json", ".claude/settings.local.json", ".mcp.json")
HOOKS_FILE = (".claude", "settings.json")
LOCAL_HOOKS_FILE = (".claude", "settings.local.json")
HOOK_FILES_READ = (HOOKS_FILE, LOCAL_HOOKS_FILE)
GROUPED = True
# Claude Code spends as long again on each hook it starts as the hook itself takes, whether it waits for it or not
# (docs/architecture/hook-call.md): so PreToolUse does the post-tool hook's work too, before the call (the count, the
# cap, the call log and its loop guard, the session's record, the files an edit names), and PostToolUse is not
# installed; PostToolUseFailure, which runs only for a failed call, runs in the background (`"async": true`).
COUNTS_BEFORE_CALL = True
_ASYNC_EVENTS = ("PostToolUseFailure",)
SETTINGS_DEFAULTS: "dict[str, Any]" = {}
SLASH_COMMAND_DIR = (".claude", "commands")


# Claude Code runs its SessionEnd hooks for at most 60 s, whatever
# a hook's `timeout` says (docs/runtimes.md).
SESSION_END_MAX_TIMEOUT_S = 60


def hook_timeout(event: str, timeout_s: int) -> int:
    """The seconds Claude Code gives this event's hook when its `timeout` is `timeout_s`."""
    return min(timeout_s, SESSION_END_MAX_TIMEOUT_S) if event == "SessionEnd" else timeout_s


def hook_entry(command: str, event: str, timeout_s: int) -> "dict[str, Any]":
    entry: dict[str, Any] = {"type": "command", "command": command, "timeout": hook_timeout(event, timeout_s)}
    if event in _ASYNC_EVENTS:
        entry["async"] = True
    return entry


def entry_timeout(handler: "Mapping[str, Any]") -> "float | None":
    """The seconds an installed handler's `timeout` gives its hook (None: it names none)."""
    return answers.seconds(handler.get("timeout"))


def settings_notes(settings: "Mapping[str, Any]") -> "list[str]":
    return []


def todo(project: str) -> "list[str]":
    return [
        "interactive sessions run project hooks only after you accept the folder's trust dialog (answer \"Yes, I "
        'trust this folder"; its default, "No, exit", starts nothing); `claude -p` trusts it',
        "check with `/hooks` inside Claude Code, then `cocoplus doctor` after the first tool call",
    ]


def plugin_active(environ: "Mapping[str, str]") -> "str | None":
    """Where this user's Claude Code has cocoplus' plugin enabled (`enabledPlugins` names `cocoplus@...` in
    `~/.claude/settings.json`, or under CLAUDE_CONFIG_DIR), or None; as checked with the pinned CLI."""
    import json  # deferred: only doctor and `session stop` look for the plugin
    import os  # deferred: as json

    home = environ.get("HOME") or os.path.expanduser("~")
    path = os.path.join(environ.get("CLAUDE_CONFIG_DIR") or os.path.join(home, ".claude"), "settings.json")
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return None
    enabled = doc.get("enabledPlugins") if isinstance(doc, dict) else None
    if isinstance(enabled, dict) and any(k.startswith("cocoplus@") and v for k, v in enabled.items()):
        return path
    return None


MCP_FILE = (".mcp.json",)
MCP_FORMAT = "json"
MCP_OWN_FILE = True
# Claude Code asks, at the first interactive start in the project, whether to use a server of .mcp.json; the
# per-user `enabledMcpjsonServers` of .claude/settings.local.json approves one by name instead.
MCP_APPROVAL = "enabledMcpjsonServers"
MCP_ASKS = (
    'Claude Code asks "New MCP server found in this project: cocoplus": answer "Use this MCP server" (its default, '
    '"Continue without using this MCP server", leaves cocoplus\' worker tools off)'
)


def mcp_entry(command: str, args: "list[str]") -> "dict[str, Any]":
    return {"type": "stdio", "command": command, "args": args}


ADDS_CONTEXT = True


def deny_tool(event: str, reason: str) -> "dict[str, Any]":
    return {**answers.halt(reason), **answers.permission_deny(reason)}


def refuse_tool(event: str, reason: str) -> "dict[str, Any]":
    """This one call is refused and the model told why; the agent goes on (not the kill switch's halt)."""
    return answers.permission_deny(reason)


# Permission modes in which Claude Code asks before a file write (so the PermissionRequest hook decides it).
_ASKING_MODES = ("default", "plan", None)
_WRITE_RULES = ("Write", "Edit", "MultiEdit", "NotebookEdit", "*")


def asks_for_write(payload: "Mapping[str, Any]", project: str, home: str) -> bool:
    """Whether Claude Code will ask (through the PermissionRequest hook) before this file write, rather than allow
    it by its permission mode or by an allow rule of its own settings (the project's, the local, this user's)."""
    import json  # deferred: only a write to a protected path gets here
    import os  # deferred: as json

    mode = payload.get("permission_mode")
    if mode not in _ASKING_MODES:
        return False
    for path in (
        os.path.join(project, ".claude", "settings.json"), os.path.join(project, ".claude", "settings.local.json"),
        os.path.join(home, ".claude", "settings.json"), "/etc/claude-code/managed-settings.json",
    ):  # fmt: skip
        try:
            with open(path, encoding="utf-8") as fh:
                doc = json.load(fh)
        except FileNotFoundError:
            continue
        except (OSError, ValueError):
            return False  # a file it may read and we cannot: assume it allows
        perms = doc.get("permissions") if isinstance(doc, dict) else None
        if not isinstance(perms, dict):
            continue
        if perms.get("defaultMode") not in ("default", "plan", None):
            return False
        for rule in perms.get("allow") or []:
            if isinstance(rule, str) and rule.split("(", 1)[0].strip() in _WRITE_RULES:
                return False
    return True


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


# The process recorded at SessionStart is `claude` itself (hooks run under `sh -c`): once it is gone the
# session has ended, whether or not SessionEnd ran (it does not after SIGKILL, and is cut short on Ctrl+C).
ENDS_WITH_PROCESS = True
HOOKS_NEED_REVIEW = False
NO_SESSION_WORDS: "tuple[str, ...]" = ("No conversation found with session ID",)  # `claude -p --resume ID` (2.1.328)
COMMAND = "claude"
CHILD_ENV = (
    "CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SESSION_ID", "CLAUDE_SESSION_ID",
    "CLAUDE_CODE_SESSION_ATTENDED", "CLAUDE_CODE_CHILD_SESSION", "CLAUDE_CODE_CHILD_NOTES_DIR",
    "CLAUDE_CODE_MESSAGING_TOKEN", "CLAUDE_CODE_MESSAGING_SOCKET", "CLAUDE_PID", "CLAUDE_PROJECT_DIR",
    "CLAUDE_ENV_FILE", "CLAUDE_EFFORT",
)  # fmt: skip
_VALUES = (
    "--model", "--permission-mode", "--output-format", "--settings", "--fallback-model", "--append-system-prompt",
    "--system-prompt", "--effort", "--agent", "--agents", "--max-budget-usd", "--permission-prompt-tool",
)  # fmt: skip
_MANY = ("--allowedTools", "--allowed-tools", "--disallowedTools", "--disallowed-tools", "--add-dir", "--mcp-config")
_FLAGS = ("--verbose", "--dangerously-skip-permissions", "--strict-mcp-config", "--include-partial-messages")


def resume_argv(
    program: "list[str]", session_id: str, instruction: str, argv: "list[str] | None"
) -> "list[str] | None":
    from cocoplus.runtimes import argv as words  # deferred: only a resume reads a command line

    kept = words.keep((argv or [])[len(words.program(argv)) :], values=_VALUES, many=_MANY, flags=_FLAGS)
    if not words.has(kept, "--output-format"):
        kept += [("--output-format", ["stream-json"]), ("--verbose", [])]
    # The many-valued options go last, so none of them swallows the instruction.
    return [*program, "-p", instruction, "--resume", session_id, *words.flatten(kept)]


def helper_programs(program: str) -> "dict[str, str]":
    return {}  # it needs none


def granted_argv(paths: "list[str]") -> "list[str]":
    return []  # its own sandbox is not turned on in a launched worker (docs/runtimes.md)


def launch_argv(program: "list[str]", task: str, model: "str | None", effort: "str | None") -> "list[str] | None":
    extra = [*(["--model", model] if model else []), *(["--effort", effort] if effort else [])]
    return [*program, "-p", task, "--output-format", "stream-json", "--verbose", *extra]


def controller_argv(
    program: "list[str]", model: "str | None", effort: "str | None", brain: "Mapping[str, Any] | None", reply: str
) -> "list[str] | None":
    """A controller's turn (`cocoplus chat`, the main brain; Claude Code 2.1): the prompt on stdin, the answer as
    one JSON object on stdout.  With `brain` (server, command, args, env, tools, excluded): cocoplus' brain MCP
    server and its tools only — no built-in tool, no other MCP server, no hook (docs/backends.md)."""
    import json  # deferred: only a controller's command line is built here

    argv = [*program, "-p", "--output-format", "json"]
    argv += [*(["--model", model] if model else []), *(["--effort", effort] if effort else [])]
    if brain is None:
        return argv
    server = {"type": "stdio", "command": brain["command"], "args": list(brain["args"]), "env": dict(brain["env"])}
    named = [f"mcp__{brain['server']}__{t}" for t in brain["tools"]]  # how Claude Code names an MCP tool
    argv += [
        "--mcp-config",
        json.dumps({"mcpServers": {brain["server"]: server}}),
        "--strict-mcp-config",  # no other MCP server (the project's .mcp.json, the user's)
        "--tools",
        "",  # no built-in tool: no shell, no file tools
        "--allowedTools",
        ",".join(named),
        "--setting-sources",
        "user",  # not the project's settings: its hooks would register the brain as a worker
        "--settings",
        json.dumps({"disableAllHooks": True}),
    ]
    if brain["excluded"]:
        argv += ["--disallowedTools", ",".join(f"mcp__{brain['server']}__{t}" for t in brain["excluded"])]
    return argv


def controller_reply(code: int, stdout: str, reply: str) -> "str | None":
    """The answer of a controller's turn; None when it failed without one; ValueError when what it printed is not
    an answer."""
    import json  # deferred: only a controller's answer is read here

    if code != 0 and not stdout.strip():
        return None
    try:
        doc = json.loads(stdout)
    except ValueError:
        raise ValueError(f"claude printed something that is not JSON: {stdout[:200]!r}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"claude printed JSON that is not its result object: {stdout[:200]!r}")
    if doc.get("is_error"):
        raise ValueError(f"claude reported an error: {str(doc.get('result') or doc.get('subtype'))[:300]}")
    return str(doc.get("result") or "").strip()


ASKS_PERMISSION = True  # PermissionRequest fires under `claude -p` too, and its allow/deny decides the tool
RULE_TOOLS: "dict[str, str]" = {}  # its tool names are the rules' own


def allow_permission(message: "str | None" = None) -> "dict[str, Any]":
    return answers.permission_request_allow(message)


def permission_argv(allow: "list[str]", deny: "list[str]") -> "list[str]":
    """The operator's rules as Claude Code's own flags for a launched worker: the deny rules only.  Allow rules are
    not passed on: every call Claude Code would ask about reaches the PermissionRequest hook, where cocoplus's rule
    engine decides (each part of a chain, real paths, protected paths), so no call is allowed by a matching that
    is not cocoplus's (docs/runtimes.md)."""
    return [f"--disallowedTools={','.join(deny)}"] if deny else []


def stream_entries(event: "Mapping[str, Any]") -> "list[dict[str, Any]]":
    """One event of `claude -p --output-format stream-json --verbose` (or the one object `--output-format json`
    prints) as transcript entries (`cocoplus.runtimes.streams`)."""
    from cocoplus.runtimes import streams as s  # deferred: only reading a run's output parses it

    kind = event.get("type")
    if kind == "system":
        if event.get("subtype") == "init":
            return [
                s.entry("session", f"session {event.get('session_id')} ({event.get('model') or 'model not named'})")
            ]
        return []
    message = s.mapping(event, "message")
    blocks = [b for b in message.get("content") or [] if isinstance(b, dict)]
    out = []
    if kind == "assistant":
        failed = bool(event.get("error") or event.get("is_api_error_message"))
        for b in blocks:
            if b.get("type") == "text":
                out.append(s.entry("error" if failed else "text", str(b.get("text") or "")))
            elif b.get("type") == "tool_use":
                out.append(s.entry("tool", s.arguments(b.get("input")), tool=str(b.get("name")), call=b.get("id")))
        if failed and not out:
            out.append(s.entry("error", str(event.get("error"))))
        return out
    if kind == "user":
        for b in blocks:
            if b.get("type") == "tool_result":
                out.append(
                    s.entry(
                        "result", s.text_of(b.get("content")), error=bool(b.get("is_error")), call=b.get("tool_use_id")
                    )
                )
        return out
    if kind == "result":
        if event.get("is_error") or str(event.get("subtype") or "").startswith("error"):
            why = event.get("result") or "; ".join(str(e) for e in event.get("errors") or []) or event.get("subtype")
            return [s.entry("end", str(why or "failed"), error=True)]
        turns, cost = event.get("num_turns"), event.get("total_cost_usd")
        said = [
            f"{turns} turn(s)" if isinstance(turns, int) else "",
            f"${cost:.4f}" if isinstance(cost, (int, float)) else "",
        ]
        denied = event.get("permission_denials")
        if isinstance(denied, list) and denied:
            said.append(f"{len(denied)} tool call(s) denied permission")
        reason = event.get("terminal_reason")
        if isinstance(reason, str) and reason not in ("completed", ""):
            said.append(f"ended by {reason}")
        return [s.entry("end", "finished: " + ", ".join(x for x in said if x) if any(said) else "finished")]
    return []


# Rate and usage limits (session/limits.py).  Claude Code 2.1.x retries a 429 itself while `retry-after` is under
# about a minute; at 65 s or more it ends the turn at once: the hook gets `StopFailure` with `error: "rate_limit"`,
# the headless output an assistant message with `error: "rate_limit"` and a result with `api_error_status: 429`.
# Neither passes the reset time on (not to hooks, not to the transcript): cocoplus estimates it.
def limit_of(kind: str, payload: "Mapping[str, Any]") -> "dict[str, Any] | None":
    if kind != "stop_failure" or payload.get("error") != "rate_limit":
        return None
    detail = answers.first_text(payload, "error_details") or answers.first_text(payload, "last_assistant_message")
    return {"reason": "rate limit", "resets_at": None, "detail": detail}


def output_limit(event: "Mapping[str, Any]") -> "dict[str, Any] | None":
    kind = event.get("type")
    if (kind == "assistant" and event.get("error") == "rate_limit") or (
        kind == "result" and event.get("api_error_status") == 429
    ):
        detail = event.get("result") if kind == "result" else None
        return {"reason": "rate limit", "resets_at": None, "detail": detail if isinstance(detail, str) else None}
    return None


def output_session(event: "Mapping[str, Any]", environ: "Mapping[str, str]") -> "dict[str, Any] | None":
    return None  # its hooks record its session (SessionStart): never needed from its output


USAGE = "claude-transcript"
PROVIDER = "anthropic"


# A missing answer lets the tool run; its hooks go into the project's hook file; its permission requests come through
# its permission event (or not at all).  Written here, not taken from `_defaults`: one module less before every tool.
FAILS_CLOSED = False
PLUGIN = None
PLUGIN_LOG = None
ask_person = answers.nothing
pass_answer = answers.nothing
tool_call = answers.tool_call
hooks_unreviewed = answers.nothing  # it runs a project's hooks without a review
