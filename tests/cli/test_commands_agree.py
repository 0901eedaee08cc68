"""Commands that agree (issue 33): what a command says matches what is so, once, with the exit code the docs give."""

from __future__ import annotations

import json
import os

from cocoplus.core.paths import Layout
from cocoplus.session import registry
from cocoplus.supervision import autonomy, rounds, watcher
from tests.support.controller import write_controller
from tests.support.waiting import wait_until


def _running(layout: Layout, rid: str) -> None:
    registry.ensure(layout, "claude", rid, event="SessionStart", change=lambda r: r.__setitem__("state", "running"))


# -- `supervised yes` only while supervision is on ------------------------------------------------------------


def test_a_session_list_says_supervised_only_while_supervision_is_on(cli, project: Layout) -> None:
    _running(project, "rid-1")
    code, out, err = cli("session", "list", cwd=project.project)
    assert code == 0, err
    assert "supervised" not in out and " yes" not in out, out  # never on: no such column, no `yes`
    listed = json.loads(cli("session", "list", "--json", cwd=project.project).out)
    assert listed["supervision_on"] is False
    code, out, err = cli("supervision", "status", cwd=project.project)
    assert code == 0 and "supervision: never enabled" in out, out

    autonomy.enable(project, task_hint="tidy")
    out = cli("session", "list", cwd=project.project).out
    assert "supervised" in out.splitlines()[0] and out.splitlines()[1].rstrip().endswith("yes"), out
    assert "supervised now: cc1" in cli("supervision", "status", cwd=project.project).out

    autonomy.finish(project, "done", reason="turned off by the operator")
    out = cli("session", "list", cwd=project.project).out
    assert "supervised" not in out and " yes" not in out, out
    status = cli("supervision", "status", cwd=project.project).out
    assert "supervised now: none (supervision is off)" in status, status


# -- a bare `supervise` shows, `supervise --again` restarts ------------------------------------------------------


def _state(layout: Layout) -> dict:
    return json.loads(open(layout.supervision_state).read()) if os.path.exists(layout.supervision_state) else {}


def test_a_bare_supervise_shows_the_current_supervision_and_changes_nothing(cli, project: Layout) -> None:
    write_controller(project)
    before = _state(project)
    for argv in (("supervise",), ("supervise", ""), ("supervise", "--json")):  # `/supervise` runs `supervise ""`
        code, out, err = cli(*argv, cwd=project.project)
        assert (code, err) == (0, ""), (argv, err)
        if "--json" in argv:
            got = json.loads(out)
            assert got["unchanged"] is True and got["autonomous"] is None, got
        else:
            assert out.splitlines()[0] == "supervision: never enabled", out
            assert 'supervision was never on: `cocoplus supervise "GOAL"` starts it' in out, out
    assert _state(project) == before and watcher.status(project)["running"] is False

    autonomy.enable(project, task_hint="tidy the repo", max_turns=60)
    autonomy.update(project, lambda d: d["autonomous"].update(turns_used=7))
    before = _state(project)
    code, out, err = cli("supervise", cwd=project.project)
    assert code == 0, err
    assert "supervision: on; turns 7/60; goal: tidy the repo" in out, out
    assert "nothing changed" in out and "initial round" not in out, out
    assert _state(project) == before and watcher.status(project)["running"] is False
    assert rounds.current(project) is None and rounds.history(project) == []  # the brain was not woken

    autonomy.finish(project, "done", reason="turned off by the operator")
    out = cli("supervise", cwd=project.project).out
    assert "supervision: off; turns 7/60" in out and "`cocoplus supervise --again` restarts supervision" in out, out
    # a bare supervise with only --max-turns would change something: it is a usage error, nothing changes
    before = _state(project)
    code, out, err = cli("supervise", "--max-turns", "5", cwd=project.project)
    assert (code, out) == (2, "") and "give a GOAL, or --again" in err, err
    assert _state(project) == before


def test_supervise_again_restarts_with_the_last_goal(cli, project: Layout) -> None:
    write_controller(project)
    code, out, err = cli("supervise", "--again", cwd=project.project)
    assert (code, out) == (1, "") and err.startswith("cocoplus: error: supervise --again: there is no last goal"), err
    assert _state(project).get("autonomous") is None
    autonomy.enable(project, task_hint="tidy the repo", max_turns=60)
    autonomy.update(project, lambda d: d["autonomous"].update(turns_used=7))
    autonomy.finish(project, "done", reason="turned off by the operator")
    code, out, err = cli("supervise", "--again", "new goal", cwd=project.project)
    assert (code, out) == (2, "") and "not both" in err, err
    try:
        code, out, err = cli("supervise", "--again", "--max-turns", "9", cwd=project.project)
        assert code == 0, err
        auto = autonomy.status(project)["autonomous"]
        assert (auto["enabled"], auto["task_hint"], auto["max_turns"]) == (True, "tidy the repo", 9)
        assert auto["turns_used"] <= 1  # from 0, and the initial round may have taken its turn by now
        assert "goal: tidy the repo" in out and "turns reset to 0 (7 were used before)" in out, out
        assert "initial round: started" in out, out
    finally:
        cli("supervisor", "stop", "--finish", cwd=project.project)
    wait_until(lambda: not watcher.status(project)["running"], timeout=30)
