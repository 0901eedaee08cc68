"""A session whose runtime died without a SessionEnd (SIGKILL, SIGTERM) is known to have ended from its process.

Each session here is started as a runtime starts one: a real process runs
the installed SessionStart hook as its child, so the hook records that
process as the session's runtime (session/procinfo.py).  Killing it is the
runtime dying.  Whoever reads the records next (`sessions list`, the
supervisor, the workers) records the session `exited` and appends its exit
signal, once, however many read at the same time.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core import jsonl
from cocoplus.core.paths import Layout
from cocoplus.runtimes import registry as adapters
from cocoplus.session import procinfo, registry
from cocoplus.supervision import autonomy
from tests.hook.helpers import fixture, hook_argv, hook_env, run_hook
from tests.supervision.conftest import Brain, rounds_started, watchers  # noqa: F401 - watchers is a fixture
from tests.support.waiting import wait_until

# A stand-in runtime: runs the hook command it is given as its child, then waits until it is told to go.
RUNTIME = """\
import subprocess, sys, time
data = sys.stdin.buffer.read()
subprocess.run(sys.argv[2:], input=data, check=True)
open(sys.argv[1], "w").close()
while True:
    time.sleep(1)
"""
SID = fixture("codex-sessionstart.json")["session_id"]
CS = registry.cs_id_for(SID)
# A reader of the session list in a process of its own (`root`: the project).
LIST_SESSIONS = (
    "from cocoplus.core.paths import Layout; from cocoplus.session import registry; "
    "registry.list_sessions(Layout({root!r}))"
)


class Runtime:
    """A process that started a session through the real SessionStart hook, and stays until killed."""

    def __init__(
        self, layout: Layout, runtime: str = "codex", sid: str = SID, payload: dict[str, Any] | None = None
    ) -> None:
        ready = Path(layout.project) / f"ready-{sid}"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", RUNTIME, str(ready), *hook_argv("SessionStart", runtime)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            env=hook_env(layout),
        )
        assert self.proc.stdin is not None
        self.proc.stdin.write(
            json.dumps({**(payload or fixture("codex-sessionstart.json")), "session_id": sid}).encode()
        )
        self.proc.stdin.close()
        wait_until(lambda: ready.exists() or self.proc.poll() is not None, timeout=30)
        assert self.proc.poll() is None, "the stand-in runtime ended before its session started"
        self.cs = registry.cs_id_for(sid)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        self.proc.send_signal(sig)
        self.proc.wait(timeout=30)


@pytest.fixture
def runtime_procs() -> Any:
    started: list[Runtime] = []

    def start(layout: Layout, **kw: Any) -> Runtime:
        r = Runtime(layout, **kw)
        started.append(r)
        return r

    yield start
    for r in started:
        if r.proc.poll() is None:
            r.kill()


def exit_signals(layout: Layout, cs: str = CS) -> list[dict[str, Any]]:
    if not os.path.exists(layout.signals):
        return []
    return [s for s in jsonl.read_jsonl(layout.signals).records if s["kind"] == "exit" and s["session"] == cs]


def listed(layout: Layout) -> dict[str, Any]:
    r = subprocess.run(
        [sys.executable, "-m", "cocoplus", "sessions", "list", "--json"],
        env=hook_env(layout),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    (only,) = json.loads(r.stdout)["sessions"]
    assert isinstance(only, dict)
    return only


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_session_whose_runtime_died_is_listed_exited_with_one_exit_signal(
    project: Layout, runtime_procs: Any, sig: int
) -> None:
    rt = runtime_procs(project)
    rec = registry.read_record(project, CS)
    assert rec is not None and rec["process"]["pid"] == rt.proc.pid
    assert rec["process"]["host"] == os.uname().nodename and rec["process"]["pidns"]
    assert listed(project)["state"] == "running"
    rt.kill(sig)
    s = listed(project)
    assert (s["alias"], s["state"]) == ("cx1", "exited")
    rec = registry.read_record(project, CS)
    assert rec is not None and f"pid {rt.proc.pid}" in rec["exit_reason"] and "Codex CLI" in rec["exit_reason"]
    assert [(x["value"], x["alias"]) for x in exit_signals(project)] == [("exited", "cx1")]
    assert listed(project)["state"] == "exited"
    assert len(exit_signals(project)) == 1  # read again: no second signal


def test_the_attention_a_dead_session_was_waiting_with_is_kept(project: Layout, runtime_procs: Any) -> None:
    rt = runtime_procs(project)
    run_hook(project, "Stop", fixture("codex-stop.json"), "codex")
    rt.kill()
    s = listed(project)
    assert (s["state"], s["attention"]) == ("exited", "pending")


def test_readers_racing_append_one_exit_signal(project: Layout, runtime_procs: Any) -> None:
    rt = runtime_procs(project)
    rt.kill()
    code = LIST_SESSIONS.format(root=project.root)
    readers = [subprocess.Popen([sys.executable, "-c", code], env=hook_env(project)) for _ in range(6)]
    assert [p.wait(timeout=60) for p in readers] == [0] * 6
    assert len(exit_signals(project)) == 1
    assert registry.read_record(project, CS)["state"] == "exited"  # type: ignore[index]


def test_a_session_end_hook_and_a_reader_racing_leave_one_exit_signal(project: Layout, runtime_procs: Any) -> None:
    rt = runtime_procs(project)
    rt.kill()
    argv = hook_argv("SessionEnd", "codex")
    end = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=hook_env(project))
    code = LIST_SESSIONS.format(root=project.root)
    reader = subprocess.Popen([sys.executable, "-c", code], env=hook_env(project))
    end.communicate(json.dumps(fixture("codex-sessionend.json")).encode(), timeout=60)
    assert (end.returncode, reader.wait(timeout=60)) == (0, 0)
    assert len(exit_signals(project)) == 1


@pytest.mark.slow
def test_a_live_runtime_keeps_its_session_running(project: Layout, runtime_procs: Any) -> None:
    runtime_procs(project)
    for _ in range(3):
        assert listed(project)["state"] == "running"
    assert exit_signals(project) == []


def test_a_worker_session_is_left_to_its_worker(project: Layout, runtime_procs: Any) -> None:
    """The worker's runner records how its run ended (exit status and all): the listing does not guess."""
    rt = runtime_procs(project)
    registry.update(project, CS, lambda r: r.update({"worker": "w1"}))
    rt.kill()
    assert listed(project)["state"] == "running" and exit_signals(project) == []


