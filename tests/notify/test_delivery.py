"""Notifications end to end: a real watcher (`cocoplus supervision watcher run`) with its notifier thread,
events made by the real hooks and commands, apprise delivering to local HTTP targets."""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core import clock, vocab
from cocoplus.core.paths import Layout
from cocoplus.cost import forecast
from tests.conftest import run_cli_subprocess
from tests.hook.helpers import fixture, run_hook
from tests.notify.listener import Hang, Listener, closed_port_url
from tests.supervision.conftest import Watcher, stop_chat_worker
from tests.support.trusting import trust_project
from tests.support.waiting import wait_until

EXPECTED_COMMAND = {
    "ask_human": ("cc1", 'cocoplus answer cc1 "..."'),
    "awaiting_authorization": ("cc2", "cocoplus session stop --session cc2"),
    "pending": ("cc4", 'cocoplus dispatch cc4 "..."'),
    "limited": ("cc5", "cocoplus session resume-at cc5 HH:MM"),
    "operator_stop": ("cc3", "cocoplus session resume --session cc3"),
    "stalled": ("cc1", 'cocoplus answer cc1 "..."'),
    "loop_guard": ("cc3", "cocoplus session resume --session cc3"),  # its own stop: the others go on
    "iteration_cap": ("cc4", "cocoplus session resume --reset-budget"),
    "budget_reserve": (None, "cocoplus budget status"),
    "budget_exhausted": (None, "cocoplus budget status"),
    "budget_stop": (None, "cocoplus budget status; raise [session] budget_limit, then cocoplus session resume"),
    "budget_forecast": (None, "cocoplus session status; raise [session] max_iterations, or checkpoint the work"),
    "supervision_finished": (None, "cocoplus chat log"),
    "summary": (None, "cocoplus summary"),
    "round_failed": (None, "cocoplus chat retry"),
    "collision": ("cc5", "cocoplus session stop --session cc5"),
}


def kind_of(body: dict[str, Any]) -> str:
    m = re.search(r"^Event: (\w+)", body["message"], re.M)
    assert m, body
    return m.group(1)


def cocoplus(layout: Layout, *argv: str) -> None:
    r = run_cli_subprocess(*argv, cwd=layout.project, env={"COCOPLUS_DIR": layout.root})
    assert r.code == 0, (argv, r.out, r.err)


def hook(layout: Layout, event: str, name: str, sid: str, **changes: Any) -> None:
    payload = fixture(name) | {"session_id": sid, "cwd": layout.project} | changes
    r = run_hook(layout, event, payload)
    assert r.code == 0, r


def notifier_caught_up(layout: Layout, tid: str) -> bool:
    """The notifier has read every log to its end and owes the target nothing."""
    try:
        state = json.loads(Path(layout.notify_state).read_text())
    except (OSError, ValueError):
        return False
    for source, path in (("signals", layout.signals), ("steps", layout.steps), ("rounds", layout.rounds)):
        size = os.path.getsize(path) if os.path.exists(path) else 0
        if state["cursors"].get(source) != size:
            return False
    return not any(tid in m["pending"] for m in state["outbox"])


