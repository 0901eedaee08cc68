"""`cocoplus init` and `cocoplus session ...`: the operator's commands, end to end through main()."""

from __future__ import annotations

import io
import json
import os
import sys

import pytest

from cocoplus.core import fsio, jsonl
from cocoplus.core.paths import Layout
from tests.conftest import OPERATOR, assert_no_traceback, run_cli_subprocess


class TtyInput(io.StringIO):
    """Answers typed at a terminal."""

    def isatty(self) -> bool:
        return True


def error_lines(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("cocoplus: error:")]


def status_json(cli, cwd) -> dict:
    code, out, err = cli("session", "status", "--json", cwd=cwd)
    assert code == 0, err
    return json.loads(out)


@pytest.fixture
def initialised(cli, project_dir) -> Layout:
    code, out, err = cli("init", cwd=project_dir)
    assert code == 0, err
    return Layout(os.path.join(project_dir, ".cocoplus"))


# -- the acceptance flow ------------------------------------------------------------------


def test_acceptance_flow(cli, project_dir):
    code, out, err = cli("init", cwd=project_dir)
    assert code == 0, err
    assert "created" in out and os.path.isdir(os.path.join(project_dir, ".cocoplus"))

    code, out, err = cli("session", "steer", "X", cwd=project_dir)
    assert code == 0, err
    code, out, err = cli("session", "stop", "--reason", "R", "--operator", "O", cwd=project_dir)
    assert code == 0, err
    assert "AGENT_STOP" in out

    rep = status_json(cli, project_dir)
    ks = rep["kill_switch"]
    assert ks["present"] is True and ks["operator"] == "O" and ks["reason"] == "R"
    assert ks["created_at"] and ks["readable"] is True
    assert rep["steer"]["pending"] is True and rep["steer"]["text"].strip() == "X"
    assert rep["status"]["state"] == "paused"

    # Without --yes and without a terminal: refuse, one line, exit 1, stop kept.
    code, out, err = cli("session", "resume", cwd=project_dir, stdin="y\n")
    assert code == 1
    assert_no_traceback(out, err)
    assert len(error_lines(err)) == 1 and "--yes" in err
    assert status_json(cli, project_dir)["kill_switch"]["present"] is True

    code, out, err = cli("session", "resume", "--yes", cwd=project_dir)
    assert code == 0, err
    rep = status_json(cli, project_dir)
    assert rep["kill_switch"] == {"present": False}
    assert rep["status"]["state"] == "running"
    assert rep["steer"]["pending"] is True  # resuming does not consume the steer

    events = [
        r["event"] for r in jsonl.read_jsonl(os.path.join(project_dir, ".cocoplus", "session", "steps.jsonl")).records
    ]
    assert events == ["steer_queued", "stop", "resume"]


@pytest.mark.slow
def test_acceptance_flow_in_real_processes(project_dir):
    def run(*args, **kw):
        r = run_cli_subprocess(*args, cwd=project_dir, **kw)
        assert_no_traceback(r.out, r.err)
        return r

    assert run("init").code == 0
    assert run("session", "steer", "X").code == 0
    assert run("session", "stop", "--reason", "R", "--operator", "O").code == 0
    rep = json.loads(run("session", "status", "--json").out)
    assert (rep["kill_switch"]["operator"], rep["kill_switch"]["reason"]) == ("O", "R")
    assert rep["steer"]["text"].strip() == "X"
    r = run("session", "resume")  # stdin is /dev/null, not a terminal
    assert r.code == 1 and len(error_lines(r.err)) == 1
    assert os.path.exists(os.path.join(project_dir, ".cocoplus", "AGENT_STOP"))
    assert run("session", "resume", "--yes").code == 0
    assert not os.path.exists(os.path.join(project_dir, ".cocoplus", "AGENT_STOP"))


def test_resume_confirmation_at_a_terminal(cli, initialised, monkeypatch):
    cwd = initialised.project
    cli("session", "stop", "--reason", "why", cwd=cwd)
    monkeypatch.setattr(sys, "stdin", TtyInput("n\n"))
    code, out, err = cli("session", "resume", cwd=cwd)
    assert code == 1 and "cancelled" in err
    assert os.path.exists(initialised.agent_stop)
    monkeypatch.setattr(sys, "stdin", TtyInput("y\n"))
    code, out, err = cli("session", "resume", cwd=cwd)
    assert code == 0, err
    assert not os.path.exists(initialised.agent_stop)


