"""Codex CLI (checked against 0.169.0; docs/runtimes.md).

Hooks in `.codex/hooks.json`, Claude Code's shape (timeout in seconds).  The
PreToolUse deny is Claude's *without* `continue`/`stopReason`: Codex treats
those on PreToolUse as a failed hook and runs the tool.  A hook gets no
project directory in its environment: it runs in the session's directory,
where the hook finds `.cocoplus/`.  Codex has no per-user project file, so
the committed `.codex/hooks.json` holds the launcher (install/launcher.py).
Spend comes from the rollout file's `token_count` events.
"""

from cocoplus.runtimes import answers

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Mapping
    from typing import Any

NAME = "codex"
TITLE = "Codex CLI"
RANK = 2
ALIAS_PREFIX = "cx"

EVENTS = (
    ("PreToolUse", "pre_tool", ""),
    ("PostToolUse", "post_tool", ""),
    ("UserPromptSubmit", "prompt", ""),
    ("SessionStart", "session_start", ""),
    ("Stop", "stop", ""),
    ("PermissionRequest", "permission", ""),
    ("SessionEnd", "session_end", ""),
    ("SubagentStop", "subagent_stop", None),
    ("agent-turn-complete", "stop", None),  # the legacy `notify` program (payload as the last argument)
)

PROJECT_ENV: tuple[str, ...] = ()
SESSION_ENV = ("CODEX_SESSION_ID", "CODEX_THREAD_ID")
ENV_FILE = None
HOSTS: tuple[str, ...] = ()
DETECT_PRIORITY = 20


def recognise(environ: "Mapping[str, str]") -> bool:
    return False


def detect(event: str, payload: "Mapping[str, Any]", environ: "Mapping[str, str]") -> bool:
    tp = payload.get("transcript_path")
    # SessionStart has no turn_id; the transcript is CODEX_HOME/sessions/Y/M/D/rollout-<ts>-<id>.jsonl.
    rollout = isinstance(tp, str) and ("/.codex/" in tp or ("/sessions/" in tp and "/rollout-" in tp))
    return "turn_id" in payload or rollout or "thread-id" in payload


def session_id(payload: "Mapping[str, Any]") -> "str | None":
    return answers.first_text(payload, "session_id", "thread-id")


def transcript(payload: "Mapping[str, Any]") -> "str | None":
    return answers.first_text(payload, "transcript_path")


project_dirs = answers.cwd


# The files an `apply_patch` call changed (its input's `command` is the patch), or a patch in a shell command.
edited_paths = answers.edited_paths

# Files a repository can commit that set what a hook runs or its environment (docs/runtimes.md): its hooks and
# project configuration, read only in a project the user trusts (and hooks only once reviewed).
# What a tool call may not change without the operator (rules/protected.py): its project and user configuration
# (hooks, MCP servers, config.toml, trust).
PROTECTED = (".codex",)
USER_PROTECTED = (".codex",)

# The sandbox (cocoplus/sandbox/bwrap.py): each entry is (variable naming the directory, its default under the home,
# a name in it). CODEX_HOME stays writable (rollouts, which cocoplus reads for spend and `codex exec resume`), its
# configuration and hooks read-only, auth.json read-only; its variables are the only runtime keys it gets.
SANDBOX_STATE: "tuple[tuple[str | None, str, str], ...]" = (("CODEX_HOME", ".codex", ""),)
SANDBOX_READONLY: "tuple[tuple[str | None, str, str], ...]" = (
    ("CODEX_HOME", ".codex", "config.toml"),
    ("CODEX_HOME", ".codex", "hooks.json"),
    ("CODEX_HOME", ".codex", "rules"),
)
SANDBOX_CREDENTIALS: "tuple[tuple[str | None, str, str], ...]" = (("CODEX_HOME", ".codex", "auth.json"),)
SANDBOX_ENV: "tuple[str, ...]" = ("OPENAI_", "CODEX_")
# The model's addresses: the API (or the base URL that replaces it), and ChatGPT's backend a signed-in Codex uses.
MODEL_ENDPOINTS: "tuple[tuple[str, str], ...]" = (
    ("OPENAI_BASE_URL", "https://api.openai.com"),
    ("", "https://chatgpt.com"),
)
REPO_SETTINGS = (".codex/hooks.json", ".codex/config.toml")
HOOKS_FILE = (".codex", "hooks.json")
HOOK_FILES_READ = (HOOKS_FILE,)
GROUPED = True
COUNTS_BEFORE_CALL = False  # its post-tool hook counts each call
LOCAL_HOOKS_FILE = None  # no per-user project file: the committed hooks are the launcher (install/launcher.py)
SETTINGS_DEFAULTS: "dict[str, Any]" = {}
SLASH_COMMAND_DIR = None


