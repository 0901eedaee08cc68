"""Dispatch and answer: the route each session state takes, what is delivered, what is recorded.

The held route is shown with real hook processes in tests/hook/test_hold.py
and with the real CLIs in tests/e2e/test_dispatch_*.py; the resume route's
plumbing is shown here with a stand-in program recorded as the session's
command line (the real resumes are in the e2e tests).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Unpack

import pytest

from cocoplus.core import fsio, jsonl, seal
from cocoplus.core.errors import CocoplusError, UsageError
from cocoplus.core.paths import Layout
from cocoplus.core.shapes import SessionRecord
from cocoplus.ops import dispatch as dispatch_ops
from cocoplus.ops import session as session_ops
from cocoplus.ops import worker as worker_ops
from cocoplus.session import killswitch, procinfo, registry, steering
from cocoplus.supervision import actions
from tests.support.waiting import wait_until

# A stand-in for a runtime CLI: writes its argv, working directory and environment, then exits with `code`.
PROGRAM = """#!{python}
import json, os, sys
with open({out!r} + ".part", "w") as fh:
    json.dump({{"argv": sys.argv, "cwd": os.getcwd(), "env": dict(os.environ)}}, fh)
os.replace({out!r} + ".part", {out!r})  # seen whole or not at all: the test reads it once it exists
print("resumed-output")
sys.stderr.write({err!r})
sys.exit({code})
"""


def program(tmp_path: Path, code: int = 0, err: str = "") -> tuple[str, Path]:
    out = tmp_path / "ran.json"
    path = tmp_path / "fake-cli"
    path.write_text(PROGRAM.format(python=sys.executable, out=str(out), err=err, code=code))
    path.chmod(0o755)
    return str(path), out


def session(layout: Layout, rid: str = "rid-1", **fields: Unpack[SessionRecord]) -> SessionRecord:
    """A claude session record; its `process`, if given, recorded and sealed as its SessionStart hook does
    (tests/supervision/test_sealed_records.py has the real hook and the records it refuses)."""
    proc = fields.get("process")
    if isinstance(proc, dict):
        argv = proc.get("argv")
        program = [argv[0]] if argv and os.path.isabs(argv[0]) else None
        what = seal.session_fields(registry.cs_id_for(rid), "claude", rid, layout.project, program, argv)
        fields["process"] = {**proc, "program": program, "seal": seal.seal(what)}
    rec, _ = registry.ensure(layout, "claude", rid, event="SessionStart", change=lambda r: r.update(fields))
    return rec


def live_process() -> dict[str, Any]:
    return {"pid": os.getpid(), "start_ticks": procinfo.start_ticks(os.getpid()), "argv": None}


def dead_process(tmp_path: Path, argv: list[str] | None = None) -> dict[str, Any]:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return {"pid": p.pid, "start_ticks": None, "argv": argv}


def action_records(layout: Layout) -> list[dict[str, Any]]:
    return [r for r in jsonl.read_jsonl(layout.rounds).records if r["event"] == "action"]


def test_mid_turn_the_instruction_becomes_this_sessions_steer(project: Layout) -> None:
    session(project, state="running", attention=None, process=live_process())
    r = dispatch_ops.dispatch(project, "cc1", "write the release notes", by="alice")
    assert r["route"] == "steer" and "mid-turn" in r["message"]
    pending = steering.pending_steer(project, r["session"])
    assert pending is not None and "write the release notes" in pending and "not a permission" in pending
    assert steering.pending_steer(project) is None  # not the project-wide steer


def test_idle_at_a_live_prompt_the_instruction_is_queued_and_says_so(project: Layout) -> None:
    session(project, state="running", attention="pending", process=live_process())
    r = dispatch_ops.dispatch(project, "cc1", "next", by="alice")
    assert (
        r["route"] == "queued"
        and "idle at its prompt" in r["why"]
        and r["message"].startswith("queued for cc1's next prompt")
    )


def test_stopped_sessions_are_never_resumed(project: Layout, tmp_path: Path) -> None:
    fake, ran = program(tmp_path)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("{}\n")
    session(project, state="exited", transcript_path=str(transcript), process=dead_process(tmp_path, [fake, "-p", "x"]))
    session_ops.stop_session(project, "cc1", "hold it")
    r = dispatch_ops.dispatch(project, "cc1", "next", by="alice")
    assert r["route"] == "queued" and "cc1 is stopped" in r["why"] and not ran.exists()
    session_ops.resume_session(project, "cc1")
    killswitch.stop(project, "bob", "all stop")
    r = dispatch_ops.dispatch(project, "cc1", "next", by="alice")
    assert r["route"] == "queued" and "AGENT_STOP" in r["why"] and not ran.exists()


def test_an_exited_session_is_resumed_headless_in_the_project_with_the_instruction(
    project: Layout, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake, ran = program(tmp_path)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("{}\n")
    argv = [fake, "-p", "the first task", "--output-format", "json", "--allowedTools", "Bash"]
    session(project, state="exited", transcript_path=str(transcript), process=dead_process(tmp_path, argv))
    # The main brain dispatches (a controller cocoplus started: it holds the capability). Variables its
    # runtime sets for its own tools, and the capability itself, must not reach the process cocoplus starts.
    monkeypatch.setenv("CLAUDECODE", "1")
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "the-brains-own")
    monkeypatch.setenv("COCOPLUS_ROUND", "3")
    monkeypatch.setenv("COCOPLUS_MCP_TOKEN", seal.capability() or "")
    monkeypatch.setenv("SOME_CREDENTIAL_PATH", "kept")
    r = dispatch_ops.dispatch(project, "cc1", "rebase on main", by="alice")
    assert r["route"] == "resume", r
    wait_until(ran.exists)
    got = json.loads(ran.read_text())
    assert got["argv"][1:5] == ["-p", r["delivered_text"], "--resume", "rid-1"]
    assert got["argv"][5:] == ["--output-format", "json", "--allowedTools", "Bash"]
    assert "rebase on main" in r["delivered_text"] and "the main brain (supervision round 3" in r["delivered_text"]
    assert got["cwd"] == project.project
    env = got["env"]
    assert "CLAUDECODE" not in env and "CLAUDE_CODE_SESSION_ID" not in env and "COCOPLUS_ROUND" not in env
    assert "COCOPLUS_MCP_TOKEN" not in env  # a worker never gets the brain's authority
    assert env["SOME_CREDENTIAL_PATH"] == "kept"
    rec = registry.resolve(project, "cc1")
    assert rec["resumed"]["pid"] == r["resume"]["pid"] and rec["resumed"]["command"] == got["argv"]
    log = Path(project.project) / r["resume"]["log"]
    assert log.parent == Path(project.resumes_dir)
    wait_until(lambda: "resumed-output" in log.read_text())
    (rec_action,) = action_records(project)
    assert rec_action["round"] == 3 and rec_action["result"]["route"] == "resume"
    assert actions.for_round(project, 3) == [rec_action] and actions.for_round(project, 2) == []


def test_a_resume_that_fails_at_once_falls_back_to_the_queue_and_says_why(project: Layout, tmp_path: Path) -> None:
    fake, _ran = program(tmp_path, code=1, err="No conversation found with session ID: rid-1\n")
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("{}\n")
    session(project, state="exited", transcript_path=str(transcript), process=dead_process(tmp_path, [fake, "-p", "x"]))
    r = dispatch_ops.dispatch(project, "cc1", "next", by="alice")
    assert r["route"] == "queued"
    assert "the resume failed" in r["why"] and "No conversation found" in r["why"]
    assert steering.pending_steer(project, r["session"]) is not None  # nothing lost


def test_a_session_without_its_transcript_is_not_resumable(project: Layout, tmp_path: Path) -> None:
    fake, ran = program(tmp_path)
    session(
        project, state="exited", transcript_path=str(tmp_path / "gone.jsonl"), process=dead_process(tmp_path, [fake])
    )
    r = dispatch_ops.dispatch(project, "cc1", "next", by="alice")
    assert r["route"] == "queued" and "transcript is not there" in r["why"] and not ran.exists()


def test_a_hold_whose_hook_died_is_not_a_hold(project: Layout, tmp_path: Path) -> None:
    rec = session(project, state="running", attention="pending")
    fsio.ensure_dir(project.holds_dir)
    fsio.atomic_write_json(
        project.hold(rec["id"]), {"id": "h_x", "session": rec["id"], "pid": dead_process(tmp_path)["pid"]}
    )
    r = dispatch_ops.dispatch(project, "cc1", "next", by="alice")
    assert r["route"] != "held" and not os.path.exists(project.hold_decision(rec["id"]))


def test_answer_reaches_the_worker_and_the_conversation_shows_it_against_the_question(project: Layout) -> None:
    rec = session(project, state="running", attention=None, process=live_process())
    asked = worker_ops.ask_human(project, "may I drop the staging table?", session="cc1")
    assert registry.resolve(project, "cc1")["attention"] == "awaiting_decision"
    r = dispatch_ops.answer(project, "cc1", "no: archive it instead", by="alice")
    assert r["route"] == "steer" and r["question"]["id"] == asked["message"]["id"]
    assert "may I drop the staging table?" in r["delivered_text"] and "no: archive it instead" in r["delivered_text"]
    assert registry.resolve(project, "cc1")["attention"] is None
    ledger = jsonl.read_jsonl(project.ledger("master-agent")).records
    assert [(m["role"], m.get("answer_to")) for m in ledger] == [("worker", None), ("user", asked["message"]["id"])]
    assert ledger[1]["session"] == rec["id"] and ledger[1]["text"] == "no: archive it instead"
    (act,) = action_records(project)
    assert act["action"] == "answer_worker" and act["result"]["question_id"] == asked["message"]["id"]


def test_answer_without_a_question_fails_and_is_recorded(project: Layout) -> None:
    session(project)
    with pytest.raises(CocoplusError, match="has asked no question"):
        dispatch_ops.answer(project, "cc1", "yes", by="alice")
    (act,) = action_records(project)
    assert act["action"] == "answer_worker" and "no question" in act["error"] and act["result"] is None


def test_empty_or_unknown_is_refused(project: Layout) -> None:
    session(project)
    with pytest.raises(UsageError, match="empty"):
        dispatch_ops.dispatch(project, "cc1", "  ", by="alice")
    with pytest.raises(CocoplusError, match="no session"):
        dispatch_ops.dispatch(project, "zz9", "x", by="alice")
    assert actions.last(project) == []  # a person's mistyped target is their error, not an action of supervision
    from cocoplus.supervision import dispatch as mod

    with pytest.raises(CocoplusError, match="no session"):  # the brain's is its own failed action: recorded
        mod.dispatch(project, "zz9", "x", "main brain", principal="brain")
    (act,) = actions.last(project)
    assert act["principal"] == "brain" and act["alias"] == "zz9" and "no session" in act["error"]


# A stand-in for Claude Code that is not logged in: it prints what the real CLI printed then (recorded in
# tests/fixtures/runtime-streams) and exits 1.
NOT_LOGGED_IN = """#!{python}
import sys
sys.stdout.write(open({stream!r}).read())
sys.exit(1)
"""


@pytest.mark.slow
def test_a_resume_that_fails_says_why_in_the_runtimes_words_at_every_door(project: Layout, tmp_path: Path) -> None:
    """The CLI, the REST route and the brain's MCP tool each answer with the runtime's own reason; the instruction is
    queued each time (nothing acknowledged is lost), and the CLI says that one outcome: `queued`, why the resume
    failed, exit 0, no error line for the same call."""
    from fastapi.testclient import TestClient

    from cocoplus.server.app import create_app
    from tests.conftest import run_cli_subprocess
    from tests.mcp.conftest import Client, serve
    from tests.server.conftest import AUTH, PORT, TOKEN

    stream = Path(__file__).resolve().parents[1] / "fixtures" / "runtime-streams" / "claude-not-logged-in.jsonl"
    fake = tmp_path / "claude"
    fake.write_text(NOT_LOGGED_IN.format(python=sys.executable, stream=str(stream)))
    fake.chmod(0o755)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("{}\n")
    session(
        project, state="exited", transcript_path=str(transcript), process=dead_process(tmp_path, [str(fake), "-p", "x"])
    )
    reason = "Not logged in · Please run /login"

    cli = run_cli_subprocess("dispatch", "cc1", "from the CLI", "--json", cwd=project.project)
    assert cli.code == 0 and cli.err == "", cli
    by_cli = json.loads(cli.out)
    assert by_cli["resume_failed"]["error"] == f"cc1: the resume failed: {reason} (claude exited with code 1)"
    text = run_cli_subprocess("dispatch", "cc1", "from the CLI, for a person", cwd=project.project)
    assert text.code == 0 and text.err == "", text
    first, second = text.out.splitlines()[:2]
    assert first == f"queued: cc1's resume failed: {reason}; the instruction is queued for its next prompt"
    assert second.startswith(
        f"resume: cc1: the resume failed: {reason} (claude exited with code 1); its output: .cocoplus/resumes/"
    ), text.out
    assert "error" not in text.out

    with TestClient(create_app(project, token=TOKEN, port=PORT), base_url=f"http://127.0.0.1:{PORT}") as c:
        rest = c.post("/api/v1/coding-sessions/cc1/dispatch", json={"instruction": "from REST"}, headers=AUTH)
    assert rest.status_code == 200, rest.text
    by_rest = rest.json()

    async def scenario(client: Client) -> Any:
        return await client.call("dispatch", session="cc1", instruction="from the brain")

    by_mcp = serve(scenario, cwd=project.project)
    for got in (by_cli, by_rest, by_mcp):
        failed = got["resume_failed"]
        assert (got["route"], failed["reason"], failed["code"]) == ("queued", reason, 1), got
        assert Path(project.project, failed["log"]).read_text() == stream.read_text()
        assert got["message"] == f"cc1's resume failed: {reason}; the instruction is queued for its next prompt"
    pending = steering.pending_steer(project, by_cli["session"]) or ""
    assert all(t in pending for t in ("from the CLI", "from REST", "from the brain"))
    failures = [a["result"]["resume_failed"]["reason"] for a in action_records(project)]
    assert failures == [reason] * 4
