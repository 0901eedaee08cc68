"""Managed workers end to end with the real Claude Code CLI against a scripted model.

* `cocoplus launch claude TASK` runs a headless worker that shows in
  `sessions list` and `workers list`, ends its turn `pending`, is resumed by
  `cocoplus dispatch` (its next run, under the same worker), and is stopped
  by `workers kill`.
* With `[workers] max_parallel = 1` a second launch waits in the queue and
  starts when the first finishes, with no watcher running.
* A worker killed with SIGKILL is recorded `failed` with its exit status and
  wakes the brain exactly once.

The model stand-in can hold an answer (`HeldStub`), so a worker is known
to be mid-turn when a test acts on it.  Every test's finalizer kills what
its workers left.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core import jsonl
from cocoplus.core.paths import Layout
from cocoplus.session import procinfo
from cocoplus.supervision import autonomy
from tests.e2e.conftest import Project, cocoplus, runtime_bin
from tests.supervision.conftest import (
    Brain,
    Watcher,
    rounds_started,
    stop_chat_worker,
    watcher_has_processed_every_signal,
)
from tests.supervision.workers_support import stop_workers
from tests.support.model_stubs import AnthropicStub, Holding, text
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e


class HeldStub(Holding, AnthropicStub):
    """Claude Code's stand-in, holding the agent-loop requests numbered in `hold` until `release(n)`."""


@pytest.fixture
def proj(e2e_project: Project) -> Iterator[Project]:
    e2e_project.cocoplus("install", "claude")
    yield e2e_project
    stop_workers(Layout(str(e2e_project.root)))


def env_for(p: Project, stub: AnthropicStub) -> dict[str, str]:
    bindir = os.path.dirname(runtime_bin("claude"))
    return p.env(
        PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}",
        ANTHROPIC_BASE_URL=stub.url,
        ANTHROPIC_API_KEY="sk-test-local",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
    )


def cli_json(p: Project, env: dict[str, str], *args: str) -> Any:
    return json.loads(cocoplus(p.project, *args, "--json", env=env).stdout)


def worker(p: Project, env: dict[str, str], wid: str) -> dict[str, Any]:
    return next(w for w in cli_json(p, env, "workers", "list")["workers"] if w["id"] == wid)


def test_a_launched_worker_is_a_session_ends_pending_is_resumed_by_dispatch_and_killed(proj: Project) -> None:
    p = proj
    with HeldStub([text("parser written"), text("never sent")], hold=(2,)) as stub:
        env = env_for(p, stub)
        launched = cli_json(p, env, "launch", "claude", "Write the parser.", "--alias", "parser")
        assert launched["id"] == "w1" and launched["state"] in ("running", "exited"), launched
        # Its own hooks register it: in `sessions list` under the alias asked for, linked to the worker.
        sessions = wait_until(
            lambda: [s for s in cli_json(p, env, "sessions", "list")["sessions"] if s["alias"] == "parser"], timeout=120
        )
        assert sessions[0]["runtime"] == "claude"
        # Its turn ends: pending; `claude -p` then exits (no supervision, so no hold), and an ended session
        # waits for nothing: the worker's attention is the session's as `sessions list` shows it.
        w = wait_until(lambda: (x := worker(p, env, "w1"))["state"] == "exited" and x, timeout=120)
        assert w["session_alias"] == "parser" and w["exit"]["code"] == 0 and w["killed_by"] is None
        assert (w["session_state"], w["attention"]) == ("exited", None), w
        turn_ends = [
            s["value"] for s in jsonl.read_jsonl(Layout(str(p.root)).signals).records if s["kind"] == "attention"
        ]
        assert turn_ends == ["pending"]
        assert "Write the parser." in json.dumps(stub.loop_requests[0])
        # Dispatch resumes it headless, as the worker's next run.
        out = cli_json(p, env, "dispatch", "parser", "DISPATCH-5e2a: now write its tests")
        assert out["route"] == "resume" and out["resume"]["worker"] == "w1", out
        assert stub.arrived[2].wait(120), "the resumed worker never asked the model"
        second = json.dumps(stub.loop_requests[1])
        assert "DISPATCH-5e2a: now write its tests" in second and "parser written" in second
        w = worker(p, env, "w1")
        assert (w["state"], w["runs"], w["attention"]) == ("running", 2, None)
        # Killed mid-turn: the process group goes, the record says who.
        killed = cli_json(p, env, "workers", "kill", "w1")
        assert (
            killed["state"] == "exited"
            and killed["killed_by"]
            and killed["reason"].startswith(f"killed by {killed['killed_by']}")
        )
        assert procinfo.alive(w["pid"], w["start_ticks"]) is False
        log = cocoplus(p.project, "workers", "logs", "w1", env=env).stdout
        assert "assistant  parser written" in log.splitlines() and "run 2:" in log and "--resume" in log
        assert '"type":"result"' in cocoplus(p.project, "workers", "logs", "w1", "--raw", env=env).stdout.replace(
            " ", ""
        )


