"""A budget forecast to run out within `[notify] forecast_warn_s` is told once to a local apprise listener:
once for each budget, however many times the notifier looks again (the times are worked out by hand in
tests/cost/test_forecast.py: the iteration cap in 29 minutes, the cost budget exhausted in 36.5)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from cocoplus.core import clock
from cocoplus.core.paths import Layout
from tests.cost.test_forecast import install_history
from tests.notify.listener import Listener
from tests.notify.test_delivery import kind_of
from tests.notify.test_notifier import NotifyRun
from tests.support.waiting import wait_until


@pytest.fixture
def listener():
    got = Listener()
    yield got
    got.close()


def checked_at(layout: Layout) -> float:
    try:
        state = json.loads(Path(layout.notify_state).read_text())
    except (OSError, ValueError):
        return 0.0
    return clock.parse_iso(state.get("forecast_checked_at")) or 0.0


def forecasts(listener: Listener) -> list[dict]:
    return [b for b in listener.bodies() if kind_of(b) == "budget_forecast"]


@pytest.mark.slow
def test_exhaustion_forecast_within_the_window_is_told_once_per_budget(project: Layout, listener: Listener) -> None:
    now = time.time()
    times = install_history(project, now)
    with open(project.config, "a") as fh:
        fh.write("\n[notify]\nforecast_warn_s = 1800\n")  # 30 min: the cap (29 min away), not the cost (36.5)
    run = NotifyRun(project, {"COCOPLUS_NOTIFY_URLS": listener.url()})
    try:
        wait_until(lambda: len(forecasts(listener)) == 1, timeout=60)
        body = forecasts(listener)[0]
        assert "the iteration cap is forecast to run out in about 2" in body["title"], body  # 28 or 29 min
        assert f"Forecast: iteration cap: 200 tool calls reached at {times['cap'][11:16]} UTC" in body["message"]
        assert "Run: cd " in body["message"] and "raise [session] max_iterations" in body["message"]
        # Looked at again twice more: nothing more is told.
        first = checked_at(project)
        wait_until(lambda: checked_at(project) > first, timeout=60)
        second = checked_at(project)
        wait_until(lambda: checked_at(project) > second, timeout=60)
        assert len(forecasts(listener)) == 1
        steps = [json.loads(x) for x in Path(project.steps).read_text().splitlines()]
        assert [(s["which"], s["at"]) for s in steps if s["event"] == "budget_forecast"] == [
            ("iterations", times["cap"])
        ]

        # A window that now takes in the cost budget's exhaustion: told once too; the cap is not told again.
        config = Path(project.config)
        config.write_text(config.read_text().replace("forecast_warn_s = 1800", "forecast_warn_s = 2400"))
        wait_until(lambda: len(forecasts(listener)) == 2, timeout=60)
        assert "the cost budget is forecast to run out in about 3" in forecasts(listener)[1]["title"]
        third = checked_at(project)
        wait_until(lambda: checked_at(project) > third, timeout=60)
        assert len(forecasts(listener)) == 2
    finally:
        assert run.stop() == 0


def test_a_count_started_again_or_a_new_limit_warns_again(project: Layout, listener: Listener) -> None:
    """The notifier's own rule, looked at directly: once per budget and limit; a count that went down (the
    budget was reset) or a limit that changed is a new crossing."""
    from cocoplus.notify.runner import Notifier

    now = time.time()
    install_history(project, now)
    n = Notifier(project, {"COCOPLUS_NOTIFY_URLS": listener.url()}, send=lambda *a: (True, None))
    n.load_config(force=True)
    n._start_state()

    def warned_now() -> list[str]:
        n.next_forecast = 0.0
        before = Path(project.steps).read_text() if Path(project.steps).exists() else ""
        n.check_forecast(time.time())
        after = Path(project.steps).read_text()[len(before) :]
        return [json.loads(x)["which"] for x in after.splitlines() if '"budget_forecast"' in x]

    assert warned_now() == ["iterations"]  # 29 min away, within the default 30; the cost budget's 36.5 is not
    assert warned_now() == [] and warned_now() == []
    doc = json.loads(Path(project.iteration_budget).read_text())
    fresh = {**doc, "consumed": 0, "rate_marks": []}
    Path(project.iteration_budget).write_text(json.dumps(fresh))  # `session resume --reset-budget`
    assert warned_now() == []  # nothing counted yet: nothing forecast
    Path(project.iteration_budget).write_text(json.dumps(doc))  # counted again to 150 at 100/h: told again
    assert warned_now() == ["iterations"]
    assert warned_now() == []
    config = Path(project.config)
    config.write_text(
        config.read_text().replace("budget_limit = 10.0", "budget_limit = 9.8")
    )  # $2.30 left at $4/h: 33.5 min from now
    n.load_config(force=True)
    assert warned_now() == []
    config.write_text(config.read_text().replace("budget_limit = 9.8", "budget_limit = 9.4"))  # $1.90: 27.5 min
    n.load_config(force=True)
    assert warned_now() == ["cost"]
    assert warned_now() == []
