"""`cocoplus top` shows when the budgets run out at the current rate (driven through Textual's pilot; the times
are worked out by hand in tests/cost/test_forecast.py)."""

from __future__ import annotations

from typing import Any

from cocoplus.core.paths import Layout
from cocoplus.tui import app as top
from tests.cost.test_forecast import expected_lines, install_history
from tests.tui.conftest import NOW
from tests.tui.test_top import drive, text_of, until


def test_top_shows_the_forecast_lines_and_hides_them_when_nothing_is_forecast(project: Layout) -> None:
    async def quiet(app: top.TopApp, pilot: Any) -> None:
        await until(pilot, lambda: app.snap is not None)
        assert app.query_one("#forecast").display is False  # nothing spent, nothing counted: no line at all

    drive(project, quiet)
    want = expected_lines(install_history(project, NOW), NOW)

    async def body(app: top.TopApp, pilot: Any) -> None:
        await until(pilot, lambda: "cost budget: reserve from" in text_of(app, "#forecast"))
        assert app.query_one("#forecast").display is True
        assert text_of(app, "#forecast").splitlines() == want

    drive(project, body, size=(160, 30))
