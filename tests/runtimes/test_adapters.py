"""Every runtime adapter declares the whole protocol, and nothing outside `cocoplus/runtimes/` special-cases a runtime."""

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
}  # fmt: skip
OPTIONAL = {"ENV_FILE": str, "LOCAL_HOOKS_FILE": tuple, "SLASH_COMMAND_DIR": tuple, "MCP_FILE": tuple, "USAGE": str, "PROVIDER": str}
FUNCTIONS = (
    "recognise", "detect", "session_id", "transcript", "project_dirs", "hook_entry", "settings_notes", "todo",
    "mcp_entry", "deny_tool", "deny_permission", "halt", "add_context", "prompt_reply", "continue_turn", "notice",
    "continue_cap", "resume_argv", "launch_argv",
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
    assert any(k == "pre_tool" and m is not None for _e, k, m in adapter.EVENTS), "the kill switch needs a pre-tool hook"
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


def test_turn_end_continuation_caps_per_runtime() -> None:
    caps = {a.NAME: a.continue_cap({}) for a in ADAPTERS}
    assert caps == {"claude": 8, "codex": None, "gemini": 99, "cursor": 5, "cortex": None}
    claude = registry.get("claude")
    assert claude.continue_cap({"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "12"}) == 12
    assert claude.continue_cap({"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "0"}) is None
    assert claude.continue_cap({"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "many"}) == 8


def test_resume_commands_keep_the_sessions_settings_and_drop_its_prompt() -> None:
    claude = registry.get("claude").resume_argv(
        ["/opt/claude"], "S1", "NEXT",
        ["/opt/claude", "-p", "first task", "--output-format", "json", "--allowedTools", "Bash", "Edit", "--model=opus", "--bogus", "x"],
    )  # fmt: skip
    assert claude == ["/opt/claude", "-p", "NEXT", "--resume", "S1", "--output-format", "json", "--allowedTools", "Bash", "Edit", "--model", "opus"]
    bare = registry.get("claude").resume_argv(["claude"], "S1", "NEXT", None)
    assert bare == ["claude", "-p", "NEXT", "--resume", "S1", "--output-format", "stream-json", "--verbose"]
    codex = registry.get("codex").resume_argv(
        ["/opt/codex"], "T1", "NEXT",
        ["/opt/codex", "exec", "--json", "--skip-git-repo-check", "-s", "read-only", "-m", "gpt-5", "first task"],
    )  # fmt: skip
    assert codex == ["/opt/codex", "exec", "resume", "T1", "NEXT", "--json", "--skip-git-repo-check", "-m", "gpt-5", "-c", 'sandbox_mode="read-only"']
    gemini = registry.get("gemini").resume_argv(
        ["node", "/opt/gemini"], "G1", "NEXT", ["node", "/opt/gemini", "-p", "first", "--yolo", "-m", "flash", "--output-format", "json"]
    )
    assert gemini == ["node", "/opt/gemini", "--resume", "G1", "-p", "NEXT", "--yolo", "-m", "flash", "--output-format", "json"]
    assert registry.get("cursor").resume_argv(["x"], "C", "NEXT", None) is None


def test_detection_prefers_the_most_specific_runtime() -> None:
    from tests.hook.helpers import fixture

    for name, payload in (
        ("cursor", "cursor-beforeshellexecution.json"),
        ("gemini", "gemini-beforetool-write-file.json"),
        ("codex", "codex-pretooluse-bash.json"),
        ("claude", "claude-pretooluse-bash.json"),
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
def test_project_variables_begin_with_the_runtime_name(adapter) -> None:  # type: ignore[no-untyped-def]
    """The hook asks only the adapters some variable is named after (`registry.project_env(heads)`)."""
    assert all(v.startswith(adapter.NAME.upper() + "_") for v in adapter.PROJECT_ENV), adapter.PROJECT_ENV
    assert set(registry.project_env({adapter.NAME.upper()})) == set(adapter.PROJECT_ENV)
