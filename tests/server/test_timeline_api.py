"""`GET /api/v1/timeline` and `GET /api/v1/replay` (issue 34, "See it" and "Replay a policy"): the same events and
the same replay as `cocoplus timeline --json` and `cocoplus replay --json` (the real CLI, a child process), each
worker's sandbox profile (issue 35, "Seen everywhere"), and no secret in either answer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from cocoplus.report import replay
from tests.conftest import run_cli_subprocess
from tests.report import recorded
from tests.server import timeline_project
from tests.server.conftest import BASE, PORT, TOKEN


@pytest.fixture
def tclient(project: Layout) -> Iterator[Any]:
    from fastapi.testclient import TestClient

    from cocoplus.server.app import create_app

    timeline_project.build(project)
    with TestClient(create_app(project, token=TOKEN, port=PORT), base_url=BASE, raise_server_exceptions=False) as c:
        yield c


def cli(layout: Layout, *argv: str) -> dict[str, Any]:
    r = run_cli_subprocess(*argv, "--json", cwd=layout.project)
    assert r.code == 0, r
    out: dict[str, Any] = json.loads(r.out)
    return out


def test_the_timeline_route_answers_what_the_cli_prints(tclient: Any, project: Layout) -> None:
    r = tclient.get("/api/v1/timeline", params={"limit": 0})
    assert r.status_code == 200, r.text
    got = r.json()
    assert got == cli(project, "timeline", "--limit", "0")
    assert [e["detail"]["call"] for e in got["events"] if e["kind"] == "tool"] == list(range(1, 41))
    w1, w2 = got["workers"]["w1"], got["workers"]["w2"]
    assert (w1["sandbox"], w1["runtimes"], w1["sessions"]) == ("workspace", ["claude", "codex"], [timeline_project.CS])
    assert (w2["sandbox"], w2["runtimes"], w2["sessions"]) == ("none", ["gemini"], [])
    launched = {e["worker"]: e["text"] for e in got["events"] if e["kind"] == "worker" and "launched" in e["text"]}
    assert launched == {
        "w1": "launched (sandbox workspace): make the tests pass",
        "w2": "launched (sandbox none): " + timeline_project.HOSTILE_TASK,  # as written: each door makes it inert
    }
    # The page's default: the newest 500; a worker's own, and a window.
    assert tclient.get("/api/v1/timeline").json()["events"] == got["events"][-500:]
    mine = tclient.get("/api/v1/timeline", params={"worker": "w2", "limit": 0}).json()
    assert {e["worker"] for e in mine["events"]} == {"w2"} and list(mine["workers"]) == ["w2"]
    assert mine == cli(project, "timeline", "w2", "--limit", "0")
    assert tclient.get("/api/v1/timeline", params={"since": "1h", "limit": 3}).json()["events"] == got["events"][-3:]


def test_the_timeline_route_refuses_what_the_cli_refuses(tclient: Any) -> None:
    r = tclient.get("/api/v1/timeline", params={"worker": "nobody"})
    assert r.status_code == 404 and "no worker or session 'nobody'" in r.json()["error"], r.text
    for bad in ({"since": "soon"}, {"limit": -1}, {"limit": 100_001}, {"worker": ""}):
        assert tclient.get("/api/v1/timeline", params=bad).status_code == 422, bad


def test_no_secret_in_the_timeline_or_the_replay(tclient: Any) -> None:
    body = tclient.get("/api/v1/timeline", params={"limit": 0}).text
    stop_at_5 = tclient.get("/api/v1/replay", params={"run": "cc1", "max_iterations": 5}).text
    assert "OPENAI_API_KEY=[redacted]" in body and "GITHUB_TOKEN=[redacted]" in body
    assert "OPENAI_API_KEY=[redacted]" in stop_at_5  # the call it stops at is the one with the secret
    for secret in (recorded.SECRET, timeline_project.GH_TOKEN):
        assert secret not in body and secret not in stop_at_5


def test_what_if_the_cap_had_been_20_is_the_replay_of_a_policy_file(
    tclient: Any, project: Layout, tmp_path: Path
) -> None:
    r = tclient.get("/api/v1/replay", params={"run": "w1", "max_iterations": 20})
    assert r.status_code == 200, r.text
    rep = r.json()
    policy = tmp_path / "cap.toml"
    policy.write_text("[session]\nmax_iterations = 20\n")
    assert rep == cli(project, "replay", "w1", "--policy", str(policy))
    stop = rep["stopped_at"]
    assert (stop["call"], stop["why"], stop["cap"], stop["tool_use_id"]) == (20, "iteration_cap", 20, "toolu_rec020")
    assert stop["ts"] and stop["ts_estimated"] is False  # when call 20 ran, from the transcript: the page draws it
    calls = tclient.get("/api/v1/timeline", params={"limit": 0}).json()["events"]
    (twentieth,) = [e for e in calls if e["kind"] == "tool" and e["detail"]["call"] == 20]
    assert stop["ts"] == twentieth["ts"]
    # The loop guard too, and what a policy leaves out is at its default.
    guard = tclient.get("/api/v1/replay", params={"run": "cc1", "loop_guard_repeats": 3}).json()
    assert [(d["call"], d["decision"]) for d in guard["decisions"]] == [(24, "checkpoint"), (27, "stop")]
    assert guard["policy"]["max_iterations"] == replay.DEFAULTS["max_iterations"] != 20  # the key table's default


def test_what_if_the_budget_had_been_a_cent(tclient: Any, project: Layout, tmp_path: Path) -> None:
    """The cost budget is replayed at the stage boundaries (the turn ends that priced the run's usage): a budget of
    a cent is spent at the first, and the run stops there, as the replay of a policy file says."""
    rep = tclient.get("/api/v1/replay", params={"run": "w1", "budget_limit": 0.01}).json()
    policy = tmp_path / "budget.toml"
    policy.write_text("[session]\nbudget_limit = 0.01\n")
    assert rep == cli(project, "replay", "w1", "--policy", str(policy))
    assert rep["stopped_at"]["why"] == "cost_budget" and rep["policy"]["budget_limit"] == 0.01
    assert rep["stopped_at"]["call"] < 40


def test_the_replay_route_refuses_a_wrong_value_or_run(tclient: Any) -> None:
    for bad in (
        {"run": "w1", "max_iterations": 0}, {"run": "w1", "loop_guard_repeats": -1}, {"run": "w1", "budget_limit": -1},
        {"run": ""}, {},
    ):  # fmt: skip
        assert tclient.get("/api/v1/replay", params=bad).status_code == 422, bad
    r = tclient.get("/api/v1/replay", params={"run": "nobody", "max_iterations": 5})
    assert r.status_code == 404, r.text