def test_stop_defaults_to_the_operator_and_says_who(cli, initialised):
    code, out, err = cli("session", "stop", "--json", cwd=initialised.project)
    assert code == 0
    doc = json.loads(out)["stop"]
    assert doc["operator"] == OPERATOR and doc["reason"]
    on_disk = json.loads(open(initialised.agent_stop).read())
    assert on_disk["operator"] == OPERATOR and on_disk["created_at"] == doc["created_at"]


def test_stop_twice_replaces_and_resume_without_stop_is_fine(cli, initialised):
    cwd = initialised.project
    cli("session", "stop", "--reason", "first", cwd=cwd)
    code, out, err = cli("session", "stop", "--reason", "second", "--json", cwd=cwd)
    assert json.loads(out)["replaced"]["reason"] == "first"
    assert status_json(cli, cwd)["kill_switch"]["reason"] == "second"
    cli("session", "resume", "--yes", cwd=cwd)
    code, out, err = cli("session", "resume", "--yes", "--json", cwd=cwd)
    assert code == 0 and json.loads(out)["resumed"] is False


# -- progress, check, init ------------------------------------------------------------------


def test_progress_shows_the_four_sections(cli, initialised):
    with open(initialised.progress, "w") as fh:
        fh.write(
            "# Progress\n\n## Done\n- wrote the parser\n\n## In Progress\n- the CLI\n\n"
            "## Next\n- docs\n\n## Notes\n- [link](x) and [bold] stays literal\n\n"
            "## Iteration Budget\n- Cap: 200\n- Consumed: 0\n- Warn At: 160\n"
        )
    code, out, err = cli("session", "progress", cwd=initialised.project)
    assert code == 0, err
    positions = [out.find(t) for t in ("Done", "In Progress", "Next", "Notes")]
    assert all(p >= 0 for p in positions) and positions == sorted(positions), out
    for item in ("wrote the parser", "the CLI", "docs", "[link](x) and [bold] stays literal"):
        assert item in out
    assert "Cap: 200" not in out  # the budget is not one of the four

    code, out, err = cli("session", "progress", "--json", cwd=initialised.project)
    doc = json.loads(out)
    assert list(doc["sections"]) == ["Done", "In Progress", "Next", "Notes"]
    assert doc["sections"]["Done"]["items"] == ["- wrote the parser"]


def test_progress_on_the_template_and_with_a_missing_section(cli, initialised):
    code, out, err = cli("session", "progress", cwd=initialised.project)
    assert code == 0 and out.count("(empty)") == 4
    with open(initialised.progress, "w") as fh:
        fh.write("## Done\nx\n")
    code, out, err = cli("session", "progress", cwd=initialised.project)
    assert code == 0 and out.count("(section missing)") == 3
    os.unlink(initialised.progress)
    code, out, err = cli("session", "progress", cwd=initialised.project)
    assert code == 1 and "PROGRESS.md" in error_lines(err)[0]


def test_check_passes_on_a_fresh_project(cli, initialised):
    code, out, err = cli("session", "check", cwd=initialised.project)
    assert code == 0, out + err
    assert "FAIL" not in out
    code, out, err = cli("session", "check", "--json", cwd=initialised.project)
    doc = json.loads(out)
    assert doc["ok"] is True and all(c["ok"] for c in doc["checks"])


@pytest.mark.parametrize(
    "rel, content, name",
    [
        ("session/iteration-budget.json", b'{"cap": 0}', "iteration-budget.json"),
        ("session/status.json", b'{"state": "crashed", "updated_at": "x"}', "status.json"),
        ("session/budget-state.json", b'{"state": "broke"}', "budget-state.json"),
        ("session/CONTEXT.md", b"task.state=done\nthis is not a predicate\n", "CONTEXT.md"),
        ("session/PROGRESS.md", b"## Done\n", "PROGRESS.md"),
        ("session/task-queue.jsonl", b'{"id": "q1"}\nnot json\n', "task-queue.jsonl"),
    ],
)
def test_check_fails_naming_the_damaged_file(cli, initialised, rel, content, name):
    with open(os.path.join(initialised.root, rel), "wb") as fh:
        fh.write(content)
    code, out, err = cli("session", "check", cwd=initialised.project)
    assert code == 1
    assert_no_traceback(out, err)
    assert [ln for ln in out.splitlines() if ln.startswith("FAIL") and name in ln]
    assert len(error_lines(err)) == 1 and name in error_lines(err)[0]
    code, out, err = cli("session", "check", "--json", cwd=initialised.project)
    assert code == 1
    doc = json.loads(out)
    assert doc["ok"] is False and any(name in c["detail"] for c in doc["checks"] if not c["ok"])


