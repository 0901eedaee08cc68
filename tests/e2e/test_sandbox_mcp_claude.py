"""A real Claude Code worker under the `workspace` sandbox calls cocoplus's MCP tools, against the scripted model.

Its MCP server (`cocoplus mcp`, started by Claude Code from `.mcp.json` inside the sandbox) is the relay
(hook/mcprelay.py): `report_progress` and `ask_human` run outside, through the worker's control channel, and what
they write lands in `.cocoplus/`, which is read-only inside.  The model gets each tool's answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from cocoplus.core.paths import Layout
from cocoplus.inbox import decisions
from cocoplus.session import registry
from tests.e2e.conftest import Project, cocoplus, sandboxed
from tests.e2e.test_sandbox_claude import launched_env, tool_results, worker_state
from tests.support.model_stubs import AnthropicStub, text, tool
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e

MILESTONE = "MILESTONE-4e7: the parser is done"
QUESTION = "QUESTION-c19: keep the old parser's API?"


@pytest.fixture
def proj(e2e_project: Project) -> Iterator[Project]:
    yield from sandboxed(e2e_project, "claude")


def test_a_sandboxed_claude_worker_reports_and_asks_through_its_mcp_server(proj: Project) -> None:
    p = proj
    layout = Layout(str(p.root))
    script = [
        tool("mcp__cocoplus__report_progress", status="completed", message=MILESTONE),
        tool("mcp__cocoplus__ask_human", question=QUESTION),
        text("asked"),
    ]
    with AnthropicStub(script) as stub:
        env = launched_env(p, stub)
        out = cocoplus(p.project, "launch", "claude", "Report, then ask.", "--sandbox", "workspace", "--allow",
                       "mcp__cocoplus__report_progress", "--allow", "mcp__cocoplus__ask_human", "--json",
                       env=env)  # fmt: skip
        assert json.loads(out.stdout)["sandbox"] == "workspace"
        w = wait_until(lambda: (x := worker_state(p, env))["state"] in ("exited", "failed") and x, timeout=120)
        log = (p.root / "workers" / "w1" / "output.log").read_text()
        results = tool_results(stub)
    assert w["state"] == "exited", log[-3000:]
    with open(layout.signals) as f:
        signals = [json.loads(x) for x in f.read().splitlines()]
    found = [s for s in signals if s.get("message") == MILESTONE]
    assert found, (results[-3000:], log[-3000:])
    reported = found[0]
    assert reported.get("message") == MILESTONE, signals
    rec = registry.read_record(layout, reported["session"])
    assert rec is not None and rec.get("worker") == "w1", rec  # the worker's own session, as its hooks made it
    assert "cannot reach its control channel" not in results and "which session is this" not in results, results
    (d,) = decisions.collect(layout)
    assert d["kind"] == "question" and QUESTION in json.dumps(d), d