def test_a_runtime_whose_process_is_not_known_to_be_the_sessions_is_left_running(
    project: Layout, runtime_procs: Any
) -> None:
    start = {
        "session_id": "gm-1",
        "transcript_path": None,
        "cwd": project.project,
        "hook_event_name": "SessionStart",
        "timestamp": "2026-08-20T09:14:03Z",
        "source": "startup",
    }
    rt = runtime_procs(project, runtime="gemini", sid="gm-1", payload=start)
    assert not adapters.get("gemini").ENDS_WITH_PROCESS
    rt.kill()
    assert listed(project)["state"] == "running"
    assert exit_signals(project, rt.cs) == []


@pytest.mark.parametrize("key", ["host", "pidns"])
def test_a_process_recorded_on_another_machine_or_namespace_is_not_taken_for_one_here(
    project: Layout, runtime_procs: Any, key: str
) -> None:
    rt = runtime_procs(project)
    registry.update(project, CS, lambda r: r["process"].update({key: "elsewhere"}))
    rt.kill()
    assert listed(project)["state"] == "running" and exit_signals(project) == []
    registry.update(project, CS, lambda r: r["process"].update(procinfo.here()))
    assert listed(project)["state"] == "exited" and len(exit_signals(project)) == 1


def test_a_resume_cocoplus_started_keeps_the_session_alive(project: Layout, runtime_procs: Any) -> None:
    rt = runtime_procs(project)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        registry.update(
            project,
            CS,
            lambda r: r.update({"resumed": {"pid": other.pid, "start_ticks": procinfo.start_ticks(other.pid)}}),
        )
        rt.kill()
        assert listed(project)["state"] == "running"
    finally:
        other.kill()
        other.wait()
    assert listed(project)["state"] == "exited"


def test_the_supervisor_hears_a_dead_runtime_and_converges(project: Layout, runtime_procs: Any, watchers: Any) -> None:
    """Nobody lists the sessions: the watcher's own check records the exit, and its signal closes supervision."""
    Brain(project, quiet=0.2)
    rt = runtime_procs(project)
    autonomy.enable(project, task_hint="converge")
    watchers()
    rt.kill()
    wait_until(lambda: not autonomy.status(project)["autonomous"]["enabled"], timeout=30)
    assert autonomy.status(project)["autonomous"]["finish_reason"] == "converged"
    assert rounds_started(project) == []
    assert len(exit_signals(project)) == 1
