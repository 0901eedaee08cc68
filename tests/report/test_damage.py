"""Every state file, every kind of damage: status still answers, names the file, and check fails.

SPEC section 3: a damaged file is reported by name and kept aside (never
silently reset), and the command still answers.  reliability.md B1, B2,
B5, B6, B7.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import assert_no_traceback, run_cli_subprocess
from tests.report.damage import DAMAGES, FILES, expectation, inflict

# Rows of `session status` (text) and keys of `session status --json`.
ROWS = (
    "handoff",
    "predicates",
    "queued work",
    "iteration budget",
    "cost budget",
    "run state",
    "kill switch",
    "pending steer",
    "sessions",
    "session log",
)
PARTS = (
    "handoff",
    "predicates",
    "queue",
    "iteration_budget",
    "cost_budget",
    "status",
    "pod_state",
    "kill_switch",
    "steer",
    "sessions",
    "steps",
)
MARKERS = ("DAMAGED", "missing sections", "line ", "unterminated", "problem:")

CASES = [(f, d) for f in FILES for d in DAMAGES]


def shown_name(path: str) -> str:
    return os.path.basename(path)


def lines_naming(text: str, name: str) -> list[str]:
    return [ln for ln in text.splitlines() if name in ln]


def check_status_text(code: int, out: str, err: str, name: str, expect: str) -> None:
    assert code == 0, err
    assert_no_traceback(out, err)
    for row in ROWS:
        assert any(ln.lstrip("│| ").startswith(row) for ln in out.splitlines()), (row, out)
    both = out + err
    if expect == "damaged":
        naming = lines_naming(both, name)
        assert naming, f"{name} not named in:\n{both}"
        assert any(m in ln for ln in naming for m in MARKERS), naming
    elif expect == "stop":
        assert "STOPPED" in out
    elif expect == "torn":
        assert any("unterminated" in ln for ln in lines_naming(both, name)), both
        assert "DAMAGED" not in out
    else:
        assert "DAMAGED" not in out
        assert not [ln for ln in err.splitlines() if "problem" in ln and name in ln], err


def check_status_json(code: int, out: str, err: str, file_key: str, name: str, expect: str) -> None:
    assert code == 0, err
    assert_no_traceback(out, err)
    report = json.loads(out)
    for part in PARTS:
        assert isinstance(report.get(part), dict), part
    target = FILES[file_key][1]
    for part in PARTS:
        if part != target:
            assert not report[part].get("damaged"), (part, report[part])
    mine = report[target]
    named_problem = any(name in p for p in report["problems"])
    if expect == "damaged":
        if mine.get("damaged"):
            assert name in mine["error"]
            assert named_problem
        elif target == "handoff":
            assert mine["missing_sections"], mine
        else:
            assert named_problem, report["problems"]
    elif expect == "stop":
        assert mine["present"] is True
    elif expect == "torn":
        assert not mine.get("damaged")
        assert any(name in p and "unterminated" in p for p in report["problems"])
    else:
        assert not mine.get("damaged")
        assert not named_problem, report["problems"]


@pytest.mark.parametrize("file_key, damage", CASES)
def test_damaged_file_in_process(project, cli, file_key, damage):
    path = inflict(project, file_key, damage)
    name = shown_name(path)
    expect = expectation(file_key, damage)

    code, out, err = cli("session", "status", cwd=project.project)
    check_status_text(code, out, err, name, expect)

    code, out, err = cli("session", "status", "--json", cwd=project.project)
    check_status_json(code, out, err, file_key, name, expect)

    code, out, err = cli("session", "check", cwd=project.project)
    assert_no_traceback(out, err)
    if expect == "damaged":
        assert code == 1, out + err
        failing = [ln for ln in out.splitlines() if ln.startswith("FAIL")]
        assert any(name in ln for ln in failing), out
        error_lines = [ln for ln in err.splitlines() if ln.startswith("cocoplus: error:")]
        assert len(error_lines) == 1 and name in error_lines[0], err
    else:
        assert code == 0, out + err

    # Reporting never moves, rewrites or resets the damaged file.
    if os.path.isdir(path):
        assert damage == "directory"
    else:
        from tests.report.damage import content

        with open(path, "rb") as fh:
            assert fh.read() == content(file_key, damage)


@pytest.mark.parametrize("file_key", list(FILES))
def test_damaged_file_via_subprocess(project, file_key):
    # One damage per file, rotating so that every damage is seen by a real process.
    damage = DAMAGES[list(FILES).index(file_key) % len(DAMAGES)]
    if expectation(file_key, damage) != "damaged" and FILES[file_key][2] not in ("stop",):
        damage = "directory"
    path = inflict(project, file_key, damage)
    name = shown_name(path)
    expect = expectation(file_key, damage)

    r = run_cli_subprocess("session", "status", cwd=project.project)
    check_status_text(r.code, r.out, r.err, name, expect)
    r = run_cli_subprocess("session", "status", "--json", cwd=project.project)
    check_status_json(r.code, r.out, r.err, file_key, name, expect)


def test_check_via_subprocess_names_the_file(project):
    inflict(project, "iteration-budget.json", "nan")
    r = run_cli_subprocess("session", "check", cwd=project.project)
    assert r.code == 1
    assert_no_traceback(r.out, r.err)
    assert "iteration-budget.json" in r.err.splitlines()[0]


@pytest.mark.parametrize("damage", ["empty", "binary", "directory", "wrong_types", "deep_nesting"])
def test_agent_stop_with_any_content_is_a_present_kill_switch(project, cli, damage):
    inflict(project, "AGENT_STOP", damage)
    code, out, err = cli("session", "status", "--json", cwd=project.project)
    assert code == 0
    ks = json.loads(out)["kill_switch"]
    assert ks["present"] is True
    assert ks["created_at"]  # the file's time when it says nothing itself
    code, out, err = cli("session", "status", cwd=project.project)
    assert "STOPPED" in out
    # And resume removes it, whatever it is.
    code, out, err = cli("session", "resume", "--yes", cwd=project.project)
    assert code == 0, err
    assert not os.path.lexists(project.agent_stop)


def test_unreadable_agent_stop_is_still_a_stop(project, cli):
    with open(project.agent_stop, "w") as fh:
        fh.write("operator: root\nreason: maintenance\n")
    os.chmod(project.agent_stop, 0)
    try:
        code, out, err = cli("session", "status", "--json", cwd=project.project)
        assert code == 0
        assert json.loads(out)["kill_switch"]["present"] is True
    finally:
        os.chmod(project.agent_stop, 0o600)


def test_hand_written_agent_stop_is_understood(project, cli):
    with open(project.agent_stop, "w") as fh:
        fh.write("operator: alice\nreason: deploy freeze\n")
    code, out, err = cli("session", "status", "--json", cwd=project.project)
    ks = json.loads(out)["kill_switch"]
    assert (ks["present"], ks["operator"], ks["reason"]) == (True, "alice", "deploy freeze")
    with open(project.agent_stop, "w") as fh:
        fh.write("stop everything now\n")
    code, out, err = cli("session", "status", "--json", cwd=project.project)
    assert json.loads(out)["kill_switch"]["reason"] == "stop everything now"


def test_several_damaged_files_at_once(project, cli):
    for key, damage in [("iteration-budget.json", "empty"), ("status.json", "binary"), ("task-queue.jsonl", "nan")]:
        inflict(project, key, damage)
    code, out, err = cli("session", "status", "--json", cwd=project.project)
    assert code == 0
    rep = json.loads(out)
    assert rep["iteration_budget"]["damaged"] and rep["status"]["damaged"]
    assert any("task-queue.jsonl" in p for p in rep["problems"])
    assert not rep["cost_budget"].get("damaged") and rep["cost_budget"]["state"] == "normal"
    code, out, err = cli("session", "check", cwd=project.project)
    assert code == 1
    for name in ("iteration-budget.json", "status.json", "task-queue.jsonl"):
        assert name in err


def test_missing_state_files_are_reported_not_fatal(project, cli):
    for p in (project.iteration_budget, project.budget_state, project.status, project.progress):
        os.unlink(p)
    code, out, err = cli("session", "status", "--json", cwd=project.project)
    assert code == 0
    rep = json.loads(out)
    assert rep["iteration_budget"]["exists"] is False and rep["handoff"]["exists"] is False
    code, out, err = cli("session", "status", cwd=project.project)
    assert code == 0 and "not started" in out and "missing" in out
    code, out, err = cli("session", "check", cwd=project.project)
    assert code == 1 and "PROGRESS.md: missing" in out


def test_bad_config_does_not_hide_status(project, cli):
    with open(project.config, "w") as fh:
        fh.write("[session]\nmax_iterations = 'x'\n")
    code, out, err = cli("session", "status", "--json", cwd=project.project)
    assert code == 1  # an error, but the report still answers
    assert err.startswith("cocoplus: error: cocoplus.toml")
    rep = json.loads(out)
    assert rep["config_ok"] is False and rep["config"]["ok"] is False and "max_iterations" in rep["config"]["error"]
    assert any("cocoplus.toml" in p for p in rep["problems"])
    assert rep["iteration_budget"]["cap"] == 200  # what the hooks keep using


def test_budget_number_beyond_any_float_is_damage_not_a_crash(project, cli):
    with open(project.budget_state, "w") as fh:
        fh.write('{"state": "normal", "limit": 1' + "0" * 400 + ', "spent": 0, "reserve_fraction": 0.1}\n')
    code, out, err = cli("session", "status", "--json", cwd=project.project)
    assert code == 0, err
    assert_no_traceback(out, err)
    part = json.loads(out)["cost_budget"]
    assert part["damaged"] and "budget-state.json" in part["error"]
    code, out, err = cli("session", "check", cwd=project.project)
    assert code == 1 and "budget-state.json" in err
