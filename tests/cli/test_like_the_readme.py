"""The CLI behaves like its README, as a new user runs it: each rough edge a trial found, in a real process.

Usage errors are one line; a broken cocoplus.toml is an error that status
puts first while the hooks keep the last good values; status shows the
effective cap at once; tables never cut an id, a state or a time; one
run-state row; STOPPED in red on a terminal; counts never past the cap;
resume with nothing stopped changes nothing; init refuses to nest; --dir
errors name --dir; the bundled example's age comes from its own stamps; a
truncated state file is called truncated.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import shutil
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from cocoplus.core import fsio
from cocoplus.core.paths import Layout
from cocoplus.session import registry
from tests.conftest import assert_no_traceback, run_cli_subprocess
from tests.hook.helpers import fixture, run_hook
from tests.support.typed import present

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "webshop"


def error_lines(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.strip()]


def run_in_terminal(
    argv: list[str], cwd: str | os.PathLike[str], columns: int = 80, env: dict[str, str] | None = None
) -> str:
    """Run `python -m cocoplus ARGV` with its stdout and stderr on a pseudo-terminal `columns` wide."""
    child_env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR")}
    child_env["TERM"] = "xterm-256color"
    child_env.update(env or {})
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "cocoplus", *argv],
        cwd=str(cwd),
        env=child_env,
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(master)
    return b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")


def post_tool(layout: Layout, n: int) -> None:
    for _ in range(n):
        r = run_hook(layout, "PostToolUse", fixture("claude-posttooluse-bash.json"))
        assert r.code == 0, r


def status(layout: Layout, *extra: str):
    r = run_cli_subprocess("session", "status", *extra, cwd=layout.project)
    assert_no_traceback(r.out, r.err)
    return r


# -- one-line usage errors -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (("frobnicate",), "cocoplus: error: no such command 'frobnicate'"),
        (("budget", "add-cost", "abc"), "cocoplus: error: budget add-cost: invalid value for"),
        (("session", "stop", "--bogus"), "cocoplus: error: session stop: no such option: --bogus"),
        (("session", "steer"), "cocoplus: error: session steer: missing argument"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(project, argv, says):
    r = run_cli_subprocess(*argv, cwd=project.project)
    assert r.code == 2
    assert r.out == ""
    lines = error_lines(r.err)
    assert lines[0].startswith(says), r.err
    assert len(lines) <= 2 and all(ln.startswith(("cocoplus: error: ", "cocoplus: hint: ")) for ln in lines), r.err
    assert "Usage:" not in r.err and "Try " not in r.err


# -- a broken cocoplus.toml ------------------------------------------------------------------------


def test_broken_config_makes_status_fail_first_while_the_hooks_keep_the_last_good_values(project):
    Path(project.config).write_text("[session]\nmax_iterations = 3\n")
    post_tool(project, 1)  # the hooks compile and use cap 3
    Path(project.config).write_text('[session]\nmax_iterations = "lots"\n')

    r = status(project)
    assert r.code == 1
    first = r.err.splitlines()[0]
    assert first.startswith("cocoplus: error: cocoplus.toml") and "max_iterations" in first, r.err
    assert "last good values" in r.err
    config_rows = [ln for ln in r.out.splitlines() if ln.strip().startswith("config")]
    assert len(config_rows) == 1 and "INVALID" in config_rows[0] and "last good values" in config_rows[0]
    assert any(
        ln.strip().startswith("iteration budget") and "1 of 3 tool calls used" in ln for ln in r.out.splitlines()
    ), r.out

    r = status(project, "--json")
    assert r.code == 1 and r.err.startswith("cocoplus: error: cocoplus.toml")
    rep = json.loads(r.out)
    assert rep["config"]["ok"] is False and "max_iterations" in rep["config"]["error"]
    assert rep["iteration_budget"]["cap"] == 3 and "last good values" in rep["iteration_budget"]["limits_from"]

    # The page reads the same report and says the same.
    from fastapi.testclient import TestClient

    from cocoplus.server.app import create_app

    with TestClient(create_app(project, token="t" * 40, port=48766), base_url="http://127.0.0.1:48766") as client:
        page = client.get("/api/v1/session").json()
    assert page["config"] == rep["config"] and page["iteration_budget"]["cap"] == 3

    # The hooks still work, on the last good cap: two more calls reach it.
    post_tool(project, 2)
    stop = json.loads(Path(project.agent_stop).read_text())
    assert stop["reason"] == "iteration budget exhausted: 3 of 3 tool calls used (cap 3, [session] max_iterations)"


def test_status_and_the_page_show_a_changed_cap_at_once(project):
    post_tool(project, 3)
    assert json.loads(Path(project.iteration_budget).read_text())["cap"] == 200
    Path(project.config).write_text("[session]\nmax_iterations = 50\niteration_warn_at = 40\n")

    rep = json.loads(status(project, "--json").out)
    ib = rep["iteration_budget"]
    assert (ib["cap"], ib["warn_at"], ib["consumed"], ib["remaining"]) == (50, 40, 3, 47)
    assert ib["recorded_cap"] == 200 and ib["limits_from"] == "cocoplus.toml"
    row = [ln for ln in status(project).out.splitlines() if ln.strip().startswith("iteration budget")][0]
    assert "3 of 50 tool calls used, 47 left (cap 50 from cocoplus.toml; checkpoint at 40)" in row
    assert (
        "the count was kept against cap 200 before the configuration changed; the next tool call counts against 50"
        in row
    )

    from fastapi.testclient import TestClient

    from cocoplus.server.app import create_app

    with TestClient(create_app(project, token="t" * 40, port=48766), base_url="http://127.0.0.1:48766") as client:
        page = client.get("/api/v1/session").json()
    assert page["iteration_budget"]["cap"] == 50 and page["iteration_budget"]["remaining"] == 47


@pytest.mark.slow
def test_resume_reset_budget_starts_again_against_the_cap_cocoplus_toml_sets(project):
    """Counted against the default cap (200), then cocoplus.toml sets 5: the reset says 0 of 5 and where 5 comes from,
    status says the same, and the hooks count against it, naming it in what they tell the agent."""
    post_tool(project, 3)
    assert json.loads(Path(project.iteration_budget).read_text())["cap"] == 200
    Path(project.config).write_text("[session]\nmax_iterations = 5\n")

    r = run_cli_subprocess("session", "resume", "--reset-budget", "--yes", cwd=project.project)
    assert r.code == 0, r.err
    assert r.out.splitlines() == [
        "nothing to resume: no AGENT_STOP is present; nothing was changed",
        "iteration budget reset: 0 of 5 tool calls used (cap 5 from cocoplus.toml)",
    ]
    doc = json.loads(Path(project.iteration_budget).read_text())
    assert (doc["cap"], doc["consumed"], doc["warn_at"]) == (5, 0, 4)
    row = [ln for ln in status(project).out.splitlines() if ln.strip().startswith("iteration budget")][0]
    assert (
        row.split("iteration budget", 1)[1].strip()
        == "0 of 5 tool calls used, 5 left (cap 5 from cocoplus.toml; checkpoint at 4)"
    )

    # The hooks count against 5: the checkpoint at 4 and the stop at 5 say so to the agent.
    for n in range(1, 4):
        assert "tool calls used" not in run_hook(project, "PostToolUse", fixture("claude-posttooluse-bash.json")).out, n
    fourth = run_hook(project, "PostToolUse", fixture("claude-posttooluse-bash.json"))
    assert "cocoplus: 4 of 5 tool calls used (cap 5, [session] max_iterations; checkpoint at 4)." in fourth.out
    fifth = run_hook(project, "PostToolUse", fixture("claude-posttooluse-bash.json"))
    reason = "iteration budget exhausted: 5 of 5 tool calls used (cap 5, [session] max_iterations)"
    assert reason in fifth.out and json.loads(Path(project.agent_stop).read_text())["reason"] == reason

    # Resumed without a reset: the note names the cap and where it comes from.
    r = run_cli_subprocess("session", "resume", "--yes", cwd=project.project)
    assert r.code == 0 and r.out.splitlines() == ["AGENT_STOP removed; status running"], r
    assert r.err.startswith(
        "cocoplus: note: the iteration budget is used up: 5 of 5 tool calls (cap 5 from cocoplus.toml)"
    )

    # An environment override is the effective cap, and is named as such; --json says the same.
    r = run_cli_subprocess(
        "session",
        "resume",
        "--reset-budget",
        "--yes",
        "--json",
        cwd=project.project,
        env={"COCOPLUS_SESSION_MAX_ITERATIONS": "7"},
    )
    reset = json.loads(r.out)["budget_reset"]
    assert (reset["cap"], reset["consumed"], reset["limits_from"]) == (7, 0, "env COCOPLUS_SESSION_MAX_ITERATIONS")
    # With no cocoplus.toml the default is named as the default.
    Path(project.config).unlink()
    r = run_cli_subprocess("session", "resume", "--reset-budget", "--yes", cwd=project.project)
    assert r.out.splitlines()[-1] == "iteration budget reset: 0 of 200 tool calls used (cap 200, the default)"


def test_budget_lines_name_the_cost_limit_cocoplus_toml_sets(project):
    r = run_cli_subprocess("budget", "status", cwd=project.project)
    assert r.out.splitlines()[0] == "cost budget: no limit set ([session] budget_limit = 0, the default); $0.00 spent"
    cost = [ln for ln in status(project).out.splitlines() if ln.strip().startswith("cost budget")][0]
    assert "no limit set ([session] budget_limit = 0, the default)" in cost
    Path(project.config).write_text("[session]\nbudget_limit = 4.0\n")
    cost = [ln for ln in status(project).out.splitlines() if ln.strip().startswith("cost budget")][0]
    # The limit is the configuration's at once; the state is the last boundary's, which had none.
    assert "$0.00 of $4.00 spent, $4.00 left (limit $4.00 from cocoplus.toml; reserve from $3.60)" in cost, cost
    assert (
        "the state was set at the last stage boundary, against no limit; the next boundary applies this limit" in cost
    )
    r = run_cli_subprocess("budget", "status", cwd=project.project)
    assert r.out.splitlines()[0].startswith(
        "cost budget: normal - $0.00 of $4.00 spent, $4.00 left (limit $4.00 from cocoplus.toml)"
    )


# -- tables ----------------------------------------------------------------------------------------


@pytest.fixture
def three_sessions(project):
    for runtime, rid in (
        ("claude", "5b0e7c1d-2f44-4c7e-9a61-0d3e8b7f2a90"),
        ("codex", "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"),
        ("gemini", "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a"),
    ):
        registry.ensure(project, runtime, rid, event="SessionStart", change=lambda r: r.update({"state": "running"}))
    registry.update(
        project,
        "cs_0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
        lambda r: registry.set_attention(r, "awaiting_authorization"),
    )
    return project


def whole_cells(project: Layout, text: str) -> None:
    records, _ = registry.list_sessions(project)
    assert "…" not in text and "..." not in text, text
    for r in records:
        for value in (r["id"], r["alias"], r["state"], r["last_event_at"], r.get("attention") or "-"):
            assert value in text, (value, text)


def test_sessions_list_piped_never_cuts_a_cell(three_sessions):
    r = run_cli_subprocess("sessions", "list", cwd=three_sessions.project, env={"COLUMNS": "80"})
    assert r.code == 0, r.err
    whole_cells(three_sessions, r.out)
    assert "awaiting_authorization" in r.out


def test_sessions_list_at_80_columns_drops_optional_columns_not_characters(three_sessions):
    out = run_in_terminal(["sessions", "list"], three_sessions.project, columns=80, env={"NO_COLOR": "1"})
    whole_cells(three_sessions, out)
    header = out.splitlines()[0]
    assert header.split()[:2] == ["alias", "state"]  # runtime and last event made way
    wide = run_in_terminal(["sessions", "list"], three_sessions.project, columns=250, env={"NO_COLOR": "1"})
    assert "runtime" in wide.splitlines()[0] and "last event" in wide.splitlines()[0]
    whole_cells(three_sessions, wide)


# -- session status: one run-state row, STOPPED in red ------------------------------------------------


def test_status_has_one_run_state_row(project):
    out = status(project).out
    rows = [ln for ln in out.splitlines() if ln.strip().startswith("run state")]
    assert len(rows) == 1 and "idle (initialised)" in rows[0]
    assert "terminal state" not in out and "pod state" not in out
    # pod-state.json is shown only where it says something else
    fsio.atomic_write_json(
        project.pod_state,
        {"schema_version": 1, "state": "exited", "reason": "pod gone", "updated_at": "2026-11-30T10:00:00.000Z"},
    )
    out = status(project).out
    i = [n for n, ln in enumerate(out.splitlines()) if ln.strip().startswith("run state")]
    assert len(i) == 1 and "exited (pod gone)" in out.splitlines()[i[0] + 1]


def test_stopped_is_red_on_a_terminal_and_plain_with_no_color(project):
    assert run_cli_subprocess("session", "stop", "--reason", "lunch", cwd=project.project).code == 0
    coloured = run_in_terminal(["session", "status"], project.project, columns=200)
    assert "\x1b[1;31mSTOPPED\x1b[0m by tester" in coloured, repr(coloured)
    plain = run_in_terminal(["session", "status"], project.project, columns=200, env={"NO_COLOR": "1"})
    assert "STOPPED" in plain and "31m" not in plain and ";31" not in plain, repr(plain)  # bold stays, no colour
    piped = status(project).out
    assert "STOPPED by tester" in piped and "\x1b[" not in piped


# -- counts at the cap ---------------------------------------------------------------------------------


def test_calls_past_the_cap_never_show_a_count_past_it(project):
    Path(project.config).write_text("[session]\nmax_iterations = 4\niteration_warn_at = 3\n")
    post_tool(project, 5)  # one call lands after the stop (parallel tool calls do this)
    stop = json.loads(Path(project.agent_stop).read_text())
    st = json.loads(Path(project.status).read_text())
    assert (
        stop["reason"]
        == st["reason"]
        == "iteration budget exhausted: 4 of 4 tool calls used (cap 4, [session] max_iterations)"
    )
    assert json.loads(Path(project.iteration_budget).read_text())["consumed"] == 5  # counted, not shown past the cap
    out = status(project).out
    assert "5/4" not in out
    row = [ln for ln in out.splitlines() if ln.strip().startswith("iteration budget")][0]
    assert "4 of 4 tool calls used" in row and "1 more call(s) after the stop" in row


# -- resume with nothing stopped -------------------------------------------------------------------------


def test_resume_with_nothing_stopped_says_so_and_changes_nothing(project):
    before = {p: Path(p).read_bytes() for p in (project.status, project.pod_state, project.steps)}
    r = run_cli_subprocess("session", "resume", cwd=project.project)  # no terminal, no --yes: nothing to confirm
    assert r.code == 0, r.err
    assert "nothing to resume" in r.out and "nothing was changed" in r.out
    r = run_cli_subprocess("session", "resume", "--yes", "--json", cwd=project.project)
    assert r.code == 0 and json.loads(r.out)["resumed"] is False
    assert {p: Path(p).read_bytes() for p in before} == before
    assert json.loads(Path(project.status).read_text())["state"] == "idle"


# -- init inside a project -------------------------------------------------------------------------------


@pytest.mark.slow
def test_init_inside_a_project_refuses_unless_nested(project):
    sub = Path(project.project) / "services" / "api"
    sub.mkdir(parents=True)
    r = run_cli_subprocess("init", cwd=sub)
    assert r.code == 1
    lines = error_lines(r.err)
    assert (
        lines[0].startswith("cocoplus: error: ") and "already a cocoplus project" in lines[0] and "shadow" in lines[0]
    )
    assert len(lines) == 2 and "--nested" in lines[1]
    assert not (sub / ".cocoplus").exists()
    # From the subdirectory, commands use the enclosing project.
    assert json.loads(run_cli_subprocess("session", "status", "--json", cwd=sub).out)["state_dir"] == project.root

    r = run_cli_subprocess("init", "--nested", "--json", cwd=sub)
    assert r.code == 0, r.err
    assert json.loads(r.out)["nested_in"] == project.root
    assert json.loads(run_cli_subprocess("session", "status", "--json", cwd=sub).out)["state_dir"] == str(
        sub / ".cocoplus"
    )
    # Running init again where a project already is stays idempotent, nested or not.
    assert run_cli_subprocess("init", cwd=project.project).code == 0
    assert run_cli_subprocess("init", cwd=sub).code == 0


# -- --dir errors name --dir ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_dir_errors_name_the_dir_flag(tmp_path):
    missing = tmp_path / "nonexistent"
    r = run_cli_subprocess("--dir", str(missing), "session", "status", cwd=tmp_path)
    assert r.code == 1
    assert r.err.splitlines()[0] == f"cocoplus: error: --dir {missing}: no such directory"
    assert "COCOPLUS_DIR" not in r.err
    empty = tmp_path / "empty"
    empty.mkdir()
    r = run_cli_subprocess("--dir", str(empty), "session", "status", cwd=tmp_path)
    assert r.code == 1 and r.err.startswith(f"cocoplus: error: --dir {empty}: no .cocoplus directory there")
    assert f"cocoplus --dir {empty} init" in r.err and "COCOPLUS_DIR" not in r.err
    r = run_cli_subprocess("--dir", str(missing), "init", cwd=tmp_path)
    assert r.code == 2 and r.err.startswith(f"cocoplus: error: --dir {missing}: no such directory")
    assert not missing.exists()
    # The environment variable is named when it is the environment that says it.
    r = run_cli_subprocess("session", "status", cwd=tmp_path, env={"COCOPLUS_DIR": str(missing)})
    assert r.code == 1 and "COCOPLUS_DIR" in r.err
    # --dir naming a project that has none yet: init creates PROJECT/.cocoplus.
    r = run_cli_subprocess("--dir", str(empty), "init", "--json", cwd=tmp_path)
    assert r.code == 0, r.err
    assert json.loads(r.out)["state_dir"] == str(empty / ".cocoplus")


# -- the bundled example's age comes from its own stamps --------------------------------------------------------


def test_example_is_stale_after_a_fresh_clone(tmp_path):
    copy = tmp_path / "webshop"
    shutil.copytree(EXAMPLE, copy)
    now = time.time()
    for root, _dirs, files in os.walk(copy):  # what a clone does: every file written just now
        for name in files:
            os.utime(os.path.join(root, name), (now, now))
    r = run_cli_subprocess("session", "status", "--json", cwd=copy)
    rep = json.loads(r.out)
    assert rep["handoff"]["stale"] is True and rep["handoff"]["updated_from"] == "stamp"
    assert rep["handoff"]["updated_at"] == "2026-11-29T21:12:40.000Z"
    assert rep["status"]["state"] == "running" and rep["status"]["stale"] is True
    text = run_cli_subprocess("session", "status", cwd=copy).out
    assert "(STALE, stale after 24 h)" in text
    run_row = [ln for ln in text.splitlines() if ln.strip().startswith("run state")][0]
    assert "STALE: no activity for" in run_row
    listed = json.loads(run_cli_subprocess("sessions", "list", "--json", cwd=copy).out)["sessions"]
    assert [(s["alias"], s["state"], s["stale"]) for s in listed] == [("cc1", "running", True)]
    assert "running (stale)" in run_cli_subprocess("sessions", "list", cwd=copy).out
    # Status reads; it changes nothing in the example.
    assert not any(p.name.endswith((".corrupt", ".tmp")) for p in copy.rglob("*"))


def test_an_edited_handoff_is_fresh_and_keeps_its_age_through_a_copy(project):
    hour_ago = time.time() - 3600
    old = time.time() - 3 * 86400
    text = Path(project.progress).read_text().replace("## Done\n", "## Done\n- wrote the parser\n")
    Path(project.progress).write_text(text)
    os.utime(project.progress, (old, old))  # edited three days ago
    post_tool(project, 1)  # a hook rewrites the budget lines and stamps the edit's time
    rep = json.loads(status(project, "--json").out)
    assert rep["handoff"]["stale"] is True and rep["handoff"]["age"].startswith("3d")
    os.utime(project.progress, (hour_ago, hour_ago))  # a copy or checkout: a new file time, the same content
    rep = json.loads(status(project, "--json").out)
    assert rep["handoff"]["stale"] is True and rep["handoff"]["updated_from"] == "stamp"
    # A real edit is fresh.
    Path(project.progress).write_text(text.replace("- wrote the parser\n", "- wrote the parser\n- and its tests\n"))
    rep = json.loads(status(project, "--json").out)
    assert rep["handoff"]["stale"] is False and rep["handoff"]["updated_from"] == "file time"


def test_a_stamp_in_the_earlier_checksum_form_keeps_its_time(project):
    import zlib

    from cocoplus.core import progress

    old = time.time() - 3 * 86400
    text = Path(project.progress).read_text().replace("## Done\n", "## Done\n- wrote the parser\n")
    Path(project.progress).write_text(text)
    raw = progress._handoff_bytes(text)
    fsio.atomic_write_json(
        project.handoff_stamp,
        {
            "schema_version": 1,
            "checksum": f"{zlib.crc32(raw):08x}{len(raw):x}",
            "content_updated_at": "2026-11-01T10:00:00.000Z",
        },
    )
    os.utime(project.progress, (old, old))
    rep = json.loads(status(project, "--json").out)
    assert rep["handoff"]["updated_from"] == "stamp" and rep["handoff"]["updated_at"] == "2026-11-01T10:00:00.000Z"
    post_tool(project, 1)  # the hook writes the stamp again, in the current form, with its time
    stamp = present(fsio.read_json(project.handoff_stamp))
    assert (
        stamp["checksum"] == progress.content_checksum(text)
        and stamp["content_updated_at"] == "2026-11-01T10:00:00.000Z"
    )
    rep = json.loads(status(project, "--json").out)
    assert rep["handoff"]["updated_from"] == "stamp" and rep["handoff"]["updated_at"] == "2026-11-01T10:00:00.000Z"


# -- a truncated state file ------------------------------------------------------------------------------------


def test_truncated_state_file_is_reported_as_truncated(project):
    whole = Path(project.iteration_budget).read_text()
    Path(project.iteration_budget).write_text(whole[: len(whole) // 2])
    rep = json.loads(status(project, "--json").out)
    part = rep["iteration_budget"]
    assert part["damaged"] and "iteration-budget.json: truncated" in part["error"] and "nested" not in part["error"]
    out = status(project).out
    assert "truncated: the JSON stops at char" in out and "nested too deeply" not in out
    r = run_cli_subprocess("session", "check", cwd=project.project)
    assert r.code == 1 and "truncated" in r.err
