"""Counting before the call (`--count-before-call`, what `install claude` writes): Claude Code runs its post-tool
hooks in the background, so the pre-tool hook counts each call before it runs.  The cap stays exact (no more calls
run than it allows, whatever races), a count that cannot be known refuses the call, a damaged count stops the agent,
and the post-tool hooks count nothing more.  Real hook processes on real files."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.lock import Lock
from cocoplus.core.paths import Layout
from cocoplus.hook import COUNT_BEFORE_CALL
from cocoplus.install import wiring
from cocoplus.runtimes import registry
from cocoplus.session import registry as sessions
from tests.hook.helpers import fixture, hook_argv, hook_env, run_hook

SID = "sess-count-1"


def call(n: int, event: str = "PreToolUse") -> dict[str, Any]:
    name = {"PreToolUse": "claude-pretooluse-bash.json", "PostToolUse": "claude-posttooluse-bash.json"}.get(
        event, "claude-posttoolusefailure-bash.json"
    )
    return fixture(name) | {"session_id": SID, "tool_input": {"command": f"echo {n}"}, "tool_use_id": f"toolu_{n}"}


def pre(layout: Layout, n: int) -> dict[str, Any] | None:
    r = run_hook(layout, "PreToolUse", call(n), "claude", COUNT_BEFORE_CALL)
    assert r.code == 0, r
    return r.json


def consumed(layout: Layout) -> int:
    return int(json.loads(Path(layout.iteration_budget).read_text())["consumed"])


def decision(answer: dict[str, Any] | None) -> str | None:
    return ((answer or {}).get("hookSpecificOutput") or {}).get("permissionDecision")


def context(answer: dict[str, Any] | None) -> str:
    return str(((answer or {}).get("hookSpecificOutput") or {}).get("additionalContext") or "")


def test_install_claude_counts_before_the_call_and_installs_no_post_tool_hook() -> None:
    adapter = registry.get("claude")
    wired = wiring.hooks(adapter, "direct", 10)
    assert "PostToolUse" not in wired
    for event in ("PreToolUse", "PostToolUseFailure"):  # a failed call's take-back runs in the background
        (handler,) = wired[event][0]["hooks"]
        assert handler["command"].endswith(" " + COUNT_BEFORE_CALL), handler
        assert handler.get("async") is (event != "PreToolUse" or None), handler
    for other in ("codex", "gemini", "cursor", "cortex"):  # their post-tool hooks are waited for and count
        assert COUNT_BEFORE_CALL not in json.dumps(wiring.hooks(registry.get(other), "direct", 10))


def test_each_call_is_counted_once_before_it_runs_and_the_post_tool_hooks_count_nothing(project: Layout) -> None:
    for n in range(1, 13):  # past PROGRESS.md's tenth-call lines, which the runner writes
        assert pre(project, n) is None
        assert run_hook(project, "PostToolUse", call(n, "PostToolUse"), "claude", COUNT_BEFORE_CALL).code == 0
    assert consumed(project) == 12
    assert "- Consumed: 10\n" in Path(project.progress).read_text()
    rec = sessions.read_record(project, sessions.cs_id_for(SID))
    assert rec is not None and rec["tool_calls"] == 12  # the post-tool hook still keeps the session's record
    # A call that failed counts (`[session] count_failed_tools`, on by default); with it off, it is taken back.
    r = run_hook(project, "PostToolUseFailure", call(12, "PostToolUseFailure"), "claude", COUNT_BEFORE_CALL)
    assert r.code == 0 and consumed(project) == 12
    Path(project.config).write_text("[session]\ncount_failed_tools = false\n")
    r = run_hook(project, "PostToolUseFailure", call(12, "PostToolUseFailure"), "claude", COUNT_BEFORE_CALL)
    assert r.code == 0 and consumed(project) == 11


def test_the_call_that_reaches_the_cap_runs_and_none_after_it(project: Layout) -> None:
    Path(project.config).write_text("[session]\nmax_iterations = 4\niteration_warn_at = 3\n")
    answers = [pre(project, n) for n in range(1, 7)]
    assert [decision(a) for a in answers] == [None, None, None, None, "deny", "deny"]
    assert "Checkpoint now" in context(answers[2])  # the warn threshold, with the call that reaches it
    assert "last tool call the iteration cap allows (4 of 4)" in context(answers[3])
    assert consumed(project) == 4
    stop = json.loads(Path(project.agent_stop).read_text())
    assert stop["reason"] == "iteration budget exhausted: 4 of 4 tool calls used (cap 4, [session] max_iterations)"
    steps = [json.loads(x)["event"] for x in Path(project.steps).read_text().splitlines()]
    assert steps.count("iteration_cap") == 1 and steps.count("checkpoint_requested") == 1


@pytest.mark.slow
def test_64_racing_calls_across_the_cap_let_exactly_the_cap_run(project: Layout) -> None:
    Path(project.config).write_text("[session]\nmax_iterations = 40\niteration_warn_at = 30\n")
    procs = [
        subprocess.Popen(
            hook_argv("PreToolUse", "claude", COUNT_BEFORE_CALL),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=hook_env(project),
        )  # fmt: skip
        for _ in range(64)
    ]
    for n, p in enumerate(procs):
        assert p.stdin is not None
        p.stdin.write(json.dumps(call(n)).encode())
    for p in procs:
        assert p.stdin is not None
        p.stdin.close()
    outs = []
    for p in procs:
        assert p.stdout is not None
        outs.append(p.stdout.read().decode())
        assert p.wait(timeout=120) == 0
    ran = [o for o in outs if decision(json.loads(o) if o.strip() else None) != "deny"]
    assert len(ran) == 40, outs  # exactly the cap: never one more, whatever the order
    assert consumed(project) == 40
    assert os.path.exists(project.agent_stop)


def test_a_count_that_cannot_be_known_refuses_the_call_and_stops_nothing(project: Layout) -> None:
    pre(project, 1)
    Path(project.config).write_text("[hooks]\nlock_timeout_s = 0.2\n")
    with Lock(project.lock("iteration-budget"), 5.0):  # held by another process's count, past the hook's wait
        r = run_hook(project, "PreToolUse", call(2), "claude", COUNT_BEFORE_CALL)
    assert r.code == 0 and decision(r.json) == "deny", r
    assert "could not be counted before it runs" in r.out
    assert (r.json or {}).get("continue") is None  # this call only: the agent goes on
    assert consumed(project) == 1 and not os.path.exists(project.agent_stop)
    assert pre(project, 3) is None and consumed(project) == 2


def test_a_damaged_count_stops_the_agent_before_the_call(project: Layout) -> None:
    pre(project, 1)
    Path(project.iteration_budget).write_text('{"schema_version": 1, "consumed": "many"')
    r = run_hook(project, "PreToolUse", call(2), "claude", COUNT_BEFORE_CALL)
    assert decision(r.json) == "deny" and (r.json or {}).get("continue") is False, r
    assert "is damaged" in r.out and os.path.exists(project.agent_stop)
    assert decision(pre(project, 3)) == "deny"  # stopped: every later call too


def test_the_loop_guard_sees_each_call_before_it_runs_and_stops_the_agent_after_twice_its_limit(
    project: Layout,
) -> None:
    Path(project.config).write_text("[session]\nloop_guard_repeats = 2\n")
    same = fixture("claude-pretooluse-bash.json") | {"session_id": SID, "tool_input": {"command": "make test"}}
    got = [run_hook(project, "PreToolUse", same, "claude", COUNT_BEFORE_CALL).json for _ in range(5)]
    assert [decision(a) for a in got] == [None, None, None, None, "deny"], got
    assert "repeating yourself" in context(got[1])
    assert "runaway loop" in context(got[3]) and "last one that runs" in context(got[3])  # as after the call
    assert (got[4] or {}).get("continue") is False
    # The fifth is refused by the stop: the session's own, never the project's (other sessions go on).
    assert consumed(project) == 4 and not os.path.exists(project.agent_stop)
    stop = json.loads(Path(project.session_stop(sessions.cs_id_for(SID))).read_text())
    assert stop["principal"] == "loop-guard" and "4 times in a row" in stop["reason"]
    steps = [json.loads(x)["event"] for x in Path(project.steps).read_text().splitlines()]
    assert steps.count("loop_guard_stop") == 1
    other = same | {"session_id": "sess-count-2"}
    assert decision(run_hook(project, "PreToolUse", other, "claude", COUNT_BEFORE_CALL).json) is None


def test_an_edit_names_its_file_before_it_runs(project: Layout) -> None:
    edit = fixture("claude-pretooluse-write.json") | {"session_id": SID}
    edit["tool_input"] = {**edit["tool_input"], "file_path": f"{project.project}/src/app.py"}
    assert run_hook(project, "PreToolUse", edit, "claude", COUNT_BEFORE_CALL).code == 0
    logged = Path(project.session_edits(sessions.cs_id_for(SID))).read_text()
    assert logged.rstrip("\n").endswith('src/app.py"'), logged  # what the watcher compares for collisions


def test_an_install_from_before_keeps_counting_after_the_call_and_doctor_says_it_is_outdated(project: Layout) -> None:
    from cocoplus.install import hooks as install
    from tests.conftest import run_cli_subprocess

    install.install("claude", project.project)
    path = Path(project.project, ".claude", "settings.local.json")
    doc = json.loads(path.read_text())
    old = doc["hooks"]["PreToolUse"][0]["hooks"][0]["command"].replace(" " + COUNT_BEFORE_CALL, "")
    doc["hooks"]["PreToolUse"][0]["hooks"][0]["command"] = old  # as an earlier release wrote them
    doc["hooks"]["PostToolUse"] = [{"matcher": "*", "hooks": [{"type": "command", "command": old.replace(
        "PreToolUse", "PostToolUse"), "timeout": 10}]}]  # fmt: skip
    path.write_text(json.dumps(doc))
    # Those commands as they are: PostToolUse counts, PreToolUse does not.
    assert run_hook(project, "PreToolUse", call(1)).json is None
    assert run_hook(project, "PostToolUse", call(1, "PostToolUse")).code == 0
    assert consumed(project) == 1
    r = run_cli_subprocess("doctor", "--json", cwd=project.project, env={"COCOPLUS_DIR": project.root})
    outdated = json.loads(r.out)["runtimes"]["claude"]["outdated"]
    assert "PreToolUse" in outdated and "PostToolUse" in outdated, outdated
