"""The decisions added for the phone: a stall (nudge it, stop it, leave it), a budget stop's "raise the cap and
resume", each answered through the same operations as the CLI's, with the operator's authority."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core import clock
from cocoplus.core.errors import UsageError
from cocoplus.core.paths import Layout
from cocoplus.ops import inbox as inbox_ops
from cocoplus.session import agents, killswitch, registry, steering
from cocoplus.session.workspace import init
from tests.supervision.test_dispatch import live_process, session


@pytest.fixture
def project(tmp_path: Path) -> Layout:
    d = tmp_path / "gamma"
    d.mkdir()
    init(str(d / ".cocoplus"))
    agents.register_project(str(d / ".cocoplus"))
    return Layout(str(d / ".cocoplus"))


def write(layout: Layout, text: str) -> None:
    with open(os.path.join(layout.project, "cocoplus.toml"), "w") as fh:
        fh.write(text)


def quiet(rec: Any, layout: Layout, since: str) -> None:
    """No event from the session since `since` (its hooks set the time of its last one)."""

    def change(r: Any) -> None:
        r["last_event_at"] = since

    registry.update(layout, rec["id"], change)


def test_a_quiet_worker_is_a_stall_nudged_with_a_steer(project: Layout) -> None:
    write(project, "[supervision]\nstall_threshold_s = 60\n")
    quiet_since = clock.iso(clock.parse_iso(clock.iso()) - 600)  # type: ignore[operator]
    quiet(session(project, "rid-q", state="running", process=live_process(), worker="w7"), project, quiet_since)
    session(project, "rid-busy", state="running", process=live_process(), worker="w8")
    stalls = [d for d in inbox_ops.inbox(project)["decisions"] if d["kind"] == "stall"]
    assert [d["session"] for d in stalls] == [registry.cs_id_for("rid-q")], stalls
    assert stalls[0]["actions"] == ["nudge", "stop", "leave"] and stalls[0]["default"] == "leave"
    out = inbox_ops.decide(stalls[0]["id"], "nudge", layout=project)
    assert "nudged" in out["message"]
    assert (steering.pending_steer(project, stalls[0]["session"]) or "").strip() == inbox_ops.NUDGE


def test_a_persons_own_quiet_session_is_not_a_stall(project: Layout) -> None:
    write(project, "[supervision]\nstall_threshold_s = 60\n")
    quiet_since = clock.iso(clock.parse_iso(clock.iso()) - 600)  # type: ignore[operator]
    quiet(session(project, "rid-mine", state="running", process=live_process()), project, quiet_since)
    assert not [d for d in inbox_ops.inbox(project)["decisions"] if d["kind"] == "stall"]


def test_raise_the_cost_limit_the_budget_stopped_on_and_resume(project: Layout) -> None:
    write(project, "# the team's limit\n[session]\nbudget_limit = 5.0  # dollars\n")
    killswitch.create_stop(project, "cocoplus", "the cost limit ($5.00) is reached", source="cost-budget")
    stop = next(d for d in inbox_ops.inbox(project)["decisions"] if d["kind"] == "stop")
    assert stop["actions"] == ["raise", "resume", "leave"]
    with pytest.raises(UsageError):
        inbox_ops.decide(stop["id"], "raise", text="3", layout=project)  # not above the limit
    out = inbox_ops.decide(stop["id"], "raise", layout=project)
    assert out["raised"]["limit"] == 10.0 and "$10.00" in out["message"]
    text = Path(project.project, "cocoplus.toml").read_text()
    assert "budget_limit = 10.0" in text and "# the team's limit" in text
    assert killswitch.read_stop(project) is None


def test_a_loop_guards_stop_cannot_be_raised(project: Layout) -> None:
    killswitch.auto_stop(project, "the runaway-loop guard saw the same call 6 times", source="loop-guard")
    stop = next(d for d in inbox_ops.inbox(project)["decisions"] if d["kind"] == "stop")
    assert "raise" not in stop["actions"]
    with pytest.raises(UsageError):
        inbox_ops.decide(stop["id"], "raise", layout=project)