# Codex 0.169.0 runs a SessionEnd hook for at most 3 s and reports every longer timeout it
# clamps as an error item (`clamping SessionEnd hook timeout to 3s in .../hooks.json`).
SESSION_END_MAX_TIMEOUT_S = 3


def hook_timeout(event: str, timeout_s: int) -> int:
    """The seconds Codex gives this event's hook when its `timeout` is `timeout_s`."""
    return min(timeout_s, SESSION_END_MAX_TIMEOUT_S) if event == "SessionEnd" else timeout_s


def hook_entry(command: str, event: str, timeout_s: int) -> "dict[str, Any]":
    return {"type": "command", "command": command, "timeout": hook_timeout(event, timeout_s)}


def entry_timeout(handler: "Mapping[str, Any]") -> "float | None":
    """The seconds an installed handler's `timeout` gives its hook (None: it names none)."""
    return answers.seconds(handler.get("timeout"))


def settings_notes(settings: "Mapping[str, Any]") -> "list[str]":
    return []


def todo(project: str) -> "list[str]":
    return [
        f'trust the project in ~/.codex/config.toml: [projects."{project}"] trust_level = "trusted"',
        (
            "review and trust the new hooks with `/hooks` in Codex (changed hooks are skipped until trusted); "
            "for vetted automation, `codex exec --dangerously-bypass-hook-trust`"
        ),
    ]


def plugin_active(environ: "Mapping[str, str]") -> "str | None":
    """Where this user's Codex configuration names cocoplus' plugin (`cocoplus@cocoplus`), or None."""
    import os  # deferred: only doctor and `session stop` look for the plugin

    home = environ.get("HOME") or os.path.expanduser("~")
    path = os.path.join(environ.get("CODEX_HOME") or os.path.join(home, ".codex"), "config.toml")
    try:
        with open(path, encoding="utf-8") as fh:
            return path if "cocoplus@cocoplus" in fh.read() else None
    except OSError:
        return None


MCP_FILE = (".codex", "config.toml")
MCP_FORMAT = "toml"
MCP_OWN_FILE = True
MCP_APPROVAL = None
MCP_ASKS = None


def mcp_entry(command: str, args: "list[str]") -> "dict[str, Any]":
    return {"command": command, "args": args}


ADDS_CONTEXT = True


def deny_tool(event: str, reason: str) -> "dict[str, Any]":
    return answers.permission_deny(reason)  # never `continue`/`stopReason` here (see above)


refuse_tool = deny_tool  # already a refusal of the one call


def asks_for_write(payload: "Mapping[str, Any]", project: str, home: str) -> bool:
    return False  # `codex exec` never asks: its sandbox and flags decide


def deny_permission(reason: str) -> "dict[str, Any]":
    return answers.permission_request_deny(reason)


def halt(event: str, reason: str, model_note: str | None = None) -> "dict[str, Any]":
    # Codex 0.169.0 does not end the turn on a PostToolUse stop: it replaces the tool's
    # output with `reason`, so the model at least reads why (docs/runtimes.md).
    out = answers.halt(reason)
    if model_note:
        out["reason"] = model_note
    return out


add_context = answers.context
prompt_reply = answers.context


def continue_turn(event: str, instruction: str) -> "dict[str, Any]":
    return answers.block_turn_end(instruction)


