"""`-p tests.support.lanes`: prints each test's lane (`LANE slow|fast NODEID`); see tests/test_lanes.py."""

from __future__ import annotations

import pytest


@pytest.hookimpl(trylast=True)  # after tests/conftest.py's rule has added its marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        lane = "slow" if item.get_closest_marker("slow") is not None else "fast"
        print(f"LANE {lane} {item.nodeid}")