@pytest.mark.slow
def test_one_notification_per_event_kind_and_dead_targets_delay_nothing(project: Layout) -> None:
    from cocoplus.notify.outbox import target_id

    good, hang = Listener(), Hang()
    dead = closed_port_url()
    Path(project.config).write_text(
        "[session]\nmax_iterations = 6\niteration_warn_at = 5\nloop_guard_repeats = 2\n"
        "budget_limit = 1.0\nbudget_reserve_fraction = 0.1\n"
        '[chat]\ncontroller = "broken"\n[accounts.broken]\nkind = "command"\n'
        f'command = ["{sys.executable}", "-c", "import sys; sys.exit(3)"]\n'
        "[supervision]\nquiet_window_s = 0.2\nmax_wait_s = 1\nreconcile_s = 1\n"
        "[notify]\nforecast_warn_s = 0\n"  # no forecast warning until the end (when it comes is a matter of timing)
    )
    trust_project(project)  # the test's own controller, which fails on purpose
    for i in range(1, 7):  # cc5 and cc6, outside the scope, only collide
        hook(project, "SessionStart", "claude-sessionstart-startup.json", f"sess-{i}")
    cocoplus(project, "supervision", "enable", "--scope-mode", "only", "--session", "cc1")
    env = {
        "COCOPLUS_NOTIFY_URLS": f"{good.url()} {dead} {hang.url()}",
        "JARVIS_SUPERVISION_STALL_WATCHDOG_INTERVAL_S": "0.3",
        "JARVIS_SUPERVISION_STALL_THRESHOLD_S": "1",
        "JARVIS_SUPERVISION_STALL_COOLDOWN_S": "3600",
        "JARVIS_SUPERVISION_STALL_WATCHDOG_STARTUP_DELAY_S": "0",
    }
    watcher = Watcher(project, env=env)
    try:
        # The notifier starts at the logs' ends: wait until it has, then make every kind of event.
        wait_until(lambda: os.path.exists(project.notify_state), timeout=30)
        cocoplus(project, "ask-human", "Which database should the tests use?", "--session", "cc1")
        hook(project, "PermissionRequest", "claude-permissionrequest-bash.json", "sess-2")
        hook(project, "StopFailure", "claude-stopfailure-rate-limit.json", "sess-5")  # paused by a rate limit
        for _ in range(4):  # the same call: a checkpoint at 2, a stop at 4
            hook(project, "PostToolUse", "claude-posttooluse-bash.json", "sess-3")
        cocoplus(project, "session", "resume", "--yes")
        for cmd in ("ls", "pwd"):  # calls 5 and 6 of a cap of 6
            hook(project, "PostToolUse", "claude-posttooluse-bash.json", "sess-4", tool_input={"command": cmd})
        cocoplus(project, "session", "resume", "--yes", "--reset-budget")
        for cmd in ("whoami", "date"):  # 2 of 6 again, at a rate that reaches the cap within seconds
            hook(project, "PostToolUse", "claude-posttooluse-bash.json", "sess-4", tool_input={"command": cmd})
        for sid in ("sess-5", "sess-6"):  # both change one file: a collision (calls 1 and 2 of the new budget)
            hook(
                project,
                "PostToolUse",
                "claude-posttooluse-edit.json",
                sid,
                tool_input={"file_path": f"{project.project}/src/app.py"},
            )
        hook(project, "Stop", "claude-stop.json", "sess-4")  # its turn ended: pending
        cocoplus(project, "session", "stop", "--session", "cc3", "--reason", "looping on ls")
        cocoplus(project, "stage", "start", "build")
        cocoplus(project, "budget", "add-cost", "0.95")
        cocoplus(project, "stage", "end", "build")
        cocoplus(project, "stage", "start", "--wrap-up", "wrap")
        cocoplus(project, "budget", "add-cost", "0.1")
        cocoplus(project, "stage", "end", "wrap")
        cocoplus(project, "session", "resume", "--yes")  # without raising the limit: the next boundary stops it again
        r = run_cli_subprocess("stage", "start", "more", cwd=project.project, env={"COCOPLUS_DIR": project.root})
        assert r.code == 1 and "refused: cost budget exhausted" in r.err, r
        others = set(EXPECTED_COMMAND) - {"supervision_finished", "summary", "budget_forecast"}
        wait_until(lambda: others <= {kind_of(b) for b in good.bodies()}, timeout=60)
        # Forecasts now warn: the iteration cap is told once (the cost budget is exhausted). A warning needs a rate
        # measured over ten minutes and ten calls at least (forecast.WARN_MIN_SPAN_S, FORECAST_MIN_CALLS), which a
        # cap of 6 never allows: the count's first mark is moved back 15 minutes and 12 calls.
        doc = json.loads(Path(project.iteration_budget).read_text())
        end = clock.parse_iso(doc["updated_at"]) or 0.0
        doc["rate_marks"] = [[end - 900.0, int(doc["consumed"]) - forecast.FORECAST_MIN_CALLS - 2]]
        Path(project.iteration_budget).write_text(json.dumps(doc))
        config = Path(project.config)
        config.write_text(config.read_text().replace("forecast_warn_s = 0", "forecast_warn_s = 3600"))
        trust_project(project)
        wait_until(lambda: "budget_forecast" in {kind_of(b) for b in good.bodies()}, timeout=60)
        cocoplus(project, "supervision", "finish", "--summary", "all done")
        wait_until(lambda: {"supervision_finished", "summary"} <= {kind_of(b) for b in good.bodies()}, timeout=30)
        wait_until(lambda: notifier_caught_up(project, target_id(good.url())), timeout=30)
        log = Path(project.notify_log).read_text()
    finally:
        watcher.stop()
        stop_chat_worker(project)
        good.close()
        hang.close()

    kinds = Counter(kind_of(b) for b in good.bodies())
    # A failover, a hand-back and an expired request come from the watcher's and a headless worker's own paths:
    # tests/supervision/test_failover.py and tests/session/test_identity.py make them and read their events.
    assert kinds == Counter(set(vocab.NOTIFY_EVENTS) - {"failover", "hand_back", "request_expired"}), kinds
    for body in good.bodies():
        alias, command = EXPECTED_COMMAND[kind_of(body)]
        assert body["title"].startswith("cocoplus proj: "), body
        assert "Project: proj (" in body["message"]
        assert command in body["message"], body
        if alias:
            assert alias in body["title"] and f"Session: {alias} (cs_" in body["message"], body
    assert "Which database should the tests use?" in next(
        b["message"] for b in good.bodies() if kind_of(b) == "ask_human"
    )
    stop = next(b for b in good.bodies() if kind_of(b) == "operator_stop")
    assert "cc3 stopped by " in stop["title"] and "Reason: looping on ls" in stop["message"], stop
    assert "cc4 stopped at the iteration cap: 6 of 6 tool calls used" in next(
        b["title"] for b in good.bodies() if kind_of(b) == "iteration_cap"
    )
    clash = next(b for b in good.bodies() if kind_of(b) == "collision")
    assert clash["title"] == "cocoplus proj: cc5 and cc6 both changed src/app.py", clash
    assert "Also: cc6 (cs_sess-6); file: src/app.py" in clash["message"], clash

    # The hanging target took the first message and never answered: one connection, still open when
    # the good target had received the last of its messages, so nothing waited for it.
    assert len(hang.accepted) == 1
    last_good = max(t for t, _, _ in good.received)
    assert hang.accepted[0] < last_good
    assert not hang.closed or hang.closed[0] > last_good
    # The closed port failed, was logged, and is retried with back-off.
    assert re.search(r"target \w+ failed message 1 n_[0-9a-f]{12} \(.*Connection.*\); try 1, next in 5s", log), log
