"""The real Codex CLI (`codex exec`), driven by a scripted Responses-API stand-in, with cocoplus' hooks.

Setup as in docs/runtimes.md: a throwaway CODEX_HOME whose config.toml points a
`stub` provider at the stand-in and trusts the project, the hooks written by
`cocoplus install codex`, stdin closed, `--dangerously-bypass-hook-trust`.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Project, runtime_bin
from tests.support.model_stubs import ResponsesStub, text, tool
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e

BLOCKED = "Command blocked by PreToolUse hook: "


# Codex's sandbox makes /tmp and TMPDIR writable and, in each, place-holders of the files it protects (`.git`,
# `.codex`, `.agents`) for as long as a command runs.  The suite's temporary directory is above every test's project:
# a `.git` there for a moment would be the git tree of another test's project.  The tests' commands write neither.
NO_TMP_ROOTS = "[sandbox_workspace_write]\nexclude_tmpdir_env_var = true\nexclude_slash_tmp = true\n"


def codex_home(project: Project, stub: ResponsesStub) -> Path:
    """A throwaway CODEX_HOME whose config.toml points a `stub` provider at the stand-in and trusts the project."""
    home = project.home / ".codex"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(
        'model = "gpt-5-codex"\n'
        'model_provider = "stub"\n'
        "[model_providers.stub]\n"
        'name = "stub"\n'
        f'base_url = "{stub.url}/v1"\n'
        'wire_api = "responses"\n'
        'env_key = "STUB_API_KEY"\n'
        f'[projects."{project.project.resolve()}"]\n'
        'trust_level = "trusted"\n' + NO_TMP_ROOTS
    )
    return home


def codex_exec(prompt: str) -> list[str]:
    return [
        runtime_bin("codex"),
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--dangerously-bypass-hook-trust",
        "-s",
        "workspace-write",
        prompt,
    ]


def run_codex(
    project: Project, stub: ResponsesStub, prompt: str = "Work on the next item.", *, timeout: float = 120
) -> list[dict[str, Any]]:
    """One `codex exec --json` run; returns its JSONL events."""
    home = codex_home(project, stub)
    r = subprocess.run(
        codex_exec(prompt),
        cwd=project.project,
        env=project.env(CODEX_HOME=str(home), STUB_API_KEY="sk-test-local"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert r.returncode == 0, f"codex exec failed ({r.returncode}): {r.stderr[-3000:]}"
    events = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    assert events, f"codex printed no events: {r.stderr[-3000:]}"
    hook_log = project.root / "logs" / "hook.log"
    problems = hook_log.read_text().strip() if hook_log.exists() else ""
    assert not problems, f"cocoplus hooks reported problems: {problems}"
    return events


def thread_id(events: list[dict[str, Any]]) -> str:
    ids = [e["thread_id"] for e in events if e.get("type") == "thread.started"]
    assert len(ids) == 1, events
    return str(ids[0])


@pytest.fixture
def codex_project(e2e_project: Project) -> Project:
    e2e_project.cocoplus("install", "codex")
    return e2e_project


def test_kill_switch_blocks_the_shell_and_the_model_learns_why(codex_project: Project) -> None:
    p = codex_project
    p.cocoplus("session", "stop", "--reason", "release freeze", "--operator", "alice")
    side_effect = p.project / "side_effect.txt"
    with ResponsesStub([tool("exec_command", cmd=f"touch {side_effect}"), text("done")]) as stub:
        run_codex(p, stub)
    assert not side_effect.exists(), "the shell command ran although AGENT_STOP exists"
    # Codex takes the deny alone (no halt): the denial comes back as the call's output.
    outputs = stub.function_outputs()
    assert len(outputs) == 1, outputs
    assert outputs[0].startswith(BLOCKED), outputs
    assert "stopped by alice" in outputs[0] and "release freeze" in outputs[0]
    assert "cocoplus session resume" in outputs[0]
    # The model was told before it asked for the tool, too: the session-start handoff and the
    # prompt hook carry the stop notice as developer messages.
    first = stub.loop_requests[0]["input"]
    developer = json.dumps([m for m in first if m.get("role") == "developer"])
    assert "stopped by alice" in developer and "release freeze" in developer


def test_iteration_cap_runs_exactly_n_tools_then_stops(codex_project: Project) -> None:
    p = codex_project
    (p.project / "cocoplus.toml").write_text("[session]\nmax_iterations = 3\niteration_warn_at = 2\n")
    calls = p.project / "calls.txt"
    script = [tool("exec_command", cmd=f"echo {i} >> {calls}") for i in range(6)] + [text("done")]
    with ResponsesStub(script) as stub:
        run_codex(p, stub)
    assert calls.read_text().split() == ["0", "1", "2"]
    stop = p.read_json("AGENT_STOP")
    assert (
        stop["operator"] == "cocoplus"
        and stop["reason"] == "iteration budget exhausted: 3 of 3 tool calls used (cap 3, [session] max_iterations)"
    )
    assert p.read_json("session/status.json")["state"] == "exited"
    budget = p.read_json("session/iteration-budget.json")
    assert (budget["consumed"], budget["cap"], budget["stopped"]) == (3, 3, True)
    events = [s["event"] for s in p.steps()]
    assert events.count("checkpoint_requested") == 1 and events.count("iteration_cap") == 1
    # Codex 0.169.0 does not end the turn on a PostToolUse stop (docs/runtimes.md): the third
    # call's output is replaced by cocoplus' note, and the model is asked again; the remaining
    # scripted calls are then denied by the AGENT_STOP the cap created.
    outputs = stub.function_outputs()
    assert len(outputs) == 6, outputs
    assert "Iteration cap reached" in outputs[2]
    assert all(
        o.startswith(BLOCKED)
        and "iteration budget exhausted: 3 of 3 tool calls used (cap 3, [session] max_iterations)" in o
        for o in outputs[3:]
    ), outputs[3:]
    # The warn-at checkpoint request reached the model after the second call.
    assert "Checkpoint now" in json.dumps(stub.loop_requests[2]["input"])


def test_steer_reaches_the_model_exactly_once_and_not_in_a_later_session(codex_project: Project) -> None:
    p = codex_project
    token = "STEER-7f3a: the release branch is frozen"
    p.cocoplus("session", "steer", token)
    script = [tool("exec_command", cmd="echo one"), tool("exec_command", cmd="echo two"), text("done")]
    with ResponsesStub(script) as stub:
        run_codex(p, stub)
        assert len(stub.loop_requests) == 3
        # Injected once: in the first request, and still only once in the last one.
        assert json.dumps(stub.loop_requests[0]).count("STEER-7f3a") == 1
        assert json.dumps(stub.loop_requests[-1]).count("STEER-7f3a") == 1
    assert not (p.root / "STEER.md").exists()
    assert list((p.root / "steer-claimed").iterdir()) == []
    injected = [s for s in p.steps() if s["event"] == "steer_injected"]
    assert len(injected) == 1 and injected[0]["steer_id"].startswith("st_")
    with ResponsesStub([text("hello again")]) as stub:
        run_codex(p, stub)
        assert stub.loop_requests and "STEER-7f3a" not in stub.all_text()


def test_new_session_resumes_from_progress_md(codex_project: Project) -> None:
    p = codex_project
    progress = p.root / "session" / "PROGRESS.md"
    progress.write_text(progress.read_text().replace("## In Progress\n", "## In Progress\n- migrate HANDOFF-91c2\n"))
    with ResponsesStub([text("resuming")]) as stub:
        run_codex(p, stub, "Resume.")
        first = stub.loop_requests[0]["input"]
    developer = json.dumps([m for m in first if m.get("role") == "developer"])
    assert "HANDOFF-91c2" in developer and "(you are session cx1)" in developer


def test_turn_end_marks_the_session_pending_as_cx1(codex_project: Project) -> None:
    p = codex_project
    with ResponsesStub([tool("exec_command", cmd="echo hi"), text("all done")]) as stub:
        events = run_codex(p, stub)
    listing = json.loads(p.cocoplus("sessions", "list", "--json").stdout)
    assert len(listing["sessions"]) == 1, listing
    s = listing["sessions"][0]
    assert s["alias"] == "cx1" and s["runtime"] == "codex"
    assert s["runtime_session_id"] == thread_id(events)
    # Stop fires at turn end (pending, the signal below); `codex exec` has then exited (known from its
    # process: Codex has no SessionEnd), and an ended session is exited, never pending.
    assert (s["state"], s["attention"]) == ("exited", None), s
    assert s["last_event"] in ("Stop", "SessionEnd")
    signals = [json.loads(line) for line in (p.root / "supervision" / "signals.jsonl").read_text().splitlines()]
    assert any((sig["alias"], sig["value"], sig["event"]) == ("cx1", "pending", "Stop") for sig in signals), signals


def exit_signals(p: Project) -> list[dict[str, Any]]:
    path = p.root / "supervision" / "signals.jsonl"
    return [s for s in map(json.loads, path.read_text().splitlines()) if s["kind"] == "exit"] if path.exists() else []


def test_a_command_under_workspace_write_really_runs(codex_project: Project) -> None:
    """Codex's own sandbox (`-s workspace-write`, bubblewrap where it is installed) runs the command: its file is
    written and its output comes back. Where Codex's sandbox cannot start its helper, the command silently does not
    run and `codex exec` still exits 0 (tests/e2e/runtimes/install.sh puts the helper on PATH). `ls -l` asks the
    password database who owns the file: nothing but the command's own output comes back (tests/conftest.py
    keeps that database where Codex's sandbox sees it)."""
    p = codex_project
    cmd = "echo ran > ran.txt; ls -l ran.txt > /dev/null; echo hello-from-codex"
    with ResponsesStub([tool("exec_command", cmd=cmd), text("done")]) as stub:
        events = run_codex(p, stub)
    ran = [
        e["item"] for e in events if e.get("type") == "item.completed" and e["item"].get("type") == "command_execution"
    ]
    assert [(i["exit_code"], i["aggregated_output"].strip()) for i in ran] == [(0, "hello-from-codex")], events
    assert (p.project / "ran.txt").read_text() == "ran\n"


