"""The turn-end hold, with real hook processes: what holds a turn end, what ends the hold, and how fast a stop does.

Each test runs the installed Stop hook command as Claude Code does (payload
on stdin), with supervision enabled, and acts on it from outside through
the same functions the doors call.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

from cocoplus.core import jsonl
from cocoplus.core.lock import Lock
from cocoplus.core.paths import Layout
from cocoplus.ops import dispatch as dispatch_ops
from cocoplus.ops import session as session_ops
from cocoplus.session import holds, killswitch, registry, steering
from cocoplus.supervision import autonomy, scope
from tests.hook.helpers import fixture, hook_argv, hook_env, run_hook
from tests.support.waiting import wait_until

SID = "7b3e2c4a-91d2-4f0e-8c55-2b6f0d9a1e37"
CS = registry.cs_id_for(SID)


def stop_payload(layout: Layout, sid: str = SID, **extra: Any) -> dict[str, Any]:
    p = fixture("claude-stop.json")
    p.pop("transcript_path")
    p.update(cwd=layout.project, session_id=sid, **extra)
    return p


class Held:
    """A Stop hook process started like a runtime starts it, waiting on its turn end."""

    def __init__(self, layout: Layout, payload: dict[str, Any], **env: str) -> None:
        self.proc = subprocess.Popen(
            hook_argv("Stop"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=hook_env(layout, **env),
        )
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(payload).encode())
        self.proc.stdin.close()

    def result(self, timeout: float = 20) -> tuple[int, str]:
        self.proc.wait(timeout=timeout)
        assert self.proc.stdout is not None and self.proc.stderr is not None
        out = self.proc.stdout.read().decode()
        assert self.proc.stderr.read().decode() == ""
        return self.proc.returncode, out

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def supervised(project: Layout) -> Any:
    """Supervision on, and its watcher's lock held by this process (a hold needs someone to wake the brain)."""
    autonomy.enable(project, task_hint="keep going")
    with Lock(project.lock("supervisor")):
        yield project


@pytest.fixture
def held(supervised: Layout) -> Any:
    started: list[Held] = []

    def start(payload: dict[str, Any] | None = None, **env: str) -> Held:
        h = Held(supervised, payload or stop_payload(supervised), **env)
        started.append(h)
        cs = registry.cs_id_for((payload or {}).get("session_id", SID))
        wait_until(lambda: holds.current(supervised, cs) is not None or h.proc.poll() is not None, timeout=20)
        assert h.proc.poll() is None, h.proc.stdout.read() if h.proc.stdout else ""
        return h

    yield start
    for h in started:
        h.kill()


def steps(layout: Layout, event: str) -> list[dict[str, Any]]:
    return [s for s in jsonl.read_jsonl(layout.steps).records if s["event"] == event]


def signals(layout: Layout) -> list[dict[str, Any]]:
    return jsonl.read_jsonl(layout.signals).records


def test_a_dispatch_releases_the_held_turn_end_with_an_operator_instruction(supervised: Layout, held: Any) -> None:
    h = held()
    # The pending signal that wakes the watcher follows the hold record, before the hook starts waiting.
    wait_until(lambda: signals(supervised), timeout=20)
    assert [(s["alias"], s["kind"], s["value"]) for s in signals(supervised)] == [("cc1", "attention", "pending")]
    result = dispatch_ops.dispatch(supervised, "cc1", "run the integration tests next", by="alice")
    assert result["route"] == "held" and result["hold"]
    code, out = h.result()
    answer = json.loads(out)
    assert code == 0 and answer["decision"] == "block"
    assert answer["reason"].startswith("Next instruction from alice, through cocoplus:\nrun the integration tests next")
    assert "not a permission" in answer["reason"]
    rec = registry.read_record(supervised, CS)
    assert rec is not None and rec["attention"] is None and rec["state"] == "running" and rec["continuations"] == 1
    assert holds.read(supervised, CS) is None and not os.path.exists(supervised.hold_decision(CS))
    assert [s["outcome"] for s in steps(supervised, "hold_ended")] == ["decision"]
    (action,) = [r for r in jsonl.read_jsonl(supervised.rounds).records if r["event"] == "action"]
    assert (action["action"], action["alias"], action["by"], action["round"], action["result"]["route"]) == (
        "dispatch",
        "cc1",
        "alice",
        None,
        "held",
    )


def test_agent_stop_during_a_hold_ends_it_within_a_second(supervised: Layout, held: Any) -> None:
    h = held()
    t0 = time.monotonic()
    killswitch.stop(supervised, "alice", "freeze")
    code, out = h.result()
    elapsed = time.monotonic() - t0
    assert code == 0 and out == ""
    assert elapsed < 1.0, f"the hold outlived AGENT_STOP by {elapsed:.2f}s"
    assert [s["outcome"] for s in steps(supervised, "hold_ended")] == ["stopped (AGENT_STOP)"]
    assert holds.read(supervised, CS) is None


