"""The order of one hook event's steps (`runner.decide_order`): the kill switch before anything that can fail.

A pure function of what is known before anything is read, so the whole table is checked here, in process; what each
step does is checked elsewhere: through the installed hook command (test_failure_policy.py, test_fixtures.py) and
through its entry point in process (test_session_controls.py).
"""

from __future__ import annotations

import itertools

import pytest

from cocoplus.hook import runner
from cocoplus.runtimes import registry as runtimes

KINDS = sorted(runner.HANDLERS)

# (kind, runtime known, state known, a place that cannot be trusted) -> the steps, by name.
TABLE: list[tuple[str, bool, bool, bool, list[str]]] = [
    # Before every tool call: a stop anywhere blocks before the payload is read.
    ("pre_tool", True, True, False, ["kill_switch", "parse", "step_aside", "handle"]),
    # The project is known only from the payload: it is read first, and the handler checks the kill switch.
    ("pre_tool", True, False, False, ["parse", "locate", "step_aside", "handle"]),
    # No runtime named: the payload says which (or, unreadable and stopped, exit 2).
    ("pre_tool", False, True, False, ["parse", "unknown_runtime", "handle"]),
    ("pre_tool", False, False, False, ["parse", "locate", "unknown_runtime", "handle"]),
    # A place that cannot be trusted blocks a tool or a permission whatever else is known, and nothing else runs.
    ("pre_tool", True, True, True, ["kill_switch"]),
    ("pre_tool", False, False, True, ["kill_switch"]),
    ("permission", True, True, True, ["kill_switch"]),
    ("permission", False, True, True, ["kill_switch"]),
    # A permission request with nothing wrong: its handler checks the kill switch (it answers in its own dialect).
    ("permission", True, True, False, ["parse", "step_aside", "handle"]),
    # The events that block nothing go their way with a problem too (their handlers log it).
    ("post_tool", True, True, True, ["parse", "step_aside", "handle"]),
    ("post_tool", True, True, False, ["parse", "step_aside", "handle"]),
    ("prompt", True, False, False, ["parse", "locate", "step_aside", "handle"]),
    ("stop", False, True, True, ["parse", "unknown_runtime", "handle"]),
    ("session_start", True, True, False, ["parse", "step_aside", "handle"]),
    ("other", False, False, False, ["parse", "locate", "unknown_runtime", "handle"]),
]


def names(kind: str, runtime_known: bool, state_known: bool, problem: bool) -> list[str]:
    return [step.__name__ for step in runner.decide_order(kind, runtime_known, state_known, problem)]


@pytest.mark.parametrize(("kind", "runtime_known", "state_known", "problem", "steps"), TABLE)
def test_the_order_of_the_steps(kind: str, runtime_known: bool, state_known: bool, problem: bool, steps: list[str]):
    assert names(kind, runtime_known, state_known, problem) == steps


@pytest.mark.parametrize(
    ("kind", "runtime_known", "state_known", "problem"),
    list(itertools.product(KINDS, (True, False), (True, False), (True, False))),
)
def test_every_order_checks_the_kill_switch_before_it_reads_what_it_can(
    kind: str, runtime_known: bool, state_known: bool, problem: bool
) -> None:
    """For every kind and every case: a blocking event with an untrusted place stops at the kill switch; a pre-tool
    event that knows where it is checks it first; every order that reads the payload ends with the handler, after
    the runtime is settled (named, or detected) and the project is found."""
    steps = names(kind, runtime_known, state_known, problem)
    if problem and kind in runner.BLOCKING:
        assert steps == ["kill_switch"]
        return
    assert ("kill_switch" in steps) == (kind == "pre_tool" and runtime_known and state_known)
    assert steps[: steps.index("parse")] in ([], ["kill_switch"])  # nothing but the kill switch before the payload
    assert "kill_switch" not in steps or steps[0] == "kill_switch"
    assert steps[-1] == "handle"
    assert steps.index("parse") < steps.index("step_aside" if runtime_known else "unknown_runtime") < len(steps) - 1
    assert ("locate" in steps) == (not state_known)


def test_every_step_is_a_method_of_the_hook() -> None:
    """The steps are the Hook's own (run calls each with the Hook), and every one of them appears in some order."""
    every = {
        step
        for kind, r, s, p in itertools.product(KINDS, (True, False), (True, False), (True, False))
        for step in runner.decide_order(kind, r, s, p)
    }
    assert every == {
        runner.Hook.kill_switch, runner.Hook.parse, runner.Hook.locate, runner.Hook.unknown_runtime,
        runner.Hook.step_aside, runner.Hook.handle,
    }  # fmt: skip


def test_a_stopped_pre_tool_call_is_blocked_before_its_payload_is_read(project, monkeypatch) -> None:
    """The order is the one `run` takes: with AGENT_STOP, a pre-tool call whose payload is garbage is denied, and the
    payload is never parsed."""
    from cocoplus.core import lock
    from cocoplus.session import killswitch

    killswitch.stop(project, "t", "order")
    parsed: list[bytes] = []

    def parse(data: bytes, rest: list[str]) -> tuple[dict, str]:
        parsed.append(data)
        return {}, "unreadable"

    monkeypatch.setattr(runner, "parse_payload", parse)
    monkeypatch.setattr(runner, "emit", lambda answer: bool(answer))
    adapter = runtimes.get("claude")
    h = runner.Hook("PreToolUse", "pre_tool", adapter.NAME, b"{not json", project.root, None, {}, [])
    previous = lock.set_process_budget(None)
    try:
        assert runner.run(h) == 0
    finally:
        lock.set_process_budget(previous)  # run() bounds this process's lock waits, as a hook process's own
    assert parsed == []
