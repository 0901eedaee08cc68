"""Hooks racing as real processes, as runtimes fire them for parallel tool calls."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from cocoplus.core.paths import Layout
from cocoplus.session import registry, steering
from tests.hook.helpers import fixture, hook_argv, hook_env, run_hook


def _race(
    layout: Layout, event: str, payloads: list[dict], runtime: str = "claude", **env: str
) -> list[tuple[int, str, str]]:
    """Start every hook process first, then give them their payloads at once."""
    procs = [
        subprocess.Popen(
            hook_argv(event, runtime),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=hook_env(layout, **env),
        )
        for _ in payloads
    ]
    for p, payload in zip(procs, payloads, strict=True):
        assert p.stdin is not None
        p.stdin.write(json.dumps(payload).encode())
    for p in procs:
        assert p.stdin is not None
        p.stdin.close()
    out = []
    for p in procs:
        assert p.stdout is not None and p.stderr is not None
        stdout, stderr = p.stdout.read(), p.stderr.read()
        p.wait(timeout=120)
        out.append((p.returncode, stdout.decode(), stderr.decode()))
    return out


@pytest.mark.slow
def test_64_concurrent_post_tool_use_hooks_count_64(project: Layout) -> None:
    base = fixture("claude-posttooluse-bash.json")
    payloads = [{**base, "tool_input": {"command": f"echo {i}"}, "tool_use_id": f"toolu_{i}"} for i in range(64)]
    results = _race(project, "PostToolUse", payloads)
    assert all(code == 0 for code, _, _ in results), results
    budget = json.loads(open(project.iteration_budget).read())
    assert budget["consumed"] == 64
    assert not os.path.exists(project.iteration_spool_dir) or os.listdir(project.iteration_spool_dir) == []
    leftovers = [n for n in os.listdir(project.session_dir) if ".tmp-" in n]
    assert leftovers == []
    # PROGRESS.md's lines follow the count at every tenth call, in count order; the session's end brings them up.
    assert "- Consumed: 60\n" in open(project.progress).read()
    assert run_hook(project, "SessionEnd", fixture("claude-sessionend.json")).code == 0
    assert "- Consumed: 64\n" in open(project.progress).read()
    (rec_name,) = [n for n in os.listdir(project.sessions_dir) if n.startswith("cs_") and n.endswith(".json")]
    # The record with its call log (64 fixed-width lines, appended without a lock): exactly 64 calls.
    rec = registry.read_record(project, rec_name[:-5])
    assert rec is not None and rec["tool_calls"] == 64
    assert os.path.getsize(project.session_calls(rec["id"])) == 64 * registry.CALL_WIDTH


@pytest.mark.slow
def test_64_concurrent_hooks_across_the_cap_stop_exactly_once(project: Layout) -> None:
    with open(project.config, "w") as fh:
        fh.write("[session]\nmax_iterations = 40\niteration_warn_at = 30\n")
    base = fixture("claude-posttooluse-bash.json")
    payloads = [{**base, "tool_input": {"command": f"echo {i}"}} for i in range(64)]
    results = _race(project, "PostToolUse", payloads)
    capped = [
        out for _, out, _ in results if "the operator can continue with `cocoplus session resume --reset-budget`" in out
    ]
    assert len(capped) == 64 - 39  # the 40th call and every one after it is told it reached the cap
    stops = [
        out for _, out, _ in results if '"continue": false' in out.replace('"continue":false', '"continue": false')
    ]
    assert len(stops) >= len(capped)  # (one counted earlier that looks after the stop is made is told so too)
    budget = json.loads(open(project.iteration_budget).read())
    assert budget["consumed"] == 64 and budget["stopped"] is True
    steps = [json.loads(x) for x in open(project.steps).read().splitlines()]
    assert [s["event"] for s in steps].count("iteration_cap") == 1
    assert [s["event"] for s in steps].count("checkpoint_requested") == 1
    stop = json.loads(open(project.agent_stop).read())
    assert stop["reason"] == "iteration budget exhausted: 40 of 40 tool calls used (cap 40, [session] max_iterations)"


def test_16_concurrent_prompts_inject_one_steer_once(project: Layout) -> None:
    steering.steer(project, "STEER-RACE-1: use the staging database")
    base = fixture("claude-userpromptsubmit.json")
    results = _race(project, "UserPromptSubmit", [{**base, "session_id": f"s{i}"} for i in range(16)])
    assert all(code == 0 for code, _, _ in results)
    injected = [out for _, out, _ in results if "STEER-RACE-1" in out]
    assert len(injected) == 1
    assert json.loads(injected[0])["hookSpecificOutput"]["additionalContext"].count("STEER-RACE-1") == 1
    steps = [json.loads(x) for x in open(project.steps).read().splitlines()]
    assert [s["event"] for s in steps].count("steer_injected") == 1
    assert not os.path.exists(project.steer)
    assert os.listdir(project.steer_claimed_dir) == []


def test_steers_written_during_a_race_are_each_injected_once(project: Layout) -> None:
    """Operators steer while prompts fire: every steer text reaches exactly one prompt."""
    base = fixture("claude-userpromptsubmit.json")
    seen: list[str] = []
    for round_no in range(5):
        steering.steer(project, f"STEER-R{round_no}")
        results = _race(project, "UserPromptSubmit", [{**base, "session_id": f"s{i}"} for i in range(8)])
        seen.extend(out for _, out, _ in results if "STEER-R" in out)
    joined = "\n".join(seen)
    for round_no in range(5):
        assert joined.count(f"STEER-R{round_no}") == 1
