"""`cocoplus timeline [WORKER|SESSION]` (issue 34, "One record" and "See it"): the project's logs, as the hooks and
commands wrote them, read as one time-ordered list of typed events, by the real CLI (a child process).

The session's run is written by the hook itself (tests/report/recorded.py).  The worker that failed over from
Claude Code to Codex is a record written here in the shape `workers.take_over` writes: a real failover needs two
runtimes' limits, which the e2e tests drive; what is read here is the record it leaves."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from cocoplus.core import fsio
from cocoplus.core.paths import Layout
from cocoplus.report import timeline
from cocoplus.session import registry
from tests.conftest import assert_no_traceback, run_cli_subprocess
from tests.report import recorded

UNGUARDED = "max_iterations = 1000\nloop_guard_repeats = 0\niteration_warn_at = 0\n"
GH_TOKEN = "ghp_abcdefghijklmnop0123"


def worker(layout: Layout) -> None:
    """Worker w1: a Claude Code run (the recorded session), then Codex after Claude Code's usage limit."""
    cs = "cs_" + recorded.SID
    os.makedirs(layout.worker_dir("w1"))
    fsio.atomic_write_json(layout.worker_record("w1"), {
        "schema_version": 1, "id": "w1", "runtime": "codex", "task": "make the tests pass", "state": "exited",
        "created_at": "2026-01-01T00:00:00.000Z", "started_at": "2099-01-01T00:00:02.000Z",
        "ended_at": "2099-01-01T00:00:09.000Z", "reason": "exit code 0", "session": None,
        "runtimes": [
            {"runtime": "claude", "since": "2026-01-01T00:00:00.000Z", "session": cs, "session_alias": "cc1",
             "runs": 1},
            {"runtime": "codex", "since": "2099-01-01T00:00:01.000Z", "reason": "usage limit", "until": None,
             "estimate": False, "by": "watcher", "from_session": cs, "session": None, "session_alias": None},
        ],
    })  # fmt: skip


def recorded_project(layout: Layout) -> None:
    recorded.record(layout, UNGUARDED)
    rec = registry.read_record(layout, "cs_" + recorded.SID)
    assert rec is not None
    registry.append_signal(layout, rec, "attention", "needs_decision", message=f"export GITHUB_TOKEN={GH_TOKEN}")
    r = run_cli_subprocess(
        "budget", "add-cost", "0.5", "--note", "Authorization: Bearer tk_0123456789", cwd=layout.project
    )
    assert r.code == 0, r
    worker(layout)


def events(layout: Layout, *argv: str) -> list[dict[str, Any]]:
    r = run_cli_subprocess("timeline", *argv, "--limit", "0", "--json", cwd=layout.project)
    assert r.code == 0, r
    found: list[dict[str, Any]] = json.loads(r.out)["events"]
    return found


def test_the_logs_read_as_typed_events_in_time_order(project: Layout) -> None:
    recorded_project(project)
    found = events(project)
    assert [e["ts"] for e in found] == sorted(e["ts"] for e in found)
    assert len({e["id"] for e in found}) == len(found)
    tools = [e for e in found if e["kind"] == "tool"]
    assert [e["detail"]["call"] for e in tools] == list(range(1, 41))
    pytest_calls = [e for e in tools if 22 <= e["detail"]["call"] <= 29]
    assert [e["detail"]["run"] for e in pytest_calls] == list(range(1, 9))
    assert {e["detail"]["fingerprint"] for e in pytest_calls} == {
        registry.fingerprint({"tool_name": "Bash", "tool_input": recorded.PYTEST})[:24]
    }
    t = tools[23]
    assert (t["session"], t["alias"], t["runtime"], t["source"], t["text"]) == (
        "cs_" + recorded.SID, "cc1", "claude", "calls",
        "tool call 24: Bash pytest -x failed in 5.0s (the same call, 3 in a row)",
    )  # fmt: skip
    # From Claude Code's transcript: the runtime's tool-use id, the tool, its subject, its outcome and duration.
    d = t["detail"]
    assert (d["tool_use_id"], d["tool"], d["subject"], d["error"], d["duration_s"], d["ts_estimated"]) == (
        "toolu_rec024", "Bash", "pytest -x", True, 5.0, False,
    )  # fmt: skip
    assert tools[4]["detail"]["subject"] == "OPENAI_API_KEY=[redacted] python tools/fetch.py"
    assert tools[4]["text"] == "tool call 5: Bash OPENAI_API_KEY=[redacted] python tools/fetch.py in 2.0s"
    costs = [e for e in found if e["kind"] == "cost"]
    assert [e["detail"].get("model") for e in costs] == ["claude-sonnet-5"] * 3 + [None]
    assert costs[0]["text"].startswith(f"cost ${costs[0]['detail']['usd']:.4f} claude-sonnet-5, ")
    (failover,) = [e for e in found if e["kind"] == "failover"]
    assert (failover["worker"], failover["runtime"], failover["text"]) == (
        "w1", "codex", "failover: claude -> codex (usage limit)",
    )  # fmt: skip
    assert failover["detail"]["from"] == "claude" and failover["detail"]["from_session"] == "cs_" + recorded.SID
    assert {"signal", "step", "worker"} <= {e["kind"] for e in found}


def test_no_secret_reaches_a_line_or_the_json(project: Layout) -> None:
    recorded_project(project)
    text = run_cli_subprocess("timeline", "--limit", "0", cwd=project.project)
    js = run_cli_subprocess("timeline", "--limit", "0", "--json", cwd=project.project)
    assert text.code == js.code == 0, (text, js)
    assert "GITHUB_TOKEN=[redacted]" in text.out
    for secret in (GH_TOKEN, "tk_0123456789", recorded.SECRET):
        assert secret not in text.out and secret not in js.out
    assert "Authorization: [redacted]" in js.out


