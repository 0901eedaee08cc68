"""Supervision end to end: the real Claude Code CLI as the worker, the watcher, a recording brain."""

from __future__ import annotations

import json
import time

import pytest

from cocoplus.core.paths import Layout
from cocoplus.supervision import autonomy
from tests.e2e.conftest import Project, run_claude
from tests.supervision.conftest import Brain, Watcher, rounds_started, stop_chat_worker, wait_until
from tests.support.model_stubs import AnthropicStub, text, tool

pytestmark = pytest.mark.e2e


def test_a_worker_turn_end_wakes_the_brain_once_and_the_reply_is_in_the_ledger(e2e_project: Project) -> None:
    p = e2e_project
    p.cocoplus("install", "claude")
    layout = Layout(str(p.cocodir))
    brain = Brain(layout, quiet=2.0)
    autonomy.enable(layout, task_hint="land the parser change")
    watcher = Watcher(layout)
    try:
        with AnthropicStub([tool("Bash", command="echo working", description="x"), text("parser change done")]) as stub:
            run_claude(p, stub, "Finish the parser change.")
        wait_until(lambda: [m for m in json.loads(p.cocoplus("chat", "log", "--json").stdout)["messages"] if m["role"] == "assistant"], timeout=30)
        time.sleep(2.5)  # longer than the quiet window: no second round may follow
        started = rounds_started(layout)
        assert len(started) == 1
        # `claude -p` ends its session right after the turn: the brain hears both, in one round,
        # and supervision then converges (no supervised worker is left).
        assert [(t["alias"], t["kind"], t["value"]) for t in started[0]["triggers"]] == [("cc1", "attention", "pending"), ("cc1", "exit", "exited")]
        wait_until(lambda: not autonomy.status(layout)["autonomous"]["enabled"], timeout=15)
        assert autonomy.status(layout)["autonomous"]["finish_reason"] == "converged"
        (prompt,) = brain.prompts()
        assert "cc1 is pending" in prompt and "- cc1: claude" in prompt and "land the parser change" in prompt
        messages = json.loads(p.cocoplus("chat", "log", "--json").stdout)["messages"]
        assert [m["role"] for m in messages] == ["system", "assistant"]
        assert messages[0]["text"].startswith("supervision round 1: cc1 is pending")
        assert messages[1]["text"] == "brain: noted"
    finally:
        watcher.stop()
        stop_chat_worker(layout)