def test_check_flags_a_budget_stop_recorded_as_failed(cli, initialised):
    fsio.atomic_write_json(
        initialised.status,
        {"state": "failed", "reason": "iteration budget reached", "updated_at": "2026-01-01T00:00:00Z"},
    )
    code, out, err = cli("session", "check", cwd=initialised.project)
    assert code == 1 and "should be exited" in out


def snapshot(state_dir: str) -> dict[str, bytes]:
    out = {}
    for root, _dirs, files in os.walk(state_dir):
        for f in files:
            p = os.path.join(root, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, state_dir)] = fh.read()
    return out


def test_init_twice_is_idempotent_and_keeps_edits(cli, project_dir):
    code, out, err = cli("init", "--json", cwd=project_dir)
    first = json.loads(out)
    assert ".cocoplus/session/PROGRESS.md" in first["created"] and first["kept"] == []
    state = os.path.join(project_dir, ".cocoplus")
    progress = os.path.join(state, "session", "PROGRESS.md")
    with open(progress, "a") as fh:
        fh.write("\n## Notes\nmy own notes, keep them\n")
    with open(os.path.join(state, "session", "CONTEXT.md"), "a") as fh:
        fh.write("task.state=started\n")
    before = snapshot(state)

    code, out, err = cli("init", "--json", cwd=project_dir)
    assert code == 0, err
    second = json.loads(out)
    assert second["created"] == []
    assert ".cocoplus/session/PROGRESS.md" in second["kept"]
    after = snapshot(state)
    # Everything that existed is byte-identical (the compiled hook config may be rewritten with the same values).
    for rel, data in before.items():
        if rel != "hook-config.json":
            assert after[rel] == data, rel
    assert "my own notes, keep them" in open(progress).read()

    code, out, err = cli("init", cwd=project_dir)
    assert code == 0 and "nothing to create" in out


def test_init_recreates_only_what_is_missing(cli, initialised):
    os.unlink(initialised.iteration_budget)
    with open(initialised.progress, "w") as fh:
        fh.write("edited\n")
    code, out, err = cli("init", "--json", cwd=initialised.project)
    res = json.loads(out)
    assert res["created"] == [".cocoplus/session/iteration-budget.json"]
    assert open(initialised.progress).read() == "edited\n"


def test_init_uses_values_from_cocoplus_toml(cli, project_dir):
    with open(os.path.join(project_dir, "cocoplus.toml"), "w") as fh:
        fh.write("[session]\nmax_iterations = 40\niteration_warn_at = 30\nbudget_limit = 2.5\n")
    code, out, err = cli("init", cwd=project_dir)
    assert code == 0, err
    rep = status_json(cli, project_dir)
    assert (rep["iteration_budget"]["cap"], rep["iteration_budget"]["warn_at"]) == (40, 30)
    assert rep["cost_budget"]["limit"] == 2.5
    assert rep["handoff"]["iteration_budget_lines"] == {"Cap": "40", "Consumed": "0", "Warn At": "30"}


def test_init_refuses_a_file_where_the_state_dir_goes(cli, project_dir):
    with open(os.path.join(project_dir, ".cocoplus"), "w") as fh:
        fh.write("not a dir")
    code, out, err = cli("init", cwd=project_dir)
    assert code == 1 and ".cocoplus" in error_lines(err)[0]
    assert_no_traceback(out, err)


def test_init_refuses_a_symlinked_state_dir(cli, project_dir, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, os.path.join(project_dir, ".cocoplus"))
    code, out, err = cli("init", cwd=project_dir)
    assert code == 1 and "symbolic link" in err
    assert list(elsewhere.iterdir()) == []


# -- steer and queue -----------------------------------------------------------------------------


def test_steer_twice_keeps_both_in_order(cli, initialised):
    cwd = initialised.project
    assert cli("session", "steer", "first: run the tests", cwd=cwd).code == 0
    code, out, err = cli("session", "steer", "second: then fix lint", cwd=cwd)
    assert code == 0 and "added after" in out
    text = open(initialised.steer).read()
    assert text.index("first: run the tests") < text.index("second: then fix lint")
    assert status_json(cli, cwd)["steer"]["text"] == text