def test_a_dispatch_whose_resume_is_not_logged_in_says_so_and_fails(proj: Project) -> None:
    """The worker ran with an API key; the dispatch comes from an environment with none (and no login in its
    HOME): Claude Code answers `Not logged in`.  The dispatch says so in its words and exits 1, the worker's
    record and its transcript say the same, and the instruction waits for the session's next prompt."""
    p = proj
    with HeldStub([text("parser written")]) as stub:
        env = env_for(p, stub)
        cli_json(p, env, "launch", "claude", "Write the parser.", "--alias", "parser")
        wait_until(
            lambda: (x := worker(p, env, "w1"))["state"] == "exited" and x["session_state"] == "exited", timeout=120
        )
        no_key = {k: v for k, v in env.items() if k != "ANTHROPIC_API_KEY"}
        r = cocoplus(
            p.project, "dispatch", "parser", "DISPATCH-0b7d: now write its tests", "--json", env=no_key, check=False
        )
        assert r.returncode == 0 and r.stderr == "", (r.stdout, r.stderr)  # one outcome: queued, and why
        out = json.loads(r.stdout)
        reason = "Not logged in · Please run /login"
        assert (
            out["route"] == "queued" and out["resume_failed"]["reason"] == reason and out["resume_failed"]["code"] == 1
        ), out
        assert (out["resume_failed"]["error"], out["resume_failed"]["hint"]) == (
            f"parser: the resume failed: {reason} (claude exited with code 1)",
            "its output: `cocoplus workers logs w1`",
        )
        assert len(stub.loop_requests) == 1  # the resumed run never reached the model
    w = wait_until(lambda: (x := worker(p, env, "w1"))["state"] == "failed" and x, timeout=60)
    assert (w["runs"], w["exit"]["code"], w["reason"]) == (2, 1, f"{reason} (exit code 1)")
    listing = cocoplus(p.project, "workers", "list", env=env).stdout
    assert "failed" in listing and "exit code 1" in listing
    log = cocoplus(p.project, "workers", "logs", "w1", env=env).stdout.splitlines()
    assert f"FAILED     {reason}" in log and f"ERROR      {reason}" in log
    assert log.index("assistant  parser written") < log.index(f"FAILED     {reason}")
    steer = Layout(str(p.root))
    from cocoplus.session import registry, steering

    cs = registry.resolve(steer, "parser")["id"]
    assert "DISPATCH-0b7d: now write its tests" in (steering.pending_steer(steer, cs) or "")


def test_a_launch_beyond_max_parallel_waits_then_starts(proj: Project) -> None:
    p = proj
    Path(p.project / "cocoplus.toml").write_text("[workers]\nmax_parallel = 1\n")
    with HeldStub([text("first done"), text("second done")], hold=(1,)) as stub:
        env = env_for(p, stub)
        first = cli_json(p, env, "launch", "claude", "First task.")
        assert first["state"] == "running"
        assert stub.arrived[1].wait(120), "the first worker never asked the model"
        second = cli_json(p, env, "launch", "claude", "Second task.")
        assert second["state"] == "queued" and second["waiting_since"], second
        listing = cli_json(p, env, "workers", "list")
        assert [(w["id"], w["state"]) for w in listing["workers"]] == [("w1", "running"), ("w2", "queued")]
        assert len(stub.loop_requests) == 1  # the second has not started its runtime
        stub.release(1)
        w2 = wait_until(lambda: (x := worker(p, env, "w2"))["state"] == "exited" and x, timeout=180)
        w1 = worker(p, env, "w1")
        assert w1["state"] == "exited" and w2["started_at"] >= w1["ended_at"]
        assert "Second task." in json.dumps(stub.loop_requests[1])
        assert {s["alias"] for s in cli_json(p, env, "sessions", "list")["sessions"]} == {"cc1", "cc2"}


def test_a_worker_killed_with_sigkill_is_failed_and_wakes_the_brain_once(proj: Project) -> None:
    p = proj
    layout = Layout(str(p.root))
    brain = Brain(layout)
    autonomy.enable(layout, task_hint="keep the parser work going")
    watcher = Watcher(layout)
    try:
        with HeldStub([text("never sent")], hold=(1,)) as stub:
            env = env_for(p, stub)
            cli_json(p, env, "launch", "claude", "Long task.")
            assert stub.arrived[1].wait(120), "the worker never asked the model"
            w = wait_until(lambda: (x := worker(p, env, "w1"))["session_alias"] == "cc1" and x["pid"] and x, timeout=60)
            os.kill(w["pid"], signal.SIGKILL)
            failed = wait_until(lambda: (x := worker(p, env, "w1"))["state"] == "failed" and x, timeout=60)
            assert failed["exit"] == {"code": None, "signal": "SIGKILL", "status": "killed by SIGKILL"}
            assert failed["session_state"] == "failed"
            prompts = wait_until(brain.prompts, timeout=60)
            assert "cc1 failed" in prompts[0] and "SIGKILL" in prompts[0]
            session = json.loads(Path(layout.session_record(failed["session"])).read_text())
            watcher_has_processed_every_signal(layout, session)
            wait_until(lambda: not os.path.exists(layout.current_round), timeout=60)
            assert len(brain.prompts()) == 1 and len(rounds_started(layout)) == 1
            exits = [s for s in jsonl.read_jsonl(layout.signals).records if s["kind"] == "exit"]
            assert [(s["alias"], s["value"]) for s in exits] == [("cc1", "failed")]
    finally:
        watcher.stop()
        stop_chat_worker(layout)