notice = answers.nothing


def continue_cap(environ: "Mapping[str, str]") -> "int | None":
    return None  # 60 blocks in a row were all honoured: the hold bounds itself


# The process recorded at SessionStart is the native `codex` binary: once it is gone the session has ended.
# SessionEnd fires at a normal exit and on SIGINT, not after SIGTERM or SIGKILL (checked with 0.169.0).
ENDS_WITH_PROCESS = True
HOOKS_NEED_REVIEW = True  # `codex exec` runs a project's hooks only once reviewed in Codex (`/hooks`)
NO_SESSION_WORDS: "tuple[str, ...]" = ("no rollout found for thread id",)  # `codex exec resume ID` (0.169.0)
COMMAND = "codex"
CHILD_ENV = ("CODEX_THREAD_ID", "CODEX_SESSION_ID", "CODEX_MANAGED_BY_NPM", "CODEX_MANAGED_PACKAGE_ROOT")
_VALUES = ("-m", "--model", "-c", "--config", "--enable", "--disable", "-p", "--profile")
_FLAGS = (
    "--json", "--skip-git-repo-check", "--dangerously-bypass-hook-trust",
    "--dangerously-bypass-approvals-and-sandbox", "--full-auto", "--oss",
)  # fmt: skip


def resume_argv(
    program: "list[str]", session_id: str, instruction: str, argv: "list[str] | None"
) -> "list[str] | None":
    from cocoplus.runtimes import argv as words  # deferred: only a resume reads a command line

    args = (argv or [])[len(words.program(argv)) :]
    kept = words.keep(args, values=_VALUES, flags=_FLAGS)
    # `exec resume` has no -s: a resumed session does not keep its sandbox unless it is passed as config.
    for _name, vals in words.keep(args, values=("-s", "--sandbox")):
        kept.append(("-c", [f'sandbox_mode="{vals[0]}"']))
    if not words.has(kept, "--json"):
        kept.append(("--json", []))
    return [*program, "exec", "resume", session_id, instruction, *words.flatten(kept)]


def helper_programs(program: str) -> "dict[str, str]":
    """`codex-linux-sandbox`: Codex's own binary, which its sandbox runs by that name through PATH where the
    system's bwrap is older than 0.9 (no --argv0; Debian 12's 0.8.0): without it there, a command under `-s
    workspace-write` or `read-only` silently does not run and `codex exec` still exits 0 (checked with 0.169.0).
    Found beside the npm package's launcher: `node_modules/@openai/codex-<platform>/vendor/<triple>/bin/codex`."""
    import glob  # deferred: only a launch of Codex looks for its binary
    import os  # deferred: see above

    real = os.path.realpath(program)
    top = real
    while top != os.path.dirname(top) and os.path.basename(top) != "node_modules":
        top = os.path.dirname(top)
    if os.path.basename(top) != "node_modules":
        return {}
    found = sorted(glob.glob(os.path.join(glob.escape(top), "@openai", "codex-*", "vendor", "*", "bin", "codex")))
    return {"codex-linux-sandbox": found[0]} if found else {}


def granted_argv(paths: "list[str]") -> "list[str]":
    """Its own sandbox (`-s workspace-write`, nested in cocoplus's) writes only its workspace and /tmp: the approved
    paths join its writable roots (a config override, as `exec` and `exec resume` both take it)."""
    import json  # deferred: only a run with approved writes

    return ["-c", f"sandbox_workspace_write.writable_roots={json.dumps(paths)}"] if paths else []


def launch_argv(program: "list[str]", task: str, model: "str | None", effort: "str | None") -> "list[str] | None":
    """`codex exec --json`, skipping Codex's review of the project's hooks: `launch` starts a worker only where
    those hooks are cocoplus' own, as `cocoplus install codex` wrote them (`hooks_unreviewed`)."""
    extra = [*(["-m", model] if model else []), *(["-c", f'model_reasoning_effort="{effort}"'] if effort else [])]
    return [*program, "exec", "--json", BYPASS_REVIEW, *extra, task]


