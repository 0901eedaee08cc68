"""The timeline of runs recorded from the real CLIs (issue 34, "Recorded fixtures"), checked field by field.

tests/fixtures/failover: a Claude Code worker ran two commands, was stopped by a rate limit, and the watcher moved it
to Codex, which ran one (tests/e2e/test_recorded_runs.py recorded it and checks, on every run, that a new record has
this one's shape).  tests/fixtures/night: the scripted night (tests/e2e/test_night.py).  Both are laid out again as
projects of their own (tests/support/recorded_runs.py) and read by the real timeline.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cocoplus.core.paths import Layout
from cocoplus.report import timeline
from tests.support import recorded_runs


def events_of(name: str, tmp_path: Path) -> tuple[Layout, list[dict[str, Any]]]:
    layout, _home = recorded_runs.materialize(name, tmp_path)
    got = timeline.timeline(layout)
    assert got["problems"] == []
    return layout, got["events"]


def test_the_failover_runs_tool_calls_carry_each_runtimes_own_tool_use_id(tmp_path: Path) -> None:
    _layout, events = events_of("failover", tmp_path)
    calls = [e for e in events if e["kind"] == "tool"]
    got = [(e["runtime"], e["worker"], e["detail"]["call"], e["detail"]["tool"], e["detail"]["subject"],
            e["detail"]["tool_use_id"], e["detail"]["error"], e["detail"]["ts_estimated"]) for e in calls]  # fmt: skip
    assert got == [
        ("claude", "w1", 1, "Bash", "echo recorded-step-1", "toolu_stub_0001", False, False),
        ("claude", "w1", 2, "Bash", "echo recorded-step-2", "toolu_stub_0002", False, False),
        ("codex", "w1", 1, "Bash", "echo recorded-step-3", "call_stub_0001", False, False),
    ]
    # Each from its runtime's own record: its time the call's, its duration from call to result.
    for e in calls:
        assert e["detail"]["duration_s"] is not None and 0 < e["detail"]["duration_s"] < 60, e
        assert e["text"].startswith(f"tool call {e['detail']['call']}: Bash {e['detail']['subject']} in ")
    claude_cs = {e["session"] for e in calls if e["runtime"] == "claude"}
    codex_cs = {e["session"] for e in calls if e["runtime"] == "codex"}
    assert len(claude_cs) == len(codex_cs) == 1 and claude_cs != codex_cs


def test_the_failover_is_one_event_between_the_limit_and_the_codex_run(tmp_path: Path) -> None:
    _layout, events = events_of("failover", tmp_path)
    order = [(e["source"], e["kind"], e["runtime"]) for e in events if e["kind"] in ("tool", "limit", "failover")]
    assert order == [
        ("calls", "tool", "claude"), ("calls", "tool", "claude"), ("signals", "limit", "claude"),
        ("workers", "failover", "codex"), ("calls", "tool", "codex"),
    ]  # fmt: skip
    [fo] = [e for e in events if e["kind"] == "failover"]
    assert (fo["worker"], fo["text"]) == ("w1", "failover: claude -> codex (rate limit)")
    assert (fo["detail"]["from"], fo["detail"]["to"], fo["detail"]["reason"], fo["detail"]["by"]) == (
        "claude", "codex", "rate limit", "the watcher (failover)",
    )  # fmt: skip
    codex_cs = next(e["session"] for e in events if e["kind"] == "tool" and e["runtime"] == "codex")
    assert fo["session"] == codex_cs and fo["detail"]["from_session"] != codex_cs
    [launched] = [e for e in events if e["text"].startswith("launched (sandbox ")]  # its profile named
    assert (launched["runtime"], launched["worker"]) == ("claude", "w1")  # where it started, not where it ended
    [ended] = [e for e in events if e["text"].startswith("run ended")]
    assert (ended["runtime"], ended["detail"]["exit"]["code"]) == ("codex", 0)


def test_every_event_of_a_session_names_its_worker_and_each_id_is_stable(tmp_path: Path) -> None:
    layout, events = events_of("failover", tmp_path)
    with_session = [e for e in events if e["session"]]
    assert with_session and all(e["worker"] == "w1" for e in with_session), [
        (e["source"], e["text"]) for e in with_session if e["worker"] != "w1"
    ]
    ids = [e["id"] for e in events]
    assert len(set(ids)) == len(ids)
    assert [e["id"] for e in timeline.timeline(layout)["events"]] == ids
    # Laid out again elsewhere, the same record gives the same ids: they come from the records, not the place.
    _again, other = events_of("failover", tmp_path / "again")
    assert [e["id"] for e in other] == ids


def test_the_cost_of_each_runtime_is_in_the_timeline(tmp_path: Path) -> None:
    _layout, events = events_of("failover", tmp_path)
    costs = [e for e in events if e["kind"] == "cost"]
    assert {e["runtime"] for e in costs} == {"claude", "codex"}
    for e in costs:
        assert e["detail"]["model"] in ("claude-opus-5-5", "gpt-5-codex") and e["detail"]["usd"] > 0
        assert e["text"].startswith("cost $") and e["detail"]["model"] in e["text"]


def test_the_nights_timeline_has_its_stops_merge_and_decisions(tmp_path: Path) -> None:
    _layout, events = events_of("night", tmp_path)
    stops = [(e["worker"], e["text"].split(":")[0]) for e in events if e["kind"] == "stop"]
    assert ("w2", "loop guard stop") in stops and ("w2", "session stop") in stops
    merge = [e for e in events if e["kind"] == "merge"]
    assert [e["worker"] for e in merge] == ["w4", "w4"]
    assert merge[0]["text"].startswith("commit ") and merge[1]["text"].startswith("merged cocoplus/tree into ")
    assert merge[1]["detail"]["commit"] and merge[1]["detail"]["into"]
    perms = [e for e in events if e["kind"] == "permission"]
    assert [(e["worker"], e["detail"]["principal"]) for e in perms] == [("w3", "operator"), ("w4", "operator")]
    [limit] = [e for e in events if e["kind"] == "limit"]
    assert (limit["worker"], limit["runtime"]) == ("w1", "codex")
    ended = {e["worker"]: e["text"] for e in events if e["text"].startswith("run ended")}
    assert ended["w2"].startswith("run ended: stopped by the loop guard")
    assert all(ended[w] == "run ended: ended (exit code 0)" for w in ("w1", "w3", "w4"))


def test_a_fixture_and_its_timeline_name_no_path_of_the_machine_it_was_recorded_on(tmp_path: Path) -> None:
    for name in ("failover", "night"):
        for f in (recorded_runs.FIXTURES / name).rglob("*"):
            if f.is_file():
                text = f.read_text(encoding="utf-8")
                assert "pytest-of-" not in text and "/dev/shm/" not in text, f
                assert "pytest-of-" not in str(f), f


def test_replaying_the_nights_stall_threshold_finds_the_worker_left_waiting(tmp_path: Path) -> None:
    """The asker (w3) waited for an authorization half a second, then in `pending` about five: under a 2 s
    threshold the watchdog's own check (`stall_due`) makes the second a stall, 2 s after it began; under 0.3 s both;
    under 10 s neither."""
    import json

    from tests.conftest import run_cli_subprocess

    layout, _home = recorded_runs.materialize("night", tmp_path)
    policy = tmp_path / "stall.toml"

    def stalls(threshold: float, cooldown: float = 0.0) -> list[dict[str, Any]]:
        policy.write_text(f"[supervision]\nstall_threshold_s = {threshold}\nstall_cooldown_s = {cooldown}\n")
        r = run_cli_subprocess("replay", "w3", "--policy", str(policy), "--json", cwd=layout.project)
        assert r.code == 0, r
        out: list[dict[str, Any]] = json.loads(r.out)["stalls"]["stalls"]
        return out

    [one] = stalls(2.0)
    assert (one["attention"], one["since"], one["at"]) == (
        "pending",
        "2026-12-06T10:54:46.065Z",
        "2026-12-06T10:54:48.065Z",
    )
    assert 4 < one["waited_s"] < 6
    assert [s["attention"] for s in stalls(0.3)] == ["awaiting_authorization", "pending"]
    assert stalls(10.0) == []


def test_a_supervised_goal_is_a_run_replay_takes_by_the_id_supervision_status_shows(tmp_path: Path) -> None:
    """The night's workers were launched under one goal (the night was recorded before launch wrote the goal on each
    worker, so this test writes it as launch now does: the time supervision was enabled for it).  `supervision
    status` names the goal's id; `replay` of that id takes every worker's sessions, in launch order, and stops
    where the loop guard stopped w2."""
    import json

    from tests.conftest import run_cli_subprocess

    layout, _home = recorded_runs.materialize("night", tmp_path)
    started = json.loads(Path(layout.supervision_state).read_text())["autonomous"]["enabled_at"]
    for w in ("w1", "w2", "w3", "w4"):
        path = Path(layout.worker_record(w))
        rec = json.loads(path.read_text())
        path.write_text(json.dumps({**rec, "goal": started}))
    st = run_cli_subprocess("supervision", "status", "--json", cwd=layout.project)
    assert st.code == 0, st
    goal = json.loads(st.out)["autonomous"]["goal_id"]
    assert goal == "g_20261206T105440732Z"
    assert f"goal id: {goal} " in run_cli_subprocess("supervision", "status", cwd=layout.project).out
    policy = tmp_path / "cap.toml"
    policy.write_text("[session]\nloop_guard_repeats = 2\niteration_warn_at = 0\n")
    r = run_cli_subprocess("replay", goal, "--policy", str(policy), "--json", cwd=layout.project)
    assert r.code == 0, r
    rep = json.loads(r.out)
    workers = {json.loads(Path(layout.worker_record(w)).read_text())["session"]: w for w in ("w1", "w2", "w3", "w4")}
    assert rep["kind"] == "goal" and [workers[s] for s in rep["sessions"]] == ["w1", "w2", "w3", "w4"]
    assert rep["stopped_at"]["why"] == "loop_guard" and workers[rep["stopped_at"]["session"]] == "w2"
    missing = run_cli_subprocess("replay", "g_20200101T000000000Z", "--policy", str(policy), cwd=layout.project)
    assert missing.code != 0 and "no worker was launched under goal" in missing.err
