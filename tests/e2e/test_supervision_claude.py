"""Supervision end to end: the real Claude Code CLI as the worker, the watcher, a recording brain."""

from __future__ import annotations

import json

import pytest

from cocoplus.core import jsonl
from cocoplus.core.paths import Layout
from cocoplus.supervision import autonomy
from tests.e2e.conftest import Project, run_claude, runtime_bin, trust_everywhere
from tests.supervision.conftest import Brain, Watcher, rounds_finished, rounds_started, stop_chat_worker, wait_until
from tests.support.model_stubs import AnthropicStub, text, tool

pytestmark = pytest.mark.e2e


def test_a_worker_turn_end_wakes_the_brain_once_and_the_reply_is_in_the_ledger(e2e_project: Project) -> None:
    p = e2e_project
    p.cocoplus("install", "claude")
    layout = Layout(str(p.root))
    brain = Brain(layout, quiet=2.0)
    autonomy.enable(layout, task_hint="land the parser change")
    watcher = Watcher(layout)
    try:
        with AnthropicStub([tool("Bash", command="echo working", description="x"), text("parser change done")]) as stub:
            run_claude(p, stub, "Finish the parser change.")
        # The turn end is held while the brain's round runs; the brain decides nothing for cc1, so the round's
        # end releases it, `claude -p` ends its session, and supervision converges (no supervised worker is
        # left). Once it has, the watcher has handled every signal of the run and no round can start any
        # more: count them then.
        wait_until(lambda: not autonomy.status(layout)["autonomous"]["enabled"], timeout=60)
        assert autonomy.status(layout)["autonomous"]["finish_reason"] == "converged"
        started = rounds_started(layout)
        assert len(started) == 1, started
        assert [(t["alias"], t["kind"], t["value"]) for t in started[0]["triggers"]] == [
            ("cc1", "attention", "pending")
        ]
        held = [s["outcome"] for s in p.steps() if s["event"] == "hold_ended"]
        assert held == ["released: a supervision round ended without a decision for this session"]
        wait_until(
            lambda: [
                m
                for m in json.loads(p.cocoplus("chat", "log", "--json").stdout)["messages"]
                if m["role"] == "assistant"
            ],
            timeout=30,
        )
        (prompt,) = brain.prompts()
        assert "cc1 is pending" in prompt and "- cc1: claude" in prompt and "land the parser change" in prompt
        messages = wait_until(
            lambda: len(m := json.loads(p.cocoplus("chat", "log", "--json").stdout)["messages"]) == 3 and m, timeout=30
        )
        assert [m["role"] for m in messages] == ["system", "assistant", "system"]
        assert messages[0]["text"].startswith("supervision round 1: cc1 is pending")
        assert messages[1]["text"] == "brain: noted"
        assert messages[2]["text"] == "supervision round 1 finished: no action taken"
    finally:
        watcher.stop()
        stop_chat_worker(layout)


