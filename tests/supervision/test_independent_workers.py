"""Parallel workers stay independent: a worker whose loop guard fires, or whose own count reaches the iteration
cap, is stopped alone, and a second live worker goes on (issue 33, item 2).

Real processes throughout: real runners (`workers.launch`), and a stand-in runtime named `claude` first on PATH
that runs cocoplus' installed hook command for each of its tool calls as Claude Code does (SessionStart, then a
PreToolUse that counts the call before it runs), reads each answer, and ends when it is denied or halted.  The
stand-in's task says what it does: `loop-*` repeats one command; `steady-*` makes a few different calls, waits
for its gate file, makes a few more and ends with exit code 0.  With `FAKE_NO_SESSION` its events name no
session (no `session_id`, no session variable): the fallback is the managed worker's own run.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from cocoplus.hook import COUNT_BEFORE_CALL
from cocoplus.session import iteration, registry, sharing, stops
from cocoplus.session.workspace import init
from cocoplus.supervision import workers
from tests.conftest import run_cli_subprocess
from tests.hook.helpers import hook_argv
from tests.supervision.workers_support import stop_workers
from tests.support.typed import present
from tests.support.waiting import wait_until
from tests.support.wired import hooks_installed

STANDIN = """#!{python}
import json, os, subprocess, sys, time
task = sys.argv[2]
d = os.environ["FAKE_DIR"]
argv = json.loads(os.environ["FAKE_HOOK_ARGV"])
named = not os.environ.get("FAKE_NO_SESSION")
sid = f"sess-{{task}}-{{os.getpid()}}"
env = {{k: v for k, v in os.environ.items() if not k.startswith("CLAUDE")}}

def hook(event, payload, *extra):
    payload = dict(payload, hook_event_name=event, cwd=os.getcwd())
    if named:
        payload["session_id"] = sid
    argv_e = [a if a != "EVENT" else event for a in argv] + list(extra)
    p = subprocess.run(argv_e, input=json.dumps(payload), capture_output=True, text=True, timeout=120, env=env)
    return json.loads(p.stdout) if p.stdout.strip() else {{}}

def note(line):
    with open(os.path.join(d, task + ".calls"), "a") as fh:
        fh.write(line + "\\n")

def call(i):
    cmd = "make test" if task.startswith("loop") else f"echo {{task}} {{i}}"
    got = hook("PreToolUse", {{"tool_name": "Bash", "tool_input": {{"command": cmd}}}}, "{count}")
    out = got.get("hookSpecificOutput") or {{}}
    if out.get("permissionDecision") == "deny":
        note("denied " + str(out.get("permissionDecisionReason")))
        return False
    note("ran " + json.dumps(out.get("additionalContext")))
    if got.get("continue") is False:
        note("halted " + str(got.get("stopReason")))
        return False
    return True

hook("SessionStart", {{"source": "startup"}})
print("stand-in: started", task, flush=True)
if task.startswith("loop"):
    i = 0
    while i < 200 and call(i):
        i += 1
    print("stand-in: stopped after", i, flush=True)
    sys.exit(0)
before, after = int(os.environ.get("FAKE_BEFORE", "3")), int(os.environ.get("FAKE_AFTER", "3"))
for i in range(before):
    if not call(i):
        sys.exit(0)
open(os.path.join(d, task + ".waiting"), "w").close()
while not os.path.exists(os.path.join(d, task + ".gate")):
    time.sleep(0.05)
for i in range(before, before + after):
    if not call(i):
        sys.exit(0)