def test_a_stop_of_this_session_ends_its_hold_within_a_second(supervised: Layout, held: Any) -> None:
    h = held()
    t0 = time.monotonic()
    session_ops.stop_session(supervised, "cc1", "look at the diff first", "alice")
    code, out = h.result()
    assert time.monotonic() - t0 < 1.0
    assert code == 0 and out == ""
    assert [s["outcome"] for s in steps(supervised, "hold_ended")] == ["stopped (this session was stopped)"]


def test_a_stop_of_another_session_leaves_the_hold_alone(supervised: Layout, held: Any) -> None:
    h = held()
    other, _ = registry.ensure(supervised, "claude", "other-session", event="SessionStart")
    assert other["alias"] == "cc2"
    session_ops.stop_session(supervised, "cc2", "not you", "alice")
    # Proof the hook saw the stop directory and kept waiting: a decision made after it still arrives.
    result = dispatch_ops.dispatch(supervised, "cc1", "carry on", by="alice")
    assert result["route"] == "held"
    code, out = h.result()
    assert json.loads(out)["decision"] == "block"


def test_finishing_supervision_releases_the_hold_normally(supervised: Layout, held: Any) -> None:
    h = held()
    autonomy.finish(supervised, "done")
    code, out = h.result()
    assert code == 0 and out == ""
    assert [s["outcome"] for s in steps(supervised, "hold_ended")] == ["released: supervision is off"]
    rec = registry.read_record(supervised, CS)
    assert rec is not None and rec["attention"] == "pending"  # the turn ended: the session waits


def test_excluding_the_session_releases_its_hold(supervised: Layout, held: Any) -> None:
    h = held()
    scope.exclude(supervised, "cc1")
    code, out = h.result()
    assert (
        out == ""
        and steps(supervised, "hold_ended")[0]["outcome"] == "released: the session is outside the supervision scope"
    )


def test_a_round_that_began_after_the_hold_and_ended_without_a_decision_releases_it(
    supervised: Layout, held: Any
) -> None:
    def log(**rec: Any) -> None:
        jsonl.append_jsonl(
            supervised.rounds, {"schema_version": 1, "ts": "2026-01-01T00:00:00.000Z", **rec}, supervised.lock("rounds")
        )

    log(event="round_started", number=1)  # began before the hold: its end says nothing about this session
    h = held()
    log(event="round_finished", number=1, outcome="succeeded")
    log(event="round_started", number=2)
    # Round 1's end did not release it: a dispatch now still reaches the held turn end.
    wait_until(lambda: len(steps(supervised, "hold_started")) == 1)
    assert h.proc.poll() is None and holds.current(supervised, CS) is not None
    log(event="round_finished", number=2, outcome="succeeded")
    code, out = h.result()
    assert out == ""
    assert (
        steps(supervised, "hold_ended")[0]["outcome"]
        == "released: a supervision round ended without a decision for this session"
    )


def test_the_hold_times_out_into_a_normal_turn_end(supervised: Layout, held: Any) -> None:
    h = held(COCOPLUS_SUPERVISION_HOLD_TURN_END_S="1")
    code, out = h.result()
    assert code == 0 and out == ""
    assert steps(supervised, "hold_ended")[0]["outcome"] == "released: no decision within 1s"


def test_a_hold_ends_when_its_runtime_is_gone(supervised: Layout) -> None:
    """A runtime killed with its process group leaves a hook started in its own group waiting: the hold ends anyway."""
    payload = json.dumps(stop_payload(supervised)).encode()
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, json.dumps(hook_argv("Stop"))],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=hook_env(supervised),
    )  # fmt: skip
    assert parent.stdin is not None and parent.stdout is not None
    parent.stdin.write(payload)
    parent.stdin.close()
    hook_pid = int(parent.stdout.readline())
    try:
        wait_until(lambda: holds.current(supervised, CS) is not None, timeout=20)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        wait_until(lambda: holds.read(supervised, CS) is None, timeout=10)
        wait_until(lambda: not _alive(hook_pid), timeout=10)
        assert [s["outcome"] for s in steps(supervised, "hold_ended")] == ["the runtime is gone"]
    finally:
        if _alive(hook_pid):
            os.kill(hook_pid, signal.SIGKILL)


