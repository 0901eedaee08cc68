"""The iteration cap with several live sessions (issue 33, item 2; docs/guides/budgets.md, "Parallel sessions").

Each session's runtime is a real process (`sleep`), recorded on its session as SessionStart records it, so that
whether it is live is told the way the hook tells it (pid and start ticks); the hook runs as installed
(`run_hook`), PostToolUse for Codex's dialect (the count after the call) and PreToolUse for Claude Code's (the
count before it).  Ending a `sleep` is a session going away during the run.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from cocoplus.hook import COUNT_BEFORE_CALL
from cocoplus.session import iteration, procinfo, registry, sharing, stops
from tests.conftest import run_cli_subprocess
from tests.hook.helpers import fixture, run_hook
from tests.support.typed import present
from tests.support.waiting import wait_until


class Runtimes:
    """One real process per session, recorded as its runtime."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, sid: str, same_as: str | None = None) -> None:
        proc = self.procs[same_as] if same_as else subprocess.Popen(["sleep", "300"])
        self.procs[sid] = proc
        ticks = wait_until(lambda: procinfo.start_ticks(proc.pid))
        info = {"process": {"pid": proc.pid, "start_ticks": ticks, **procinfo.here()}}
        registry.ensure(self.layout, "codex", sid, event="SessionStart", info=info)

    def end(self, sid: str) -> None:
        proc = self.procs[sid]
        proc.kill()
        proc.wait()

    def close(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()


@pytest.fixture
def runtimes(project: Layout) -> Iterator[Runtimes]:
    r = Runtimes(project)
    yield r
    r.close()


def post(layout: Layout, sid: str, n: int) -> dict[str, Any]:
    """One tool call of session `sid` (a different command each time: no loop), counted after it ran."""
    payload = fixture("codex-posttooluse-bash.json") | {"session_id": sid, "tool_input": {"command": f"echo {n}"}}
    r = run_hook(layout, "PostToolUse", payload, "codex")
    assert r.code == 0, r
    return r.json or {}


def pre(layout: Layout, sid: str, n: int) -> dict[str, Any]:
    """One tool call of a Claude Code session, counted before it runs."""
    payload = fixture("claude-pretooluse-bash.json") | {"session_id": sid, "tool_input": {"command": f"echo {n}"}}
    r = run_hook(layout, "PreToolUse", payload, "claude", COUNT_BEFORE_CALL)
    assert r.code == 0, r
    return r.json or {}


def halted(answer: dict[str, Any]) -> bool:
    return answer.get("continue") is False


def denied(answer: dict[str, Any]) -> bool:
    return (answer.get("hookSpecificOutput") or {}).get("permissionDecision") == "deny"


def steps(layout: Layout, event: str) -> list[dict[str, Any]]:
    lines = Path(layout.steps).read_text().splitlines()
    return [d for d in (json.loads(x) for x in lines) if d.get("event") == event]


def config(layout: Layout, text: str) -> None:
    Path(layout.config).write_text(f"[session]\nloop_guard_repeats = 0\niteration_warn_at = 0\n{text}")


def test_one_live_session_keeps_the_seed_contract(project: Layout, runtimes: Runtimes) -> None:
    config(project, "max_iterations = 3\n")
    runtimes.start("solo")
    runtimes.start("gone")  # recorded `running`, but its process has ended: not live
    runtimes.end("gone")
    assert [halted(post(project, "solo", n)) for n in range(3)] == [False, False, True]
    stop = json.loads(Path(project.agent_stop).read_text())
    assert stop["principal"] == "budget" and "3 of 3 tool calls used" in stop["reason"]
    (cap,) = steps(project, "iteration_cap")
    assert cap["final_budget_state"]["iteration"] == {"cap": 3, "consumed": 3, "warn_at": 0}
    assert present(iteration.read(project))["stopped"] is True


def test_with_several_live_each_session_has_its_own_cap_and_alone_again_the_seed_stop(
    project: Layout, runtimes: Runtimes
) -> None:
    config(project, "max_iterations = 3\n")
    for sid in ("a", "b"):
        runtimes.start(sid)
    for n in range(2):
        assert not halted(post(project, "a", n)) and not halted(post(project, "b", n))
    # The project's count (4) is past the cap: b's own third call is its last; a goes on.
    answer = post(project, "b", 2)
    assert halted(answer) and "iteration budget exhausted for session cx2" in answer["stopReason"]
    assert "--reset-budget`, then `cocoplus session resume --session cx2`" in answer["stopReason"]
    assert not os.path.lexists(project.agent_stop)
    b = present(stops.read(project, registry.cs_id_for("b")))
    assert b["principal"] == "budget" and b["source"] == "iteration-budget"
    assert present(registry.read_record(project, "cs_b"))["stopped_by"]["scope"] == "session"
    doc = present(iteration.read(project))
    assert (doc["consumed"], doc["cap"], doc["stopped"], doc["shared"]) == (5, 3, False, True)
    # PROGRESS.md's Iteration Budget section has both: the project's count, and each session's own.
    text = Path(project.progress).read_text()
    assert "- Cap: 3\n- Consumed: 5\n" in text and "- Sessions: cx2 3 (live), cx1 2 (live)\n" in text, text
    # b's runtime ends: a is alone; its own count (2) is under the cap, so its next call is its last, and the stop
    # is the seed's (AGENT_STOP with the final budget state), not a session stop.
    runtimes.end("b")
    answer = post(project, "a", 2)
    assert halted(answer) and "--reset-budget" in answer["stopReason"]
    stop = json.loads(Path(project.agent_stop).read_text())
    assert stop["principal"] == "budget" and "3 of 3 tool calls used" in stop["reason"]
    final = [s for s in steps(project, "iteration_cap") if "final_budget_state" in s]
    assert len(final) == 1 and final[0]["session_consumed"] == 3
    assert stops.read(project, "cs_a") is None


def test_before_the_call_the_call_past_a_session_s_own_cap_is_refused(project: Layout, runtimes: Runtimes) -> None:
    config(project, "max_iterations = 2\n")
    runtimes.start("x")
    runtimes.start("y")
    assert not denied(pre(project, "x", 0)) and not denied(pre(project, "y", 0))
    last = pre(project, "x", 1)  # x's own second: it runs, and is told it is the last
    assert not denied(last) and "last tool call the iteration cap allows this session" in json.dumps(last)
    assert denied(pre(project, "x", 2))  # refused: x is stopped
    assert not denied(pre(project, "y", 1))  # y's own second runs: the other session goes on
    assert not os.path.lexists(project.agent_stop)


def test_project_max_iterations_is_a_ceiling_whatever_is_live(project: Layout, runtimes: Runtimes) -> None:
    config(project, "max_iterations = 100\nproject_max_iterations = 4\n")
    for sid in ("p", "q"):
        runtimes.start(sid)
    answers = [post(project, sid, n) for n in range(2) for sid in ("p", "q")]
    assert [halted(a) for a in answers] == [False, False, False, True]
    stop = json.loads(Path(project.agent_stop).read_text())
    assert "4 of 4 tool calls used by the project's sessions together" in stop["reason"]
    assert "project_max_iterations" in stop["reason"]


def test_a_new_session_in_the_same_runtime_process_is_not_another_live_one(project: Layout, runtimes: Runtimes) -> None:
    """After `/clear` a runtime's process runs a new session; the one it replaced is not live beside it."""
    config(project, "max_iterations = 2\n")
    runtimes.start("first")
    runtimes.start("second", same_as="first")
    assert [halted(post(project, "second", n)) for n in range(2)] == [False, True]
    assert os.path.lexists(project.agent_stop)  # alone: the seed's stop


def test_a_reset_starts_each_session_s_own_count_again(project: Layout, runtimes: Runtimes) -> None:
    config(project, "max_iterations = 2\n")
    for sid in ("r", "s"):
        runtimes.start(sid)
    post(project, "r", 0)
    assert halted(post(project, "r", 1))  # r's own cap, with s live
    env = {"COCOPLUS_DIR": project.root}
    assert run_cli_subprocess("session", "resume", "--reset-budget", "--yes", cwd=project.project, env=env).code == 0
    out = run_cli_subprocess("session", "resume", "--session", "cx1", "--yes", cwd=project.project, env=env)
    assert out.code == 0, out
    rec = present(registry.read_record(project, "cs_r"))
    assert sharing.own_count(rec) == 0 and rec["budget_base"] == 2
    assert not halted(post(project, "r", 2))  # its own count starts again: 1 of 2


def test_an_event_that_names_no_session_outside_a_worker_stops_the_project_at_the_cap(
    project: Layout, runtimes: Runtimes
) -> None:
    """Nothing narrower than the project can be stopped for it (no session, no managed worker): the seed's stop,
    whatever else is live."""
    config(project, "max_iterations = 2\n")
    runtimes.start("live-other")
    bare = {k: v for k, v in fixture("codex-posttooluse-bash.json").items() if k != "session_id"}
    answers = [run_hook(project, "PostToolUse", bare | {"tool_input": {"command": f"echo {n}"}}, "codex").json
               for n in range(2)]  # fmt: skip
    assert [halted(a or {}) for a in answers] == [False, True]
    assert json.loads(Path(project.agent_stop).read_text())["principal"] == "budget"
    assert not os.path.isdir(project.session_stops_dir)


def test_session_status_says_the_cap_is_each_session_s_once_shared(project: Layout, runtimes: Runtimes) -> None:
    config(project, "max_iterations = 2\n")
    for sid in ("t", "u"):
        runtimes.start(sid)
    for n in range(2):
        post(project, "t", n)
        post(project, "u", n)
    out = run_cli_subprocess("session", "status", cwd=project.project, env={"COCOPLUS_DIR": project.root})
    assert out.code == 0, out
    assert "4 tool calls used by the project's sessions together; the cap is each session's own count" in out.out
    assert "cap reached" not in out.out


def test_two_live_sessions_racing_each_run_exactly_their_own_cap(project: Layout, runtimes: Runtimes) -> None:
    """Two sessions' calls race (each session's own calls one after the other, as a runtime makes them, the two
    sessions at once): the project's count is exact, and each session runs exactly the cap, whichever reaches
    the project's cap first; neither stops the other, and the project is not stopped."""
    import threading  # (only this test races)

    config(project, "max_iterations = 8\n")
    for sid in ("racer-a", "racer-b"):
        runtimes.start(sid)
    got: dict[str, list[bool]] = {"racer-a": [], "racer-b": []}

    def run(sid: str) -> None:
        for n in range(12):
            got[sid].append(denied(pre(project, sid, n)))

    threads = [threading.Thread(target=run, args=(sid,)) for sid in got]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    for sid, answers in got.items():
        assert answers == [False] * 8 + [True] * 4, (sid, answers)
        assert present(stops.read(project, registry.cs_id_for(sid)))["principal"] == "budget"
    assert present(iteration.read(project))["consumed"] == 16
    assert not os.path.lexists(project.agent_stop)


def test_one_session_s_parallel_calls_racing_past_its_own_cap_run_exactly_the_cap(
    project: Layout, runtimes: Runtimes
) -> None:
    """A runtime's parallel tool calls race for the session's last calls: each is counted in the session's own log
    under the count's lock, so exactly the cap run, however many race."""
    from concurrent.futures import ThreadPoolExecutor  # (only this test races one session's calls)

    config(project, "max_iterations = 4\n")
    for sid in ("busy", "other"):
        runtimes.start(sid)
    for n in range(4):  # the project's count reaches the cap: from now on it is each session's own
        pre(project, "other", n)
    with ThreadPoolExecutor(10) as pool:
        answers = list(pool.map(lambda n: denied(pre(project, "busy", 100 + n)), range(10)))
    assert sorted(answers) == [False] * 4 + [True] * 6, answers
    assert present(stops.read(project, "cs_busy"))["principal"] == "budget"
    assert not os.path.lexists(project.agent_stop)
