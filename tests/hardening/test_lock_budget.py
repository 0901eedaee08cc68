"""Bounded lock waits: one budget for every lock a hook takes, a timeout handled where its lock is
taken, and every tool call counted exactly once, with each lock held by a stopped process."""

from __future__ import annotations

import os
import time

import pytest

from cocoplus.core import lock as lockmod
from cocoplus.core.errors import LockTimeout
from cocoplus.core.lock import Budget, Lock
from cocoplus.session import events, iteration, killswitch, registry, status, steering
from tests.hardening.support import held_by_stopped_process
from tests.support.typed import present

SLACK = 1.5  # process start-up and scheduling on a loaded machine; waits themselves are bounded exactly

EVERY_LOCK = ("iteration-budget", "progress", "steps", "sessions", "signals", "steer", "kill-switch")


def test_a_hook_budget_leaves_at_least_two_seconds_of_the_installed_timeout():
    for timeout_s in (1, 3, 5, 10, 30, 600):
        b = Budget.for_hook(timeout_s)
        assert b.seconds <= max(0.0, timeout_s - 2)
    assert Budget.for_hook(10).seconds == pytest.approx(7.0)


def test_a_held_progress_lock_neither_doubles_the_count_nor_blames_the_budget_lock(project):
    with held_by_stopped_process(project.lock("progress")):
        start = time.monotonic()
        out = iteration.count(project, cap=100, warn_at=80, timeout=0.3)
        took = time.monotonic() - start
        assert present(out.budget)["consumed"] == 1 and not out.spooled
        assert iteration.spooled(project) == 0  # no second increment waiting to be folded in
        assert any("progress.lock" in p and "PROGRESS.md" in p for p in out.problems)
        assert not any("iteration-budget.lock" in p for p in out.problems)
        assert took < 0.3 + SLACK  # the caller's timeout, not a fixed 10 s
    out = iteration.count(project, cap=100, warn_at=80)
    assert present(out.budget)["consumed"] == 2
    assert "- Consumed: 2" in open(project.progress).read()


@pytest.mark.slow
def test_every_lock_held_by_a_stopped_process_one_budget_bounds_all_waits(project):
    """What PostToolUse, UserPromptSubmit and SessionStart do, in one process, with every lock held."""
    steering.steer(project, "look at the tests")
    budget = Budget(2.0)
    timings: dict[str, float] = {}

    def timed(name, fn, *args, **kwargs):
        t = time.monotonic()
        try:
            return fn(*args, **kwargs)
        except LockTimeout as exc:
            return exc
        finally:
            timings[name] = time.monotonic() - t

    with held_by_stopped_process(*(project.lock(n) for n in EVERY_LOCK)):
        start = time.monotonic()
        out = timed("count", iteration.count, project, 100, 80, timeout=5.0, budget=budget)
        step = timed("log_step", events.log_step, project, "checkpoint_requested", 5.0, budget=budget)
        rec = timed(
            "registry", registry.ensure, project, "claude", "sess-1", event="PostToolUse", timeout=5.0, budget=budget
        )
        claim = timed("claim_steer", steering.claim_steer, project, 5.0, budget=budget)
        st = timed("set_state", status.set_state, project, "running", "started", timeout=5.0, budget=budget)
        stop = timed(
            "auto_stop", killswitch.auto_stop, project, "loop", source="loop-guard", timeout=5.0, budget=budget
        )
        total = time.monotonic() - start

        assert out.spooled and out.budget is None  # kept, to be counted later
        assert isinstance(step, LockTimeout) and isinstance(rec, LockTimeout)
        assert isinstance(claim, LockTimeout) and isinstance(st, LockTimeout)
        assert stop["created"] is True and stop["state_written"] is False  # the stop is made all the same
        assert total < budget.seconds + SLACK, timings  # all waits together, not 5 s per lock
        assert os.path.exists(project.steer)  # nothing claimed, nothing lost
    out = iteration.count(project, cap=100, warn_at=80)
    assert present(out.budget)["consumed"] == 2  # the spooled call and this one: each counted exactly once


def test_a_process_budget_bounds_locks_whose_callers_pass_no_budget(project):
    old = lockmod.set_process_budget(Budget(1.0))
    try:
        with held_by_stopped_process(project.lock("progress"), project.lock("steps")):
            start = time.monotonic()
            with pytest.raises(LockTimeout):
                iteration.update_progress(project, lambda t: t + "x")  # default timeout: 10 s
            with pytest.raises(LockTimeout):
                events.log_step(project, "x")  # default timeout: 5 s
            assert time.monotonic() - start < 1.0 + SLACK
    finally:
        lockmod.set_process_budget(old)


def test_an_exhausted_budget_still_takes_a_free_lock(project):
    budget = Budget(0.0)
    with Lock(project.lock("steps"), 5.0, budget):
        pass
    assert events.log_step(project, "still_logged", budget=budget)["event"] == "still_logged"
