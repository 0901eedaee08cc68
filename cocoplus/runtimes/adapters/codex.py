"""Codex CLI (checked against 0.169.0; reference/hooks-protocols.md section 3, docs/runtimes.md).

Hooks in `.codex/hooks.json`, Claude Code's shape (timeout in seconds).  The
PreToolUse deny is Claude's *without* `continue`/`stopReason`: Codex treats
those on PreToolUse as a failed hook and runs the tool.  A hook gets no
project directory in its environment: it runs in the session's directory,
where the hook finds `.cocoplus/`.  Codex has no per-user project file, so
the committed `.codex/hooks.json` holds the launcher (runtimes/launcher.py).
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

HOOKS_FILE = (".codex", "hooks.json")
HOOK_FILES_READ = (HOOKS_FILE,)
GROUPED = True
LOCAL_HOOKS_FILE = None  # no per-user project file: the committed hooks are the launcher (runtimes/launcher.py)
SETTINGS_DEFAULTS: "dict[str, Any]" = {}
SLASH_COMMAND_DIR = None


def hook_entry(command: str, event: str, timeout_s: int) -> "dict[str, Any]":
    return {"type": "command", "command": command, "timeout": timeout_s}


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


MCP_FILE = (".codex", "config.toml")
MCP_FORMAT = "toml"
MCP_OWN_FILE = True


def mcp_entry(command: str, args: "list[str]") -> "dict[str, Any]":
    return {"command": command, "args": args}


ADDS_CONTEXT = True


def deny_tool(event: str, reason: str) -> "dict[str, Any]":
    return answers.permission_deny(reason)  # never `continue`/`stopReason` here (see above)


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


COMMAND = "codex"
CHILD_ENV = ("CODEX_THREAD_ID", "CODEX_SESSION_ID", "CODEX_MANAGED_BY_NPM", "CODEX_MANAGED_PACKAGE_ROOT")
_VALUES = ("-m", "--model", "-c", "--config", "--enable", "--disable", "-p", "--profile")
_FLAGS = (
    "--json", "--skip-git-repo-check", "--dangerously-bypass-hook-trust",
    "--dangerously-bypass-approvals-and-sandbox", "--full-auto", "--oss",
)  # fmt: skip


def resume_argv(program: "list[str]", session_id: str, instruction: str, argv: "list[str] | None") -> "list[str] | None":
    from cocoplus.runtimes import argv as words  # deferred: only a resume reads a command line

    args = (argv or [])[len(words.program(argv)) :]
    kept = words.keep(args, values=_VALUES, flags=_FLAGS)
    # `exec resume` has no -s: a resumed session does not keep its sandbox unless it is passed as config.
    for _name, vals in words.keep(args, values=("-s", "--sandbox")):
        kept.append(("-c", [f'sandbox_mode="{vals[0]}"']))
    if not words.has(kept, "--json"):
        kept.append(("--json", []))
    return [*program, "exec", "resume", session_id, instruction, *words.flatten(kept)]



def launch_argv(program: "list[str]", task: str, model: "str | None", effort: "str | None") -> "list[str] | None":
    extra = [*(["-m", model] if model else []), *(["-c", f'model_reasoning_effort="{effort}"'] if effort else [])]
    return [*program, "exec", "--json", *extra, task]

USAGE = "codex-rollout"
PROVIDER = "openai"