# Codex runs a project's hooks only once a person reviewed them in `/hooks` (per hash, kept where cocoplus cannot
# read it), or with this flag, which skips the review for every hook it loads.
BYPASS_REVIEW = "--dangerously-bypass-hook-trust"


def hooks_unreviewed(project: str, environ: "Mapping[str, str]", ours: "Any") -> "str | None":
    """Why a launched `codex exec` would not run cocoplus' hooks in `project`, or None: Codex loads a project's hooks
    only in a project its configuration trusts, and `launch` skips Codex's review of them (BYPASS_REVIEW) only
    where every hook the project gives Codex is cocoplus' own (`ours`), in `.codex/hooks.json`, none in
    `.codex/config.toml`."""
    import json  # deferred: only `launch` asks
    import os  # deferred: likewise
    import tomllib  # deferred: likewise

    home = environ.get("HOME") or os.path.expanduser("~")
    config = os.path.join(environ.get("CODEX_HOME") or os.path.join(home, ".codex"), "config.toml")
    try:
        with open(config, "rb") as fh:
            projects = tomllib.load(fh).get("projects")
    except (OSError, tomllib.TOMLDecodeError):
        projects = None
    real = os.path.realpath(project)
    trusted = isinstance(projects, dict) and any(
        isinstance(v, dict) and v.get("trust_level") == "trusted" and os.path.realpath(str(k)) == real
        for k, v in projects.items()
    )
    if not trusted:
        return (
            f"Codex loads this project's hooks only in a project it trusts: add "
            f'[projects."{project}"] trust_level = "trusted" to {config}'
        )
    try:
        with open(os.path.join(project, *HOOKS_FILE), encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        doc = {}
    hooks = doc.get("hooks") if isinstance(doc, dict) else None
    for entries in (hooks or {}).values() if isinstance(hooks, dict) else ():
        for entry in entries if isinstance(entries, list) else []:
            for h in entry.get("hooks", []) if isinstance(entry, dict) else []:
                if isinstance(h, dict) and not ours(h.get("command")):
                    return (
                        f"{os.path.join(*HOOKS_FILE)} holds hooks that are not cocoplus' own ({h.get('command')!r}): "
                        "cocoplus skips Codex's review only for its own hooks; remove them, or review them in Codex "
                        "and launch with --unsupervised"
                    )
    try:
        with open(os.path.join(project, ".codex", "config.toml"), "rb") as fh:
            if "hooks" in tomllib.load(fh):
                return (
                    ".codex/config.toml has a [hooks] table: cocoplus skips Codex's review only for its own hooks "
                    "(.codex/hooks.json); move them out, or launch with --unsupervised"
                )
    except (OSError, tomllib.TOMLDecodeError):
        pass
    return None


def controller_argv(
    program: "list[str]", model: "str | None", effort: "str | None", brain: "Mapping[str, Any] | None", reply: str
) -> "list[str] | None":
    """A controller's turn (Codex 0.169 `exec`): the prompt on stdin (`-`), the last message written to `reply`.
    With `brain` (server, command, args, env, tools, project): `-c` overrides and feature switches giving it
    cocoplus' brain MCP server and nothing else — no shell, no hooks, every other MCP server off."""
    import json  # deferred: only a controller's command line is built here
    import os  # deferred: likewise

    argv = [*program, "exec", "--skip-git-repo-check", "--output-last-message", reply]
    argv += [*(["--model", model] if model else []), *(["-c", f'model_reasoning_effort="{effort}"'] if effort else [])]
    if brain is not None:
        key = f"mcp_servers.{brain['server']}"
        env = "{" + ", ".join(f"{k} = {json.dumps(v)}" for k, v in brain["env"].items()) + "}"
        argv += ["-s", "read-only"]
        for feature in ("shell_tool", "unified_exec", "multi_agent", "hooks"):
            argv += ["--disable", feature]
        argv += [
            "-c",
            'web_search="disabled"',
            "-c",
            f"{key}.command={json.dumps(brain['command'])}",
            "-c",
            f"{key}.args={json.dumps(list(brain['args']))}",
            "-c",
            f"{key}.env={env}",
            "-c",
            f"{key}.required=true",  # exec waits for the server before the first turn
            "-c",
            f'{key}.default_tools_approval_mode="approve"',  # exec never prompts: an unapproved call would fail
            "-c",
            f"{key}.enabled_tools={json.dumps(list(brain['tools']))}",
        ]
        home = os.environ.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex")
        others = _mcp_servers(os.path.join(home, "config.toml")) + _mcp_servers(
            os.path.join(brain["project"], ".codex", "config.toml")
        )
        for name in dict.fromkeys(others):
            if name != brain["server"] and _bare_key(name):
                argv += ["-c", f"mcp_servers.{name}.enabled=false"]
    return [*argv, "-"]


def _bare_key(name: str) -> bool:
    """A TOML bare key (A-Z a-z 0-9 _ -): a server name `-c mcp_servers.NAME.enabled=false` can switch off."""
    return bool(name) and name.isascii() and name.replace("-", "").replace("_", "").isalnum()


def _mcp_servers(path: str) -> "list[str]":
    """The MCP server names a Codex config.toml defines (none if it cannot be read)."""
    import tomllib  # deferred: only a brain's command line reads Codex's configuration

    try:
        with open(path, "rb") as fh:
            doc = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError):
        return []
    servers = doc.get("mcp_servers")
    return [n for n in servers if isinstance(n, str)] if isinstance(servers, dict) else []