def test_empty_steer_is_refused(cli, initialised):
    code, out, err = cli("session", "steer", "   ", cwd=initialised.project)
    assert code == 1 and len(error_lines(err)) == 1
    assert not os.path.exists(initialised.steer)


def test_steer_over_the_size_limit_is_refused(cli, initialised):
    code, out, err = cli("session", "steer", "x" * (70 * 1024), cwd=initialised.project)
    assert code == 1 and "STEER.md" in err and "KiB" in err
    assert not os.path.exists(initialised.steer)


def test_queue_add_list_done(cli, initialised):
    cwd = initialised.project
    ids = []
    for req in ("add a --json flag", "write the docs"):
        code, out, err = cli("session", "queue", "add", req, "--json", cwd=cwd)
        assert code == 0, err
        rec = json.loads(out)
        assert rec["request"] == req and rec["state"] == "queued" and rec["by"] == OPERATOR
        ids.append(rec["id"])

    code, out, err = cli("session", "queue", "list", cwd=cwd)
    assert code == 0 and "add a --json flag" in out and "write the docs" in out
    assert out.index("add a --json flag") < out.index("write the docs")

    code, out, err = cli("session", "queue", "done", ids[0], cwd=cwd)
    assert code == 0 and "done" in out
    code, out, err = cli("session", "queue", "done", ids[1], "--drop", cwd=cwd)
    assert code == 0 and "dropped" in out

    code, out, err = cli("session", "queue", "list", "--json", cwd=cwd)
    assert json.loads(out)["items"] == []
    code, out, err = cli("session", "queue", "list", "--all", "--json", cwd=cwd)
    states = {i["id"]: i["state"] for i in json.loads(out)["items"]}
    assert states == {ids[0]: "done", ids[1]: "dropped"}
    assert status_json(cli, cwd)["queue"]["pending"] == 0

    code, out, err = cli("session", "queue", "done", "q_nope", cwd=cwd)
    assert code == 1 and "q_nope" in error_lines(err)[0]

    lines = open(initialised.task_queue).read().splitlines()
    assert len(lines) == 4 and all(json.loads(ln) for ln in lines)  # appended, never rewritten


def test_queue_pending_shows_in_status(cli, initialised):
    cli("session", "queue", "add", "one more thing", cwd=initialised.project)
    rep = status_json(cli, initialised.project)
    assert rep["queue"]["pending"] == 1 and rep["queue"]["items"][0]["request"] == "one more thing"
    code, out, err = cli("session", "status", cwd=initialised.project)
    assert "1 pending" in out and "one more thing" in out


def test_status_text_shows_every_part(cli, initialised):
    cwd = initialised.project
    with open(initialised.context, "a") as fh:
        fh.write("task.state=in progress\n")
    cli("session", "steer", "look at the flaky test", cwd=cwd)
    cli("session", "stop", "--reason", "lunch", "--operator", "ann", cwd=cwd)
    code, out, err = cli("session", "status", cwd=cwd)
    assert code == 0, err
    for needle in (
        "PROGRESS.md updated",
        "fresh",
        "task.state=in progress",
        "0 pending",
        "0 of 200 tool calls used",
        "normal",
        "paused",
        "STOPPED by ann",
        "lunch",
        "look at the flaky test",
    ):
        assert needle in out, needle


def test_status_reports_a_stale_handoff(cli, initialised):
    old = os.stat(initialised.progress).st_mtime - 3 * 86400
    os.utime(initialised.progress, (old, old))
    rep = status_json(cli, initialised.project)
    assert rep["handoff"]["stale"] is True and rep["handoff"]["age"].startswith("3d")
    code, out, err = cli("session", "status", cwd=initialised.project)
    assert "STALE" in out


# -- outside a project, discovery, --dir ----------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ("session", "status"),
        ("session", "status", "--json"),
        ("session", "progress"),
        ("session", "steer", "x"),
        ("session", "stop"),
        ("session", "resume", "--yes"),
        ("session", "queue", "add", "x"),
        ("session", "queue", "list"),
        ("session", "queue", "done", "q_1"),
        ("session", "check"),
    ],
)
def test_outside_a_project_says_to_run_init(cli, tmp_path, argv):
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    code, out, err = cli(*argv, cwd=lonely)
    assert code == 1
    assert_no_traceback(out, err)
    assert len(error_lines(err)) == 1
    assert "cocoplus init" in err
    assert not (lonely / ".cocoplus").exists()


