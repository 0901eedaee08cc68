"""A real Claude Code worker launched into a project without its cocoplus hooks: refused with the fix; then
`--unsupervised` runs it (its tool really runs; no cocoplus rule applies, as it says), and says what it gives up."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from cocoplus.core.paths import Layout
from tests.e2e.conftest import Project, cocoplus
from tests.e2e.test_workers_claude import cli_json, env_for, worker
from tests.supervision.workers_support import stop_workers
from tests.support.model_stubs import AnthropicStub, text, tool
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture
def bare(e2e_project: Project) -> Iterator[Project]:
    yield e2e_project  # no `cocoplus install claude`
    stop_workers(Layout(str(e2e_project.root)))


def test_a_claude_worker_without_its_hooks_is_refused_and_runs_only_unsupervised(bare: Project) -> None:
    p = bare
    notes = p.project / "notes.txt"
    notes.write_text("marker-5d1e\n")
    with AnthropicStub([tool("Read", file_path=str(notes)), text("done")]) as stub:
        env = env_for(p, stub)
        r = cocoplus(p.project, "launch", "claude", "Read the notes.", env=env, check=False)
        assert r.returncode == 1 and r.stdout == "", r
        line = r.stderr.strip()
        assert "\n" not in line and "run `cocoplus install claude` here" in line and "--unsupervised" in line, line
        assert stub.loop_requests == []  # Claude Code never started
        launched = cli_json(p, env, "launch", "claude", "Read the notes.", "--unsupervised")
        assert "unsupervised: no kill switch at its tool calls" in launched["message"], launched
        done = wait_until(lambda: (w := worker(p, env, "w1"))["state"] not in ("queued", "running") and w, timeout=180)
        assert done["unsupervised"] is True and done["session"] is None  # no hook recorded a session
        assert "marker-5d1e" in json.dumps(stub.loop_requests[-1])  # its tool ran, outside cocoplus' hooks
