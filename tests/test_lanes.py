"""The fast lane (`pytest -m "not slow"`, CONTRIBUTING.md "Running the suite") keeps the rules that matter most.

Every test of the kill switch, the authority model, the rule engine, the
tiers, the fences and the documentation build runs in it: a `slow` mark on
any of them, by hand or by tests/conftest.py's rule, fails here.  And the rule
itself holds: e2e, nats and real-browser tests are slow.  Run within either lane or the whole suite, it reads the
run's own collection; run alone, it collects those files in a pytest process of its own.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import DESELECTED

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The files whose every test stays in the fast lane.
FAST = (
    # the kill switch: the order of a hook's steps, stops per session, the answers' shapes through the installed
    # command, failing closed
    "tests/hook/test_order.py",
    "tests/hook/test_session_controls.py",
    "tests/hook/test_fixtures.py",
    "tests/hook/test_failure_policy.py",
    "tests/hardening/test_unreadable_kill_switch.py",
    # the authority model
    "tests/ops/test_authority.py",
    # the rule engine
    "tests/rules/test_engine.py",
    "tests/rules/test_corpus.py",
    "tests/rules/test_property.py",
    "tests/rules/test_protected.py",
    "tests/rules/test_audit.py",
    # the house's shape
    "tests/test_tiers.py",
    "tests/test_fences.py",
    "tests/test_docs.py",
    "tests/test_complexity.py",
)
# Files whose tests are slow by tests/conftest.py's rule (e2e, nats, a real browser), not by a mark of their own.
SLOW_BY_RULE = (
    "tests/e2e/test_claude.py",  # e2e
    "tests/fleet/test_relay_stop.py",  # nats
    "tests/server/test_browser_inert.py",  # the real browser's `page` fixture
)


def lanes(*paths: str) -> dict[str, str]:
    """Each test collected from `paths` (one pytest process, no xdist) and its lane: "slow" or "fast"."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider"]
        + ["-p", "tests.support.lanes", *paths],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = [line.split(" ", 2) for line in proc.stdout.splitlines() if line.startswith("LANE ")]
    return {nodeid: lane for _, lane, nodeid in found}


def lanes_here(request: pytest.FixtureRequest) -> dict[str, str] | None:
    """The lanes of this run's own collection (what ran and what was left out), if it collected every file named
    here (the whole suite, or either lane); else None."""
    items = [*request.session.items, *request.config.stash.get(DESELECTED, [])]
    lane = {i.nodeid: "slow" if i.get_closest_marker("slow") is not None else "fast" for i in items}
    files = {nodeid.partition("::")[0] for nodeid in lane}
    return lane if all(path in files for path in (*FAST, *SLOW_BY_RULE)) else None


def test_the_rules_that_matter_most_stay_in_the_fast_lane_and_the_rule_holds(request: pytest.FixtureRequest) -> None:
    for path in SLOW_BY_RULE:
        assert os.path.exists(os.path.join(ROOT, path)), path
    lane = lanes_here(request) or lanes(*FAST, *SLOW_BY_RULE)
    for path in FAST:
        mine = {n: v for n, v in lane.items() if n.startswith(path + "::")}
        assert mine, f"{path}: no test collected"
        slow = sorted(n for n, v in mine.items() if v == "slow")
        assert not slow, f"marked slow, so left out of the fast lane: {slow}"
    for path in SLOW_BY_RULE:
        mine = {n: v for n, v in lane.items() if n.startswith(path + "::")}
        assert mine and set(mine.values()) == {"slow"}, f"{path}: {mine}"
