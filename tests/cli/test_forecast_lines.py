"""`session status` and `budget status` show the forecasts (tests/cost/test_forecast.py works out the times)."""

from __future__ import annotations

import json
import time
from typing import Any

from cocoplus.core.paths import Layout
from tests.cost.test_forecast import expected_lines, install_history


def test_session_status_and_budget_status_show_the_forecast(project: Layout, cli: Any) -> None:
    now = time.time()
    times = install_history(project, now)
    want = expected_lines(times, now)
    code, out, err = cli("session", "status", cwd=project.project)
    assert code == 0, err
    flat = " ".join(out.split())
    for line in want:
        assert " ".join(line.split()) in flat, out
    code, out, err = cli("budget", "status", cwd=project.project)
    assert code == 0, err
    assert "forecast at the current rate" in out
    flat = " ".join(out.split())
    for line in want:
        assert " ".join(line.split()) in flat, out
    code, out, err = cli("budget", "status", "--json", cwd=project.project)
    assert code == 0, err
    fc = json.loads(out)["forecast"]
    assert fc["cost"]["exhausted"] == {"at": times["exhausted"], "reached": False}
    assert fc["cost"]["reserve"] == {"at": times["reserve"], "reached": False}
    assert fc["iterations"]["cap_at"] == {"at": times["cap"], "reached": False}
