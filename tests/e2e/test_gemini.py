"""The real Gemini CLI (`gemini -p ... --yolo`), driven by a scripted Gemini-API stand-in, with cocoplus' hooks.

Setup as in docs/runtimes.md: API-key auth and folder trust off in the
throwaway HOME's settings, the hooks written by `cocoplus install gemini`,
stdin closed, and `-m` so that the CLI makes no model-routing call.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from tests.e2e.conftest import Project, runtime_bin
from tests.support.model_stubs import GeminiStub, text, tool

pytestmark = pytest.mark.e2e

MODEL = "gemini-2.5-flash"


def run_gemini(
    project: Project,
    stub: GeminiStub,
    prompt: str = "Work on the next item.",
    *,
    resume: str | None = None,
    timeout: float = 120,
) -> tuple[dict[str, Any], str]:
    """One `gemini -p --output-format json` run: its JSON result and its stderr.

    A hook that halts the run (`continue: false`) still gives exit 0 and a JSON
    result, with an empty `response`; stderr then says
    `Agent execution stopped by hook: <stopReason>`.
    """
    argv = [runtime_bin("gemini"), "-p", prompt, "--yolo", "-m", MODEL, "--output-format", "json"]
    if resume:
        argv += ["--resume", resume]
    r = subprocess.run(
        argv,
        cwd=project.project,
        # No relaunch of node with a larger heap: about 0.5 s less per run.
        env=project.env(
            GOOGLE_GEMINI_BASE_URL=stub.url, GEMINI_API_KEY="test-key-local", GEMINI_CLI_NO_RELAUNCH="true"
        ),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert r.returncode == 0, f"gemini failed ({r.returncode}): {r.stderr[-3000:]}"
    assert r.stdout.strip(), f"gemini printed nothing: {r.stderr[-3000:]}"
    result = json.loads(r.stdout)
    assert isinstance(result, dict) and result.get("session_id"), result
    hook_log = project.root / "logs" / "hook.log"
    problems = hook_log.read_text().strip() if hook_log.exists() else ""
    assert not problems, f"cocoplus hooks reported problems: {problems}"
    return result, r.stderr


@pytest.fixture
def gemini_project(e2e_project: Project) -> Project:
    settings = e2e_project.home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    security = {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}}
    settings.write_text(json.dumps({"security": security}))
    e2e_project.cocoplus("install", "gemini")
    return e2e_project


def test_kill_switch_blocks_the_shell_and_the_model_learns_why(gemini_project: Project) -> None:
    p = gemini_project
    p.cocoplus("session", "stop", "--reason", "release freeze", "--operator", "alice")
    side_effect = p.project / "side_effect.txt"
    with GeminiStub([tool("run_shell_command", command=f"touch {side_effect}"), text("done")]) as stub:
        result, stderr = run_gemini(p, stub)
    assert not side_effect.exists(), "the shell command ran although AGENT_STOP exists"
    # The deny also halts the run (continue: false): no model request after the blocked call.
    assert result["response"] == "", result["response"]
    assert "Agent execution stopped by hook: cocoplus: the agent was stopped by alice" in stderr, stderr[-2000:]
    assert len(stub.loop_requests) == 1
    # The stop notice reached the model with the prompt (BeforeAgent / SessionStart context).
    first = json.dumps(stub.loop_requests[0])
    assert "stopped by alice" in first and "release freeze" in first and "cocoplus session resume" in first

    # After the operator resumes, the resumed session shows the model the blocked call's
    # result: the deny reason itself.
    p.cocoplus("session", "resume", "--yes")
    with GeminiStub([text("understood")]) as stub2:
        run_gemini(p, stub2, "continue", resume=result["session_id"])
    responses = stub2.function_responses()
    assert any("stopped by alice" in r and "release freeze" in r for r in responses), responses
    assert not side_effect.exists()


def test_iteration_cap_runs_exactly_n_tools_then_stops(gemini_project: Project) -> None:
    p = gemini_project
    (p.project / "cocoplus.toml").write_text("[session]\nmax_iterations = 3\niteration_warn_at = 2\n")
    calls = p.project / "calls.txt"
    script = [tool("run_shell_command", command=f"echo {i} >> {calls}") for i in range(6)] + [text("done")]
    with GeminiStub(script) as stub:
        result, stderr = run_gemini(p, stub)
    assert calls.read_text().split() == ["0", "1", "2"]
    # The third AfterTool's `continue: false` ended the run: no model request after it.
    assert result["response"] == "", result["response"]
    assert (
        "Agent execution stopped by hook: cocoplus: iteration budget exhausted: 3 of 3 tool calls used (cap 3, "
        "[session] max_iterations)" in stderr
    ), stderr[-2000:]
    assert len(stub.loop_requests) == 3
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
    # The warn-at checkpoint request came back with the second call's function response.
    assert "Checkpoint now" in json.dumps(stub.loop_requests[2]["contents"][-1])


def test_steer_reaches_the_model_exactly_once_and_not_in_a_later_session(gemini_project: Project) -> None:
    p = gemini_project
    token = "STEER-7f3a: the release branch is frozen"
    p.cocoplus("session", "steer", token)
    script = [tool("run_shell_command", command=f"echo {w}") for w in ("one", "two")] + [text("done")]
    with GeminiStub(script) as stub:
        run_gemini(p, stub)
        assert len(stub.loop_requests) == 3
        # Injected once: in the first request, and still only once in the last one.
        assert json.dumps(stub.loop_requests[0]).count("STEER-7f3a") == 1
        assert json.dumps(stub.loop_requests[-1]).count("STEER-7f3a") == 1
    assert not (p.root / "STEER.md").exists()
    assert list((p.root / "steer-claimed").iterdir()) == []
    injected = [s for s in p.steps() if s["event"] == "steer_injected"]
    assert len(injected) == 1 and injected[0]["steer_id"].startswith("st_")
    with GeminiStub([text("hello again")]) as stub:
        run_gemini(p, stub)
        assert stub.loop_requests and "STEER-7f3a" not in stub.all_text()


def test_new_session_resumes_from_progress_md(gemini_project: Project) -> None:
    p = gemini_project
    progress = p.root / "session" / "PROGRESS.md"
    progress.write_text(progress.read_text().replace("## In Progress\n", "## In Progress\n- migrate HANDOFF-91c2\n"))
    with GeminiStub([text("resuming")]) as stub:
        run_gemini(p, stub, "Resume.")
    # SessionStart's context is prepended to the first prompt inside <hook_context>.
    first_turn = json.dumps(stub.loop_requests[0]["contents"][0])
    assert "<hook_context>cocoplus handoff" in first_turn and "(you are session gm1)" in first_turn
    assert "HANDOFF-91c2" in first_turn


def test_turn_end_marks_the_session_pending_as_gm1(gemini_project: Project) -> None:
    p = gemini_project
    with GeminiStub([tool("run_shell_command", command="echo hi"), text("all done")]) as stub:
        result, _ = run_gemini(p, stub)
    assert result["response"] == "all done"
    listing = json.loads(p.cocoplus("sessions", "list", "--json").stdout)
    assert len(listing["sessions"]) == 1, listing
    s = listing["sessions"][0]
    assert s["alias"] == "gm1" and s["runtime"] == "gemini"
    assert s["runtime_session_id"] == result["session_id"]
    # AfterAgent at turn end sets pending (the signal below); SessionEnd at exit ends the session, and an
    # ended session is exited, never pending.
    assert (s["state"], s["attention"]) == ("exited", None), s
    assert s["last_event"] in ("AfterAgent", "SessionEnd")
    signals = [json.loads(line) for line in (p.root / "supervision" / "signals.jsonl").read_text().splitlines()]
    wanted = ("gm1", "pending", "AfterAgent")
    assert any((sig["alias"], sig["value"], sig["event"]) == wanted for sig in signals), signals
    # Spend is measured from Gemini's own chat recording (the stand-in reports its usage).
    budget = json.loads(p.cocoplus("budget", "status", "--json").stdout)
    by_model = {m["model"]: m["usd"] for m in budget["by_model"]}
    assert by_model.get("gemini-2.5-flash", 0) > 0, budget
    assert budget["unpriced"] == []