print("stand-in: done", task, flush=True)
"""


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Layout]:
    project = tmp_path / "shop"
    project.mkdir()
    init(str(project / ".cocoplus"))
    layout = Layout(str(project / ".cocoplus"))
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    script = bindir / "claude"
    script.write_text(STANDIN.format(python=sys.executable, count=COUNT_BEFORE_CALL))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_DIR", str(tmp_path))
    monkeypatch.setenv("FAKE_HOOK_ARGV", json.dumps(hook_argv("EVENT", "claude")))
    monkeypatch.setenv("COCOPLUS_DIR", layout.root)
    hooks_installed(layout, "claude")  # launch refuses a runtime that would run no cocoplus hook
    yield layout
    stop_workers(layout)


def calls(layout: Layout, task: str) -> list[str]:
    path = Path(layout.project).parent / f"{task}.calls"
    return path.read_text().splitlines() if path.exists() else []


def waiting(layout: Layout, task: str) -> bool:
    return (Path(layout.project).parent / f"{task}.waiting").exists()


def release(layout: Layout, task: str) -> None:
    (Path(layout.project).parent / f"{task}.gate").touch()


def worker(layout: Layout, wid: str) -> dict[str, Any]:
    return dict(present(workers.read(layout, wid)))


def ended(layout: Layout, wid: str) -> bool:
    return worker(layout, wid).get("state") in ("exited", "failed")


def listed(layout: Layout) -> str:
    out = run_cli_subprocess("workers", "list", cwd=layout.project)
    assert out.code == 0, out
    return out.out


@pytest.mark.parametrize("named", [True, False], ids=["session", "no-session"])
def test_a_worker_whose_loop_guard_fires_leaves_a_second_live_worker_running(
    proj: Layout, monkeypatch: pytest.MonkeyPatch, named: bool
) -> None:
    if not named:
        monkeypatch.setenv("FAKE_NO_SESSION", "1")
    Path(proj.config).write_text("[session]\nloop_guard_repeats = 2\n")
    workers.launch(proj, "claude", "steady-1", by="alice")
    wait_until(lambda: waiting(proj, "steady-1"), timeout=120)  # its first calls ran: it is live
    workers.launch(proj, "claude", "loop-1", by="alice")
    wait_until(lambda: ended(proj, "w2"), timeout=120)
    loop = worker(proj, "w2")
    # Only the looping worker stopped: the project's kill switch is untouched and the other worker still runs.
    assert not os.path.lexists(proj.agent_stop)
    assert worker(proj, "w1")["state"] == "running"
    assert loop["state"] == "exited", loop
    assert loop["stopped_by"]["principal"] == "loop-guard"
    assert "runaway loop" in loop["reason"] and "4 times in a row" in loop["reason"]
    if named:
        # A session stop of its own session, said on its session's record.
        assert loop["stopped_by"]["scope"] == "session"
        stop = present(stops.read(proj, loop["session"]))
        assert stop["principal"] == "loop-guard" and stop["operator"] == "cocoplus"
        sess = present(registry.read_record(proj, loop["session"]))
        assert sess["state"] == "exited" and sess["stopped_by"]["principal"] == "loop-guard"
        assert any(line.startswith("denied ") and "runaway loop" in line for line in calls(proj, "loop-1"))
    else:
        # No session to stop alone: the worker's run is ended (its process group), and said on the worker.
        assert loop["stopped_by"]["scope"] == "worker"
        assert loop["exit"]["signal"] == "SIGTERM", loop
        assert not os.path.exists(proj.worker_stop("w2"))  # read once, when the run ended
    assert "w2" in listed(proj) and "stopped by the loop guard" in listed(proj)
    # The morning's summary tells it the same way.
    summary = run_cli_subprocess("summary", cwd=proj.project)
    assert summary.code == 0 and "stopped by the loop guard: runaway loop" in summary.out, summary
    # The other worker's next calls run, and it ends as it would have.
    before = len(calls(proj, "steady-1"))
    release(proj, "steady-1")
    wait_until(lambda: ended(proj, "w1"), timeout=120)
    steady = worker(proj, "w1")
    assert steady["state"] == "exited" and steady["exit"]["code"] == 0 and steady.get("stopped_by") is None, steady
    done = calls(proj, "steady-1")
    assert len(done) == before + 3 and all(line.startswith("ran ") for line in done), done
    assert not os.path.lexists(proj.agent_stop)


def test_with_several_workers_live_the_one_that_reaches_the_cap_is_stopped_and_the_other_goes_on(
    proj: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cap is each session's own count while several are live: the project's count passes it, the session
    whose own count reaches it is stopped alone (a session stop by `budget`, with a handoff), the other goes on;
    alone again, the survivor's own count keeps deciding."""
    Path(proj.config).write_text("[session]\nmax_iterations = 6\niteration_warn_at = 0\nloop_guard_repeats = 0\n")
    monkeypatch.setenv("FAKE_BEFORE", "3")
    monkeypatch.setenv("FAKE_AFTER", "2")
    workers.launch(proj, "claude", "steady-2", by="alice")
    wait_until(lambda: waiting(proj, "steady-2"), timeout=120)
    workers.launch(proj, "claude", "loop-2", by="alice")  # (the loop guard is off: it calls until stopped)
    wait_until(lambda: ended(proj, "w2"), timeout=120)
    capped = worker(proj, "w2")
    assert not os.path.lexists(proj.agent_stop)
    assert capped["state"] == "exited" and capped["stopped_by"]["principal"] == "budget", capped
    assert "stopped at its iteration cap" in listed(proj)
    lines = calls(proj, "loop-2")
    # Six calls of its own ran (the sixth told it is the last, with the handoff), the seventh was refused.
    assert [x.split()[0] for x in lines] == ["ran"] * 6 + ["denied"], lines
    assert "last tool call the iteration cap allows this session" in lines[5] and "PROGRESS.md" in lines[5]
    sess = present(registry.read_record(proj, capped["session"]))
    assert sharing.own_count(sess) == 6 and sess["stopped_by"]["principal"] == "budget"
    doc = present(iteration.read(proj))
    assert doc["consumed"] == 9 and doc["cap"] == 6 and doc["stopped"] is False and doc["shared"] is True
    # The survivor, alone now, has made 3 calls of its own: its next 2 run, and it ends as it would have.
    release(proj, "steady-2")
    wait_until(lambda: ended(proj, "w1"), timeout=120)
    steady = worker(proj, "w1")
    assert steady["state"] == "exited" and steady.get("stopped_by") is None, steady
    assert [x.split()[0] for x in calls(proj, "steady-2")] == ["ran"] * 5
    assert not os.path.lexists(proj.agent_stop)
