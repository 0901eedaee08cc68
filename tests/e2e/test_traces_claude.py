"""A launched Claude Code worker's own OpenTelemetry spans nest under cocoplus's (issue 34, "Export it as
OpenTelemetry traces"), with the real CLI (the pinned 2.1.328) against a scripted model.

cocoplus launches `claude -p` with `TRACEPARENT` set to the worker's `invoke_agent` span, sampled (`01`).  With
Claude Code's tracing on (`CLAUDE_CODE_ENABLE_TELEMETRY=1`, `CLAUDE_CODE_ENHANCED_TELEMETRY_BETA=1`,
`OTEL_TRACES_EXPORTER=otlp`, `OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf`) it sends its spans to the loopback
receiver when it exits; `cocoplus telemetry export --once` then sends cocoplus's to the same receiver.  Claude
Code's `claude_code.interaction` span is in cocoplus's trace, its parent cocoplus's worker span, and its tool
span carries the tool-use id of cocoplus's `execute_tool` span."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest

from cocoplus.core import fsio
from cocoplus.core.paths import Layout
from cocoplus.report import traces
from tests.e2e.conftest import Project, cocoplus, runtime_bin
from tests.supervision.workers_support import stop_workers
from tests.support.model_stubs import AnthropicStub, text, tool
from tests.support.otlp import Receiver
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture
def proj(e2e_project: Project) -> Iterator[Project]:
    e2e_project.cocoplus("install", "claude")
    yield e2e_project
    stop_workers(Layout(str(e2e_project.root)))


def test_claude_codes_spans_are_children_of_the_workers_invoke_agent_span(proj: Project) -> None:
    p = proj
    layout = Layout(str(p.root))
    script = [tool("Bash", command="echo TRACE-7f3 > traced.txt"), text("traced")]
    with AnthropicStub(script) as stub, Receiver() as rx:
        bindir = os.path.dirname(runtime_bin("claude"))
        env = p.env(
            PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}",
            ANTHROPIC_BASE_URL=stub.url,
            ANTHROPIC_API_KEY="sk-test-local",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_AUTOUPDATER="1",
            CLAUDE_CODE_ENABLE_TELEMETRY="1",
            CLAUDE_CODE_ENHANCED_TELEMETRY_BETA="1",
            OTEL_TRACES_EXPORTER="otlp",
            OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
            OTEL_EXPORTER_OTLP_ENDPOINT=rx.url,
            TRACEPARENT="00-" + "ab" * 16 + "-" + "cd" * 8 + "-01",  # the caller's own: the worker gets its own
        )
        launched = json.loads(
            cocoplus(p.project, "launch", "claude", "Write TRACE-7f3.", "--allow", "Bash", "--json", env=env).stdout
        )
        wid = launched["id"]

        def ended() -> dict[str, object] | None:
            rec = fsio.read_json(layout.worker_record(wid)) or {}
            return rec if rec.get("state") == "exited" else None

        rec = wait_until(ended, timeout=180)
        assert (p.project / "traced.txt").read_text().strip() == "TRACE-7f3"
        # Claude Code flushes its spans as it exits.
        claude = wait_until(lambda: [s for s in rx.spans() if s.name == "claude_code.interaction"], timeout=60)
        out = cocoplus(p.project, "telemetry", "export", "--once", "--json", env=env)
        assert json.loads(out.stdout)["ok"], out
        spans = rx.spans()
    (run,) = [s for s in spans if s.name == f"invoke_agent {wid}"]
    assert run.trace_id == traces.trace_id(traces.run_key(wid, rec["created_at"]))
    assert f"00-{run.trace_id}-{run.span_id}-01" == traces.traceparent(rec)
    (interaction,) = claude
    assert (interaction.trace_id, interaction.parent_id) == (run.trace_id, run.span_id), interaction
    assert interaction.attributes.get("parent.source") == "env", interaction.attributes
    # Every span Claude Code sent is in cocoplus's trace.
    theirs = [s for s in spans if s.name.startswith(("claude_code.", "tool."))]
    assert len(theirs) >= 3 and {s.trace_id for s in theirs} == {run.trace_id}, [s.name for s in theirs]
    # Its tool span and cocoplus's execute_tool span name the same tool call.
    (mine,) = [s for s in spans if s.name == "execute_tool Bash"]
    assert mine.parent_id == run.span_id
    ids = {s.attributes.get("gen_ai.tool.call.id") for s in theirs if s.name == "claude_code.tool"}
    assert mine.attributes["gen_ai.tool.call.id"] in ids, (mine.attributes, ids)
