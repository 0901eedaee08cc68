"""`cocoplus mcp` through the SDK's own stdio client: tools, state files, errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from cocoplus.chat import store
from cocoplus.core.paths import Layout
from cocoplus.session import registry
from tests.conftest import run_cli_subprocess
from tests.mcp.conftest import ALL_TOOLS, Client, jsonl, serve
from tests.support.controller import write_controller

BRAIN = {
    "enable_supervision", "finish_supervision", "supervision_status", "set_supervision_scope", "list_sessions",
    "dispatch", "steer_session", "stop_session", "resume_session", "answer_worker", "launch_worker",
    "merge_worker", "approve_permission", "deny_permission",
}  # fmt: skip
WORKER = ALL_TOOLS - BRAIN

# The seed's parameter names (and which are required), plus the worker tools' optional `session`.
PARAMS = {
    "enable_supervision": ({"task_hint", "max_turns", "scope_mode", "scope_session_ids"}, set()),
    "finish_supervision": ({"summary"}, set()),
    "supervision_status": (set(), set()),
    "set_supervision_scope": ({"mode", "session_ids"}, {"mode"}),
    "list_sessions": (set(), set()),
    "dispatch": ({"session", "instruction"}, {"session", "instruction"}),
    "answer_worker": ({"session", "text"}, {"session", "text"}),
    "launch_worker": ({"runtime", "task", "alias"}, {"runtime", "task"}),
    "merge_worker": ({"worker"}, {"worker"}),
    "steer_session": ({"session", "text"}, {"session", "text"}),
    "stop_session": ({"session", "reason"}, {"session"}),
    "resume_session": ({"session"}, {"session"}),
    "approve_permission": ({"request_id"}, {"request_id"}),
    "deny_permission": ({"request_id", "reason"}, {"request_id"}),
    "report_progress": ({"status", "message", "session"}, {"status"}),
    "notify_blocked": ({"message", "session"}, {"message"}),
    "ask_human": ({"question", "session"}, {"question"}),
    "request_context": ({"what", "session"}, set()),
}


def cli_json(layout: Layout, *args: str) -> Any:
    r = run_cli_subprocess(*args, "--json", cwd=layout.project)
    assert r.code == 0, r.err
    return json.loads(r.out)


def state_json(layout: Layout) -> dict[str, Any]:
    return json.loads(Path(layout.supervision_state).read_text())


@pytest.mark.slow
def test_tools_by_role_with_the_seed_parameters(project: Layout) -> None:
    seen: dict[str, dict[str, Any]] = {}

    async def scenario(c: Client) -> dict[str, Any]:
        return await c.tools()

    for role in ("all", "brain", "worker", None):
        args = ["-m", "cocoplus", "mcp"] + (["--role", role] if role else [])
        seen[str(role)] = serve(scenario, cwd=project.project, args=args)
        if role in ("all", "brain"):  # the same role asked for without the capability: the worker tools only
            seen[f"{role} without capability"] = serve(scenario, cwd=project.project, args=args, capability=False)
    assert set(seen["all"]) == ALL_TOOLS
    assert set(seen["brain"]) == BRAIN
    assert set(seen["worker"]) == WORKER
    assert set(seen["None"]) == WORKER  # no role: the worker tools
    assert set(seen["all without capability"]) == set(seen["brain without capability"]) == WORKER
    wrong = serve(
        scenario,
        cwd=project.project,
        args=["-m", "cocoplus", "mcp", "--role", "brain"],
        env={"COCOPLUS_MCP_TOKEN": "0" * 64},
    )
    assert set(wrong) == WORKER  # a token that is not this user's capability grants nothing
    for name, tool in seen["all"].items():
        props = set(tool.input_schema.get("properties", {}))
        assert (props, set(tool.input_schema.get("required", []))) == PARAMS[name], name
        assert tool.description and len(tool.description) > 40, name
        for pname, p in tool.input_schema.get("properties", {}).items():
            assert p.get("description"), f"{name}.{pname} has no description"
    schema = seen["all"]["set_supervision_scope"].input_schema["properties"]["mode"]
    assert schema["enum"] == ["all", "only", "except"]  # no `invert` for the tools
    assert seen["all"]["report_progress"].input_schema["properties"]["status"]["enum"] == [
        "working",
        "completed",
        "blocked",
        "needs_review",
    ]
    assert seen["all"]["supervision_status"].annotations.read_only_hint is True


@pytest.mark.slow
def test_brain_tools_change_the_state_files_like_the_cli(project: Layout, sessions: dict[str, Any]) -> None:
    cc1, cx1 = sessions["cc1"], sessions["cx1"]
    write_controller(project)

    async def scenario(c: Client) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["status0"] = await c.call("supervision_status")
        out["enable"] = await c.call(
            "enable_supervision",
            task_hint="keep PR-77 green",
            max_turns=7,
            scope_mode="except",
            scope_session_ids=["cx1"],
        )
        out["after_enable"] = state_json(project)
        out["status"] = await c.call("supervision_status")
        out["cli_status"] = cli_json(project, "supervision", "status")
        out["scope"] = await c.call("set_supervision_scope", mode="only", session_ids=["cc1", "nope"])
        out["after_scope"] = state_json(project)
        out["sessions"] = await c.call("list_sessions")
        out["cli_sessions_scope"] = cli_json(project, "supervision", "status")
        out["all"] = await c.call("set_supervision_scope", mode="all")
        out["finish"] = await c.call("finish_supervision", summary="PR-77 merged")
        out["after_finish"] = state_json(project)
        return out

    out = serve(scenario, cwd=project.project)
    assert out["status0"] == {
        "autonomous": None,
        "scope": {"mode": "all", "only": None, "excluded": [], "supervised": ["cc1", "cx1"]},
        "supervisor": {"running": False, "pid": None, "watching": None},
        "last_round": None,
        "round_in_progress": None,
        "recent_actions": [],
    }

    auto = out["after_enable"]["autonomous"]
    assert (
        auto["enabled"] is True
        and auto["task_hint"] == "keep PR-77 green"
        and auto["max_turns"] == 7
        and auto["turns_used"] == 0
    )
    assert out["after_enable"]["scope"] == {"mode": "except", "only": None, "excluded": [cx1["id"]]}
    # The tool answers with what the CLI prints with --json.
    started = out["enable"]["supervisor"].pop("started")
    assert started is False  # the tool never starts the watcher
    assert out["enable"].pop("change") == {
        "goal": "set",
        "previous_goal": None,
        "was_enabled": False,
        "turns_reset_from": None,
    }
    assert out["enable"] == out["status"] == out["cli_status"]
    assert out["status"]["autonomous"]["scope"]["supervised"] == ["cc1"]
    assert out["status"]["autonomous"]["turns_left"] == 7

    assert out["scope"]["mode"] == "only" and out["scope"]["unknown_ids"] == ["nope"]
    assert out["scope"]["only"] == [{"id": cc1["id"], "alias": "cc1"}]
    assert out["after_scope"]["scope"] == {"mode": "only", "only": [cc1["id"]], "excluded": []}

    listed = {s["alias"]: s for s in out["sessions"]["sessions"]}
    assert set(listed) == {"cc1", "cx1"}
    assert (
        listed["cc1"]["id"] == cc1["id"] and listed["cc1"]["runtime"] == "claude" and listed["cc1"]["excluded"] is False
    )
    assert listed["cx1"]["excluded"] is True and listed["cx1"]["runtime_session_id"] == "x-one"

    assert out["all"]["mode"] == "all" and out["all"]["supervised"] == ["cc1", "cx1"]
    fin = out["after_finish"]["autonomous"]
    assert (
        fin["enabled"] is False
        and fin["finish_summary"] == "PR-77 merged"
        and fin["finish_reason"] == "finished by the main brain"
    )
    assert out["finish"]["autonomous"]["enabled"] is False
    steps = [s["event"] for s in jsonl(project.steps)]
    assert steps.count("supervision_enabled") == 1 and steps.count("supervision_finished") == 1
    assert steps.count("supervision_scope") == 3


@pytest.mark.slow
def test_enable_again_resets_turns_used(project: Layout, sessions: dict[str, Any]) -> None:
    from cocoplus.supervision import autonomy

    write_controller(project)
    autonomy.enable(project, task_hint="first")
    autonomy.update(project, lambda d: d["autonomous"].update(turns_used=5))

    async def scenario(c: Client) -> Any:
        return await c.call("enable_supervision")

    out = serve(scenario, cwd=project.project)
    got = out["autonomous"]
    assert got["turns_used"] == 0 and got["max_turns"] == 60 and got["task_hint"] == "first"
    # It says so: no goal given, the previous one was kept; the turns were reset.
    assert out["change"] == {"goal": "kept", "previous_goal": "first", "was_enabled": True, "turns_reset_from": 5}


@pytest.mark.slow
def test_worker_tools_write_signals_ledger_and_attention(project: Layout, sessions: dict[str, Any]) -> None:
    cc1 = sessions["cc1"]
    Path(project.progress).write_text(
        Path(project.progress)
        .read_text()
        .replace("## In Progress\n", "## In Progress\n- HANDOFF-3c1 migrate the parser\n")
    )

    async def scenario(c: Client) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["working"] = await c.call("report_progress", status="working", message="tests pass locally", session="cc1")
        out["blocked"] = await c.call("notify_blocked", message="need the staging password", session=cc1["id"])
        out["ask"] = await c.call("ask_human", question="Merge PR-77 now or wait for QA?", session="cx1")
        out["context"] = await c.call("request_context", what="what is next", session="x-one")
        return out

    out = serve(scenario, cwd=project.project)
    sigs = jsonl(project.signals)
    got = [(s["alias"], s["kind"], s.get("value"), s.get("message")) for s in sigs]
    assert got == [
        ("cc1", "report_progress", "working", "tests pass locally"),
        ("cc1", "notify_blocked", None, "need the staging password"),
        ("cx1", "attention", "awaiting_decision", "Merge PR-77 now or wait for QA?"),
        ("cx1", "ask_human", None, "Merge PR-77 now or wait for QA?"),
        ("cx1", "request_context", None, "what is next"),
    ]
    assert out["working"] == {"session": cc1["id"], "alias": "cc1", "signal": sigs[0]}
    assert out["blocked"]["signal"] == sigs[1]
    # ask_human: the question is a `worker` message in the master-agent conversation's ledger.
    ledger = store.messages(project, store.DEFAULT_CONVERSATION).records
    assert [(m["role"], m["text"], m.get("session_alias")) for m in ledger] == [
        ("worker", "Merge PR-77 now or wait for QA?", "cx1")
    ]
    assert out["ask"]["message"]["id"] == ledger[0]["id"]
    rec = registry.resolve(project, "cx1")
    assert rec["attention"] == "awaiting_decision" and rec["last_signal"]["kind"] == "request_context"
    assert registry.resolve(project, "cc1")["last_signal"]["kind"] == "notify_blocked"
    assert "HANDOFF-3c1" in out["context"]["context"] and out["context"]["alias"] == "cx1"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("var", "value"),
    [("COCOPLUS_SESSION", "cc1"), ("CLAUDE_CODE_SESSION_ID", "s-one")],
)
def test_worker_session_from_the_environment(project: Layout, sessions: dict[str, Any], var: str, value: str) -> None:
    async def scenario(c: Client) -> dict[str, Any]:
        return {
            "env": await c.call("report_progress", status="blocked", message="stuck"),
            "explicit": await c.call("report_progress", status="completed", session="cx1"),
        }

    out = serve(scenario, cwd=project.project, env={var: value})
    assert out["env"]["alias"] == "cc1"  # the environment names the worker ...
    assert out["explicit"]["alias"] == "cx1"  # ... and an explicit argument wins over it
    assert [(s["alias"], s["value"]) for s in jsonl(project.signals)] == [("cc1", "blocked"), ("cx1", "completed")]


@pytest.mark.slow
def test_errors_are_tool_errors_and_change_nothing(project: Layout, sessions: dict[str, Any]) -> None:
    write_controller(project)

    async def scenario(c: Client) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["only_none"] = await c.error("set_supervision_scope", mode="only")
        out["except_unknown"] = await c.error("set_supervision_scope", mode="except", session_ids=["ghost", "cc9"])
        out["invert"] = await c.error("set_supervision_scope", mode="invert")
        out["enable_bad_scope"] = await c.error(
            "enable_supervision", task_hint="x", scope_mode="only", scope_session_ids=["ghost"]
        )
        out["enable_bad_turns"] = await c.error("enable_supervision", max_turns=0)
        out["bad_status"] = await c.error("report_progress", status="done", session="cc1")
        out["unknown_session"] = await c.error("report_progress", status="working", session="cc9")
        out["no_session"] = await c.error("notify_blocked", message="stuck")
        out["empty_message"] = await c.error("notify_blocked", message="  ", session="cc1")
        out["empty_question"] = await c.error("ask_human", question="", session="cc1")
        out["missing_arg"] = await c.error("set_supervision_scope")
        # An unknown tool is a protocol error (-32602, invalid params), as MCP has it, not a tool result.
        try:
            await c.raw("no_such_tool")
        except MCPError as exc:
            out["unknown_tool"] = f"{exc.code} {exc.message}"
        # The server is still serving after all that.
        out["status"] = await c.call("supervision_status")
        return out

    out = serve(scenario, cwd=project.project)
    assert "scope only needs at least one valid session id" in out["only_none"] and "none given" in out["only_none"]
    assert (
        "scope except needs at least one valid session id" in out["except_unknown"]
        and "'ghost'" in out["except_unknown"]
    )
    assert "nothing was changed" in out["except_unknown"]
    assert "scope mode must be one of all, only, except, got 'invert'" in out["invert"]
    assert "scope only needs at least one valid session id" in out["enable_bad_scope"]
    assert "max_turns must be an integer from 1 to 10000" in out["enable_bad_turns"]
    assert "progress status must be one of working, completed, blocked, needs_review, got 'done'" in out["bad_status"]
    assert "no session 'cc9'" in out["unknown_session"]
    assert "which session is this?" in out["no_session"] and "pass the `session` argument" in out["no_session"]
    assert "message is empty" in out["empty_message"]
    assert "question is empty" in out["empty_question"]
    assert "mode" in out["missing_arg"]
    assert out["unknown_tool"] == "-32602 Unknown tool: no_such_tool"
    for text in out.values():
        assert "Traceback" not in json.dumps(text)
    # Nothing was written: supervision never enabled, scope untouched, no signal, no question.
    assert out["status"]["autonomous"] is None and out["status"]["scope"]["mode"] == "all"
    assert not Path(project.supervision_state).exists()
    assert jsonl(project.signals) == []
    assert store.messages(project, store.DEFAULT_CONVERSATION).records == []


@pytest.mark.slow
def test_without_a_project_the_tools_say_so_and_the_server_stays_up(tmp_path: Path) -> None:
    async def scenario(c: Client) -> list[str]:
        return [await c.error("supervision_status"), await c.error("report_progress", status="working", session="cc1")]

    errors = serve(scenario, cwd=tmp_path)
    for e in errors:
        assert "no .cocoplus directory" in e and "cocoplus init" in e


def test_mcp_command_rejects_an_unknown_role(project: Layout) -> None:
    r = run_cli_subprocess("mcp", "--role", "boss", cwd=project.project)
    assert r.code == 2 and "--role must be one of brain, worker, all" in r.err and "Traceback" not in r.err
    assert r.out == ""
