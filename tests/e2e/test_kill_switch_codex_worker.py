"""The kill switch over a launched Codex worker whose hooks do not run, with the real Codex CLI.

`codex exec` runs a project's hooks only once someone reviewed them in Codex
(`/hooks`). `launch` skips that review only where the hooks are cocoplus' own
and refuses otherwise; `launch --unsupervised` starts the worker anyway, with
no cocoplus hook at all: nothing records its session and nothing blocks its
tools.  Its runner holds
the kill switch over it instead: once `session stop` has created AGENT_STOP,
the run is ended as `workers kill` would end it (the tool's own `sleep` too),
and the worker is recorded killed by the kill switch.  The model's next
answer is never asked for.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from cocoplus.core.paths import Layout
from cocoplus.supervision import workerrun
from tests.e2e.conftest import Project
from tests.e2e.test_codex import codex_home
from tests.e2e.test_limits_codex_gemini import cli_json, path_with, worker
from tests.supervision.workers_support import stop_workers
from tests.support.model_stubs import ResponsesStub, text, tool
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture
def proj(e2e_project: Project) -> Iterator[Project]:
    yield e2e_project
    stop_workers(Layout(str(e2e_project.root)))


def running_with(marker: str) -> list[int]:
    """The processes whose command line holds `marker`, but this test's own."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    if marker.encode() in fh.read():
                        found.append(int(entry))
            except OSError:
                pass
    return found


def test_a_stop_ends_a_codex_worker_whose_hooks_do_not_run(proj: Project) -> None:
    p = proj
    started = p.project / "tool-started"
    marker = f"{started}-{os.getpid()}"  # in the tool's command line (its pid may be of another pid namespace)
    script = [
        tool("exec_command", cmd=f"touch {started}; sleep 120 # {marker}", yield_time_ms=120000),
        text("never reached"),
    ]
    with ResponsesStub(script) as stub:
        home = codex_home(p, stub)
        env = p.env(PATH=path_with("codex"), CODEX_HOME=str(home), STUB_API_KEY="sk-test-local")
        cli_json(p, env, "launch", "codex", "Work on the next item.", "--alias", "cwork", "--unsupervised")
        wait_until(lambda: started.exists() or worker(p, env, "w1")["state"] not in ("queued", "running"), timeout=180)
        w = worker(p, env, "w1")
        assert w["state"] == "running" and started.exists(), w
        assert w["session"] is None  # its hooks are not running: no session, and nothing blocks its tools
        assert running_with(marker)  # the tool's shell, sleeping
        p.cocoplus("session", "stop", "--reason", "stop everything")
        done = wait_until(lambda: (x := worker(p, env, "w1"))["state"] not in ("queued", "running") and x, timeout=60)
        assert done["state"] == "exited" and done["killed_by"] == workerrun.STOPPED_BY, done
        wait_until(lambda: not running_with(marker), timeout=30)  # the tool's shell went with it
        assert len(stub.loop_requests) == 1  # the model was never asked again