# A stand-in runtime: starts the hook in its own session (as Claude Code and Codex do) and waits.
PARENT = """
import json, subprocess, sys, time
data = sys.stdin.buffer.read()
p = subprocess.Popen(json.loads(sys.argv[1]), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, start_new_session=True)
p.stdin.write(data); p.stdin.close()
print(p.pid, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return True


def test_a_steer_for_the_session_during_a_hold_continues_it(supervised: Layout, held: Any) -> None:
    h = held()
    result = session_ops.steer_session(supervised, "cc1", "also update the changelog")
    assert result["route"] == "held"
    code, out = h.result()
    assert json.loads(out) == {
        "decision": "block",
        "reason": "Operator note for this session (cocoplus steer by tester): also update the changelog",
    }


def test_a_steer_waiting_at_the_turn_end_continues_at_once_even_without_supervision(project: Layout) -> None:
    registry.ensure(project, "claude", SID, event="SessionStart")
    session_ops.steer_session(project, "cc1", "now the docs")
    r = run_hook(project, "Stop", stop_payload(project))
    answer = r.json
    assert answer is not None and answer["decision"] == "block" and answer["reason"].endswith("now the docs")
    assert not os.path.exists(project.session_steer(CS))
    (injected,) = steps(project, "steer_injected")
    assert injected["target"] == CS
    assert signals(project) == []  # it never waited: nothing woke the brain
    # Exactly once: the next turn end is an ordinary one.
    assert run_hook(project, "Stop", stop_payload(project, stop_hook_active=True)).out == ""


def test_a_human_in_another_session_is_not_held_up_by_a_hold(supervised: Layout, held: Any) -> None:
    h = held()
    prompt = fixture("claude-userpromptsubmit.json")
    prompt.update(cwd=supervised.project, session_id="the-other-one")
    r = run_hook(supervised, "UserPromptSubmit", prompt, timeout=10)
    assert r.code == 0
    assert h.proc.poll() is None and holds.current(supervised, CS) is not None  # still holding its own session only
    other = registry.resolve(supervised, "the-other-one")
    assert other["state"] == "running"


def test_at_the_continuation_cap_the_turn_end_is_not_held_and_says_why(supervised: Layout) -> None:
    registry.ensure(supervised, "claude", SID, event="Stop", change=lambda r: r.update({"continuations": 8}))
    r = run_hook(supervised, "Stop", stop_payload(supervised, stop_hook_active=True))
    assert r.out == ""
    rec = registry.read_record(supervised, CS)
    assert rec is not None and "8 continuations in a row" in rec["hold_skipped"]["why"]
    assert steps(supervised, "hold_skipped") and not steps(supervised, "hold_started")
    # A dispatch now says the hold was not used, and why.
    result = dispatch_ops.dispatch(supervised, "cc1", "next", by="alice")
    assert result["route"] != "held" and "8 continuations in a row" in result["note"]


def test_the_claude_cap_follows_its_environment_variable(supervised: Layout, held: Any) -> None:
    registry.ensure(supervised, "claude", SID, event="Stop", change=lambda r: r.update({"continuations": 8}))
    h = held(stop_payload(supervised, stop_hook_active=True), CLAUDE_CODE_STOP_HOOK_BLOCK_CAP="0")
    dispatch_ops.dispatch(supervised, "cc1", "one more", by="alice")
    assert json.loads(h.result()[1])["decision"] == "block"


def test_a_new_prompt_starts_the_count_again(supervised: Layout, held: Any) -> None:
    registry.ensure(supervised, "claude", SID, event="Stop", change=lambda r: r.update({"continuations": 8}))
    h = held(stop_payload(supervised, stop_hook_active=False))
    dispatch_ops.dispatch(supervised, "cc1", "go", by="alice")
    assert json.loads(h.result()[1])["decision"] == "block"
    rec = registry.read_record(supervised, CS)
    assert rec is not None and rec["continuations"] == 1


def test_no_hold_when_holding_is_off_or_the_session_is_not_supervised(project: Layout) -> None:
    registry.ensure(project, "claude", SID, event="SessionStart")
    assert run_hook(project, "Stop", stop_payload(project)).out == ""  # supervision never enabled
    autonomy.enable(project)
    assert run_hook(project, "Stop", stop_payload(project)).out == ""  # on, but no watcher runs to wake the brain
    assert steps(project, "hold_started") == []
    with Lock(project.lock("supervisor")):
        ran = subprocess.run(
            hook_argv("Stop"),
            input=json.dumps(stop_payload(project)).encode(),
            capture_output=True,
            env=hook_env(project, COCOPLUS_SUPERVISION_HOLD_TURN_END_S="1"),
            timeout=30,
        )
        assert (
            ran.returncode == 0 and len(steps(project, "hold_started")) == 1
        )  # with a watcher, the same turn end holds
        env = hook_env(project, COCOPLUS_SUPERVISION_HOLD_TURN_END_S="0")
        assert run_hook(project, "Stop", stop_payload(project), env=env).out == ""
        assert len(steps(project, "hold_started")) == 1  # holding turned off: no second hold


def test_a_decision_that_meets_a_stop_is_kept_as_a_steer_for_the_next_prompt(supervised: Layout, held: Any) -> None:
    h = held()
    # Both under the holds lock: the hook sees the stop, then
    # waits for the lock to end its hold, and finds the decision.
    with Lock(supervised.lock("holds")):
        killswitch.stop(supervised, "alice", "freeze")
        assert (
            holds.decide(supervised, CS, "the decided text", instruction="i", action="dispatch", by="alice") is not None
        )
    code, out = h.result()
    assert out == ""  # no continuation while the agent is stopped
    assert steering.pending_steer(supervised, CS) == "the decided text\n"
    assert steps(supervised, "hold_ended")[0]["kept_as_steer"] is True
