"""The Antigravity CLI, `agy` (not run here: its installer is a script from Google's site; docs/runtimes.md).

Built from the hook protocol as those who ran it documented it (each fact's
source is in docs/runtimes.md, "Antigravity CLI", and in the fixtures,
tests/fixtures/hook-payloads/antigravity-*.json):

* hooks load from a `hooks.json` of **named hooks**: each top-level key is a
  hook's name, holding `enabled` and its events; `PreToolUse` holds matcher
  groups (`{matcher, hooks: [handler]}`), `PreInvocation` and `Stop` a flat
  list of handlers; timeouts in whole seconds.  The CLI loads them from an
  installed plugin (`install` writes cocoplus' plugin and installs it with
  `agy plugin install`: install/agyplugin.py), so they are global: the hook
  finds the project from the payload's `workspacePaths`;
* payloads are protojson (camelCase): `conversationId`, `transcriptPath`,
  `workspacePaths`, `toolCall: {name, args}` with PascalCase arguments
  (`CommandLine`, `TargetFile`);
* a PreToolUse answers `{"decision": "allow"|"deny"|"ask"|"force_ask",
  "reason"}`; agy refuses the tool on a missing or malformed answer, so every
  event gets one (FAILS_CLOSED: `pass_answer`, and a `deny` when the hook
  fails; hook/entry.py);
* no PostToolUse for cocoplus (its payload often has no tool): the pre-tool
  hook counts each call before it runs (COUNTS_BEFORE_CALL), and it is where
  a permission is routed (no permission event: `ask_person`, `tool_call`);
* a steer reaches the model from PreInvocation (`injectSteps`), and a Stop
  `decision: "continue"` keeps the turn going with `reason`.

`agy --print` reports no workspace and runs in a scratch directory of its own,
so cocoplus does not launch it (`launch_argv`).  No spend is measured: its
transcript's usage records are not documented.
"""

from cocoplus.runtimes import answers
from cocoplus.runtimes.adapters._defaults import (  # what agy does not do: it is never launched, resumed or priced
    ENDS_WITH_PROCESS,
    ENV_FILE,
    HOOKS_NEED_REVIEW,
    HOSTS,
    MODEL_ENDPOINTS,
    NO_SESSION_WORDS,
    PROVIDER,
    SANDBOX_CREDENTIALS,
    SANDBOX_ENV,
    SANDBOX_READONLY,
    SANDBOX_STATE,
    SETTINGS_DEFAULTS,
    SLASH_COMMAND_DIR,
    USAGE,
    asks_for_write,
    controller_argv,
    controller_reply,
    granted_argv,
    helper_programs,
    hooks_unreviewed,
    limit_of,
    notice,
    output_limit,
    output_session,
    permission_argv,
    resume_argv,
    settings_notes,
    stream_entries,
)  # fmt: skip

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Mapping
    from typing import Any

NAME = "antigravity"
TITLE = "Antigravity CLI"
RANK = 6
ALIAS_PREFIX = "ag"

# The events of agy's hooks.json.  Installed: PreToolUse (grouped, every tool), PreInvocation and Stop (flat).
# Recognised, not installed: PostToolUse (its `toolCall` is null for steps that ran no tool; the pre-tool hook
# counts instead), PostInvocation, and SessionStart, which some builds drop or rewrite (docs/runtimes.md).
EVENTS = (
    ("PreToolUse", "pre_tool", "*"),
    ("PreInvocation", "prompt", ""),
    ("Stop", "stop", ""),
    ("PostToolUse", "post_tool", None),
    ("PostInvocation", "other", None),
    ("SessionStart", "session_start", None),
)
# The events whose hooks are matcher groups; every other event holds a flat list of handlers.
TOOL_EVENTS = ("PreToolUse", "PostToolUse")

PROJECT_ENV: "tuple[str, ...]" = ()  # none documented: the project comes from the payload (`project_dirs`)
SESSION_ENV = ("ANTIGRAVITY_CONVERSATION_ID",)
DETECT_PRIORITY = 50  # its payloads are camelCase: nobody else's have `conversationId` with `workspacePaths`

# The one choice this adapter makes where its sources disagree or are silent (docs/runtimes.md, "Antigravity CLI"):
# what a pre-tool hook with nothing to say answers.  An empty object is a deny (agentmemory#1146, agy 1.0.15);
# `allow` runs the tool and does not skip agy's own review prompt (safe-chains, agy 1.1.2), so it changes nothing
# agy would have asked about.  Every other event's answer is an empty object (no field: nothing changes).
PASS_TOOL: "dict[str, Any]" = {"decision": "allow"}
FAILS_CLOSED = True


