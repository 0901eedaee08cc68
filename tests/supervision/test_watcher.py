"""The watcher as a real process: bursts, single flight, follow-ups, stalls, one per project."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from cocoplus.core import clock
from cocoplus.core.paths import Layout
from cocoplus.session import registry
from cocoplus.supervision import autonomy
from tests.supervision.conftest import Brain, rounds_finished, rounds_started, wait_until


def attention(layout: Layout, rec: dict, value: str) -> None:
    registry.append_signal(layout, rec, "attention", value, event="Stop")


def make_sessions(layout: Layout, n: int) -> list[dict]:
    return [registry.ensure(layout, "claude", f"burst-{i:02d}", event="SessionStart")[0] for i in range(n)]


def test_a_burst_of_100_signals_from_20_sessions_is_one_round(project: Layout, watchers) -> None:  # type: ignore[no-untyped-def]
    brain = Brain(project, sleep=0.0, quiet=3.0)
    recs = make_sessions(project, 20)
    autonomy.enable(project, task_hint="burst")
    w = watchers()
    t0 = time.monotonic()
    for i in range(100):
        rec = recs[i % 20]
        kind = ("pending", "awaiting_authorization", "awaiting_decision")[i % 3]
        attention(project, rec, kind)
    burst = time.monotonic() - t0
    assert burst < 3.0, f"the burst took {burst:.2f}s, longer than the quiet window; the test would not test debounce"
    wait_until(lambda: rounds_finished(project), timeout=30)
    time.sleep(3.5)  # more than a quiet window: nothing else may start
    started = rounds_started(project)
    assert len(started) == 1, [r["source"] for r in started]
    assert len({t["alias"] for t in started[0]["triggers"]}) == 20
    prompts = brain.prompts()
    assert len(prompts) == 1 and "cc20" in prompts[0] and "Why you were woken" in prompts[0]
    assert autonomy.status(project)["autonomous"]["turns_used"] == 1
    assert w.proc.poll() is None


def test_a_signal_during_a_running_round_causes_exactly_one_follow_up(project: Layout, watchers) -> None:  # type: ignore[no-untyped-def]
    brain = Brain(project, sleep=3.0, quiet=0.3)
    recs = make_sessions(project, 3)
    autonomy.enable(project, task_hint="follow-up")
    watchers()
    attention(project, recs[0], "pending")
    wait_until(lambda: rounds_started(project), timeout=30)
    # While round 1 runs (the brain takes 3 s), three more signals arrive, spaced out.
    for rec in recs:
        time.sleep(0.5)
        registry.append_signal(project, rec, "notify_blocked", None, message="stuck")
    wait_until(lambda: len(rounds_finished(project)) >= 2, timeout=40)
    time.sleep(1.5)
    started = rounds_started(project)
    assert [r["source"] for r in started] == ["triggers", "follow-up"]
    assert sorted(t["alias"] for t in started[1]["triggers"]) == ["cc1", "cc2", "cc3"]
    assert len(brain.prompts()) == 2


def test_excluded_sessions_and_off_supervision_do_not_wake(project: Layout, watchers) -> None:  # type: ignore[no-untyped-def]
    Brain(project, quiet=0.3)
    recs = make_sessions(project, 2)
    watchers()
    attention(project, recs[0], "pending")  # supervision is off
    time.sleep(1.5)
    assert rounds_started(project) == []
    autonomy.enable(project, task_hint="x")
    from cocoplus.supervision import scope

    scope.exclude(project, recs[1]["alias"])
    registry.append_signal(project, recs[1], "notify_blocked", None)
    registry.append_signal(project, recs[0], "report_progress", "working")
    registry.append_signal(project, recs[0], "request_context", None)
    time.sleep(1.5)
    assert rounds_started(project) == []
    registry.append_signal(project, recs[0], "report_progress", "needs_review")
    wait_until(lambda: rounds_started(project), timeout=20)
    assert rounds_started(project)[0]["triggers"][0]["value"] == "needs_review"


def test_a_stall_is_detected_with_short_settings(project: Layout, watchers) -> None:  # type: ignore[no-untyped-def]
    brain = Brain(project, quiet=0.2)
    (rec,) = make_sessions(project, 1)
    old = clock.iso(time.time() - 30)
    registry.update(project, rec["id"], lambda r: r.update(attention="awaiting_authorization", attention_since=old))
    autonomy.enable(project, task_hint="stall")
    env = {
        "JARVIS_SUPERVISION_STALL_WATCHDOG_INTERVAL_S": "0.3",
        "JARVIS_SUPERVISION_STALL_THRESHOLD_S": "5",
        "JARVIS_SUPERVISION_STALL_COOLDOWN_S": "600",
        "JARVIS_SUPERVISION_STALL_WATCHDOG_STARTUP_DELAY_S": "0.5",
    }
    watchers(env=env)
    wait_until(lambda: rounds_started(project), timeout=20)
    time.sleep(2.0)  # the cooldown keeps it to one
    started = rounds_started(project)
    assert len(started) == 1 and started[0]["triggers"][0]["kind"] == "stall"
    assert "long time (stall watchdog)" in brain.prompts()[0]
    steps = [json.loads(x) for x in Path(project.steps).read_text().splitlines()]
    assert [s["attention"] for s in steps if s["event"] == "stall_detected"] == ["awaiting_authorization"]


def test_the_stall_watchdog_can_be_disabled(project: Layout, watchers) -> None:  # type: ignore[no-untyped-def]
    Brain(project, quiet=0.2)
    (rec,) = make_sessions(project, 1)
    registry.update(project, rec["id"], lambda r: r.update(attention="pending", attention_since=clock.iso(time.time() - 3600)))
    autonomy.enable(project)
    watchers(env={"JARVIS_SUPERVISION_STALL_WATCHDOG_INTERVAL_S": "0", "JARVIS_SUPERVISION_STALL_WATCHDOG_STARTUP_DELAY_S": "0", "JARVIS_SUPERVISION_STALL_THRESHOLD_S": "1"})
    time.sleep(2.0)
    assert rounds_started(project) == []


def test_last_worker_exit_converges_and_closes(project: Layout, watchers) -> None:  # type: ignore[no-untyped-def]
    Brain(project, quiet=0.2)
    (rec,) = make_sessions(project, 1)
    autonomy.enable(project, task_hint="converge")
    watchers()
    registry.update(project, rec["id"], lambda r: r.update(state="exited"))
    registry.append_signal(project, rec, "exit", "exited")
    wait_until(lambda: not autonomy.status(project)["autonomous"]["enabled"], timeout=20)
    assert autonomy.status(project)["autonomous"]["finish_reason"] == "converged"
    assert rounds_started(project) == []


def test_only_one_watcher_per_project_and_it_survives_kill_9(project: Layout, watchers) -> None:  # type: ignore[no-untyped-def]
    Brain(project)
    first = watchers()
    second = subprocess.run([sys.executable, "-m", "cocoplus", "supervisor", "run"], cwd=project.project, env=dict(os.environ, COCOPLUS_DIR=project.root), capture_output=True, text=True, timeout=30)
    assert second.returncode == 1 and f"pid {first.proc.pid}" in second.stderr
    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait()
    third = watchers()  # the OS released the lock: a new one starts at once
    assert third.proc.poll() is None


def test_sigterm_stops_it_cleanly_and_status_says_so(project: Layout, watchers, cli) -> None:  # type: ignore[no-untyped-def]
    Brain(project)
    w = watchers()
    st = json.loads(cli("supervisor", "status", "--json", cwd=project.project).out)
    assert st["running"] and st["pid"] == w.proc.pid
    code, out, err = cli("supervisor", "stop", cwd=project.project)
    assert code == 0 and "stopped" in out
    assert w.proc.wait(timeout=10) == 0
    assert "stopped" in w.text()
    assert not os.path.exists(project.supervisor_pid)


def test_polling_fallback_still_wakes(project: Layout, watchers) -> None:  # type: ignore[no-untyped-def]
    Brain(project, quiet=0.2)
    (rec,) = make_sessions(project, 1)
    autonomy.enable(project)
    w = watchers(polling=True)
    assert "(polling)" in w.text()
    attention(project, rec, "pending")
    wait_until(lambda: rounds_started(project), timeout=20)


def test_a_damaged_signal_line_is_reported_and_the_watcher_carries_on(project: Layout, watchers) -> None:  # type: ignore[no-untyped-def]
    Brain(project, quiet=0.2)
    (rec,) = make_sessions(project, 1)
    autonomy.enable(project)
    w = watchers()
    with open(project.signals, "a") as fh:
        fh.write("{not json}\n")
    attention(project, rec, "pending")
    wait_until(lambda: rounds_started(project), timeout=20)
    assert w.proc.poll() is None


def test_supervise_enables_starts_the_watcher_and_runs_a_round_at_once(project: Layout, cli) -> None:  # type: ignore[no-untyped-def]
    brain = Brain(project)
    make_sessions(project, 2)
    try:
        code, out, err = cli("supervise", "watch", "the", "release", "--json", cwd=project.project)
        assert code == 0, err
        res = json.loads(out)
        assert res["autonomous"]["enabled"] and res["autonomous"]["task_hint"] == "watch the release"
        assert res["initial_round"]["started"] and res["supervisor"]["pid"]
        wait_until(lambda: brain.prompts(), timeout=30)
        assert "watch the release" in brain.prompts()[0] and "supervision started" in brain.prompts()[0]
    finally:
        cli("supervisor", "stop", cwd=project.project)
