"""`cocoplus telemetry export` (issue 34, "Export it as OpenTelemetry traces"): the timeline sent over OTLP/HTTP
(protobuf) by the real CLI (a child process) to a loopback receiver that decodes `ExportTraceServiceRequest` with
opentelemetry-proto (tests/support/otlp.py; no Jaeger, Collector or Tempo can be installed here).

The project: a supervised goal (enabled by `autonomy.enable`, finished by `autonomy.finish`, as the doors do), a
brain round in it, the run the hook recorded (tests/report/recorded.py: 40 Claude Code tool calls with their
tool-use ids, a secret in call 5's input) as worker w1's first runtime, then w1's failover to Codex (the record
`workers.take_over` leaves), and a worker w2 launched outside supervision."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core import clock, fsio, jsonl
from cocoplus.core.paths import Layout
from cocoplus.report import traces
from cocoplus.supervision import autonomy, state
from cocoplus.telemetry import status as telemetry_status
from tests.conftest import assert_no_traceback, run_cli_subprocess
from tests.report import recorded
from tests.report import test_timeline as recorded_timeline
from tests.server import conftest as server
from tests.support import recorded_runs
from tests.support.otlp import Receiver, Span
from tests.support.waiting import wait_until

TOKEN = "Bearer otlp-test-0123"
GOAL_SECRET = "ghp_goalsecret0123456789"
SECRETS = (recorded.SECRET, recorded_timeline.GH_TOKEN, "tk_0123456789", GOAL_SECRET, "otlp-test-0123")


def supervised_night(layout: Layout) -> str:
    """The project described above; returns the goal's key (supervision's enabled_at)."""
    autonomy.enable(layout, task_hint=f"make the tests pass (export GITHUB_TOKEN={GOAL_SECRET})")
    goal = str(state.read(layout)["autonomous"]["enabled_at"])
    for rec in (
        {"event": "round_started", "number": 1, "source": "triggers"},
        {"event": "round_finished", "number": 1, "round": 1, "outcome": "succeeded", "error": None},
    ):
        jsonl.append_jsonl(layout.rounds, {"schema_version": 1, "ts": clock.iso(), **rec}, layout.lock("rounds"))
    recorded_timeline.recorded_project(layout)
    w1 = fsio.read_json(layout.worker_record("w1"))
    assert w1 is not None
    w1["goal"] = goal  # as `launch` records it for a worker launched while supervision is on
    fsio.atomic_write_json(layout.worker_record("w1"), w1)
    os.makedirs(layout.worker_dir("w2"))
    fsio.atomic_write_json(layout.worker_record("w2"), {
        "schema_version": 1, "id": "w2", "runtime": "gemini", "task": "tidy", "state": "exited", "unsupervised": True,
        "created_at": "2099-01-02T00:00:00.000Z", "started_at": "2099-01-02T00:00:01.000Z",
        "ended_at": "2099-01-02T00:00:05.000Z", "reason": "exit code 3", "exit": {"code": 3}, "goal": None,
    })  # fmt: skip
    autonomy.finish(layout, "done")
    return goal


def env_for(receiver: Receiver, **extra: str) -> dict[str, str]:
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
        "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=" + TOKEN.replace(" ", "%20"),
        **extra,
    }


def export_once(layout: Layout, receiver: Receiver, **extra: str) -> dict[str, Any]:
    r = run_cli_subprocess(
        "telemetry", "export", "--once", "--json", cwd=layout.project, env=env_for(receiver, **extra)
    )
    assert_no_traceback(r.out, r.err)
    assert r.code == 0, r
    got: dict[str, Any] = json.loads(r.out)
    return got


def every_value(s: Span) -> list[str]:
    """Every attribute value of a span, its events and its links, as text."""
    values = [*s.attributes.values(), *s.resource.values()]
    for _name, a in s.events:
        values += a.values()
    for _t, _s, a in s.links:
        values += a.values()
    return [str(v) for v in values]


def test_one_trace_per_goal_with_the_runs_tools_decisions_and_the_failover_link(project: Layout) -> None:
    goal = supervised_night(project)
    with Receiver() as rx:
        got = export_once(project, rx)
        spans = rx.spans()
        assert got["ok"] and got["spans"] == len(spans) > 40
        # The configured Authorization header came with every request, to the traces path.
        assert {(r.path, r.headers.get("authorization")) for r in rx.requests} == {("/v1/traces", TOKEN)}
        by_name: dict[str, list[Span]] = {}
        for s in spans:
            by_name.setdefault(s.name, []).append(s)

        # One trace for the goal: its root, the round, w1's two runs and every tool call of its sessions.
        goal_trace = traces.trace_id(traces.goal_key(goal))
        (root,) = by_name["invoke_workflow cocoplus"]
        assert (root.trace_id, root.parent_id, root.attributes["gen_ai.operation.name"]) == (
            goal_trace, "", "invoke_workflow"
        )  # fmt: skip
        (rnd,) = by_name["cocoplus.round 1"]
        assert (rnd.trace_id, rnd.parent_id, rnd.attributes["cocoplus.outcome"]) == (
            goal_trace, root.span_id, "succeeded"
        )  # fmt: skip
        claude_run, codex_run = sorted(by_name["invoke_agent w1"], key=lambda s: s.start_ns)
        for run, provider in ((claude_run, "anthropic"), (codex_run, "openai")):
            assert (run.trace_id, run.parent_id) == (goal_trace, root.span_id)
            assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
            assert run.attributes["gen_ai.agent.name"] == "w1"
            assert run.attributes["gen_ai.provider.name"] == provider
        # The failover: Codex's run links to Claude Code's.
        assert [(t, sp, a["cocoplus.link"], a["cocoplus.from_runtime"], a["cocoplus.to_runtime"])
                for t, sp, a in codex_run.links] == [
            (goal_trace, claude_run.span_id, "failover", "claude", "codex")]  # fmt: skip
        assert claude_run.links == []

        # execute_tool spans: the transcript's tool-use ids, under Claude Code's run; the failing pytest an error.
        tools = sorted(by_name["execute_tool Bash"], key=lambda s: s.attributes["cocoplus.call"])
        assert [s.attributes["gen_ai.tool.call.id"] for s in tools] == [f"toolu_rec{n:03d}" for n in range(1, 41)]
        assert {(s.trace_id, s.parent_id) for s in tools} == {(goal_trace, claude_run.span_id)}
        assert [s.attributes["cocoplus.call"] for s in tools if s.status == 2] == list(range(22, 30))
        assert all(s.end_ns - s.start_ns == (5 if 22 <= i + 1 <= 29 else 2) * 10**9 for i, s in enumerate(tools))

        # Decisions as span events with cocoplus.* attributes: the recorded run's costs and the loop's verdicts.
        names = {n for n, _a in claude_run.events}
        assert {"cocoplus.cost", "cocoplus.signal"} <= names, names
        costs = [a for n, a in claude_run.events if n == "cocoplus.cost"]
        assert all(a["cocoplus.kind"] == "cost" and "gen_ai.usage.input_tokens" in a for a in costs[:2])

        # w2, outside supervision: a trace of its own, its span the root, its exit an error.
        (w2,) = by_name["invoke_agent w2"]
        assert w2.trace_id == traces.trace_id(traces.run_key("w2", "2099-01-02T00:00:00.000Z")) != goal_trace
        assert (w2.parent_id, w2.status, w2.attributes["gen_ai.provider.name"]) == ("", 2, "gcp.gemini")
        assert {s.trace_id for s in spans} == {goal_trace, w2.trace_id}

        # No tool input, prompt or goal in any span unless opted in; no secret at all.
        for s in spans:
            assert not any(k in s.attributes for k in ("cocoplus.tool.input", "gen_ai.tool.call.arguments")), s
            text = " ".join(every_value(s))
            assert "pytest -x" not in text and "make the tests pass" not in text, s
            assert not any(secret in text for secret in SECRETS), s

        # Exported again: the cursor holds every span sent, none is sent twice.
        before = len(rx.requests)
        again = export_once(project, rx)
        assert again["spans"] == 0 and len(rx.requests) == before


def test_content_opted_in_is_redacted_and_follows_the_semconv_opt_in(project: Layout) -> None:
    supervised_night(project)
    with Receiver() as rx:
        export_once(
            project,
            rx,
            COCOPLUS_TELEMETRY_LOG_CONTENT="true",
            OTEL_SEMCONV_STABILITY_OPT_IN="gen_ai_latest_experimental",
        )
        spans = rx.spans()
    tools = {s.attributes["gen_ai.tool.call.id"]: s for s in spans if s.name.startswith("execute_tool")}
    assert tools["toolu_rec022"].attributes["gen_ai.tool.call.arguments"] == "pytest -x"
    assert tools["toolu_rec005"].attributes["gen_ai.tool.call.arguments"] == (
        "OPENAI_API_KEY=[redacted] python tools/fetch.py"
    )
    (root,) = [s for s in spans if s.name == "invoke_workflow cocoplus"]
    assert root.attributes["cocoplus.goal.text"] == "make the tests pass (export GITHUB_TOKEN=[redacted]"
    for s in spans:
        text = " ".join(every_value(s))
        assert not any(secret in text for secret in SECRETS), s


def test_the_ids_are_derived_from_the_records_and_a_launched_worker_gets_its_spans_traceparent(project: Layout) -> None:
    supervised_night(project)
    first = traces.build(project)["spans"]
    again = traces.build(project)["spans"]
    assert [(s["trace_id"], s["span_id"]) for s in first] == [(s["trace_id"], s["span_id"]) for s in again]
    w1 = fsio.read_json(project.worker_record("w1"))
    assert w1 is not None
    codex = [s for s in first if s["name"] == "invoke_agent w1"][-1]
    assert traces.traceparent(w1) == f"00-{codex['trace_id']}-{codex['span_id']}-01"


def test_doctor_says_nothing_exports_when_traces_are_configured(project: Layout) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    r = run_cli_subprocess("doctor", "--json", cwd=project.project, env=env)
    assert_no_traceback(r.out, r.err)
    rep = json.loads(r.out)["telemetry"]
    assert rep["problem"].startswith(telemetry_status.NOTHING_EXPORTING), rep
    r = run_cli_subprocess("doctor", cwd=project.project, env=env)
    assert "traces: export pending: nothing exporting" in r.err, r
    # Not configured: doctor says nothing of traces.
    r = run_cli_subprocess("doctor", "--json", cwd=project.project, env={"OTEL_EXPORTER_OTLP_ENDPOINT": ""})
    assert json.loads(r.out)["telemetry"] == {}


def test_a_project_files_endpoint_needs_trust(project: Layout) -> None:
    with open(project.config, "a") as fh:
        fh.write('\n[telemetry]\nendpoint = "http://127.0.0.1:9"\n')
    r = run_cli_subprocess(
        "telemetry", "export", "--once", cwd=project.project, env={"OTEL_EXPORTER_OTLP_ENDPOINT": ""}
    )
    assert_no_traceback(r.out, r.err)
    assert r.code == 1
    assert r.err.strip().splitlines()[-1].endswith("ignored until `cocoplus trust`)"), r.err


@pytest.mark.slow
def test_a_401_shows_in_doctor_and_the_status_route_within_one_batch_interval(project: Layout) -> None:
    """The exporter runs with a batch interval of 0.5 s (COCOPLUS_TELEMETRY_INTERVAL_S, short for the test); the
    receiver answers 401.  The failure is in `doctor` and in the REST route the page reads once the first pass has
    run; the test waits for it with a generous limit and asserts no timing."""
    supervised_night(project)
    with Receiver(status=401) as rx:
        env = {**os.environ, **env_for(rx), "COCOPLUS_TELEMETRY_INTERVAL_S": "0.5"}
        child = subprocess.Popen(
            [sys.executable, "-m", "cocoplus", "telemetry", "export"], cwd=project.project, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            wait_until(lambda: rx.requests, timeout=60)

            def doctor() -> dict[str, Any] | None:
                r = run_cli_subprocess("doctor", "--json", cwd=project.project, env=env_for(rx))
                rep: dict[str, Any] = json.loads(r.out)["telemetry"]
                return rep if rep.get("problem") and "401" in rep["problem"] else None

            rep = wait_until(doctor, timeout=60)
            assert rep["problem"].startswith("trace export failing since "), rep
            assert "authentication failed (HTTP 401)" in rep["problem"]
            assert rep["exporting"] == child.pid and rep["process"] == "cocoplus telemetry export"
            assert TOKEN not in json.dumps(rep) and "otlp-test-0123" not in json.dumps(rep)
            r = run_cli_subprocess("doctor", cwd=project.project, env=env_for(rx))
            assert "traces: trace export failing since" in r.err and "HTTP 401" in r.err, r

            from fastapi.testclient import TestClient  # deferred: the REST door, for this test alone

            from cocoplus.server.app import create_app

            app = create_app(project, token=server.TOKEN, port=server.PORT)
            with TestClient(app, base_url=server.BASE) as client:
                answer = client.get("/api/v1/telemetry", headers={"Authorization": f"Bearer {server.TOKEN}"})
            assert answer.status_code == 200, answer.text
            assert "authentication failed (HTTP 401)" in answer.json()["problem"]
            # A second exporter is refused while this one holds the lock.
            r = run_cli_subprocess("telemetry", "export", "--once", cwd=project.project, env=env_for(rx))
            assert r.code == 1 and "exports for this project already" in r.err, r
        finally:
            child.terminate()
            child.wait(timeout=30)
    assert child.returncode in (0, 1), child.stderr.read() if child.stderr else ""


NIGHT = Path(__file__).resolve().parents[1] / "fixtures" / "night"


def test_the_committed_night_is_one_trace_its_runs_sent_before_the_goal_ends(project: Layout) -> None:
    """The night tests/e2e/test_night.py recorded (tests/fixtures/night): four workers under one goal that was never
    finished.  Its runs, rounds and tool calls are sent; the goal's own root span is not (it has not ended), and
    every span sent names it as its trace and (runs and rounds) as their parent."""
    shutil.copytree(NIGHT, project.root, dirs_exist_ok=True)
    with Receiver() as rx:
        export_once(project, rx)
        spans = rx.spans()
    enabled = [json.loads(line) for line in (NIGHT / "session" / "steps.jsonl").read_text().splitlines()]
    start = next(r["ts"] for r in enabled if r.get("event") == "supervision_enabled")
    goal_trace = traces.trace_id(traces.goal_key(start))
    root = traces.span_id(traces.goal_key(start))
    assert {s.trace_id for s in spans} == {goal_trace}
    assert "invoke_workflow cocoplus" not in {s.name for s in spans}  # the goal goes on: its span is open
    runs = {s.attributes["gen_ai.agent.name"]: s for s in spans if s.name.startswith("invoke_agent ")}
    assert sorted(runs) == ["w1", "w2", "w3", "w4"] and {s.parent_id for s in runs.values()} == {root}
    assert runs["w1"].attributes["gen_ai.provider.name"] == "openai"
    rounds = sorted(s.attributes["cocoplus.round"] for s in spans if s.name.startswith("cocoplus.round "))
    assert rounds == [1, 2, 3]  # round 4 had not finished when the night was recorded
    # The loop guard's stop of w2, with its principal; the operator's permission decision for w3.
    stops = [a for n, a in runs["w2"].events if n == "cocoplus.stop"]
    assert {(a.get("cocoplus.event"), a.get("cocoplus.principal")) for a in stops} >= {
        ("session_stop", "loop-guard")
    }, stops
    decided = [a for n, a in runs["w3"].events if n == "cocoplus.permission"]
    assert decided and all(a["cocoplus.worker"] == "w3" for a in decided), runs["w3"].events
    tools = [s for s in spans if s.name.startswith("execute_tool")]
    assert {s.parent_id for s in tools} <= {r.span_id for r in runs.values()} and len(tools) == 6


def test_spans_go_as_they_end_and_a_pass_with_nothing_new_reads_nothing(project: Layout) -> None:
    """A worker still running: its tool calls are sent, its own span is not; a pass with no file changed sends
    nothing (and makes no request); once its run has ended, the next pass sends that one span alone."""
    from cocoplus.telemetry.export import Exporter  # deferred: the SDK, in this test's own process

    recorded_timeline.recorded_project(project)
    w1 = fsio.read_json(project.worker_record("w1"))
    assert w1 is not None
    running = {**w1, "state": "running", "ended_at": None, "runtimes": w1["runtimes"][:1]}
    fsio.atomic_write_json(project.worker_record("w1"), running)
    with Receiver() as rx:
        ex = Exporter(project, "test", environ=env_for(rx))
        first = ex.pass_once()
        names = {s.name for s in rx.spans()}
        assert first["spans"] == 40 and names == {"execute_tool Bash"}, names
        assert ex.pass_once()["spans"] == 0 and len(rx.requests) == 1
        fsio.atomic_write_json(project.worker_record("w1"), {**running, "state": "exited", "ended_at": clock.iso()})
        assert ex.pass_once()["spans"] == 1
        assert [s.name for s in rx.requests[-1].spans] == ["invoke_agent w1"]
        assert {s.parent_id for s in rx.spans() if s.name.startswith("execute_tool")} == {
            rx.requests[-1].spans[0].span_id
        }
        ex.exporter.shutdown()


def test_the_recorded_failover_of_the_real_clis_is_two_linked_runs_with_each_runtimes_tool_use_ids(
    tmp_path: Path,
) -> None:
    """tests/fixtures/failover (recorded from the real Claude Code and Codex): Claude Code's run, its two tool
    calls with Claude Code's tool-use ids; Codex's run after the rate limit, its call with Codex's call id, and a
    link from it to Claude Code's run."""
    from cocoplus.telemetry.export import Exporter  # deferred: the SDK, in this test's own process

    layout, _home = recorded_runs.materialize("failover", tmp_path)
    with Receiver() as rx:
        ex = Exporter(layout, "test", environ=env_for(rx))
        assert ex.pass_once()["ok"]
        ex.exporter.shutdown()
        spans = rx.spans()
    claude_run, codex_run = sorted((s for s in spans if s.name == "invoke_agent w1"), key=lambda s: s.start_ns)
    assert (claude_run.attributes["gen_ai.provider.name"], codex_run.attributes["gen_ai.provider.name"]) == (
        "anthropic", "openai"
    )  # fmt: skip
    assert [(sp, a["cocoplus.link"], a["cocoplus.reason"]) for _t, sp, a in codex_run.links] == [
        (claude_run.span_id, "failover", "rate limit")
    ]
    ids = {
        run.span_id: sorted(s.attributes["gen_ai.tool.call.id"] for s in spans if s.parent_id == run.span_id)
        for run in (claude_run, codex_run)
    }
    assert ids == {claude_run.span_id: ["toolu_stub_0001", "toolu_stub_0002"], codex_run.span_id: ["call_stub_0001"]}
    assert len({s.trace_id for s in spans if s.name.startswith(("invoke_agent", "execute_tool"))}) == 1