def test_a_claude_controller_acts_through_cocoplus_brain_tools_only(e2e_project: Project) -> None:
    """The brain is Claude Code too (a second scripted model): it may call cocoplus' brain tools, nothing else."""
    p = e2e_project
    p.cocoplus("install", "claude")
    layout = Layout(str(p.root))
    claude = runtime_bin("claude")
    side = p.project / "brain-side-effect.txt"
    status, enable, finish = (
        f"mcp__cocoplus__{t}" for t in ("supervision_status", "enable_supervision", "finish_supervision")
    )
    brain_script = [
        tool("Bash", command=f"touch {side}", description="the shell is not the brain's"),
        tool(status),
        tool(enable, task_hint="a goal of my own", max_turns=500),  # not during a round: it would reset the turn cap
        tool(finish, summary="FIN-9a2: the parser change landed"),
        text("BRAIN-REPLY-4d1: cc1 is done; supervision finished."),
    ]
    with AnthropicStub(brain_script) as brain_stub:
        (p.project / "cocoplus.toml").write_text(
            f'[chat]\ncontroller = "cc"\n[accounts.cc]\nkind = "claude"\nbinary = "{claude}"\n'
            "[supervision]\nquiet_window_s = 0.5\nreconcile_s = 1\n"
        )
        trust_everywhere(
            p
        )  # the controller's binary is named by the project file (docs/guides/configuration.md, "Trust")
        p.cocoplus("supervision", "enable", "--task-hint", "land the parser change")
        watcher = Watcher(
            layout,
            env={
                "HOME": str(p.home),
                "ANTHROPIC_BASE_URL": brain_stub.url,
                "ANTHROPIC_API_KEY": "sk-test-local",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_AUTOUPDATER": "1",
                "MCP_CONNECTION_NONBLOCKING": "false",
                "MCP_TIMEOUT": "60000",
            },
        )
        try:
            with AnthropicStub(
                [tool("Bash", command="echo working", description="x"), text("parser change done")]
            ) as worker_stub:
                run_claude(p, worker_stub, "Finish the parser change.")
            wait_until(lambda: [r for r in rounds_finished(layout) if r["number"] == 1], timeout=120)
            requests = list(brain_stub.loop_requests)
            answers = brain_stub.tool_results()
        finally:
            watcher.stop()
            stop_chat_worker(layout)
    # The brain was woken with the round's prompt, which lists the tools it may call.
    first = json.dumps(requests[0])
    assert "cc1 is pending" in first and "- finish_supervision:" in first and "- dispatch:" in first
    # It was offered cocoplus' tools and no built-in one: the shell call was refused, nothing ran.
    offered = {t["name"] for t in requests[0]["tools"] if t["name"] != "DeferredToolPlaceholder"}
    assert offered and all(n.startswith("mcp__cocoplus__") for n in offered), offered
    assert not side.exists()
    assert "No such tool available: Bash" in answers[0]
    # The read-only tool answered from the files, during the round ...
    seen = json.loads(answers[1])
    assert seen["autonomous"]["task_hint"] == "land the parser change" and seen["round_in_progress"]["number"] == 1
    # ... enable_supervision does not exist for the brain in a round ...
    assert enable not in offered and f"No such tool available: {enable}" in answers[2]
    # ... and finish_supervision took effect: supervision is off with the brain's summary, not converged over it.
    auto = autonomy.status(layout)["autonomous"]
    assert auto["enabled"] is False and auto["finish_summary"] == "FIN-9a2: the parser change landed"
    assert auto["finish_reason"] == "finished by the main brain" and auto["turns_used"] == 1
    assert json.loads(answers[3])["autonomous"]["enabled"] is False
    # The brain's own Claude Code session ran no cocoplus hook: it is not a worker session.
    assert [r["alias"] for r in json.loads(p.cocoplus("sessions", "list", "--json").stdout)["sessions"]] == ["cc1"]
    # Its reply is in the conversation, and the round's end says it took no action (finishing is not a worker action).
    (done,) = rounds_finished(layout)
    assert (done["outcome"], done["actions"]) == ("succeeded", 0)
    texts = [m["text"] for m in json.loads(p.cocoplus("chat", "log", "--json").stdout)["messages"]]
    assert "BRAIN-REPLY-4d1: cc1 is done; supervision finished." in texts
    assert "supervision round 1 finished: no action taken" in texts


def brain_env(p: Project, stub: AnthropicStub) -> dict[str, str]:
    """The watcher's environment when the brain is Claude Code against its own stand-in."""
    return {
        "HOME": str(p.home),
        "ANTHROPIC_BASE_URL": stub.url,
        "ANTHROPIC_API_KEY": "sk-test-local",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "MCP_CONNECTION_NONBLOCKING": "false",
        "MCP_TIMEOUT": "60000",
    }