def pass_answer(kind: str) -> "dict[str, Any] | None":
    """What the hook answers an event it has nothing to say to: agy fails closed on a missing answer."""
    return dict(PASS_TOOL) if kind == "pre_tool" else {}


def recognise(environ: "Mapping[str, str]") -> bool:
    return bool(environ.get("ANTIGRAVITY_CONVERSATION_ID"))


def detect(event: str, payload: "Mapping[str, Any]", environ: "Mapping[str, str]") -> bool:
    return "conversationId" in payload or "toolCall" in payload or "workspacePaths" in payload or recognise(environ)


def session_id(payload: "Mapping[str, Any]") -> "str | None":
    return answers.first_text(payload, "conversationId")


def transcript(payload: "Mapping[str, Any]") -> "str | None":
    return answers.first_text(payload, "transcriptPath")


def project_dirs(payload: "Mapping[str, Any]") -> "list[str]":
    """The workspace folders the payload names (`workspacePaths`): agy runs its plugin's hooks for every project."""
    roots = payload.get("workspacePaths")
    found = [r for r in roots if isinstance(r, str) and r.startswith("/")] if isinstance(roots, list) else []
    return found + answers.cwd(payload)


# Its tools (docs/runtimes.md) -> the rules' (Claude Code's) names.
RULE_TOOLS = {
    "run_command": "Bash", "view_file": "Read", "write_to_file": "Write", "replace_file_content": "Edit",
    "multi_replace_file_content": "MultiEdit", "grep_search": "Grep", "find_by_name": "Glob", "list_dir": "LS",
    "read_url_content": "WebFetch", "search_web": "WebSearch",
}  # fmt: skip
# Each tool's PascalCase argument -> the rules' input key.
_ARGS = {"CommandLine": "command", "Cwd": "cwd", "TargetFile": "file_path", "AbsolutePath": "file_path"}
# The tools agy's own review asks about by default (`toolPermission=request-review`, safe-chains): where no rule
# decides, a call of one of them that cocoplus routes to a person is put to the person watching (`force_ask`).
REVIEWED = ("run_command",)


def tool_call(payload: "Mapping[str, Any]") -> "tuple[str, Any]":
    """The tool a PreToolUse names, and its input in the rules' words (`CommandLine` -> `command`, ...)."""
    call = payload.get("toolCall")
    if not isinstance(call, dict):
        return "", None
    name = call.get("name")
    args = call.get("args")
    if not isinstance(args, dict):
        return (name if isinstance(name, str) else ""), args
    return (name if isinstance(name, str) else ""), {_ARGS.get(k, k): v for k, v in args.items()}


def edited_paths(payload: "Mapping[str, Any]") -> "list[str]":
    """The file a `write_to_file`, `replace_file_content` or `multi_replace_file_content` call changes."""
    name, args = tool_call(payload)
    if RULE_TOOLS.get(name) not in ("Write", "Edit", "MultiEdit") or not isinstance(args, dict):
        return []
    path = args.get("file_path")
    return [path] if isinstance(path, str) and path else []


# Files a repository can commit that set what a hook runs (docs/runtimes.md): the workspace customization root's
# hooks and MCP servers.  What a tool call may not change without the operator (rules/protected.py): that root; and
# this user's agy configuration (plugins, hooks.json, settings) under ~/.gemini.
PROTECTED = (".agents",)
USER_PROTECTED = (".gemini",)
REPO_SETTINGS = (".agents/hooks.json", ".agents/mcp_config.json")
HOOKS_FILE = (".agents", "hooks.json")  # what a repository may commit; cocoplus installs a plugin (PLUGIN)
HOOK_FILES_READ = (HOOKS_FILE,)
LOCAL_HOOKS_FILE = None
GROUPED = True  # PreToolUse's matcher groups; the flat events are written by install/agyplugin.py
COUNTS_BEFORE_CALL = True  # no post-tool hook: the pre-tool hook counts each call
# Its hooks load only from an installed plugin, global to this user: `install` writes it and runs agy's own
# plugin command (install/agyplugin.py), and writes nothing into the project.
PLUGIN = "cocoplus"
# Where agy says which hooks.json files it loaded ("loaded N named hooks from M hooks.json file(s)") or refused
# (claude-remember#564, agy 1.1.27).
PLUGIN_LOG = (".gemini", "antigravity-cli", "cli.log")
# agy reads a hook's timeout as a 32-bit count of seconds (skillsaw's antigravity-hooks-valid, agy 1.1.25).
MAX_TIMEOUT_S = 2147483647


