"""Session state writers: damage is set aside and reported, never silently reset."""

from __future__ import annotations

import json
import os

import pytest

from cocoplus.core import fsio, jsonl
from cocoplus.core.errors import CocoplusError
from cocoplus.session import iteration, killswitch, status, steering
from tests.support.typed import present


def test_set_state_sets_a_damaged_status_aside(project):
    with open(project.status, "wb") as fh:
        fh.write(b'{"state": "crashed"')
    doc = status.set_state(project, "running", "resumed")
    assert doc["state"] == "running"
    kept = doc["replaced_damaged"]
    assert len(kept) == 1 and ".corrupt-" in kept[0]
    with open(kept[0], "rb") as fh:
        assert fh.read() == b'{"state": "crashed"'
    assert present(status.read_status(project))["state"] == "running"
    assert present(status.read_status(project, "pod"))["state"] == "running"


def test_set_state_only_takes_canonical_states(project):
    for bad in ("stopped", "budget_exhausted", "RUNNING", ""):
        with pytest.raises(CocoplusError, match="unknown state"):
            status.set_state(project, bad)
    assert present(status.read_status(project))["state"] == "idle"


def test_count_increments_warns_once_and_stops_at_cap(project):
    outcomes = [iteration.count(project, cap=5, warn_at=3) for _ in range(6)]
    assert [present(o.budget)["consumed"] for o in outcomes] == [1, 2, 3, 4, 5, 6]
    assert [o.warned_now for o in outcomes] == [False, False, True, False, False, False]
    assert [o.capped_now for o in outcomes] == [False, False, False, False, True, False]
    assert [o.capped for o in outcomes] == [False, False, False, False, True, True]
    doc = present(iteration.read(project))
    assert doc["stopped"] is True and doc["warned"] is True
    text = open(project.progress).read()
    assert "- Consumed: 6" in text and "- Cap: 5" in text and "- Warn At: 3" in text


def test_count_on_a_damaged_budget_fails_closed(project):
    with open(project.iteration_budget, "w") as fh:
        fh.write('{"cap": 200, "consumed": "lots"}')
    out = iteration.count(project, cap=200, warn_at=160)
    assert out.corrupt is not None and out.budget is None
    assert "iteration-budget.json" in str(out.corrupt) and out.corrupt.kept_at
    assert not os.path.exists(project.iteration_budget)  # not reset to 0
    assert fsio.quarantined_copies(project.iteration_budget) == [out.corrupt.kept_at]


def test_count_spools_when_the_lock_is_busy_and_folds_it_in_later(project):
    import subprocess
    import sys
    import time

    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from cocoplus.core.lock import Lock; l = Lock(sys.argv[1]); l.acquire(); "
            "print('held', flush=True); time.sleep(30)",
            project.lock("iteration-budget"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert present(holder.stdout).readline().strip() == "held"
        start = time.monotonic()
        out = iteration.count(project, cap=100, warn_at=80, timeout=0.2)
        assert time.monotonic() - start < 3
        assert out.spooled and out.budget is None
        assert len(os.listdir(project.iteration_spool_dir)) == 1
    finally:
        holder.kill()
        holder.wait()
    out = iteration.count(project, cap=100, warn_at=80)
    assert present(out.budget)["consumed"] == 2  # the spooled one and this one
    assert os.listdir(project.iteration_spool_dir) == []


def test_reset_starts_again_and_survives_damage(project):
    for _ in range(3):
        iteration.count(project, cap=10, warn_at=5)
    assert iteration.reset(project)["consumed"] == 0
    with open(project.iteration_budget, "w") as fh:
        fh.write("garbage")
    doc = iteration.reset(project)
    assert doc["consumed"] == 0 and doc["cap"] == 200
    assert fsio.quarantined_copies(project.iteration_budget)


def test_sync_progress_never_overwrites_a_damaged_handoff(project):
    with open(project.progress, "wb") as fh:
        fh.write(b"\xff\xfe not utf-8")
    iteration.count(project, cap=10, warn_at=5)
    with open(project.progress, "rb") as fh:
        assert fh.read() == b"\xff\xfe not utf-8"


def test_automatic_stop_never_replaces_the_operators(project):
    killswitch.stop(project, "ann", "manual stop")
    created, info = killswitch.create_stop(project, "cocoplus", "iteration cap", source="budget", replace=False)
    assert created is False and info["operator"] == "ann"
    assert json.loads(open(project.agent_stop).read())["reason"] == "manual stop"
    killswitch.resume(project, "ann")
    created, doc = killswitch.create_stop(project, "cocoplus", "iteration cap", source="budget", replace=False)
    assert created is True
    assert present(killswitch.read_stop(project))["reason"] == "iteration cap"
    assert [n for n in os.listdir(project.root) if "tmp" in n] == []


def test_steer_claim_delivers_once_and_redelivers_an_orphan(project):
    steering.steer(project, "do the thing")
    claim = steering.claim_steer(project)
    assert claim is not None and claim.text.strip() == "do the thing"
    assert not os.path.exists(project.steer)
    assert steering.in_flight(project) == 1
    steering.finish_steer(project, claim, session="cs_x", runtime="claude")
    assert steering.in_flight(project) == 0
    assert steering.claim_steer(project) is None

    # A consumer that died after claiming (its pid is gone): the next one re-delivers it.
    steering.steer(project, "second")
    dead = present(steering.claim_steer(project))
    os.rename(dead.path, os.path.join(project.steer_claimed_dir, "st_20260101T000000Z_999999999_abcd.md"))
    again = steering.claim_steer(project)
    assert again is not None and again.redelivery and again.text.strip() == "second"
    steering.finish_steer(project, again)
    assert steering.claim_steer(project) is None
    injected = [r for r in jsonl.read_jsonl(project.steps).records if r["event"] == "steer_injected"]
    assert len(injected) == 2


def test_release_steer_keeps_a_newer_one_after_it(project):
    steering.steer(project, "older")
    claim = present(steering.claim_steer(project))
    steering.steer(project, "newer")
    steering.release_steer(project, claim)
    text = open(project.steer).read()
    assert text.index("older") < text.index("newer")
    assert steering.in_flight(project) == 0
