"""The decisions added for the phone: a stall (nudge it, stop it, leave it), a budget stop's "raise the cap and
resume" (the cost limit; the iteration cap, with the real hooks counting), a paused worker's "in another runtime"
(with real runners and stand-in runtimes), each answered through the same operations as the CLI's, with the
operator's authority."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core import clock, jsonl
from cocoplus.core.errors import UsageError
from cocoplus.core.paths import Layout
from cocoplus.ops import inbox as inbox_ops
from cocoplus.session import agents, killswitch, limits, registry, steering
from cocoplus.session.workspace import init
from cocoplus.supervision import resumes, workers
from tests.conftest import Result
from tests.hook.helpers import fixture, run_hook
from tests.supervision.test_dispatch import live_process, session
from tests.supervision.test_failover import proj  # noqa: F401 - a fixture: stand-in claude and codex on PATH
from tests.support.waiting import wait_until

POST = "claude-posttooluse-bash.json"
PRE = "claude-pretooluse-bash.json"


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


# -- raising the iteration cap, with the real hooks -----------------------------------------------------------------


def test_raise_the_iteration_cap_through_decide_and_the_agent_gets_another_caps_worth(
    project: Layout, cli: Callable[..., Result]
) -> None:
    write(project, "[session]\nmax_iterations = 2\niteration_warn_at = 1\n")
    for n in range(2):  # two tool calls: the cap
        assert run_hook(project, "PostToolUse", {**fixture(POST), "tool_input": {"command": f"c{n}"}}).code == 0
    stopped = killswitch.read_stop(project)
    assert stopped is not None and stopped["principal"] == "budget", stopped
    assert "deny" in run_hook(project, "PreToolUse", fixture(PRE)).out  # the next tool call is refused
    (stop,) = [d for d in inbox_ops.inbox(project)["decisions"] if d["kind"] == "stop"]
    assert stop["actions"] == ["raise", "resume", "leave"] and stop["source"] == "iteration-budget"
    r = cli("decide", stop["id"], "raise", cwd=project.project)
    assert r.code == 0 and "the iteration count starts again against its cap" in r.out, r
    assert killswitch.read_stop(project) is None
    assert run_hook(project, "PreToolUse", fixture(PRE)).out == ""  # allowed again
    # Another cap's worth: one call goes through, the second reaches the cap again.
    assert run_hook(project, "PostToolUse", {**fixture(POST), "tool_input": {"command": "c2"}}).code == 0
    assert killswitch.read_stop(project) is None
    run_hook(project, "PostToolUse", {**fixture(POST), "tool_input": {"command": "c3"}})
    again = killswitch.read_stop(project)
    assert again is not None and again["principal"] == "budget"
    # The first stop's decision was answered at the terminal; the new stop is a decision of its own.
    decided = [d for d in inbox_ops.inbox(project, state=None)["decisions"] if d["kind"] == "stop"]
    assert len({d["id"] for d in decided}) == 2 and [d["state"] for d in decided].count("open") == 1, decided
    r = cli("decide", stop["id"], "raise", cwd=project.project)
    assert r.code == 0 and "already resolved" in r.out + r.err, r


# -- in another runtime, with real runners and stand-in runtimes ------------------------------------------------------


def paused(layout: Layout, resets_in: float, since: float) -> Any:
    """Worker w1's session, paused by a limit resetting in `resets_in` seconds (as its StopFailure hook records)."""
    rec, _ = registry.ensure(layout, "claude", "rid-parser", event="SessionStart", info={"worker": "w1"})
    return registry.update(
        layout, rec["id"], lambda r: limits.pause(r, {"reason": "rate limit", "resets_at": None}, resets_in, since)
    )


def test_a_paused_worker_goes_on_in_another_runtime_when_the_operator_says_so(
    proj: Layout, tmp_path: Path, cli: Callable[..., Result]
) -> None:
    # The reset is nearer than failover_after_s: the watcher would wait for it; only the operator's answer moves it.
    write(proj, '[workers]\nfailover = ["codex"]\nfailover_after_s = 7200\nlimit_retry_s = 3600\n')
    workers.launch(proj, "claude", "Write the parser.", by="alice", alias="parser")
    wait_until(lambda: (workers.read(proj, "w1") or {}).get("state") == "exited", timeout=60)
    rec = paused(proj, 600, time.time())
    assert resumes.check(proj, lambda _line: None) == []  # the watcher alone waits
    (d,) = [d for d in inbox_ops.inbox(proj)["decisions"] if d["kind"] == "paused"]
    assert d["actions"] == ["resume", "later", "failover", "leave"] and d["session"] == rec["id"]
    r = cli("decide", d["id"], "failover", cwd=proj.project)
    assert r.code == 0 and "w1 continues in codex" in r.out, r
    prompt = wait_until(lambda: (p := tmp_path / "codex.prompt").exists() and p.read_text(), timeout=60)
    assert "Write the parser." in prompt and "tester asked for its work to go on in Codex CLI now" in prompt, prompt
    w = wait_until(lambda: (x := workers.read(proj, "w1")) and x["state"] == "exited" and x, timeout=60)
    assert w["runtime"] == "codex" and [r["runtime"] for r in w["runtimes"]] == ["claude", "codex"]
    acts = [a for a in jsonl.read_jsonl(proj.rounds).records if a.get("action") == "failover"]
    assert [(a["principal"], a["by"], a["result"]["to"]) for a in acts] == [("operator", "tester", "codex")]
    # Answered: no longer open, resolved by the operator at the terminal; asked again, it says so.
    assert not [x for x in inbox_ops.inbox(proj)["decisions"] if x["kind"] == "paused"]
    (done,) = [x for x in inbox_ops.inbox(proj, state=None)["decisions"] if x["id"] == d["id"]]
    assert (done["state"], done["resolved_by"], done["channel"]) == ("resolved", "tester", "cli"), done
    r = cli("decide", d["id"], "failover", cwd=proj.project)
    assert "already resolved" in r.out + r.err and "via cli" in r.out + r.err, r


def test_a_later_pause_of_the_same_session_is_a_decision_of_its_own(project: Layout) -> None:
    rec = paused(project, 600, time.time() - 3600)
    (first,) = [d for d in inbox_ops.inbox(project)["decisions"] if d["kind"] == "paused"]
    inbox_ops.decide(first["id"], "later", layout=project)
    assert not [d for d in inbox_ops.inbox(project)["decisions"] if d["kind"] == "paused"]
    registry.update(project, rec["id"], lambda r: r.update({"state": "running", "limit": None}))
    paused(project, 600, time.time())  # paused again, by the next limit
    (second,) = [d for d in inbox_ops.inbox(project)["decisions"] if d["kind"] == "paused"]
    assert second["id"] != first["id"] and second["state"] == "open"
