"""Every runtime adapter declares the whole protocol.

Nothing outside `cocoplus/runtimes/` special-cases a runtime."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import ModuleType

import pytest

from cocoplus.cost import usage
from cocoplus.runtimes import registry

PACKAGE = Path(__file__).resolve().parents[2] / "cocoplus"
KINDS = {
    "pre_tool", "post_tool", "post_tool_failure", "prompt", "session_start", "stop", "stop_failure",
    "permission", "notification", "session_end", "subagent_stop", "other",
}  # fmt: skip
NAMES = {
    "NAME": str, "TITLE": str, "RANK": int, "ALIAS_PREFIX": str, "EVENTS": tuple,
    "PROJECT_ENV": tuple, "SESSION_ENV": tuple, "HOSTS": tuple, "DETECT_PRIORITY": int,
    "HOOKS_FILE": tuple, "HOOK_FILES_READ": tuple, "GROUPED": bool, "SETTINGS_DEFAULTS": dict,
    "MCP_FORMAT": str, "MCP_OWN_FILE": bool, "ADDS_CONTEXT": bool, "COMMAND": str, "CHILD_ENV": tuple,
    "ENDS_WITH_PROCESS": bool, "HOOKS_NEED_REVIEW": bool, "NO_SESSION_WORDS": tuple, "ASKS_PERMISSION": bool,
    "RULE_TOOLS": dict, "REPO_SETTINGS": tuple, "FAILS_CLOSED": bool,
}  # fmt: skip
OPTIONAL = {
    "ENV_FILE": str,
    "LOCAL_HOOKS_FILE": tuple,
    "SLASH_COMMAND_DIR": tuple,
    "MCP_FILE": tuple,
    "USAGE": str,
    "PROVIDER": str,
    "PLUGIN": str,
}
FUNCTIONS = (
    "recognise", "detect", "session_id", "transcript", "project_dirs", "edited_paths", "hook_timeout", "hook_entry",
    "entry_timeout", "settings_notes", "todo", "mcp_entry", "deny_tool", "deny_permission", "halt", "add_context",
    "prompt_reply", "continue_turn", "notice", "continue_cap", "resume_argv", "launch_argv", "allow_permission",
    "permission_argv", "stream_entries", "controller_argv", "controller_reply", "limit_of", "output_limit",
    "output_session", "ask_person", "pass_answer", "tool_call",
)  # fmt: skip
ADAPTERS = registry.ordered()


def test_the_registry_is_the_adapter_modules() -> None:
    files = sorted(p.stem for p in (PACKAGE / "runtimes" / "adapters").glob("*.py") if not p.stem.startswith("_"))
    assert list(registry.names()) == files
    assert [a.NAME for a in ADAPTERS] == sorted(files, key=lambda n: (registry.get(n).RANK, n))
    assert len({a.ALIAS_PREFIX for a in ADAPTERS}) == len(ADAPTERS)
    assert registry.listing().startswith("claude, codex, gemini, cursor")


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda a: a.NAME)
def test_adapter_declares_the_whole_protocol(adapter: ModuleType) -> None:
    for name, kind in NAMES.items():
        assert isinstance(getattr(adapter, name), kind), name
    for name, kind in OPTIONAL.items():
        value = getattr(adapter, name)
        assert value is None or isinstance(value, kind), name
    for name in FUNCTIONS:
        assert callable(getattr(adapter, name)), name
    assert adapter.NAME == adapter.__name__.rsplit(".", 1)[1]
    events = [e for e, _k, _m in adapter.EVENTS]
    assert len({registry.normalise(e) for e in events}) == len(events), "an event is listed twice"
    assert {k for _e, k, _m in adapter.EVENTS} <= KINDS
    assert any(k == "pre_tool" and m is not None for _e, k, m in adapter.EVENTS), (
        "the kill switch needs a pre-tool hook"
    )
    assert adapter.HOOKS_FILE in adapter.HOOK_FILES_READ
    assert adapter.MCP_FORMAT in ("json", "toml")
    assert adapter.USAGE is None or adapter.USAGE in usage.READERS
    assert all(h in registry.names() and h != adapter.NAME for h in adapter.HOSTS)


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda a: a.NAME)
def test_dialect_answers_are_json_objects_or_nothing(adapter: ModuleType) -> None:
    reason = "cocoplus: stopped by alice"
    pre = next(e for e, k, _m in adapter.EVENTS if k == "pre_tool")
    deny = adapter.deny_tool(pre, reason)
    assert isinstance(deny, dict) and reason in json.dumps(deny)
    for out in (
        adapter.deny_permission(reason),
        adapter.halt("PostToolUse", reason, "note"),
        adapter.add_context("UserPromptSubmit", "ctx"),
        adapter.prompt_reply("UserPromptSubmit", "ctx"),
        adapter.continue_turn("Stop", "next: run the tests"),
        adapter.notice("Stop", "spent"),
    ):
        assert out is None or (isinstance(out, dict) and json.loads(json.dumps(out)) == out)
    if adapter.ADDS_CONTEXT:
        assert "ctx" in json.dumps(adapter.add_context("UserPromptSubmit", "ctx"))
    assert "next: run the tests" in json.dumps(adapter.continue_turn("Stop", "next: run the tests"))


def test_turn_end_continuation_is_written_per_runtime() -> None:
    said = {a.NAME: a.continue_turn("Stop", "go on") for a in ADAPTERS}
    assert said["claude"] == said["codex"] == {"decision": "block", "reason": "go on"}
    assert said["gemini"] == {"decision": "deny", "reason": "go on"}
    assert said["cursor"] == {"followup_message": "go on"}
    assert said["antigravity"] == {"decision": "continue", "reason": "go on"}


def test_turn_end_continuation_caps_per_runtime() -> None:
    caps = {a.NAME: a.continue_cap({}) for a in ADAPTERS}
    assert caps == {"claude": 8, "codex": None, "gemini": 99, "cursor": 5, "cortex": None, "antigravity": None}
    claude = registry.get("claude")
    assert claude.continue_cap({"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "12"}) == 12
    assert claude.continue_cap({"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "0"}) is None
    assert claude.continue_cap({"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "many"}) == 8


def test_resume_commands_keep_the_sessions_settings_and_drop_its_prompt() -> None:
    claude = registry.get("claude").resume_argv(
        ["/opt/claude"], "S1", "NEXT",
        ["/opt/claude", "-p", "first task", "--output-format", "json", "--allowedTools", "Bash", "Edit",
         "--model=opus", "--bogus", "x"],
    )  # fmt: skip
    assert claude == [
        "/opt/claude",
        "-p",
        "NEXT",
        "--resume",
        "S1",
        "--output-format",
        "json",
        "--allowedTools",
        "Bash",
        "Edit",
        "--model",
        "opus",
    ]
    bare = registry.get("claude").resume_argv(["claude"], "S1", "NEXT", None)
    assert bare == ["claude", "-p", "NEXT", "--resume", "S1", "--output-format", "stream-json", "--verbose"]
    codex = registry.get("codex").resume_argv(
        ["/opt/codex"], "T1", "NEXT",
        ["/opt/codex", "exec", "--json", "--skip-git-repo-check", "-s", "read-only", "-m", "gpt-5", "first task"],
    )  # fmt: skip
    assert codex == [
        "/opt/codex",
        "exec",
        "resume",
        "T1",
        "NEXT",
        "--json",
        "--skip-git-repo-check",
        "-m",
        "gpt-5",
        "-c",
        'sandbox_mode="read-only"',
    ]
    gemini = registry.get("gemini").resume_argv(
        ["node", "/opt/gemini"],
        "G1",
        "NEXT",
        ["node", "/opt/gemini", "-p", "first", "--yolo", "-m", "flash", "--output-format", "json"],
    )
    assert gemini == [
        "node",
        "/opt/gemini",
        "--resume",
        "G1",
        "-p",
        "NEXT",
        "--yolo",
        "-m",
        "flash",
        "--output-format",
        "json",
    ]
    assert registry.get("cursor").resume_argv(["x"], "C", "NEXT", None) is None


def test_detection_prefers_the_most_specific_runtime() -> None:
    from tests.hook.helpers import fixture

    for name, payload in (
        ("cursor", "cursor-beforeshellexecution.json"),
        ("gemini", "gemini-beforetool-write-file.json"),
        ("codex", "codex-pretooluse-bash.json"),
        ("claude", "claude-pretooluse-bash.json"),
        ("antigravity", "antigravity-pretooluse-run-command.json"),
    ):
        assert registry.detect("PreToolUse", fixture(payload), {}).NAME == name


SPECIAL_CASE = re.compile(r"""runtime\s*(==|!=)\s*["']|runtime\s+(not\s+)?in\s*[(\[{]\s*["']""")


def test_no_runtime_is_special_cased_outside_the_adapters() -> None:
    """`runtime == "claude"` (or `runtime in ("claude", ...)`) belongs in an adapter, nowhere else."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        if "runtimes" in path.relative_to(PACKAGE).parts[:1]:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if SPECIAL_CASE.search(line):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{n}: {line.strip()}")
    assert found == []


@pytest.mark.parametrize("adapter", registry.ordered(), ids=lambda a: a.NAME)
def test_project_variables_begin_with_the_runtime_name(adapter) -> None:
    """The hook asks only the adapters some variable is named after (`registry.project_env(heads)`)."""
    assert all(v.startswith(adapter.NAME.upper() + "_") for v in adapter.PROJECT_ENV), adapter.PROJECT_ENV
    assert set(registry.project_env({adapter.NAME.upper()})) == set(adapter.PROJECT_ENV)


# The events each runtime has, as its documentation lists them (shared reference/hooks-protocols.md:
# section 1.1 for Claude Code, 4 for Gemini CLI and Cursor; docs/runtimes.md "Cortex Code" for Cortex);
# Codex's are the events Codex 0.169.0 publishes schemas for (tests/fixtures/codex-schemas/0.169.0).
DOCUMENTED_EVENTS = {
    "claude": {
        "SessionStart", "SessionEnd", "Setup", "UserPromptSubmit", "UserPromptExpansion", "Stop", "StopFailure",
        "PreToolUse", "PermissionRequest", "PermissionDenied", "PostToolUse", "PostToolUseFailure", "PostToolBatch",
        "SubagentStart", "SubagentStop", "TaskCreated", "TaskCompleted", "TeammateIdle", "Notification",
        "MessageDisplay", "PreCompact", "PostCompact", "InstructionsLoaded", "ConfigChange", "CwdChanged",
        "DirectoryAdded", "FileChanged", "WorktreeCreate", "WorktreeRemove", "PreModelSwitch", "PostModelSwitch",
        "Elicitation", "ElicitationResult",
    },
    "gemini": {
        "SessionStart", "SessionEnd", "BeforeAgent", "AfterAgent", "BeforeModel", "AfterModel", "BeforeToolSelection",
        "BeforeTool", "AfterTool", "PreCompress", "Notification",
    },
    "cursor": {
        "beforeShellExecution", "beforeMCPExecution", "beforeReadFile", "beforeSubmitPrompt", "stop",
        "afterShellExecution", "afterMCPExecution", "afterFileEdit", "afterAgentResponse", "afterAgentThought",
        "beforeTabFileRead", "afterTabFileEdit",
    },
    "cortex": {
        "PreToolUse", "PostToolUse", "PermissionRequest", "UserPromptSubmit", "SessionStart", "SessionEnd",
        "PreCompact", "Stop", "SubagentStop", "Notification", "Setup",
    },
    # docs/runtimes.md "Antigravity CLI": the events its hooks.json dispatches (skillsaw's antigravity-hooks-valid,
    # agy 1.1.25; griddynamics/rosetta docs/hooks/antigravity.md, agy 1.1.5).
    "antigravity": {"PreToolUse", "PostToolUse", "PreInvocation", "PostInvocation", "Stop", "SessionStart"},
}  # fmt: skip


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda a: a.NAME)
def test_adapters_install_only_events_their_runtime_has(adapter: ModuleType) -> None:
    if adapter.NAME == "codex":
        from tests.runtimes.codex_schemas import FILES, schema

        has = {e for e in FILES if schema(e, "input") is not None}
    else:
        has = DOCUMENTED_EVENTS[adapter.NAME]
    installed = {e for e, _m in registry.installed_events(adapter)}
    assert installed <= has, sorted(installed - has)
    assert {
        e for e, _k, _m in adapter.EVENTS if e != "agent-turn-complete"
    } <= has  # the Codex notify program's one type


def test_docs_name_every_file_a_repository_can_set_a_hook_with() -> None:
    """docs/runtimes.md says, per runtime, which committed files set a hook's command or environment."""
    text = (PACKAGE.parent / "docs" / "runtimes.md").read_text()
    section = text.split("## What a repository can set for a hook", 1)[1].split("\n## ", 1)[0]
    for adapter in ADAPTERS:
        assert adapter.TITLE in section, adapter.NAME
        for rel in adapter.REPO_SETTINGS:
            assert f"`{rel}`" in section, (adapter.NAME, rel)


# -- a controller's turn: the command line comes from the runtime's adapter alone ------------------------------------
BRAIN = {
    "server": "cocoplus",
    "command": "/usr/bin/python3",
    "args": ["-m", "cocoplus", "mcp", "--role", "brain"],
    "env": {"COCOPLUS_MCP_TOKEN": "t"},
    "tools": ["dispatch", "list_sessions"],
    "excluded": ["enable_supervision"],
    "project": "/nowhere",
}


def test_claude_gives_a_brain_its_server_and_tools_only() -> None:
    import json

    claude = registry.get("claude")
    assert claude.controller_argv(["claude"], None, "low", None, "/r") == [
        "claude", "-p", "--output-format", "json", "--effort", "low",
    ]  # fmt: skip
    argv = claude.controller_argv(["/opt/claude"], "opus", "high", BRAIN, "/r")
    assert argv is not None and argv[:6] == ["/opt/claude", "-p", "--output-format", "json", "--model", "opus"]
    config = json.loads(argv[argv.index("--mcp-config") + 1])
    assert config["mcpServers"]["cocoplus"]["args"] == BRAIN["args"]
    assert argv[argv.index("--allowedTools") + 1] == "mcp__cocoplus__dispatch,mcp__cocoplus__list_sessions"
    assert argv[argv.index("--disallowedTools") + 1] == "mcp__cocoplus__enable_supervision"
    assert "--strict-mcp-config" in argv and argv[argv.index("--tools") + 1] == ""
    assert json.loads(argv[argv.index("--settings") + 1]) == {"disableAllHooks": True}
    assert claude.controller_reply(0, '{"result": " done ", "is_error": false}', "/r") == "done"
    assert claude.controller_reply(1, "", "/r") is None
    with pytest.raises(ValueError, match="claude reported an error: Not logged in"):
        claude.controller_reply(1, '{"is_error": true, "result": "Not logged in"}', "/r")
    with pytest.raises(ValueError, match="not JSON"):
        claude.controller_reply(0, "hello", "/r")


def test_codex_gives_a_brain_its_server_and_switches_every_other_off(tmp_path, monkeypatch) -> None:
    codex = registry.get("codex")
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text('[mcp_servers.github]\ncommand = "gh"\n[mcp_servers."odd name"]\ncommand = "x"\n')
    monkeypatch.setenv("CODEX_HOME", str(home))
    reply = str(tmp_path / "reply.txt")
    argv = codex.controller_argv(["codex"], None, "medium", {**BRAIN, "project": str(tmp_path)}, reply)
    assert argv is not None and argv[:5] == ["codex", "exec", "--skip-git-repo-check", "--output-last-message", reply]
    assert argv[-1] == "-" and "mcp_servers.github.enabled=false" in argv
    assert not any("odd name" in a for a in argv)  # not a bare key: cannot be named in a -c override
    assert 'mcp_servers.cocoplus.enabled_tools=["dispatch", "list_sessions"]' in argv
    assert ["--disable", "shell_tool"] == argv[argv.index("shell_tool") - 1 : argv.index("shell_tool") + 1]
    assert codex.controller_reply(0, "printed", reply) == "printed"  # no file written: what it printed
    open(reply, "w").write("the last message\n")
    assert codex.controller_reply(0, "printed", reply) == "the last message"
    assert codex.controller_reply(2, "printed", reply) is None


def test_the_runtimes_that_are_no_controller_say_so() -> None:
    for name in ("gemini", "cursor", "cortex"):
        a = registry.get(name)
        assert a.controller_argv([name], None, None, None, "/r") is None and a.controller_reply(0, "x", "/r") is None
