"""The hook's failure policy: never a traceback, never a hang, never a lost count, kill switch first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import filelock
import pytest

from cocoplus.core.paths import Layout
from cocoplus.session import killswitch, registry, steering, stops
from tests.hook.helpers import fixture, hook_env, run_hook
from tests.support.typed import present

GARBAGE = [b"", b"not json at all", b"\xff\xfe\x00garbage", b"[1, 2, 3]", b'{"unterminated": ', b"null", b"{" * 50000]


@pytest.mark.parametrize("stdin", GARBAGE)
@pytest.mark.parametrize("event", ["PreToolUse", "PostToolUse", "UserPromptSubmit", "SessionStart", "Stop"])
def test_garbage_on_stdin_never_blocks_and_never_tracebacks(project: Layout, stdin: bytes, event: str) -> None:
    r = run_hook(project, event, stdin)
    assert r.code == 0, r
    assert "Traceback" not in r.err and "Traceback" not in r.out
    if r.out:
        json.loads(r.out)


@pytest.mark.parametrize("stdin", GARBAGE)
def test_garbage_on_stdin_still_denies_while_stopped(project: Layout, stdin: bytes) -> None:
    killswitch.stop(project, "alice", "hold")
    r = run_hook(project, "PreToolUse", stdin, "claude")
    assert r.code == 0 and present(r.json)["hookSpecificOutput"]["permissionDecision"] == "deny", r
    # Without --runtime the dialect is unknown: exit 2 with the reason on stderr blocks in every runtime.
    r2 = run_hook(project, "PreToolUse", stdin, None)
    if stdin.strip() and not stdin.startswith(b'{"') and stdin != b"null":
        assert r2.code == 2 and "alice" in r2.err, r2
    else:
        assert r2.code in (0, 2)
        assert "alice" in (r2.out + r2.err)


@pytest.mark.parametrize(
    "content", [b"", b"garbage \x00\xff", b'{"operator": 5}', b"operator: carol\nreason: by hand\n"]
)
def test_any_agent_stop_content_stops(project: Layout, content: bytes) -> None:
    with open(project.agent_stop, "wb") as fh:
        fh.write(content)
    r = run_hook(project, "PreToolUse", fixture("claude-pretooluse-bash.json"))
    assert present(r.json)["hookSpecificOutput"]["permissionDecision"] == "deny"
    if content.startswith(b"operator: carol"):
        assert "carol" in present(r.json)["hookSpecificOutput"]["permissionDecisionReason"]


def test_agent_stop_as_a_directory_still_stops(project: Layout) -> None:
    os.mkdir(project.agent_stop)
    r = run_hook(project, "PreToolUse", fixture("claude-pretooluse-bash.json"))
    assert present(r.json)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_unknown_event_is_logged_once_and_allowed(project: Layout) -> None:
    r = run_hook(project, "SomethingNew", fixture("claude-pretooluse-bash.json"))
    assert (r.code, r.out) == (0, "")
    log = open(project.hook_log).read().splitlines()
    assert len(log) == 1 and "SomethingNew" in log[0]


def test_no_cocoplus_dir_does_nothing(tmp_path: os.PathLike[str]) -> None:
    d = os.path.join(str(tmp_path), "elsewhere")
    os.mkdir(d)
    payload = {**fixture("claude-pretooluse-bash.json"), "cwd": d}
    for event in ("PreToolUse", "PostToolUse", "SessionStart", "UserPromptSubmit"):
        r = run_hook(None, event, payload, cwd=d, env=hook_env(None))
        assert (r.code, r.out) == (0, ""), r
    assert os.listdir(d) == []


def test_project_is_found_from_the_payload_cwd_when_the_agent_cd_s_below_it(project: Layout) -> None:
    sub = os.path.join(project.project, "src", "deep")
    os.makedirs(sub)
    killswitch.stop(project, "dana", "cd test")
    payload = {**fixture("codex-pretooluse-bash.json"), "cwd": sub}
    r = run_hook(None, "PreToolUse", payload, "codex", env=hook_env(None))
    assert present(r.json)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_claude_project_dir_wins_when_the_agent_cds_out_of_the_project(
    project: Layout, tmp_path: os.PathLike[str]
) -> None:
    killswitch.stop(project, "erin", "cd out")
    outside = os.path.join(str(tmp_path), "outside")
    os.mkdir(outside)
    payload = {**fixture("claude-pretooluse-bash.json"), "cwd": outside}
    r = run_hook(
        None, "PreToolUse", payload, "claude", cwd=outside, env=hook_env(None, CLAUDE_PROJECT_DIR=project.project)
    )
    assert present(r.json)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_a_lock_held_too_long_spools_the_count_and_loses_nothing(project: Layout) -> None:
    env = hook_env(project, COCOPLUS_HOOKS_LOCK_TIMEOUT_S="0.2")
    holder = filelock.FileLock(project.lock("iteration-budget"))
    with holder:
        t = time.monotonic()
        r = run_hook(project, "PostToolUse", fixture("claude-posttooluse-bash.json"), env=env)
        elapsed = time.monotonic() - t
        assert r.code == 0 and r.out == ""
        assert elapsed < 20  # bounded: it gave up on the lock rather than hang
        assert len(os.listdir(project.iteration_spool_dir)) == 1
    assert "spooled" in open(project.hook_log).read()
    r2 = run_hook(
        project, "PostToolUse", {**fixture("claude-posttooluse-bash.json"), "tool_input": {"command": "x"}}, env=env
    )
    assert r2.code == 0
    assert json.loads(open(project.iteration_budget).read())["consumed"] == 2
    assert os.listdir(project.iteration_spool_dir) == []


@pytest.mark.parametrize(
    "damage",
    [
        b"",
        b"{not json",
        b'{"cap": "200", "consumed": 1, "warn_at": 1, "warned": false, "stopped": false}',
        b"\x00\x01\x02",
        b"[]",
    ],
)
def test_damaged_iteration_budget_fails_closed(project: Layout, damage: bytes) -> None:
    with open(project.iteration_budget, "wb") as fh:
        fh.write(damage)
    r = run_hook(project, "PostToolUse", fixture("claude-posttooluse-bash.json"))
    out = present(r.json)
    assert out["continue"] is False
    assert "iteration-budget.json" in out["stopReason"] and ".corrupt-" in out["stopReason"]
    kept = [n for n in os.listdir(project.session_dir) if n.startswith("iteration-budget.json.corrupt-")]
    assert len(kept) == 1
    with open(os.path.join(project.session_dir, kept[0]), "rb") as fh:
        assert fh.read() == damage  # kept aside byte for byte, never silently reset
    assert killswitch.stop_present(project)
    deny = run_hook(project, "PreToolUse", fixture("claude-pretooluse-bash.json"))
    assert "iteration-budget.json" in present(deny.json)["hookSpecificOutput"]["permissionDecisionReason"]


def test_steer_claimed_by_a_process_that_died_is_delivered_next_time(project: Layout) -> None:
    steering.steer(project, "STEER-ORPHAN: rebase first")
    # A consumer claims the steer and is killed before it can answer.
    code = (
        "import os, sys; from cocoplus.core.paths import Layout; from cocoplus.session import steering; "
        f"c = steering.claim_steer(Layout({project.root!r})); print(c.id, flush=True); os._exit(9)"
    )
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert child.returncode == 9 and child.stdout.startswith("st_")
    assert not os.path.exists(project.steer) and len(os.listdir(project.steer_claimed_dir)) == 1
    r = run_hook(project, "UserPromptSubmit", fixture("claude-userpromptsubmit.json"))
    assert "STEER-ORPHAN" in present(r.json)["hookSpecificOutput"]["additionalContext"]
    again = run_hook(project, "UserPromptSubmit", fixture("claude-userpromptsubmit.json"))
    assert "STEER-ORPHAN" not in again.out
    injected = [json.loads(x) for x in open(project.steps).read().splitlines() if "steer_injected" in x]
    assert len(injected) == 1 and injected[0]["redelivery"] is True


def test_claimed_steer_already_logged_is_not_delivered_twice(project: Layout) -> None:
    steering.steer(project, "STEER-LOGGED")
    # A consumer delivers and logs the steer, then dies before removing the claimed file.
    code = (
        "import os; from cocoplus.core.paths import Layout; from cocoplus.session import events, steering; "
        f"lay = Layout({project.root!r}); c = steering.claim_steer(lay); "
        "events.log_step(lay, 'steer_injected', steer_id=c.id); os._exit(9)"
    )
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert child.returncode == 9, child.stderr
    assert len(os.listdir(project.steer_claimed_dir)) == 1
    r = run_hook(project, "UserPromptSubmit", fixture("claude-userpromptsubmit.json"))
    assert "STEER-LOGGED" not in r.out
    assert os.listdir(project.steer_claimed_dir) == []


def test_session_start_heals_stale_running_state(project: Layout) -> None:
    old = "2026-01-01T00:00:00.000Z"
    with open(project.status, "w") as fh:
        json.dump({"schema_version": 1, "state": "running", "reason": "old", "updated_at": old}, fh)
    run_hook(project, "SessionStart", {**fixture("claude-sessionstart-startup.json"), "session_id": "old-one"})
    path = os.path.join(project.sessions_dir, "cs_old-one.json")
    rec = json.load(open(path))
    rec["last_event_at"] = old
    json.dump(rec, open(path, "w"))
    with open(project.status, "w") as fh:
        json.dump({"schema_version": 1, "state": "running", "reason": "old", "updated_at": old}, fh)
    run_hook(project, "SessionStart", {**fixture("claude-sessionstart-startup.json"), "session_id": "new-one"})
    assert json.load(open(path))["state"] == "exited"
    events = [json.loads(x)["event"] for x in open(project.steps).read().splitlines()]
    assert "status_healed" in events and "sessions_healed" in events
    assert json.load(open(project.status))["state"] == "running"  # the new session runs


def test_progress_budget_lines_follow_the_count_without_clobbering_edits(project: Layout) -> None:
    with open(project.progress, "a") as fh:
        fh.write("\nAgent notes under the budget: keep me.\n")
    text = open(project.progress).read().replace("## Done\n", "## Done\n- wrote the parser  \n")
    with open(project.progress, "w") as fh:
        fh.write(text)
    call = fixture("claude-posttooluse-bash.json")
    for i in range(12):
        run_hook(project, "PostToolUse", {**call, "tool_input": {"command": str(i)}})
        after = open(project.progress).read()
        # Written at the first call and at every tenth (iteration.PROGRESS_EVERY); the count itself at each.
        assert after == text.replace("- Consumed: 0", f"- Consumed: {1 if i < 9 else 10}"), i
    # A session's end brings the lines up to the count (for the handoff the next session reads).
    assert run_hook(project, "SessionEnd", fixture("claude-sessionend.json")).code == 0
    assert open(project.progress).read() == text.replace("- Consumed: 0", "- Consumed: 12")


def test_loop_guard_asks_for_a_checkpoint_then_stops(project: Layout) -> None:
    env = hook_env(project, COCOPLUS_SESSION_LOOP_GUARD_REPEATS="3")
    payload = fixture("claude-posttooluse-bash.json")
    outs = [run_hook(project, "PostToolUse", payload, env=env).out for _ in range(6)]
    assert outs[:2] == ["", ""]
    assert "repeating yourself" in json.loads(outs[2])["hookSpecificOutput"]["additionalContext"]
    assert outs[3:5] == ["", ""]
    final = json.loads(outs[5])
    assert final["continue"] is False and "runaway loop" in final["stopReason"]
    assert "session resume --session cc1" in final["stopReason"]
    # The session that loops is stopped, not the project.
    assert not os.path.exists(project.agent_stop)
    rec = present(registry.read_record(project, registry.cs_id_for(str(payload["session_id"]))))
    assert rec["state"] == "exited" and rec["stopped_by"]["principal"] == "loop-guard"
    stop = present(stops.read(project, rec["id"]))
    assert stop["principal"] == "loop-guard" and "6 times in a row" in stop["reason"]
    # A different input breaks the streak.
    stops.resume(project, rec, "tester")
    other = run_hook(project, "PostToolUse", {**payload, "tool_input": {"command": "different"}}, env=env)
    assert other.out == ""


# -- a block after a failure is still written in the dialect of the event ------------------------------

BLOCKED_EVENTS = [
    ("claude", "PreToolUse", "claude-pretooluse-bash.json"),
    ("claude", "PermissionRequest", "claude-permissionrequest-bash.json"),
    ("codex", "PreToolUse", "codex-pretooluse-bash.json"),
    ("codex", "PermissionRequest", "codex-permissionrequest-bash.json"),
    ("gemini", "BeforeTool", "gemini-beforetool-write-file.json"),
    ("cursor", "beforeShellExecution", "cursor-beforeshellexecution.json"),
    ("cortex", "PreToolUse", "cortex-pretooluse-bash.json"),
    ("cortex", "PermissionRequest", "cortex-permissionrequest-bash.json"),
]
FAILURES: dict[str, str | None] = {
    # cocoplus' own error in the event's handler: the runner catches it and checks the kill switch again
    "handler error": None,  # None: the event's handler (`raising_handler`)
    # anything else going wrong in the handler: the hook's last resort (entry.last_resort)
    "handler crash": None,
    # a crash before any handler, while reading the kill switch itself
    "kill switch crash": "killswitch.kill_switch_sentence",
}


def _failure_cases() -> list[tuple[str, str, str, str]]:
    from cocoplus.runtimes import registry as runtimes

    cases = []
    for runtime, event, payload in BLOCKED_EVENTS:
        pre_tool = runtimes.kind(runtimes.get(runtime), event) == "pre_tool"
        # A pre-tool event is answered from the kill switch before any handler runs.
        cases += [(runtime, event, payload, f) for f in FAILURES if not (pre_tool and f != "kill switch crash")]
    return cases


@pytest.mark.parametrize(("runtime", "event", "payload", "failure"), _failure_cases())
def test_a_failure_while_stopped_blocks_in_the_events_own_dialect(
    project: Layout, runtime: str, event: str, payload: str, failure: str
) -> None:
    """Whatever fails, the stop holds with the answer this event normally gets, never another event's.

    (Before, a failing PermissionRequest handler answered with the PreToolUse deny, which Codex refuses,
    and a crash answered exit 2, which Claude Code does not honour on a PermissionRequest.)
    """
    from cocoplus.runtimes import registry as runtimes
    from tests.hook.helpers import raising, raising_handler, run_hook_failing
    from tests.runtimes.codex_schemas import shape

    kind = runtimes.kind(runtimes.get(runtime), event)
    killswitch.stop(project, "alice", "release freeze")
    normal = run_hook(project, event, fixture(payload), runtime)
    assert normal.code == 0 and normal.json, normal
    target = FAILURES[failure]
    exc = "CocoplusError" if failure == "handler error" else "RuntimeError"
    patch = raising_handler(kind, exc) if target is None else raising(target, exc)
    failed = run_hook_failing(project, event, fixture(payload), runtime, patch)
    assert failed.code == 0 and failed.err == "", failed
    assert shape(failed.json) == shape(normal.json)
    assert "stopped" in json.dumps(failed.json)
    if failure != "handler error":
        assert "hook crashed" in open(project.hook_log).read()


def test_a_failure_of_the_adapter_too_still_blocks_with_exit_2(project: Layout) -> None:
    """When not even the runtime's own answer can be written, exit 2 with the reason on stderr blocks
    (Codex takes it as a PermissionRequest deny)."""
    from tests.hook.helpers import raising, raising_handler, run_hook_failing

    killswitch.stop(project, "alice", "release freeze")
    patch = raising_handler("permission") + "\n" + raising("runner.block")
    r = run_hook_failing(project, "PermissionRequest", fixture("codex-permissionrequest-bash.json"), "codex", patch)
    assert (r.code, r.out) == (2, "") and "AGENT_STOP" in r.err, r


def test_a_failure_without_a_stop_lets_the_tool_run(project: Layout) -> None:
    from tests.hook.helpers import raising, raising_handler, run_hook_failing

    for patch in (raising_handler("permission"), raising("killswitch.kill_switch_sentence")):
        r = run_hook_failing(
            project, "PermissionRequest", fixture("claude-permissionrequest-bash.json"), "claude", patch
        )
        assert (r.code, r.out, r.err) == (0, "", ""), r
