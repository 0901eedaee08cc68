"""The page shows the forecasts in headless Chromium against a real `cocoplus serve`: their lines under the
charts, and on the spend chart a dashed line from the project's last measured spend to the limit at the current
rate (the times are worked out by hand in tests/cost/test_forecast.py). Screenshots go to test-output/server/."""

from __future__ import annotations

import time
from typing import Any

import pytest

from cocoplus.core import clock
from tests.cost.test_forecast import expected_lines, install_history
from tests.server.conftest import Served
from tests.server.test_browser import SHOTS, page  # noqa: F401 - the fixture
from tests.server.test_browser_sessions import INK, SERIES, bare  # noqa: F401 - the fixture

pytestmark = pytest.mark.timeout(180)


def test_the_forecast_is_a_line_on_the_spend_chart_and_its_words_under_it(bare: Served, page: Any) -> None:
    from playwright.sync_api import expect

    page.goto(f"{bare.url}/#token={bare.token}")
    expect(page.locator("#live")).to_have_text("live")
    expect(page.locator("#chart-spend")).to_have_text("Spend per session (USD): no data yet")
    expect(page.locator("#forecast")).to_have_text("")  # nothing spent, nothing counted: nothing forecast

    now = time.time()
    times = install_history(bare.layout, now)
    want = expected_lines(times, now)
    page.reload()
    expect(page.locator("#live")).to_have_text("live")
    expect(page.locator("#forecast > div")).to_have_text(want)
    expect(page.locator("#chart-spend canvas")).to_have_count(1)
    series = page.evaluate(SERIES, "spend")
    line = [s for s in series if s["label"] == "at the current rate (project)"]
    assert len(line) == 1 and line[0]["dash"] == [4, 4], series
    last = clock.parse_iso(clock.iso(round(now) - 60)) or 0.0
    assert [(p["x"], p["y"]) for p in line[0]["points"]] == [
        (last, 7.5),
        (clock.parse_iso(times["exhausted"]), 10.0),
    ]
    ink = page.evaluate(INK, ["spend", line[0]["stroke"]])
    assert ink is not None and ink["x1"] - ink["x0"] > 20, ink  # drawn, left to right
    page.locator("#charts").screenshot(path=str(SHOTS / "50-forecast-line.png"))
    assert page.errors == []