def only_session(p: Project) -> dict[str, Any]:
    listing = json.loads(p.cocoplus("sessions", "list", "--json").stdout)
    (s,) = listing["sessions"]
    assert isinstance(s, dict)
    return s


def test_after_codex_exec_ends_the_session_is_exited_with_one_exit_signal(codex_project: Project) -> None:
    p = codex_project
    with ResponsesStub([tool("exec_command", cmd="echo hi"), text("all done")]) as stub:
        events = run_codex(p, stub)
    # The SessionEnd hook is installed within the 3 s Codex allows it: no clamping error on every run.
    errors = [
        e["item"]["message"] for e in events if e.get("type") == "item.completed" and e["item"].get("type") == "error"
    ]
    assert not [m for m in errors if "SessionEnd" in m], errors
    s = only_session(p)
    assert (s["alias"], s["state"], s["last_event"]) == ("cx1", "exited", "SessionEnd")
    assert [(x["alias"], x["value"], x.get("event")) for x in exit_signals(p)] == [("cx1", "exited", "SessionEnd")]
    assert only_session(p)["state"] == "exited" and len(exit_signals(p)) == 1  # listing again adds nothing


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_codex_is_known_to_have_ended_from_its_process(codex_project: Project, sig: int) -> None:
    """Killed, Codex runs no SessionEnd (checked: neither SIGKILL nor SIGTERM): the listing knows from its process."""
    p = codex_project
    started = p.project / "tool-started"
    script = [tool("exec_command", cmd=f"touch {started}; sleep 120", yield_time_ms=120000), text("never reached")]
    with ResponsesStub(script) as stub:
        home = codex_home(p, stub)
        proc = subprocess.Popen(
            codex_exec("Work on the next item."),
            cwd=p.project,
            env=p.env(CODEX_HOME=str(home), STUB_API_KEY="sk-test-local"),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            wait_until(lambda: started.exists() or proc.poll() is not None, timeout=120)
            assert proc.poll() is None, "codex ended before its tool ran"
            s = only_session(p)
            assert (s["alias"], s["state"]) == ("cx1", "running")
            rec = p.read_json(f"sessions/{s['id']}.json")
            native = rec["process"]
            assert Path(native["argv"][0]).name == "codex" and native["argv"][1] == "exec"
            os.kill(native["pid"], sig)
            proc.wait(timeout=60)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the tool's `sleep`, and whatever else is left of the run
            except ProcessLookupError:
                pass
            proc.wait(timeout=60)
    rec = p.read_json(f"sessions/{s['id']}.json")
    assert rec["state"] == "running" and rec["last_event"] != "SessionEnd", "no hook said the session ended"
    s = only_session(p)
    assert s["state"] == "exited"
    assert f"pid {native['pid']}" in p.read_json(f"sessions/{s['id']}.json")["exit_reason"]
    assert [(x["alias"], x["value"]) for x in exit_signals(p)] == [("cx1", "exited")]
    assert only_session(p)["state"] == "exited" and len(exit_signals(p)) == 1


def test_vendored_schemas_are_the_ones_built_into_the_pinned_cli() -> None:
    """tests/fixtures/codex-schemas/0.169.0 is, byte for byte, what the pinned Codex compiles in, and all of it."""
    launcher = Path(runtime_bin("codex")).resolve()  # @openai/codex/bin/codex.js
    (binary,) = [b for b in launcher.parents[2].glob("codex-*/vendor/*/bin/codex") if b.is_file()]
    data = binary.read_bytes()
    vendored = Path(__file__).resolve().parents[1] / "fixtures" / "codex-schemas" / "0.169.0"
    files = sorted(vendored.glob("*.schema.json"))
    assert files
    for f in files:
        assert f.read_bytes() in data, f"{f.name} differs from the schema compiled into {binary}"
    built_in = set(re.findall(rb'"title": "([a-z-]+\.command\.(?:input|output))"', data))
    assert {f.name.removesuffix(".schema.json").encode() for f in files} == built_in
