"""The watcher as a real process: bursts, single flight, follow-ups, stalls, one per project."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cocoplus.core import clock
from cocoplus.core.paths import Layout
from cocoplus.core.shapes import SessionRecord
from cocoplus.session import registry
from cocoplus.supervision import autonomy, rounds
from tests.supervision.conftest import (
    Brain,
    rounds_finished,
    rounds_started,
    triggers_of,
    wait_until,
    watcher_has_processed_every_signal,
)


def attention(layout: Layout, rec: SessionRecord, value: str) -> None:
    registry.append_signal(layout, rec, "attention", value, event="Stop")


def make_sessions(layout: Layout, n: int) -> list[SessionRecord]:
    return [registry.ensure(layout, "claude", f"burst-{i:02d}", event="SessionStart")[0] for i in range(n)]


def round_with(layout: Layout, trigger: tuple) -> list[dict]:
    """Wait for a round that has `trigger` (alias, kind, value); return every round started so far."""
    return wait_until(
        lambda: (started := rounds_started(layout)) and any(trigger in triggers_of(r) for r in started) and started,
        timeout=30,
    )


@pytest.mark.slow
def test_a_burst_of_100_signals_from_20_sessions_is_one_round(project: Layout, watchers) -> None:
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
    # Nothing else may start. The proof that the watcher still listens: one more signal (a
    # sentinel) gets a round of its own, and nothing held back from the burst came with it.
    sentinel = (recs[0]["alias"], "report_progress", "needs_review")
    registry.append_signal(project, recs[0], "report_progress", "needs_review")
    started = round_with(project, sentinel)
    assert len(started) == 2, [(r["source"], len(r["triggers"])) for r in started]
    assert len({t["alias"] for t in started[0]["triggers"]}) == 20
    assert triggers_of(started[1]) == [sentinel]
    wait_until(lambda: len(rounds_finished(project)) == 2, timeout=30)
    prompts = brain.prompts()
    assert len(prompts) == 2 and "cc20" in prompts[0] and "Why you were woken" in prompts[0]
    assert autonomy.status(project)["autonomous"]["turns_used"] == 2
    assert w.proc.poll() is None


@pytest.mark.slow
def test_a_signal_during_a_running_round_causes_exactly_one_follow_up(project: Layout, watchers) -> None:
    brain = Brain(project, quiet=0.3, gated=True)
    recs = make_sessions(project, 3)
    autonomy.enable(project, task_hint="follow-up")
    watchers()
    attention(project, recs[0], "pending")
    wait_until(lambda: rounds_started(project) and brain.prompts(), timeout=30)
    # While round 1 runs (the brain holds its answer until the gate opens), three more signals
    # arrive, each more than a quiet window after the one before.
    for rec in recs:
        time.sleep(0.5)
        registry.append_signal(project, rec, "notify_blocked", None, message="stuck")
    blocked = sorted((r["alias"], "notify_blocked", None) for r in recs)
    wait_until(
        lambda: sorted(triggers_of({"triggers": (rounds.current(project) or {}).get("followup") or []})) == blocked,
        timeout=30,
    )
    assert len(rounds_started(project)) == 1
    brain.open()
    wait_until(lambda: len(rounds_finished(project)) >= 2, timeout=40)
    assert len(brain.prompts()) == 2
    # Exactly one follow-up: a sentinel signal now gets a round of its own, the third.
    sentinel = (recs[0]["alias"], "report_progress", "needs_review")
    registry.append_signal(project, recs[0], "report_progress", "needs_review")
    started = round_with(project, sentinel)
    assert [r["source"] for r in started] == ["triggers", "follow-up", "triggers"], [
        (r["source"], triggers_of(r)) for r in started
    ]
    assert sorted(t["alias"] for t in started[1]["triggers"]) == ["cc1", "cc2", "cc3"]
    assert triggers_of(started[2]) == [sentinel]
    wait_until(lambda: len(rounds_finished(project)) == 3, timeout=40)  # no brain left running


def test_excluded_sessions_and_off_supervision_do_not_wake(project: Layout, watchers) -> None:
    Brain(project, quiet=0.3)
    recs = make_sessions(project, 2)
    watchers()
    attention(project, recs[0], "pending")  # supervision is off
    watcher_has_processed_every_signal(project, recs[0])
    assert rounds_started(project) == []
    autonomy.enable(project, task_hint="x")
    from cocoplus.supervision import scope

    scope.exclude(project, recs[1]["alias"])
    registry.append_signal(project, recs[1], "notify_blocked", None)
    registry.append_signal(project, recs[0], "report_progress", "working")
    registry.append_signal(project, recs[0], "request_context", None)
    watcher_has_processed_every_signal(project, recs[0])
    # A sentinel that does wake: its round is the only one, with nothing but the sentinel in it.
    registry.append_signal(project, recs[0], "report_progress", "needs_review")
    started = round_with(project, (recs[0]["alias"], "report_progress", "needs_review"))
    assert [triggers_of(r) for r in started] == [[(recs[0]["alias"], "report_progress", "needs_review")]]


@pytest.mark.slow
def test_a_stall_is_detected_with_short_settings(project: Layout, watchers) -> None:
    brain = Brain(project, quiet=0.2)
    rec, later = make_sessions(project, 2)
    old = clock.iso(time.time() - 30)
    registry.update(
        project, rec["id"], lambda r: r.update({"attention": "awaiting_authorization", "attention_since": old})
    )
    autonomy.enable(project, task_hint="stall")
    env = {
        "JARVIS_SUPERVISION_STALL_WATCHDOG_INTERVAL_S": "0.3",
        "JARVIS_SUPERVISION_STALL_THRESHOLD_S": "5",
        "JARVIS_SUPERVISION_STALL_COOLDOWN_S": "600",
        "JARVIS_SUPERVISION_STALL_WATCHDOG_STARTUP_DELAY_S": "0.5",
    }
    watchers(env=env)
    first = (rec["alias"], "stall", "awaiting_authorization")
    wait_until(lambda: rounds_started(project), timeout=20)
    # The cooldown keeps it to one. The proof that the watchdog went on checking meanwhile: a
    # second session that stalls 2 s from now is reported, alone.
    since = clock.iso(time.time() - 3)
    registry.update(project, later["id"], lambda r: r.update({"attention": "pending", "attention_since": since}))
    second = (later["alias"], "stall", "pending")
    started = round_with(project, second)
    assert [triggers_of(r) for r in started] == [[first], [second]]
    assert "long time (stall watchdog)" in brain.prompts()[0]
    steps = [json.loads(x) for x in Path(project.steps).read_text().splitlines()]
    assert [(s["alias"], s["attention"]) for s in steps if s["event"] == "stall_detected"] == [
        (rec["alias"], "awaiting_authorization"),
        (later["alias"], "pending"),
    ]


def test_the_stall_watchdog_can_be_disabled(project: Layout, watchers) -> None:
    Brain(project, quiet=0.2)
    (rec,) = make_sessions(project, 1)
    registry.update(
        project,
        rec["id"],
        lambda r: r.update({"attention": "pending", "attention_since": clock.iso(time.time() - 3600)}),
    )
    autonomy.enable(project)
    watchers(
        env={
            "JARVIS_SUPERVISION_STALL_WATCHDOG_INTERVAL_S": "0",
            "JARVIS_SUPERVISION_STALL_WATCHDOG_STARTUP_DELAY_S": "0",
            "JARVIS_SUPERVISION_STALL_THRESHOLD_S": "1",
        }
    )
    # Enabled, the watchdog would report the hour-old `pending` at the watcher's first step (no
    # startup delay). A sentinel signal gets a round: the watcher ran, and no stall came with it.
    sentinel = (rec["alias"], "report_progress", "needs_review")
    registry.append_signal(project, rec, "report_progress", "needs_review")
    started = round_with(project, sentinel)
    assert [triggers_of(r) for r in started] == [[sentinel]]
    steps = [json.loads(x) for x in Path(project.steps).read_text().splitlines()]
    assert [s for s in steps if s["event"] == "stall_detected"] == []


def test_last_worker_exit_converges_and_closes(project: Layout, watchers) -> None:
    Brain(project, quiet=0.2)
    (rec,) = make_sessions(project, 1)
    autonomy.enable(project, task_hint="converge")
    watchers()
    registry.update(project, rec["id"], lambda r: r.update({"state": "exited"}))
    registry.append_signal(project, rec, "exit", "exited")
    wait_until(lambda: not autonomy.status(project)["autonomous"]["enabled"], timeout=20)
    assert autonomy.status(project)["autonomous"]["finish_reason"] == "converged"
    assert rounds_started(project) == []


def test_only_one_watcher_per_project_and_it_survives_kill_9(project: Layout, watchers) -> None:
    Brain(project)
    first = watchers()
    second = subprocess.run(
        [sys.executable, "-m", "cocoplus", "supervisor", "run"],
        cwd=project.project,
        env=dict(os.environ, COCOPLUS_DIR=project.root),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert second.returncode == 1 and f"pid {first.proc.pid}" in second.stderr
    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait()
    third = watchers()  # the OS released the lock: a new one starts at once
    assert third.proc.poll() is None


def test_sigterm_stops_it_cleanly_and_status_says_so(project: Layout, watchers, cli) -> None:
    Brain(project)
    w = watchers()
    st = json.loads(cli("supervisor", "status", "--json", cwd=project.project).out)
    assert st["running"] and st["pid"] == w.proc.pid
    code, out, err = cli("supervisor", "stop", cwd=project.project)
    assert code == 0 and "stopped" in out
    assert w.proc.wait(timeout=10) == 0
    assert "stopped" in w.text()
    assert not os.path.exists(project.supervisor_pid)


def test_polling_fallback_still_wakes(project: Layout, watchers) -> None:
    Brain(project, quiet=0.2)
    (rec,) = make_sessions(project, 1)
    autonomy.enable(project)
    w = watchers(polling=True)
    assert "(polling)" in w.text()
    attention(project, rec, "pending")
    wait_until(lambda: rounds_started(project), timeout=20)


def test_a_damaged_signal_line_is_reported_and_the_watcher_carries_on(project: Layout, watchers) -> None:
    Brain(project, quiet=0.2)
    (rec,) = make_sessions(project, 1)
    autonomy.enable(project)
    w = watchers()
    with open(project.signals, "a") as fh:
        fh.write("{not json}\n")
    attention(project, rec, "pending")
    wait_until(lambda: rounds_started(project), timeout=20)
    assert w.proc.poll() is None


def test_supervise_enables_starts_the_watcher_and_runs_a_round_at_once(project: Layout, cli) -> None:
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


def test_start_detached_returns_once_the_watcher_has_written_its_pid(project: Layout) -> None:
    from cocoplus.supervision import watcher

    Brain(project)
    pid = watcher.start_detached(project)
    try:
        # Not just its lock: its pid file too, so a caller never reports the pid as unreadable (-1).
        assert pid is not None and watcher.running_pid(project) == pid
        assert watcher.start_detached(project) is None  # one per project
    finally:
        if pid is not None and not watcher.stop(project)["stopped"]:
            os.kill(pid, signal.SIGTERM)  # stop() needs the pid file this test is about