def hook_timeout(event: str, timeout_s: int) -> int:
    return min(int(timeout_s), MAX_TIMEOUT_S)


def hook_entry(command: str, event: str, timeout_s: int) -> "dict[str, Any]":
    return {"type": "command", "command": command, "timeout": hook_timeout(event, timeout_s)}


def entry_timeout(handler: "Mapping[str, Any]") -> "float | None":
    return answers.seconds(handler.get("timeout"))


def todo(project: str) -> "list[str]":
    return [
        "agy loads hooks only from installed plugins, which are global: cocoplus' plugin acts only in cocoplus "
        "projects, found from each payload's workspacePaths",
        "not run against a real agy here (built from its documented hook protocol; docs/runtimes.md)",
    ]


def plugin_active(environ: "Mapping[str, str]") -> "str | None":
    """Where agy keeps cocoplus' installed plugin (`agy plugin install` copies it there), or None."""
    import os  # deferred: only doctor and `session stop` look for the plugin

    home = environ.get("HOME") or os.path.expanduser("~")
    for parts in (("config", "plugins"), ("antigravity-cli", "plugins")):
        path = os.path.join(home, ".gemini", *parts, PLUGIN)
        if os.path.isfile(os.path.join(path, "hooks.json")):
            return path
    return None


MCP_FILE = None  # a plugin's MCP servers are not documented, and its project file is the workspace's own
MCP_FORMAT = "json"
MCP_OWN_FILE = False
MCP_APPROVAL = None  # no MCP server registered (MCP_FILE): nothing to approve
MCP_ASKS = None


def mcp_entry(command: str, args: "list[str]") -> "dict[str, Any]":
    return {"command": command, "args": args}


ADDS_CONTEXT = True  # through PreInvocation's injectSteps; PreToolUse has no context channel


def deny_tool(event: str, reason: str) -> "dict[str, Any]":
    """`deny`: the tool does not run and `reason` reaches the model."""
    return {"decision": "deny", "reason": reason}


refuse_tool = deny_tool


def ask_person(tool: str, reason: str) -> "dict[str, Any] | None":
    """`force_ask` for a tool agy reviews itself: the person watching is asked, whatever agy's always-allow cache
    says (`ask` would respect it); any other tool passes (None)."""
    return {"decision": "force_ask", "reason": reason} if tool in REVIEWED else None


def deny_permission(reason: str) -> "dict[str, Any]":
    return deny_tool("PreToolUse", reason)


def allow_permission(message: "str | None" = None) -> "dict[str, Any]":
    return dict(PASS_TOOL)


def halt(event: str, reason: str, model_note: "str | None" = None) -> "dict[str, Any] | None":
    """No post-tool hook: a stop holds from the next tool call (its deny)."""
    return None


def add_context(event: str, text: str) -> "dict[str, Any] | None":
    """Context reaches the model only from an invocation event (PreInvocation), as an injected user message (it
    persists); a tool event has no channel for it."""
    if not text or event in TOOL_EVENTS:
        return None
    return {"injectSteps": [{"userMessage": answers.clip(text)}]}


prompt_reply = add_context


def continue_turn(event: str, instruction: str) -> "dict[str, Any]":
    return {"decision": "continue", "reason": instruction}  # Stop: the loop goes on with `reason`


def continue_cap(environ: "Mapping[str, str]") -> "int | None":
    return None  # none documented: the hold bounds itself


COMMAND = "agy"
CHILD_ENV = ("ANTIGRAVITY_CONVERSATION_ID", "ANTIGRAVITY_EDITOR_APP_ROOT")
# agy's PreToolUse is where cocoplus routes a permission (no permission event): rules decide, a headless session
# waits for an answer, the person watching is asked (`ask_person`).
ASKS_PERMISSION = True


def launch_argv(program: "list[str]", task: str, model: "str | None", effort: "str | None") -> "list[str] | None":
    raise ValueError(
        "the Antigravity CLI's headless mode (`agy --print`) reports no workspace and runs commands in a scratch "
        "directory of its own, so its hooks cannot find this project and nothing it did would be in it; cocoplus "
        "does not launch it (run `agy` in the project yourself: its plugin hooks guard it)"
    )
