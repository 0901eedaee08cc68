"""Dispatch, the turn-end hold and per-session controls end to end with the real Claude Code CLI.

* A held turn end: the worker's turn ends, its Stop hook holds it and wakes
  the watcher; the brain (a `command` controller whose script runs
  `cocoplus dispatch`) answers; the same `claude -p` process continues with
  the instruction, ends its turn again, and the brain's second round
  finishes supervision, which releases the hold.  One process, no human.
* A dispatch to an exited headless session resumes it (`claude -p --resume`).
* Two sessions in one project: a per-session stop and a per-session steer
  reach only their own session.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core import jsonl
from cocoplus.core.paths import Layout
from cocoplus.session import registry
from cocoplus.supervision import autonomy
from tests.e2e.conftest import Project, run_claude, trust_everywhere
from tests.supervision.conftest import Watcher, stop_chat_worker
from tests.support.model_stubs import AnthropicStub, text, tool
from tests.support.waiting import in_thread, wait_until

pytestmark = pytest.mark.e2e

INSTRUCTION = "DISPATCH-7c1e: now add the changelog entry"

# The main brain: a `command` controller. Round 1 dispatches the next piece of work to cc1;
# round 2 finishes supervision. It records each prompt and what cocoplus answered.
BRAIN = """\
import json, os, subprocess, sys
project, record = sys.argv[1], sys.argv[2]
os.makedirs(record, exist_ok=True)
prompt = sys.stdin.read()
n = len([f for f in os.listdir(record) if f.endswith(".prompt")]) + 1
open(os.path.join(record, f"{n}.prompt"), "w").write(prompt)
cocoplus = [sys.executable, "-m", "cocoplus", "--dir", project]
if n == 1:
    argv = cocoplus + ["dispatch", "cc1", sys.argv[3], "--json"]
else:
    argv = cocoplus + ["supervision", "finish", "--summary", "changelog done", "--json"]