def test_outside_a_project_in_a_real_process(tmp_path):
    r = run_cli_subprocess("session", "status", cwd=tmp_path)
    assert r.code == 1 and "cocoplus init" in r.err
    assert_no_traceback(r.out, r.err)


def test_found_from_a_subdirectory_and_with_dir(cli, initialised, tmp_path):
    sub = os.path.join(initialised.project, "src", "pkg")
    os.makedirs(sub)
    rep = status_json(cli, sub)
    assert rep["state_dir"] == initialised.root
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, out, err = cli("--dir", initialised.project, "session", "status", "--json", cwd=elsewhere)
    assert code == 0 and json.loads(out)["state_dir"] == initialised.root
    assert "COCOPLUS_DIR" not in os.environ


def test_cocoplus_dir_environment(cli, initialised, tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.setenv("COCOPLUS_DIR", initialised.root)
    assert status_json(cli, elsewhere)["state_dir"] == initialised.root
    monkeypatch.setenv("COCOPLUS_DIR", str(tmp_path / "missing"))
    code, out, err = cli("session", "status", cwd=elsewhere)
    assert code == 1 and "COCOPLUS_DIR" in err


# -- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ("session", "bogus"),
        ("session", "stop", "--bogus"),
        ("session", "steer"),
        ("session", "queue", "add"),
        ("session", "queue", "done"),
        ("nonsense",),
        ("shell-init", "tcsh"),
        ("--nope",),
    ],
)
def test_usage_errors_exit_2(cli, initialised, argv):
    code, out, err = cli(*argv, cwd=initialised.project)
    assert code == 2, (out, err)
    assert_no_traceback(out, err)


def test_usage_error_in_a_real_process(initialised):
    r = run_cli_subprocess("session", "stop", "--bogus", cwd=initialised.project)
    assert r.code == 2
    assert_no_traceback(r.out, r.err)


def test_unexpected_errors_are_one_line_and_logged(cli, initialised, monkeypatch):
    from cocoplus.report import views as report

    def boom(*a, **k):
        raise ZeroDivisionError("surprise")

    monkeypatch.setattr(report, "status_report", boom)
    code, out, err = cli("session", "status", cwd=initialised.project)
    assert code == 1
    assert "Traceback" not in err
    assert len(error_lines(err)) == 1 and "ZeroDivisionError" in err and "cocoplus.log" in err
    log = open(initialised.cli_log).read()
    assert "Traceback" in log and "surprise" in log


# -- operator text is shown as written; controls work with damaged bookkeeping -------------------

MARKUP = "use [/b] and [red]this[/red] [link=x]literally[/link]"


def test_text_that_looks_like_markup_is_shown_literally(cli, initialised):
    cwd = initialised.project
    with open(initialised.context, "a") as fh:
        fh.write(f"note.markup={MARKUP}\n")
    for argv in (
        ("session", "steer", MARKUP),
        ("session", "queue", "add", MARKUP),
        ("session", "stop", "--reason", MARKUP, "--operator", "[ops]"),
    ):
        code, out, err = cli(*argv, cwd=cwd)
        assert code == 0, err
        assert_no_traceback(out, err)
    code, out, err = cli("session", "stop", "--reason", MARKUP, cwd=cwd)
    assert MARKUP in out
    code, out, err = cli("session", "status", cwd=cwd)
    assert code == 0, err
    assert_no_traceback(out, err)
    assert "STOPPED by " + OPERATOR in out
    flat = " ".join(out.split())
    assert out.count("[/b]") >= 4 and "[red]this[/red]" in flat, out
    code, out, err = cli("session", "queue", "list", cwd=cwd)
    assert MARKUP in out


def test_markup_in_the_project_path_and_config(cli, tmp_path):
    odd = tmp_path / "[bold]proj[red]"
    odd.mkdir()
    (odd / "cocoplus.toml").write_text('[ctx]\ncommand = "[/x]"\n')
    code, out, err = cli("init", cwd=odd)
    assert code == 0, err
    assert "[bold]proj[red]" in out
    code, out, err = cli("session", "status", cwd=odd)
    assert code == 0, err
    assert "[bold]proj[red]" in out
    code, out, err = cli("config", "show", cwd=odd)
    assert code == 0, err
    assert 'command = "[/x]"' in out  # TOML, and no markup eaten


