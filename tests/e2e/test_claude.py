"""The real Claude Code CLI, driven by a scripted Messages-API stand-in, with cocoplus' hooks."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import Project, run_claude
from tests.support.model_stubs import AnthropicStub, text, tool

pytestmark = pytest.mark.e2e


@pytest.fixture
def claude_project(e2e_project: Project) -> Project:
    e2e_project.cocoplus("install", "claude")
    return e2e_project


def test_kill_switch_blocks_bash_and_the_model_learns_why(claude_project: Project) -> None:
    p = claude_project
    p.cocoplus("session", "stop", "--reason", "release freeze", "--operator", "alice")
    side_effect = p.project / "side_effect.txt"
    with AnthropicStub([tool("Bash", command=f"touch {side_effect}", description="make a file"), text("done")]) as stub:
        result = run_claude(p, stub)
        assert not side_effect.exists(), "the Bash tool ran although AGENT_STOP exists"
        assert result.get("terminal_reason") == "hook_stopped"
        assert [d["tool_name"] for d in result.get("permission_denials", [])] == ["Bash"]
        # The stop reason reached the model with the prompt (who, why, how to resume).
        first = json.dumps(stub.loop_requests[0])
        assert "alice" in first and "release freeze" in first and "cocoplus session resume" in first
        session_id = result["session_id"]

    # After the operator resumes, the same session carries on and the model sees the
    # denied call's result: the deny reason itself.
    p.cocoplus("session", "resume", "--yes")
    with AnthropicStub([text("understood")]) as stub2:
        run_claude(p, stub2, "continue", resume=session_id)
        results = stub2.tool_results()
        assert any("stopped by alice" in r and "release freeze" in r for r in results), results
    assert not side_effect.exists()


def test_steer_reaches_the_model_exactly_once_and_not_in_a_later_session(claude_project: Project) -> None:
    p = claude_project
    token = "STEER-7f3a: the release branch is frozen"
    p.cocoplus("session", "steer", token)
    script = [
        tool("Bash", command="echo one", description="x"),
        tool("Bash", command="echo two", description="x"),
        text("done"),
    ]
    with AnthropicStub(script) as stub:
        run_claude(p, stub)
        assert len(stub.loop_requests) == 3
        # Injected once: present in the conversation, and only once even in the last request.
        assert json.dumps(stub.loop_requests[0]).count("STEER-7f3a") == 1
        assert json.dumps(stub.loop_requests[-1]).count("STEER-7f3a") == 1
    assert not (p.root / "STEER.md").exists()
    injected = [s for s in p.steps() if s["event"] == "steer_injected"]
    assert len(injected) == 1 and injected[0]["steer_id"].startswith("st_")
    assert list((p.root / "steer-claimed").iterdir()) == []
    with AnthropicStub([text("hello again")]) as stub:
        run_claude(p, stub)
        assert "STEER-7f3a" not in stub.all_text()


def test_new_session_resumes_from_progress_md(claude_project: Project) -> None:
    p = claude_project
    progress = p.root / "session" / "PROGRESS.md"
    text_now = progress.read_text().replace("## In Progress\n", "## In Progress\n- migrate the HANDOFF-91c2 parser\n")
    progress.write_text(text_now)
    (p.root / "session" / "CONTEXT.md").write_text("build.status=green\nrelease.branch=frozen until Friday\n")
    p.cocoplus("session", "queue", "add", "QUEUED-5d1e: update the changelog")
    with AnthropicStub([text("resuming")]) as stub:
        run_claude(p, stub, "Resume.")
        first = json.dumps(stub.loop_requests[0])
        assert "HANDOFF-91c2" in first
        assert "release.branch=frozen until Friday" in first
        assert "QUEUED-5d1e" in first


def test_iteration_cap_runs_exactly_n_tools_then_stops(claude_project: Project) -> None:
    p = claude_project
    (p.project / "cocoplus.toml").write_text("[session]\nmax_iterations = 3\niteration_warn_at = 2\n")
    calls = p.project / "calls.txt"
    script = [tool("Bash", command=f"echo {i} >> {calls}", description="x") for i in range(6)] + [text("done")]
    with AnthropicStub(script) as stub:
        result = run_claude(p, stub)
        assert result.get("terminal_reason") == "hook_stopped"
    assert calls.read_text().split() == ["0", "1", "2"]
    stop = p.read_json("AGENT_STOP")
    assert (
        stop["operator"] == "cocoplus"
        and stop["reason"] == "iteration budget exhausted: 3 of 3 tool calls used (cap 3, [session] max_iterations)"
    )
    assert p.read_json("session/status.json")["state"] == "exited"
    budget = p.read_json("session/iteration-budget.json")
    assert (budget["consumed"], budget["cap"], budget["stopped"]) == (3, 3, True)
    events = [s["event"] for s in p.steps()]
    assert events.count("checkpoint_requested") == 1 and events.count("iteration_cap") == 1
    assert "- Consumed: 3" in (p.root / "session" / "PROGRESS.md").read_text()


def test_turn_end_marks_the_session_pending_as_cc1(claude_project: Project) -> None:
    p = claude_project
    with AnthropicStub([tool("Bash", command="echo hi", description="x"), text("all done")]) as stub:
        result = run_claude(p, stub)
    listing = json.loads(p.cocoplus("sessions", "list", "--json").stdout)
    assert len(listing["sessions"]) == 1
    s = listing["sessions"][0]
    assert s["alias"] == "cc1" and s["runtime"] == "claude"
    # The turn end made it pending (the signal below); `claude -p` then exited, and an ended session is
    # exited, never pending (one definition of attention for every door).
    assert (s["state"], s["attention"]) == ("exited", None), s
    assert s["runtime_session_id"] == result["session_id"]
    assert s["last_event"] in ("Stop", "SessionEnd")
    signals = [json.loads(line) for line in (p.root / "supervision" / "signals.jsonl").read_text().splitlines()]
    assert any(sig["alias"] == "cc1" and sig["value"] == "pending" for sig in signals)


def test_doctor_sees_the_hooks_fire(claude_project: Project) -> None:
    p = claude_project
    before = json.loads(p.cocoplus("doctor", "--json").stdout)["runtimes"]["claude"]
    assert before["wired"] and not before["fired"] and not before["missing"] and not before["outdated"]
    with AnthropicStub([text("hi")]) as stub:
        run_claude(p, stub)
    after = json.loads(p.cocoplus("doctor", "--json").stdout)["runtimes"]["claude"]
    assert after["fired"] and after["sessions_seen"] == 1


def test_cost_budget_stops_at_the_turn_end_not_mid_turn(claude_project: Project) -> None:
    p = claude_project
    (p.project / "cocoplus.toml").write_text("[session]\nbudget_limit = 1.00\nbudget_reserve_fraction = 0.10\n")
    calls = p.project / "calls.txt"
    script = [tool("Bash", command=f"echo {i} >> {calls}", description="x") for i in range(3)] + [text("done")]
    # Every answer reports 70,000 output tokens: $1.05 each at claude-sonnet-4-5's $15/MTok,
    # so the limit is passed during the turn, with the first answer.
    with AnthropicStub(script, usage={"output_tokens": 70_000}) as stub:
        result = run_claude(p, stub, "Run the three steps.", ANTHROPIC_MODEL="claude-sonnet-4-5")
        assert result.get("terminal_reason") != "hook_stopped"
    # No tool call was interrupted mid-turn: all three ran.
    assert calls.read_text().split() == ["0", "1", "2"]
    # At the turn end (Stop), the budget was exhausted and the agent stopped.
    stop = p.read_json("AGENT_STOP")
    assert stop["operator"] == "cocoplus" and stop["reason"].startswith("cost budget exhausted: spent $")
    assert p.read_json("session/status.json")["state"] == "exited"
    budget = p.read_json("session/budget-state.json")
    assert budget["state"] == "exhausted" and budget["spent"] >= 1.0
    assert budget["last_boundary"]["source"] == "turn-end"
    changes = [s for s in p.steps() if s["event"] == "budget_state_changed"]
    assert [(c["from"], c["to"]) for c in changes] == [("normal", "exhausted")]
    # The next turn's tool call is denied.
    side_effect = p.project / "after.txt"
    with AnthropicStub([tool("Bash", command=f"touch {side_effect}", description="x"), text("ok")]) as stub:
        run_claude(p, stub, "Continue.")
    assert not side_effect.exists()


def test_loop_guard_stops_an_agent_repeating_one_bash_command(claude_project: Project) -> None:
    p = claude_project
    (p.project / "cocoplus.toml").write_text("[session]\nloop_guard_repeats = 3\n")
    calls = p.project / "calls.txt"
    script = [tool("Bash", command=f"echo again >> {calls}", description="retry")] * 10 + [text("done")]
    with AnthropicStub(script) as stub:
        result = run_claude(p, stub, "Keep trying.")
        assert result.get("terminal_reason") == "hook_stopped"
        # After the third identical call the model was told it is repeating itself.
        assert "repeating yourself" in stub.all_text()
    assert calls.read_text().split() == ["again"] * 6  # stopped at twice the threshold
    # Its own session is stopped, not the project (other sessions would go on).
    assert not (p.root / "AGENT_STOP").exists()
    (stop_file,) = (p.root / "session-stops").glob("cs_*.json")
    stop = json.loads(stop_file.read_text())
    assert stop["principal"] == "loop-guard" and "6 times in a row" in stop["reason"]
    events = [s["event"] for s in p.steps()]
    assert events.count("checkpoint_requested") == 1 and events.count("loop_guard_stop") == 1