def test_a_claude_controller_dispatches_to_a_held_worker_which_continues_in_the_same_process(
    e2e_project: Project,
) -> None:
    """The loop with Claude Code on both sides: the worker's turn end is held, the brain (a second scripted model)
    calls mcp__cocoplus__dispatch, the same `claude -p` process acts on it, and the brain's next round finishes."""
    p = e2e_project
    p.cocoplus("install", "claude")
    layout = Layout(str(p.root))
    instruction = "DISPATCH-b7e3: now add the changelog entry"
    changelog = p.project / "CHANGELOG.md"
    brain_script = [
        tool("mcp__cocoplus__dispatch", session="cc1", instruction=instruction),
        text("BRAIN-R1: dispatched the changelog entry to cc1"),
        tool("mcp__cocoplus__finish_supervision", summary="FIN-5c0: parser change and changelog landed"),
        text("BRAIN-R2: finished"),
    ]
    with AnthropicStub(brain_script) as brain_stub:
        (p.project / "cocoplus.toml").write_text(
            f'[chat]\ncontroller = "cc"\n[accounts.cc]\nkind = "claude"\nbinary = "{runtime_bin("claude")}"\n'
            "[supervision]\nquiet_window_s = 0.5\nmax_wait_s = 5\nreconcile_s = 1\n"
        )
        trust_everywhere(
            p
        )  # the controller's binary is named by the project file (docs/guides/configuration.md, "Trust")
        p.cocoplus("supervision", "enable", "--task-hint", "land the parser change with a changelog entry")
        watcher = Watcher(layout, env=brain_env(p, brain_stub))
        try:
            worker_script = [
                text("parser change done"),
                tool("Bash", command=f"echo entry > {changelog}", description="changelog"),
                text("changelog entry added"),
            ]
            with AnthropicStub(worker_script) as worker_stub:
                result = run_claude(p, worker_stub, "Finish the parser change.", timeout=300)
                worker_requests = [json.dumps(r) for r in worker_stub.loop_requests]
            wait_until(lambda: len(rounds_finished(layout)) == 2, timeout=60)
            brain_requests = list(brain_stub.loop_requests)
            brain_answers = brain_stub.tool_results()
        finally:
            watcher.stop()
            stop_chat_worker(layout)
    # One worker process: its one result comes after the continuation; the model got the brain's instruction.
    assert result["result"] == "changelog entry added" and result["subtype"] == "success"
    assert instruction not in worker_requests[0] and instruction in worker_requests[1]
    assert changelog.read_text() == "entry\n"
    assert len([s for s in p.steps() if s["event"] == "session_start"]) == 1  # no second process, no resume
    assert [s["how"] for s in p.steps() if s["event"] == "turn_continued"] == ["decision"]
    # The brain was offered cocoplus' tools only, and its dispatch took the held route.
    offered = {t["name"] for t in brain_requests[0]["tools"] if t["name"] != "DeferredToolPlaceholder"}
    assert "mcp__cocoplus__dispatch" in offered and all(n.startswith("mcp__cocoplus__") for n in offered), offered
    assert json.loads(brain_answers[0])["route"] == "held"
    # Both rounds are recorded with what they did; supervision is off with the brain's summary.
    one, two = rounds_finished(layout)
    assert (one["number"], one["outcome"], one["actions"]) == (1, "succeeded", 1)
    assert (two["number"], two["outcome"], two["actions"]) == (2, "succeeded", 0)
    acts = [r for r in jsonl.read_jsonl(layout.rounds).records if r.get("event") == "action"]
    assert [(a["round"], a["action"], a["alias"], a["result"]["route"]) for a in acts] == [
        (1, "dispatch", "cc1", "held")
    ]
    auto = autonomy.status(layout)["autonomous"]
    assert auto["enabled"] is False and auto["finish_summary"] == "FIN-5c0: parser change and changelog landed"
    # The operator reads it in the conversation and in `supervision status`.
    texts = [m["text"] for m in json.loads(p.cocoplus("chat", "log", "--json").stdout)["messages"]]
    assert "BRAIN-R1: dispatched the changelog entry to cc1" in texts
    assert any(t.startswith("supervision round 1 finished") and "dispatch cc1 (route: held)" in t for t in texts), texts
    status = json.loads(p.cocoplus("supervision", "status", "--json").stdout)
    assert status["last_round"]["number"] == 2
    assert [(a["action"], a["alias"], a["round"]) for a in status["recent_actions"]] == [("dispatch", "cc1", 1)]
