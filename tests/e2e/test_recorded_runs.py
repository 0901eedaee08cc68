"""A run of the real Claude Code that a rate limit moves to the real Codex CLI, recorded for the flight recorder.

The Claude Code worker runs two `echo` commands (allowed by its `launch --allow` rule), then its model stand-in
answers the Messages API's 429 an hour away; the watcher moves the worker to Codex (`[workers] failover`), whose
stand-in runs one command and finishes.  Both runtimes run cocoplus' hooks (`install claude`, `install codex`; the
Codex stand-in's home trusts the project, so `launch` passes Codex's hook review for cocoplus' own hooks).

`WRITE_RECORDED_FIXTURES=1` keeps the record as tests/fixtures/failover (tests/support/recorded_runs.py), which
tests/report/test_recorded_runs.py reads without the CLIs.  Every run checks that what it recorded has the
committed fixture's shape: the same sources and kinds of event in its timeline, each with the same fields.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from cocoplus.report import timeline
from tests.e2e.conftest import Project
from tests.e2e.test_codex import codex_home
from tests.e2e.test_workers_claude import cli_json, env_for, worker
from tests.supervision.conftest import Watcher
from tests.supervision.workers_support import stop_workers
from tests.support import recorded_runs
from tests.support.model_stubs import AnthropicStub, ResponsesStub, text, tool
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e

HOUR = 3600.0
TASK = "Record the steps of the FOO-17 parser."


@pytest.fixture
def proj(e2e_project: Project) -> Iterator[Project]:
    e2e_project.cocoplus("install", "claude")
    e2e_project.cocoplus("install", "codex")
    yield e2e_project
    stop_workers(Layout(str(e2e_project.root)))


def claude_script(stub: list[AnthropicStub]) -> Any:
    """Two commands, then the limit: the request after the second command's result is refused."""

    def turn(body: dict[str, Any]) -> dict[str, Any]:
        n = len(stub[0].loop_requests)
        if n == 1:
            return tool("Bash", command="echo recorded-step-1", description="first step")
        if n == 2:
            stub[0].limit(HOUR)  # the next model request is refused
            return tool("Bash", command="echo recorded-step-2", description="second step")
        return text("never sent")

    return turn


def runtime_files(home: Path) -> list[Path]:
    """Claude Code's transcripts and Codex's rollouts under the run's home."""
    out = sorted((home / ".claude" / "projects").rglob("*.jsonl")) if (home / ".claude").exists() else []
    return out + sorted((home / ".codex" / "sessions").rglob("*.jsonl"))


@pytest.mark.timeout(900)
def test_a_claude_run_that_fails_over_to_codex_is_recorded_with_the_committed_shape(proj: Project) -> None:
    p = proj
    layout = Layout(str(p.root))
    (p.project / "cocoplus.toml").write_text('[workers]\nfailover = ["codex"]\nfailover_after_s = 5\n')
    holder: list[AnthropicStub] = []
    codex_script = [tool("exec_command", cmd="echo recorded-step-3"), text("RECORDED-RUN-DONE")]
    with AnthropicStub(routes={TASK: claude_script(holder)}) as claude, ResponsesStub(codex_script) as codex:
        holder.append(claude)
        home = codex_home(p, codex)
        env = dict(env_for(p, claude), CODEX_HOME=str(home), STUB_API_KEY="sk-test-local")
        watcher = Watcher(layout, env)
        try:
            cli_json(p, env, "launch", "claude", TASK, "--alias", "recorded", "--allow", "Bash(echo *)")
            w = wait_until(
                lambda: (x := worker(p, env, "w1"))["runtime"] == "codex" and x["state"] == "exited" and x,
                timeout=300,
            )
        finally:
            watcher.stop()
    assert [(r["runtime"], r.get("reason")) for r in w["runtimes"]] == [("claude", None), ("codex", "rate limit")]
    assert claude.tool_results() == ["recorded-step-1"]  # the second's result went with the refused request
    assert "RECORDED-RUN-DONE" in (p.root / "workers" / "w1" / "output.log").read_text()
    events = timeline.timeline(layout)["events"]
    calls = [e for e in events if e["kind"] == "tool"]
    assert {e.get("runtime") for e in calls} >= {"claude", "codex"}, json.dumps(calls, indent=1)[-3000:]
    kept = recorded_runs.keep("failover", layout, p.home, runtime_files(p.home))
    committed = recorded_runs.FIXTURES / "failover"
    if not kept:
        fixture, _home = recorded_runs.materialize("failover", p.home.parent / "committed")
        want = recorded_runs.shape(timeline.timeline(fixture)["events"])
        assert committed.exists() and recorded_runs.shape(events) == want