def test_redact_every_form_the_issue_names() -> None:
    cases = {
        "OPENAI_API_KEY=sk-abc123456 python x.py": "OPENAI_API_KEY=[redacted] python x.py",
        "export DB_PASSWORD='hunter two'; go": "export DB_PASSWORD=[redacted]; go",
        '{"SLACK_TOKEN": "xoxb-1-2"}': '{"SLACK_TOKEN": "[redacted]"}',
        "curl -H 'Authorization: Bearer abc.def' x": "curl -H 'Authorization: [redacted]' x",
        "push with ghp_0123456789abcdef now": "push with [redacted] now",
        "slack xoxp-1234-5678 ok": "slack [redacted] ok",
        "ntfy tk_abcdef123 ok": "ntfy [redacted] ok",
        "key sk-ant-api03-xyz_1234": "key [redacted]",
        "a monkey=banana and sketch-book": "a monkey=[redacted] and sketch-book",
        "plain words stay": "plain words stay",
    }
    for raw, want in cases.items():
        assert timeline.redact(raw) == want, raw


def test_ids_are_derived_from_the_records_and_survive_older_lines_going(project: Layout) -> None:
    recorded_project(project)
    first = events(project)
    assert events(project) == first
    signals = Path(project.signals).read_text().splitlines(keepends=True)
    assert len(signals) >= 2
    Path(project.signals).write_text("".join(signals[len(signals) // 2 :]))  # the older half compacted away
    after = events(project)
    gone = {e["id"] for e in first} - {e["id"] for e in after}
    assert len(gone) == len(signals) // 2 and all(e["source"] == "signals" for e in first if e["id"] in gone)
    assert [e for e in first if e["id"] not in gone] == after


def test_a_worker_s_timeline_shows_its_runtime_switch(project: Layout) -> None:
    recorded_project(project)
    r = run_cli_subprocess("timeline", "w1", "--limit", "0", cwd=project.project)
    assert r.code == 0, r
    lines = r.out.splitlines()
    assert any("failover   w1 [codex]: failover: claude -> codex (usage limit)" in ln for ln in lines), r.out
    assert sum("tool call" in ln for ln in lines) == 40  # its Claude Code session's calls are its own
    mine = events(project, "w1")
    assert {e["worker"] or "w1" for e in mine} == {"w1"}
    assert all(e["session"] in ("cs_" + recorded.SID, None) for e in mine)
    only = events(project, "cc1")
    assert only and all(e["session"] == "cs_" + recorded.SID for e in only)


def test_the_newest_events_by_default_and_a_window(project: Layout) -> None:
    recorded_project(project)
    r = run_cli_subprocess("timeline", "--json", cwd=project.project)
    assert r.code == 0, r
    rep = json.loads(r.out)
    every = events(project)
    assert len(rep["events"]) == 40 < rep["total"] == len(every)  # (read from each log's end, the same events)
    assert rep["events"] == every[-40:]
    assert run_cli_subprocess("timeline", "--since", "1h", "--json", cwd=project.project).code == 0
    # the worker's events dated 2099 are inside any window; those of 2026-01-01 are outside an hour's
    within = json.loads(
        run_cli_subprocess("timeline", "--since", "1h", "--limit", "0", "--json", cwd=project.project).out
    )
    assert not any(e["ts"] and e["ts"].startswith("2026-01-01") for e in within["events"])
    bad = run_cli_subprocess("timeline", "--since", "soon", cwd=project.project)
    assert bad.code == 2 and "--since 'soon'" in bad.err, bad
    assert_no_traceback(bad.err)


_PIECES = st.sampled_from([
    "OPENAI_API_KEY=", "db_password: ", '"SLACK_TOKEN": "', "Authorization: Bearer ", "sk-", "ghp_", "gho_",
    "github_pat_", "xoxb-", "tk_", "Key", "TOKEN", "secret", "monkey=", "=", '"', "'", " ", ";", "abc123", "x" * 6,
])  # fmt: skip


@settings(max_examples=400)
@given(st.lists(st.one_of(_PIECES, _PIECES, _PIECES, st.text(max_size=8)), max_size=12).map("".join))
@example("ntfy tk_abcdef123 ok")
@example("push ghs_0123456789")
@example("pull gho_0123456789")
@example("slack xoxp-1234-5678")
@example("github_pat_0123456789")
@example("OPENAI_API_KEY=sk-abc123456 python x.py")
@example("curl -H 'authorization: bearer abc.def'")
@example('{"db_Password": "hunter2"}')
def test_redact_skips_only_texts_its_patterns_leave_as_they_are(text: str) -> None:
    """The quick check that lets most strings through untouched never lets a secret through: with it or without
    it (every pattern run), the same text."""
    full = text
    for pattern, repl in timeline._PATTERNS:
        full = pattern.sub(repl, full)
    assert timeline.redact(text) == full


def test_calls_asked_for_in_the_same_millisecond_keep_their_order(project: Layout, monkeypatch) -> None:
    """A fast agent asks for several tool calls in one millisecond: each keeps its place, in the log's order."""
    monkeypatch.setattr(recorded, "at", lambda _seconds: "2026-01-01T00:00:00.000Z")  # every transcript line
    recorded.record(project, UNGUARDED)
    tools = [e for e in timeline.timeline(project)["events"] if e["kind"] == "tool"]
    assert {e["ts"] for e in tools} == {"2026-01-01T00:00:00.000Z"}
    assert [e["detail"]["call"] for e in tools] == list(range(1, 41))
