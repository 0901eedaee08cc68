"""Nothing disappears silently: damaged steers and budgets are kept and reported, temp files of
killed writers are cleaned up, numbers have bounds, and hostile ids stay out of every path."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cocoplus.core import fsio, records
from cocoplus.core.errors import InvalidId, NotFound, StateCorrupt
from cocoplus.session import events, iteration, killswitch, registry, status, steering
from tests.hook.helpers import fixture, run_hook
from tests.support.typed import present

DAMAGED_STEER = b"\xff\xfeRUN rm -rf \x80 now\n"


def test_a_damaged_steer_is_kept_aside_reported_and_never_announced(project):
    with open(project.steer, "wb") as fh:
        fh.write(DAMAGED_STEER)
    r = run_hook(project, "UserPromptSubmit", fixture("claude-userpromptsubmit.json"))
    assert r.code == 0
    assert "Operator note" not in r.out and "rm -rf" not in r.out  # the agent is told nothing it did not get
    assert not os.path.lexists(project.steer)
    assert steering.in_flight(project) == 0
    kept = steering.damaged_steers(project)
    assert len(kept) == 1 and os.path.basename(kept[0]).startswith("STEER.md.corrupt-")
    with open(kept[0], "rb") as fh:
        assert fh.read() == DAMAGED_STEER  # byte for byte
    logged = [e for e in events.read_steps(project).records if e["event"] == "steer_damaged"]
    assert len(logged) == 1 and logged[0]["kept_at"] == project.rel(kept[0]) and "UTF-8" in logged[0]["cause"]


def test_session_status_reports_a_damaged_steer_as_not_delivered(project, cli):
    with open(project.steer, "wb") as fh:
        fh.write(DAMAGED_STEER)
    run_hook(project, "UserPromptSubmit", fixture("claude-userpromptsubmit.json"))
    kept = project.rel(steering.damaged_steers(project)[0])
    code, out, err = cli("session", "status", "--json", cwd=project.project)
    rep = json.loads(out)
    assert rep["steer"]["pending"] is False and rep["steer"]["set_aside"] == [kept]
    assert kept in rep["damaged_copies"]
    assert any(kept in p and "NOT delivered" in p for p in rep["problems"])
    code, out, err = cli("session", "status", cwd=project.project)
    assert "NOT DELIVERED" in out and kept in out


def test_a_damaged_steer_left_by_a_dead_consumer_is_kept_aside_too(project):
    os.makedirs(project.steer_claimed_dir, exist_ok=True)
    orphan = os.path.join(project.steer_claimed_dir, "st_20260101T000000Z_999999999_abcd1234.md")
    with open(orphan, "wb") as fh:
        fh.write(DAMAGED_STEER)
    assert steering.claim_steer(project) is None
    assert not os.path.exists(orphan)
    assert len(steering.damaged_steers(project)) == 1


def test_a_temp_file_left_by_a_killed_writer_is_removed_by_the_next_writer(project):
    # A real writer, stopped inside its fsync (after it created its temp file), then killed.
    code = (
        "import os, sys, time; from cocoplus.core import fsio\n"
        "os.fsync = lambda fd: (print('in fsync', flush=True), time.sleep(600))\n"
        "fsio.atomic_write_json(sys.argv[1], {'state': 'running'})\n"
    )
    killed = subprocess.Popen([sys.executable, "-c", code, project.status], stdout=subprocess.PIPE, text=True)
    alive = subprocess.Popen([sys.executable, "-c", code, project.status], stdout=subprocess.PIPE, text=True)
    try:
        for p in (killed, alive):
            assert present(p.stdout).readline().strip() == "in fsync"
        killed.kill()
        killed.wait(30)

        def temps():
            return sorted(n for n in os.listdir(project.session_dir) if n.startswith(".status.json.tmp-"))

        assert len(temps()) == 2
        status.set_state(project, "idle", "next writer")
        left = temps()
        assert left == [n for n in left if n.startswith(f".status.json.tmp-{alive.pid}-")] and len(left) == 1
    finally:
        alive.kill()
        alive.wait(30)
    status.set_state(project, "idle", "and the next")
    assert not any(n.startswith(".status.json.tmp-") for n in os.listdir(project.session_dir))


@pytest.mark.parametrize(
    "damage",
    [
        b"{not json",
        b'{"cap": 200, "consumed": ' + str(2**200).encode() + b', "warn_at": 1, "warned": false, "stopped": false}',
    ],
)
def test_a_budget_set_aside_as_damaged_keeps_failing_closed_until_reset(project, damage):
    with open(project.iteration_budget, "wb") as fh:
        fh.write(damage)
    first = run_hook(project, "PostToolUse", fixture("claude-posttooluse-bash.json"))
    assert present(first.json)["continue"] is False
    killswitch.resume(project, "ann")  # a plain resume does not make the count trustworthy again
    second = run_hook(
        project, "PostToolUse", {**fixture("claude-posttooluse-bash.json"), "tool_input": {"command": "x"}}
    )
    assert present(second.json)["continue"] is False, second  # ...so the next call does not start again from 1
    assert "not reset yet" in present(second.json)["stopReason"]
    assert not os.path.exists(project.iteration_budget)
    assert killswitch.stop_present(project)
    kept = fsio.quarantined_copies(project.iteration_budget)
    assert len(kept) == 1 and open(kept[0], "rb").read() == damage

    result = killswitch.resume(project, "ann", reset_budget=iteration.reset)
    assert result["resumed"] and result["budget_reset"]["consumed"] == 0
    third = run_hook(
        project, "PostToolUse", {**fixture("claude-posttooluse-bash.json"), "tool_input": {"command": "y"}}
    )
    assert third.code == 0 and (third.json is None or third.json.get("continue") is not False)
    assert present(iteration.read(project))["consumed"] == 1


@pytest.mark.parametrize("value", [2**200, 10**20, records.MAX_COUNT + 1, 99999999999999999999])
def test_absurd_counts_fail_validation(value):
    doc = records.new_iteration_budget(200, 160)
    for field in ("consumed", "cap", "warn_at"):
        with pytest.raises(StateCorrupt, match=field):
            records.check_iteration_budget({**doc, field: value}, "/p/iteration-budget.json")


@pytest.mark.parametrize("value", [1e300, 2**200, records.MAX_MONEY * 2])
def test_absurd_money_fails_validation(value):
    doc = {"state": "normal", "limit": 10.0, "spent": 1.0, "reserve_fraction": 0.1}
    for field in ("limit", "spent"):
        with pytest.raises(StateCorrupt, match=field):
            records.check_budget_state({**doc, field: value}, "/p/budget-state.json")


def test_an_absurd_cap_from_configuration_never_writes_an_invalid_count(project):
    out = iteration.count(project, cap=99999999999999999999, warn_at=10**30)
    assert present(out.budget)["cap"] == records.MAX_COUNT
    assert present(iteration.read(project))["consumed"] == 1  # and it reads back


HOSTILE = [
    "../escape",
    "..",
    ".",
    "",
    "/etc/passwd",
    "a/b",
    "a\\b",
    "a\x00b",
    "-rf",
    ".hidden",
    "x" * 129,
    "é",
    "a b",
    "a\nb",
    "cs_../../x",
    "%2e%2e",
]


@pytest.mark.parametrize("bad", HOSTILE, ids=repr)
def test_hostile_ids_are_rejected_at_every_door_that_makes_a_path(project, tmp_path, bad):
    before = set(os.listdir(tmp_path))
    doors = [
        lambda: project.session_record(bad),
        lambda: project.conversation_dir(bad),
        lambda: project.conversation_file(bad),
        lambda: project.ledger(bad),
        lambda: project.tasks_dir(bad),
        lambda: project.task_record("master-agent", bad),
        lambda: project.lock(bad),
    ]
    for door in doors:
        with pytest.raises(InvalidId):
            door()
    from cocoplus.chat import store
    from cocoplus.supervision import workflow

    for call in (
        lambda: store.conversation(project, bad),
        lambda: store.append_message(project, bad, "user", "hi"),
        lambda: workflow.start(project, bad, auto_supervise=False),
    ):
        with pytest.raises(InvalidId):
            call()
    with pytest.raises(NotFound):
        registry.resolve(project, bad)
    if bad:
        # A runtime's own session id may be anything: it never becomes a path as it is.
        rec, _ = registry.ensure(project, "claude", bad, event="SessionStart")
        assert os.path.dirname(project.session_record(rec["id"])) == project.sessions_dir
        assert registry.resolve(project, bad)["id"] == rec["id"]
    assert set(os.listdir(tmp_path)) == before  # nothing made outside the project
    assert not os.path.exists("/etc/passwd.json")


def test_init_does_not_restart_a_count_set_aside_as_damaged(project):
    from cocoplus.session.workspace import init

    with open(project.iteration_budget, "wb") as fh:
        fh.write(b"[]")
    assert iteration.count(project, 100, 80).corrupt is not None
    result = init(project.root)  # "create what is missing" must not be a back door to a fresh count
    assert any("set aside as damaged" in p for p in result["problems"])
    assert not os.path.exists(project.iteration_budget)
    again = iteration.count(project, 100, 80)
    assert again.corrupt is not None and again.budget is None


def test_session_status_reports_log_lines_that_were_lost(project, cli):
    """A line that could not be written (a full disk) leaves an empty marker; status names it."""
    import errno

    os.makedirs(project.logs_dir, exist_ok=True)
    marker = fsio.note_loss(project.hook_log, OSError(errno.ENOSPC, "No space left on device"))
    assert marker is not None and os.path.getsize(marker) == 0
    code, out, err = cli("session", "status", "--json", cwd=project.project)
    rep = json.loads(out)
    assert [loss["file"] for loss in rep["losses"]] == [project.rel(project.hook_log)]
    assert rep["losses"][0]["cause"] == "ENOSPC"
    assert any("could not be written" in p and "ENOSPC" in p for p in rep["problems"])
