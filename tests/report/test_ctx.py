"""The ctx supplement, with a stand-in `cortex` on PATH whose output each test controls."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from cocoplus.core.paths import Layout

STANDIN = """#!/bin/sh
# Stand-in for `cortex`: records how it was called, then behaves as $CORTEX_MODE says.
{{ echo "argv=$*"; echo "CTX_DIR=${{CTX_DIR-unset}}"
   echo "CTX_STEP_ENFORCEMENT=${{CTX_STEP_ENFORCEMENT-unset}}"; echo "pwd=$(pwd)"; }} >> "{log}"
case "$CORTEX_MODE" in
  json) cat "{out}" ;;
  text) cat "{out}" ;;
  fail) echo "ctx: no workspace" >&2; exit 3 ;;
  slow) sleep 5; cat "{out}" ;;
  garbage) echo "{{not json" ;;
esac
"""

JSON_OUT = {
    "tasks": [
        {"id": "t1", "title": "port the dispute webhook", "status": "in_progress"},
        {"id": "t2", "title": "write the runbook", "status": "todo"},
    ],
    "steps": [
        {"id": "s1", "title": "verify signatures with the raw body", "status": "ready"},
        {"id": "s2", "title": "deploy to staging", "status": "blocked"},
    ],
    "discoveries": ["disputes arrive twice on retries", {"text": "the sandbox rejects EUR refunds"}],
}


@pytest.fixture
def cortex(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "cortex-calls.log"
    out = tmp_path / "cortex-out.txt"
    script = bindir / "cortex"
    script.write_text(STANDIN.format(log=log, out=out))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("CTX_DIR", raising=False)

    class Cortex:
        def set(self, mode: str, content: str = "") -> None:
            monkeypatch.setenv("CORTEX_MODE", mode)
            out.write_text(content)

        def calls(self) -> str:
            return log.read_text() if log.exists() else ""

    return Cortex()


def _set_in_progress(layout: Layout, item: str) -> None:
    text = open(layout.progress).read().replace("## In Progress\n", f"## In Progress\n- {item}\n")
    open(layout.progress, "w").write(text)


def test_present_json_is_added_and_labelled(project: Layout, cortex, cli) -> None:
    cortex.set("json", json.dumps(JSON_OUT))
    _set_in_progress(project, "port the dispute webhook")
    code, out, err = cli("session", "progress", "--json", cwd=project.project)
    rep = json.loads(out)
    assert rep["ctx"]["In Progress"] == ["t1: port the dispute webhook"]
    assert rep["ctx"]["Next"] == ["s1: verify signatures with the raw body"]
    assert rep["ctx"]["Notes"] == [
        "discovery: disputes arrive twice on retries",
        "discovery: the sandbox rejects EUR refunds",
    ]
    assert "ctx_note" not in rep  # they agree on the active task
    code, out, err = cli("session", "progress", cwd=project.project)
    assert "[ctx] t1: port the dispute webhook" in out and "[ctx] s1: verify signatures" in out
    code, out, err = cli("session", "status", "--json", cwd=project.project)
    assert json.loads(out)["ctx"]["source"].startswith("ctx")
    calls = cortex.calls()
    assert "argv=ctx show all" in calls and "CTX_DIR=unset" in calls and f"pwd={project.project}" in calls
    assert "CTX_STEP_ENFORCEMENT=unset" in calls


def test_present_text_format(project: Layout, cortex, cli) -> None:
    cortex.set(
        "text",
        "Tasks:\n  [in_progress] t1: port the webhook\n  [done] t0: map call sites\nReady:\n  - s1: add tests\n"
        "Discoveries:\n  - retries duplicate events\n",
    )
    code, out, err = cli("session", "progress", "--json", cwd=project.project)
    rep = json.loads(out)
    assert rep["ctx"] == {
        "In Progress": ["t1: port the webhook"],
        "Next": ["s1: add tests"],
        "Notes": ["discovery: retries duplicate events"],
    }


def test_disagreement_cocoplus_wins_and_says_so(project: Layout, cortex, cli) -> None:
    cortex.set("json", json.dumps(JSON_OUT))
    _set_in_progress(project, "migrate the invoices table")
    code, out, err = cli("session", "progress", "--json", cwd=project.project)
    rep = json.loads(out)
    assert "PROGRESS.md wins" in rep["ctx_note"] and "migrate the invoices table" in rep["ctx_note"]
    assert rep["sections"]["In Progress"]["items"] == ["- migrate the invoices table"]
    code, out, err = cli("session", "status", "--json", cwd=project.project)
    assert "PROGRESS.md wins" in json.loads(out)["ctx"]["active_task_note"]


@pytest.mark.parametrize("mode", ["fail", "garbage"])
def test_failing_ctx_is_skipped_with_one_debug_line(project: Layout, cortex, cli, mode: str) -> None:
    cortex.set(mode)
    code, out, err = cli("session", "progress", "--json", cwd=project.project)
    assert code == 0 and "ctx" not in json.loads(out)
    log = open(project.cli_log).read().splitlines()
    assert len([x for x in log if " ctx: " in x]) == 1


def test_slow_ctx_times_out_and_is_skipped(project: Layout, cortex, cli) -> None:
    with open(project.config, "w") as fh:
        fh.write("[ctx]\ntimeout_s = 0.3\n")
    cortex.set("slow", json.dumps(JSON_OUT))
    code, out, err = cli("session", "status", "--json", cwd=project.project)
    assert code == 0 and "ctx" not in json.loads(out)
    assert "took longer" in open(project.cli_log).read()


def test_absent_ctx_is_skipped(project: Layout, cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    empty = tmp_path / "emptybin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty) + os.pathsep + "/usr/bin:/bin")
    code, out, err = cli("session", "status", "--json", cwd=project.project)
    assert code == 0 and "ctx" not in json.loads(out)
    assert not os.path.exists(project.cli_log)  # the usual case leaves no trace
    monkeypatch.setenv("COCOPLUS_DEBUG", "1")
    code, out, err = cli("session", "status", "--json", cwd=project.project)
    assert code == 0 and err.count("not on PATH") == 1


def test_stage_commands_run_ctx_without_step_enforcement(project: Layout, cortex, cli) -> None:
    cortex.set("json", json.dumps(JSON_OUT))
    code, out, err = cli("stage", "start", "build", cwd=project.project)
    assert code == 0, err
    assert "CTX_STEP_ENFORCEMENT=false" in cortex.calls() and "CTX_DIR=unset" in cortex.calls()
    started = [json.loads(x) for x in open(project.steps).read().splitlines() if '"stage_start"' in x]
    assert started[0]["ctx_active_task"] == "t1: port the dispute webhook"