def controller_reply(code: int, stdout: str, reply: str) -> "str | None":
    """The answer of a controller's turn: the last message it wrote to `reply` (else what it printed); None when it
    failed."""
    if code != 0:
        return None
    try:
        with open(reply, encoding="utf-8") as fh:
            return fh.read().strip()
    except OSError:
        return stdout.strip()


# `codex exec` never asks (no PermissionRequest): the rules decide up front, as far as its sandbox can say.
ASKS_PERMISSION = False
RULE_TOOLS: "dict[str, str]" = {}  # its hooks name the shell `Bash`, as the rules do


def allow_permission(message: "str | None" = None) -> "dict[str, Any]":
    return answers.permission_request_allow(message)


def permission_argv(allow: "list[str]", deny: "list[str]") -> "list[str]":
    """Codex has no per-command rule for `exec`: a rule allowing the shell or edits gives the workspace-write
    sandbox, anything else stays read-only (its default); deny rules cannot be passed on (docs/runtimes.md)."""
    writes = any(r.split("(", 1)[0].strip() in ("*", "Bash", "Edit", "Write", "MultiEdit") for r in allow)
    return ["-s", "workspace-write"] if writes else []


def stream_entries(event: "Mapping[str, Any]") -> "list[dict[str, Any]]":
    """One event of `codex exec --json` as transcript entries (`cocoplus.runtimes.streams`)."""
    from cocoplus.runtimes import streams as s  # deferred: only reading a run's output parses it

    kind = event.get("type")
    if kind == "thread.started":
        return [s.entry("session", f"thread {event.get('thread_id')}")]
    if kind == "turn.completed":
        usage = s.mapping(event, "usage")
        tokens = [
            f"{usage[k]} {k.split('_')[0]}" for k in ("input_tokens", "output_tokens") if isinstance(usage.get(k), int)
        ]
        return [s.entry("end", "turn completed" + (f" ({', '.join(tokens)} tokens)" if tokens else ""))]
    if kind == "turn.failed":
        err = s.mapping(event, "error")
        return [s.entry("end", str(err.get("message") or "turn failed"), error=True)]
    if kind == "error":
        return [s.entry("error", str(event.get("message")))]
    item = s.mapping(event, "item")
    if not item or kind not in ("item.started", "item.completed"):
        return []  # turn.started, item.updated: nothing new to show
    what, call, done = item.get("type"), item.get("id"), kind == "item.completed"
    if what == "agent_message" and done:
        return [s.entry("text", str(item.get("text") or ""))]
    if what == "error" and done:
        return [s.entry("warning", str(item.get("message")))]  # Codex goes on after an error item
    if what == "command_execution":
        if not done:
            return [s.entry("tool", s.arguments(item.get("command")), tool="shell", call=call)]
        code = item.get("exit_code")
        failed = item.get("status") == "failed" or (isinstance(code, int) and code != 0)
        head = f"exit code {code}\n" if failed and isinstance(code, int) else ""
        return [s.entry("result", head + str(item.get("aggregated_output") or ""), error=failed, call=call)]
    if what == "mcp_tool_call":
        name = f"{item.get('server')}.{item.get('tool')}"
        if not done:
            return [s.entry("tool", s.arguments(item.get("arguments")), tool=name, call=call)]
        failure = s.mapping(item, "error")
        said = failure.get("message") if failure else s.text_of(s.mapping(item, "result").get("content"))
        return [
            s.entry(
                "result", str(said or ""), tool=name, error=bool(failure) or item.get("status") == "failed", call=call
            )
        ]
    if what == "file_change" and done:
        changes = [f"{c.get('kind')} {c.get('path')}" for c in item.get("changes") or [] if isinstance(c, dict)]
        return [
            s.entry("tool", "; ".join(changes), tool="edit"),
            s.entry("result", str(item.get("status")), tool="edit", error=item.get("status") == "failed"),
        ]
    if what == "web_search" and not done:
        return [s.entry("tool", s.arguments(item.get("query")), tool="web_search", call=call)]
    return []