def test_stop_over_an_agent_stop_directory_keeps_it(cli, initialised):
    os.mkdir(initialised.agent_stop)
    code, out, err = cli("session", "stop", "--reason", "again", cwd=initialised.project)
    assert code == 0, err
    assert "already present" in out
    assert os.path.isdir(initialised.agent_stop)
    assert status_json(cli, initialised.project)["kill_switch"]["present"] is True


@pytest.mark.parametrize("bookkeeping", ["steps", "status"])
def test_stop_and_resume_work_when_bookkeeping_is_damaged(cli, initialised, bookkeeping):
    damaged = getattr(initialised, bookkeeping)
    os.unlink(damaged)
    os.mkdir(damaged)
    with open(os.path.join(damaged, "keep"), "w"):
        pass  # a non-empty directory cannot be replaced or set aside by a rename over it
    code, out, err = cli("session", "stop", "--reason", "R", cwd=initialised.project)
    assert code == 0, err
    assert os.path.isfile(initialised.agent_stop)
    assert_no_traceback(out, err)
    if bookkeeping == "steps":
        assert "steps.jsonl" in err and "warning" in err

    code, out, err = cli("session", "resume", "--yes", cwd=initialised.project)
    assert code == 0, err
    assert not os.path.exists(initialised.agent_stop)


def test_steer_over_a_damaged_steer_file_keeps_it_aside(cli, initialised):
    with open(initialised.steer, "wb") as fh:
        fh.write(b"\xff\xfe\x00 not text")
    code, out, err = cli("session", "steer", "new instruction", cwd=initialised.project)
    assert code == 0, err
    assert "STEER.md" in err and "kept at" in err
    assert open(initialised.steer).read() == "new instruction\n"
    kept = fsio.quarantined_copies(initialised.steer)
    assert len(kept) == 1 and open(kept[0], "rb").read() == b"\xff\xfe\x00 not text"


def test_stop_in_a_project_nothing_is_wired_to_says_no_agent_will_see_it(project, cli) -> None:
    code, out, _err = cli("session", "stop", "--reason", "freeze", cwd=project.project)
    assert code == 0 and "agent tools are now blocked" not in out
    assert "no runtime's cocoplus hooks are installed for this project" in out and "no agent will see it" in out
    assert cli("install", "claude", cwd=project.project).code == 0
    code, out, _err = cli("session", "stop", "--reason", "again", cwd=project.project)
    assert "agent tools are now blocked (claude: its hooks in .claude/settings.local.json)" in out, out


def test_run_state_after_every_agent_session_ended_is_idle_not_running(cli, project):
    """status.json says `running` from the SessionStart on; once every recorded session has ended, session status
    says idle and why (the file's own word is kept as recorded_state), in JSON and in text."""
    from tests.hook.helpers import run_hook

    cwd = project.project
    for sid in ("run-a", "run-b"):
        r = run_hook(
            project,
            "SessionStart",
            {"session_id": sid, "hook_event_name": "SessionStart", "cwd": cwd, "source": "startup"},
        )
        assert r.code == 0, r
    assert status_json(cli, cwd)["status"]["state"] == "running"
    r = run_hook(
        project, "SessionEnd", {"session_id": "run-a", "hook_event_name": "SessionEnd", "cwd": cwd, "reason": "exit"}
    )
    assert r.code == 0, r
    assert status_json(cli, cwd)["status"]["state"] == "running"  # cc2 still runs
    r = run_hook(
        project, "SessionEnd", {"session_id": "run-b", "hook_event_name": "SessionEnd", "cwd": cwd, "reason": "exit"}
    )
    assert r.code == 0, r
    st = status_json(cli, cwd)["status"]
    assert (st["state"], st["recorded_state"]) == ("idle", "running")
    assert st["reason"] == "no agent session is running; the last was cc2", st
    assert st["updated_at"] > st["recorded_at"]  # since cc2 ended, not since the state was written
    code, out, _ = cli("session", "status", cwd=cwd)
    assert code == 0
    row = next(line for line in out.splitlines() if line.lstrip().startswith("run state"))
    assert row.split()[2:8] == ["idle", "(no", "agent", "session", "is", "running;"], row
