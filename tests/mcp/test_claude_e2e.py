"""The real Claude Code CLI calls cocoplus' MCP tools (registered by `cocoplus install claude`: the worker tools).

The scripted Messages-API stand-in plays the model.  Claude Code 2.1.x defers
MCP tools: the first request lists `mcp__cocoplus__*` by name only, and
`ToolSearch` loads a tool's schema.  `claude -p` starts the project's
`.mcp.json` servers; `--allowedTools` grants the one tool the script calls.
Claude Code gives its MCP servers `CLAUDE_CODE_SESSION_ID`, so the worker
tool finds its session with no `session` argument.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from tests.e2e.conftest import Project, e2e_project  # noqa: F401 - e2e_project is a fixture
from tests.e2e.conftest import run_claude as e2e_run_claude
from tests.mcp.conftest import ALL_TOOLS, BRAIN_ONLY
from tests.support.controller import write_controller
from tests.support.model_stubs import AnthropicStub, text, tool
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e


def run_claude(project: Project, stub: AnthropicStub, allowed: str, prompt: str = "Go.") -> dict[str, Any]:
    # Wait for the MCP servers before the first request (Claude Code connects them in the background by
    # default), and give a server as long to start as a busy machine needs (MCP_TIMEOUT, in ms).
    result = e2e_run_claude(
        project, stub, prompt, allowed=allowed, timeout=90, MCP_CONNECTION_NONBLOCKING="false", MCP_TIMEOUT="60000"
    )
    assert result.get("is_error") is False, result
    return result


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


@pytest.fixture
def claude_project(e2e_project: Project) -> Project:
    e2e_project.cocoplus("install", "claude")
    entry = json.loads((e2e_project.project / ".mcp.json").read_text())["mcpServers"]["cocoplus"]
    assert entry["command"] == "sh" and "cocoplus mcp" in entry["args"][-1]
    return e2e_project


WORKER_TOOLS = ALL_TOOLS - BRAIN_ONLY


@pytest.mark.parametrize("committed_role", [None, "brain"], ids=["as-installed", "repo-asks-for-brain"])
def test_an_agent_registered_by_install_sees_only_the_worker_tools(
    claude_project: Project, committed_role: str | None
) -> None:
    """What `install` registers serves the worker tools, and a repository that commits `.mcp.json` asking for
    `--role brain` gets no more (the brain role needs this user's capability, which only the controller has)."""
    p = claude_project
    write_controller(Layout(str(p.root)))  # a controller exists: the brain's tools would be usable if served
    p.cocoplus("trust", "--yes")
    if committed_role is not None:
        mcp = json.loads((p.project / ".mcp.json").read_text())
        entry = mcp["mcpServers"]["cocoplus"]
        entry["args"][-1] = entry["args"][-1].replace("cocoplus mcp", f"cocoplus mcp --role {committed_role}")
        assert f"--role {committed_role}" in entry["args"][-1]
        (p.project / ".mcp.json").write_text(json.dumps(mcp))
    enable = "mcp__cocoplus__enable_supervision"
    report = "mcp__cocoplus__report_progress"
    script = [
        tool("ToolSearch", query=f"select:{enable},{report}"),
        tool(report, status="completed", message="parser ported"),
        text("Done."),
    ]
    with AnthropicStub(script) as stub:
        result = run_claude(p, stub, f"{enable},{report}")
        # The tools as Claude Code shows them to the model: the worker tools, by name, and no brain tool.
        offered = set(re.findall(r"mcp__cocoplus__(\w+)", json.dumps(stub.loop_requests[0])))
        assert offered == WORKER_TOOLS, offered
        # Asked for both, ToolSearch loads only the one that exists.
        loaded = {t["name"] for t in stub.loop_requests[1]["tools"]}
        assert report in loaded and enable not in loaded
        answers = stub.tool_results()
    assert result["permission_denials"] == []
    reply = json.loads(answers[-1])
    assert reply["alias"] == "cc1" and reply["signal"]["value"] == "completed"
    state = p.root / "supervision" / "state.json"
    assert not state.exists() or json.loads(state.read_text()).get("autonomous") is None  # nothing enabled it


def test_a_worker_reporting_blocked_wakes_the_brain(claude_project: Project) -> None:
    p = claude_project
    (p.project / "cocoplus.toml").write_text(
        '[chat]\ncontroller = "x"\n'
        '[accounts.x]\nkind = "command"\ncommand = ["sh", "-c", "cat >> prompts.txt; echo ok"]\n'
        "[supervision]\nquiet_window_s = 0.3\n"
    )
    p.cocoplus(
        "trust", "--yes"
    )  # the brain's command is the project's own (docs/guides/configuration.md, "Trust"); in the project's HOME
    p.cocoplus("supervision", "enable", "--task-hint", "ship the parser")
    layout = Layout(str(p.root))
    log = (p.project / "supervisor.log").open("w")
    sup = subprocess.Popen(
        [sys.executable, "-m", "cocoplus", "supervisor", "run"],
        cwd=p.project,
        env=p.env(),
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_until(lambda: os.path.exists(layout.supervisor_pid) or sup.poll() is not None)
        assert sup.poll() is None, (p.project / "supervisor.log").read_text()
        name = "mcp__cocoplus__report_progress"
        script = [
            tool("ToolSearch", query=f"select:{name}"),
            tool(name, status="blocked", message="BLOCKED-5e2: the staging database refuses the migration"),
            text("Reported."),
        ]
        with AnthropicStub(script) as stub:
            result = run_claude(p, stub, name)
            answers = stub.tool_results()
        session_id = result["session_id"]
        # The worker session came from Claude Code's environment: no `session` argument was given.
        reply = json.loads(answers[-1])
        assert reply["alias"] == "cc1" and reply["session"] == f"cs_{session_id}"
        rounds = Path(layout.rounds)

        def woke() -> list[dict[str, Any]]:
            started = [r for r in jsonl(rounds) if r.get("event") == "round_started"]
            return [
                r
                for r in started
                if any(
                    t.get("kind") == "report_progress" and t.get("value") == "blocked" for t in r.get("triggers") or []
                )
            ]

        got = wait_until(woke)[0]
        trig = next(t for t in got["triggers"] if t.get("kind") == "report_progress")
        assert trig["alias"] == "cc1" and trig["session"] == f"cs_{session_id}"
        assert "cc1 reported progress: blocked: BLOCKED-5e2" in got["prompt_summary"]
        # The brain (the command backend) was asked, with the worker's report in the prompt.
        # (The turn's end, `pending`, wakes it again afterwards: the prompts are appended.)
        prompts = p.project / "prompts.txt"
        woken = (
            "Why you were woken:\n"
            "- cc1 reported progress: blocked: BLOCKED-5e2: the staging database refuses the migration"
        )
        text_ = wait_until(lambda: prompts.exists() and woken in prompts.read_text() and prompts.read_text())
        assert "Supervision goal (task hint): ship the parser" in text_
    finally:
        if sup.poll() is None:
            sup.send_signal(signal.SIGTERM)
            try:
                sup.wait(timeout=15)
            except subprocess.TimeoutExpired:
                sup.kill()
                sup.wait()
        log.close()
        _stop_chat_worker(layout)
    assert sup.returncode == 0, (p.project / "supervisor.log").read_text()


def _stop_chat_worker(layout: Layout) -> None:
    try:
        pid = json.loads(Path(layout.chat_worker_pid).read_text())["pid"]
    except (OSError, ValueError, KeyError):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except OSError:
        pass
