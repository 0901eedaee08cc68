"""Two real Claude Code workers against one scripted model: the one whose loop guard fires is stopped alone, and
the other goes on and finishes (issue 33, item 2).

The stand-in routes each worker's requests by a marker in its task: the looping worker repeats one Bash call;
the steady one makes a call, then its next model request is held (so its `claude -p` is live, mid-turn) until
the looping one has been stopped, then makes one more call and ends.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from tests.e2e.conftest import Project, cocoplus
from tests.e2e.test_workers_claude import cli_json, env_for, worker
from tests.supervision.workers_support import stop_workers
from tests.support.model_stubs import AnthropicStub, text, tool
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture
def proj(e2e_project: Project) -> Iterator[Project]:
    e2e_project.cocoplus("install", "claude")
    yield e2e_project
    stop_workers(Layout(str(e2e_project.root)))


class Steady:
    """The steady worker's script: a Bash call, then (held until `go`) another, then the end."""

    def __init__(self, first: Path, second: Path) -> None:
        self.n = 0
        self.held = threading.Event()
        self.go = threading.Event()
        self.first, self.second = first, second

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        self.n += 1
        if self.n == 1:
            return tool("Bash", command=f"touch {self.first}", description="first")
        if self.n == 2:
            self.held.set()
            self.go.wait(180)
            return tool("Bash", command=f"touch {self.second}", description="second")
        return text("steady done")


def test_a_claude_code_worker_whose_loop_guard_fires_leaves_a_second_live_worker_running(proj: Project) -> None:
    p = proj
    (p.project / "cocoplus.toml").write_text("[session]\nloop_guard_repeats = 3\n")
    calls = p.project / "loop-calls.txt"
    loop = [tool("Bash", command=f"echo again >> {calls}", description="retry")] * 12 + [text("gave up")]
    steady = Steady(p.project / "steady-1", p.project / "steady-2")
    with AnthropicStub(routes={"LOOP-7c1e": loop, "STEADY-2b9f": steady}) as stub:
        env = env_for(p, stub)
        cli_json(p, env, "launch", "claude", "STEADY-2b9f: make two files.", "--alias", "steady", "--allow", "Bash")
        assert steady.held.wait(120), "the steady worker never asked for its second turn"
        cli_json(p, env, "launch", "claude", "LOOP-7c1e: keep trying.", "--alias", "looper", "--allow", "Bash")
        looper = wait_until(lambda: (w := worker(p, env, "w2"))["state"] in ("exited", "failed") and w, timeout=180)
        # Only the looping worker stopped: its own session, by the loop guard; not the project.
        assert not (p.root / "AGENT_STOP").exists()
        assert looper["state"] == "exited" and looper["stopped_by"]["principal"] == "loop-guard", looper
        assert looper["stopped_by"]["scope"] == "session" and "6 times in a row" in looper["reason"]
        # The sixth call reached the limit and was told it is the last that runs; a worker's call then asks its
        # PermissionRequest hook, which the session's stop (made before the call) answers: five ran.
        assert calls.read_text().split() == ["again"] * 5
        stop = json.loads((p.root / "session-stops" / f"{looper['session']}.json").read_text())
        assert stop["principal"] == "loop-guard" and stop["alias"] == "looper"
        listed = cocoplus(p.project, "workers", "list", env=env).stdout
        assert "stopped by the loop guard" in listed
        # The other worker is live mid-turn, and goes on: its next call runs and it ends by itself.
        assert worker(p, env, "w1")["state"] == "running"
        steady.go.set()
        done = wait_until(lambda: (w := worker(p, env, "w1"))["state"] in ("exited", "failed") and w, timeout=180)
        assert done["state"] == "exited" and done["exit"]["code"] == 0 and done.get("stopped_by") is None, done
        assert (p.project / "steady-1").exists() and (p.project / "steady-2").exists()
    assert not (p.root / "AGENT_STOP").exists()