r = subprocess.run(argv, capture_output=True, text=True)
answer = {"code": r.returncode, "out": r.stdout, "err": r.stderr}
open(os.path.join(record, f"{n}.answer"), "w").write(json.dumps(answer))
print(f"round {n}: ran {argv[4]}")
"""


def brain_config(p: Project) -> Path:
    record = p.project / "brain-record"
    script = p.project / "brain.py"
    script.write_text(BRAIN)
    (p.project / "cocoplus.toml").write_text(
        '[chat]\ncontroller = "brain"\n[accounts.brain]\nkind = "command"\n'
        f'command = ["{sys.executable}", "{script}", "{p.project}", "{record}", "{INSTRUCTION}"]\n'
        "[supervision]\nquiet_window_s = 0.5\nmax_wait_s = 5\nreconcile_s = 1\n"
    )
    trust_everywhere(p)  # the brain's command is the project's own (docs/guides/configuration.md, "Trust")
    return record


def steps(p: Project, event: str) -> list[dict[str, Any]]:
    return [s for s in p.steps() if s["event"] == event]


def test_a_held_turn_end_continues_the_same_process_with_the_brains_dispatch(e2e_project: Project) -> None:
    p = e2e_project
    record = brain_config(p)
    p.cocoplus("install", "claude")
    layout = Layout(str(p.root))
    autonomy.enable(layout, task_hint="land the parser change with a changelog entry")
    watcher = Watcher(layout)
    try:
        with AnthropicStub([text("parser change done"), text("changelog entry added")]) as stub:
            result = run_claude(p, stub, "Finish the parser change.", timeout=240)
            # One process: its one result, after the continuation; the model got the instruction in between.
            assert result["result"] == "changelog entry added" and result["subtype"] == "success"
            assert len(stub.loop_requests) == 2
            assert INSTRUCTION not in json.dumps(stub.loop_requests[0])
            second = json.dumps(stub.loop_requests[1])
            assert INSTRUCTION in second and "not a permission" in second
        first = json.loads((record / "1.answer").read_text())
        assert first["code"] == 0 and json.loads(first["out"])["route"] == "held"
        assert "cc1 is pending" in (record / "1.prompt").read_text()
        second_round = json.loads((record / "2.answer").read_text())
        assert second_round["code"] == 0 and "cc1 is pending" in (record / "2.prompt").read_text()
        auto = autonomy.status(layout)["autonomous"]
        assert auto["enabled"] is False and auto["finish_summary"] == "changelog done"
        assert [s["outcome"] for s in steps(p, "hold_ended")] == ["decision", "released: supervision is off"]
        assert [s["how"] for s in steps(p, "turn_continued")] == ["decision"]
        assert len(steps(p, "session_start")) == 1  # no second process, no resume
        actions = [r for r in jsonl.read_jsonl(layout.rounds).records if r["event"] == "action"]
        assert [(a["action"], a["alias"], a["result"]["route"]) for a in actions] == [("dispatch", "cc1", "held")]
        assert not os.listdir(layout.holds_dir)
    finally:
        watcher.stop()
        stop_chat_worker(layout)


def claude_env(p: Project, stub: AnthropicStub) -> dict[str, str]:
    return p.env(
        ANTHROPIC_BASE_URL=stub.url,
        ANTHROPIC_API_KEY="sk-test-local",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
    )


def test_a_dispatch_to_an_exited_headless_session_resumes_it(e2e_project: Project) -> None:
    p = e2e_project
    p.cocoplus("install", "claude")
    with AnthropicStub([text("first task done")]) as stub:
        first = run_claude(p, stub, "Do the first task.")
    sid = first["session_id"]
    layout = Layout(str(p.root))
    rec = registry.resolve(layout, "cc1")
    assert rec["state"] == "exited" and rec["process"]["argv"][1:3] == ["-p", "Do the first task."]
    with AnthropicStub([text("RESUMED-OK")]) as stub2:
        from tests.e2e.conftest import cocoplus

        r = cocoplus(
            p.project, "dispatch", "cc1", "RESUME-41d2: now write the tests", "--json", env=claude_env(p, stub2)
        )
        out = json.loads(r.stdout)
        assert out["route"] == "resume", out
        assert out["resume"]["command"][1:5] == ["-p", out["delivered_text"], "--resume", sid]
        log = p.project / out["resume"]["log"]
        results = wait_until(
            lambda: [json.loads(x) for x in log.read_text().splitlines() if '"type":"result"' in x.replace(" ", "")],
            timeout=120,
        )
        assert results[-1]["session_id"] == sid and results[-1]["result"] == "RESUMED-OK"
        last = json.dumps(stub2.loop_requests[-1])
        assert (
            "RESUME-41d2: now write the tests" in last and "first task done" in last
        )  # the whole history, then the instruction
    starts = steps(p, "session_start")
    assert [s.get("source") for s in starts] == ["startup", "resume"] and {s["session"] for s in starts} == {sid}
    rec = registry.resolve(layout, "cc1")
    assert rec["resumed"]["pid"] == out["resume"]["pid"]


def test_a_dispatch_whose_resume_is_not_logged_in_says_so_and_exits_1(e2e_project: Project) -> None:
    """The session ran with an API key; the dispatch comes from an environment with none (and no login in its HOME)."""
    from tests.e2e.conftest import cocoplus

    p = e2e_project
    p.cocoplus("install", "claude")
    with AnthropicStub([text("first task done")]) as stub:
        run_claude(p, stub, "Do the first task.")
        env = {k: v for k, v in claude_env(p, stub).items() if k != "ANTHROPIC_API_KEY"}
        r = cocoplus(p.project, "dispatch", "cc1", "RESUME-6e0f: now write the tests", env=env, check=False)
        assert len(stub.loop_requests) == 1  # the resumed run never reached the model
    reason = "Not logged in · Please run /login"
    # One outcome, not "queued" and an error: the instruction is queued (exit 0), and a line says why the resume
    # failed and where its output is.
    assert r.returncode == 0 and r.stderr == "", (r.stdout, r.stderr)
    assert r.stdout.startswith(f"queued: cc1's resume failed: {reason}; the instruction is queued for its next prompt")
    said = r.stdout.splitlines()[1].strip()
    assert "(claude exited with code 1)" in said and "its output: .cocoplus/resumes/cs_" in said, said
    log = p.project / said.split("its output: ", 1)[1]
    assert reason in log.read_text()
    layout = Layout(str(p.root))
    from cocoplus.session import steering

    assert "RESUME-6e0f: now write the tests" in (
        steering.pending_steer(layout, registry.resolve(layout, "cc1")["id"]) or ""
    )


def test_two_sessions_a_session_stop_and_a_session_steer_reach_only_their_own(e2e_project: Project) -> None:
    p = e2e_project
    p.cocoplus("install", "claude")
    ids = []
    for task in ("Session one: start.", "Session two: start."):
        with AnthropicStub([text("started")]) as stub:
            ids.append(run_claude(p, stub, task)["session_id"])
    listing = {
        s["alias"]: s["runtime_session_id"]
        for s in json.loads(p.cocoplus("sessions", "list", "--json").stdout)["sessions"]
    }
    assert listing == {"cc1": ids[0], "cc2": ids[1]}
    p.cocoplus("session", "stop", "--session", "cc1", "--reason", "wait for the schema review", "--operator", "alice")
    p.cocoplus("session", "steer", "--session", "cc2", "STEER-ONLY-CC2: use the new fixtures")
    one_file, two_file = p.project / "one.txt", p.project / "two.txt"
    stub1 = AnthropicStub([tool("Bash", command=f"touch {one_file}", description="x"), text("one done")]).start()
    stub2 = AnthropicStub([tool("Bash", command=f"touch {two_file}", description="x"), text("two done")]).start()
    try:
        # Both sessions at once, each resumed against its own stand-in.
        t1, box1 = in_thread(run_claude, p, stub1, "Continue.", resume=ids[0])
        t2, box2 = in_thread(run_claude, p, stub2, "Continue.", resume=ids[1])
        t1.join(180)
        t2.join(180)
        assert "error" not in box1 and "error" not in box2, (box1, box2)
        assert not one_file.exists(), "cc1's tool ran although cc1 is stopped"
        assert two_file.exists(), "cc2's tool was blocked by cc1's stop"
        assert [d["tool_name"] for d in box1["result"].get("permission_denials", [])] == ["Bash"]
        assert not box2["result"].get("permission_denials")
        denial = json.dumps(stub1.loop_requests)
        assert "wait for the schema review" in denial and "session resume --session cc1" in denial
        assert "STEER-ONLY-CC2" in json.dumps(stub2.loop_requests[0])
        assert "STEER-ONLY-CC2" not in json.dumps(stub1.loop_requests)
    finally:
        stub1.stop()
        stub2.stop()
    assert not (p.root / "AGENT_STOP").exists()