# Rate and usage limits (session/limits.py).  Codex CLI 0.169.0 waits out a 429's `retry-after` itself, however
# long (600 s seen), reporting each wait as `{"type": "error", "message": "Reconnecting... 1/5 (exceeded retry
# limit, last status: 429 Too Many Requests, ...)"}`; once its retries (the provider's `stream_max_retries`, 5 by
# default) are used up it fails the turn, `turn.failed` with "exceeded retry limit, last status: 429 ...", and
# exits 1, passing no reset time on.  No hook event reports it.
def limit_of(kind: str, payload: "Mapping[str, Any]") -> "dict[str, Any] | None":
    return None


def output_limit(event: "Mapping[str, Any]") -> "dict[str, Any] | None":
    if event.get("type") != "turn.failed":
        return None
    err = event.get("error")
    message = str(err.get("message") or "") if isinstance(err, dict) else ""
    if "429" not in message and "usage limit" not in message:
        return None
    return {"reason": "usage limit" if "usage limit" in message else "rate limit", "resets_at": None, "detail": message}


def output_session(event: "Mapping[str, Any]", environ: "Mapping[str, str]") -> "dict[str, Any] | None":
    """The thread a `codex exec --json` run names (`thread.started`) and its rollout file: a run whose hooks did not
    run (not reviewed, HOOKS_NEED_REVIEW) recorded no session, and `codex exec resume THREAD` continues it. Codex
    writes the rollout as the thread starts, before its first model request (checked with 0.169.0)."""
    if event.get("type") != "thread.started":
        return None
    tid = event.get("thread_id")
    if not isinstance(tid, str) or len(tid) != 36 or tid.strip("0123456789abcdef-"):  # a UUID, nothing to glob
        return None
    import glob  # deferred: only a worker's run ended by a limit looks for its thread
    import os  # deferred: likewise

    home = environ.get("CODEX_HOME") or os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".codex")
    found = sorted(glob.glob(os.path.join(glob.escape(home), "sessions", "*", "*", "*", f"rollout-*-{tid}.jsonl")))
    return {"id": tid, "transcript_path": found[-1] if found else None}


USAGE = "codex-rollout"
PROVIDER = "openai"


# A missing answer lets the tool run; its hooks go into the project's hook file; its permission requests come through
# its permission event (or not at all).  Written here, not taken from `_defaults`: one module less before every tool.
FAILS_CLOSED = False
PLUGIN = None
PLUGIN_LOG = None
ask_person = answers.nothing
pass_answer = answers.nothing
tool_call = answers.tool_call
