"""Launched Codex and Gemini workers that hit a rate limit, end to end with the real CLIs against scripted models.

* Gemini CLI waits out a `retryDelay` of up to 300 s by itself; beyond that
  it ends the run at once and says the wait (here at the worker's second
  model request: limited at its first, Gemini keeps no session to resume
  from, docs/runtimes.md): the worker is recorded
  `paused` with the reset the stand-in gave (not an estimate). An hour is
  too long to wait here, so the operator schedules the resume sooner
  (`session resume-at W +2s`); the watcher resumes it and it carries on.
  A session stop before the reset cancels the resume.  Limited at its
  very first request, Gemini keeps no session (`gemini --resume`: "No
  previous sessions found"): the watcher's resume says so, and the worker
  starts again in a new session with the handoff.
* Codex CLI waits out any `retry-after` itself, up to its provider's
  retries; with them set to 0 it fails the turn at once, passing no reset
  time on (an estimate). A launched `codex exec` runs the project's hooks
  only once they were reviewed in Codex (`/hooks`), so no hook records its
  session: the runner records it from the thread its output names
  (`thread.started`, whose rollout Codex has written by then), and the
  watcher resumes that thread (`codex exec resume`); a project stop before
  the reset cancels the resume.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core import clock, jsonl
from cocoplus.core.paths import Layout
from tests.e2e.conftest import Project, cocoplus, runtime_bin
from tests.e2e.test_codex import codex_home
from tests.e2e.test_gemini import MODEL
from tests.e2e.test_worker_logs import gemini_env
from tests.supervision.conftest import Watcher
from tests.supervision.workers_support import stop_workers
from tests.support.model_stubs import GeminiStub, ResponsesStub, text, tool
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e

HOUR = 3600.0


@pytest.fixture
def proj(e2e_project: Project) -> Iterator[Project]:
    yield e2e_project
    stop_workers(Layout(str(e2e_project.root)))


def cli_json(p: Project, env: dict[str, str], *args: str) -> Any:
    return json.loads(cocoplus(p.project, *args, "--json", env=env).stdout)


def worker(p: Project, env: dict[str, str], wid: str) -> dict[str, Any]:
    return next(w for w in cli_json(p, env, "workers", "list")["workers"] if w["id"] == wid)


def paused(p: Project, env: dict[str, str], alias: str) -> dict[str, Any] | None:
    s = next((s for s in cli_json(p, env, "sessions", "list")["sessions"] if s["alias"] == alias), None)
    return s if s and s["state"] == "paused" and s["limit"] else None


class LimitedAfterFirst(GeminiStub):
    """Answers the first agent-loop request, then is limited for an hour: Gemini CLI records a session only once a
    model answered (limited at its very first request, `gemini --resume` finds no session to resume)."""

    def next_turn(self, body: dict[str, Any]) -> dict[str, Any]:
        step = super().next_turn(body)
        if len(self.loop_requests) == 1:
            self.limit(HOUR)
        return step


def on_file(layout: Layout, cs: str) -> dict[str, Any]:
    """The session's record as it is on file (the listings show a session that ended without its limit)."""
    return dict(json.loads(Path(layout.session_record(cs)).read_text()))


def path_with(runtime: str) -> str:
    return f"{os.path.dirname(runtime_bin(runtime))}{os.pathsep}{os.environ['PATH']}"


def test_a_rate_limited_gemini_worker_is_paused_until_the_reset_gemini_gave(proj: Project) -> None:
    p = proj
    layout = Layout(str(p.root))
    p.cocoplus("install", "gemini")
    with LimitedAfterFirst([tool("run_shell_command", command="echo GM-ONE"), text("GM-CARRIED-ON")]) as stub:
        env = gemini_env(p, stub, path_with("gemini"))
        watcher = Watcher(layout, env)
        try:
            cli_json(p, env, "launch", "gemini", "Write the parser.", "--model", MODEL, "--alias", "gparser")
            s = wait_until(lambda: paused(p, env, "gparser"), timeout=180)
            limit = s["limit"]
            assert limit["estimate"] is False and limit["reason"] == "rate limit" and limit["resume"] == "watcher"
            assert "(estimate)" not in s["paused"]
            # The stand-in's limit ends at `limit_until`; Gemini said so (to the second), cocoplus recorded it.
            assert abs(clock.parse_iso(limit["resets_at"]) - stub.limit_until) < 3, (limit, stub.limit_until)  # type: ignore[operator]
            w = wait_until(lambda: (x := worker(p, env, "w1"))["state"] == "exited" and x, timeout=60)
            assert w["limit"]["resets_at"] == limit["resets_at"] and w["runs"] == 1
            # The operator brings the resume forward; the watcher resumes it and it carries on.
            stub.lift()
            at = cli_json(p, env, "session", "resume-at", "gparser", "+2s")
            assert at["watcher_running"] is True and at["limit"]["resume"] == "operator"
            done = wait_until(
                lambda: (x := worker(p, env, "w1"))["state"] == "exited" and x["runs"] == 2 and x, timeout=180
            )
            assert done["exit"]["code"] == 0 and not done["paused"], done
            assert "cut off by your runtime's rate limit" in json.dumps(stub.loop_requests)
            acts = [a for a in jsonl.read_jsonl(layout.rounds).records if a.get("action") == "dispatch"]
            assert [a["principal"] for a in acts] == ["watcher"]
        finally:
            watcher.stop()


def test_a_gemini_worker_limited_at_its_first_request_starts_again_in_a_new_session(proj: Project) -> None:
    p = proj
    layout = Layout(str(p.root))
    p.cocoplus("install", "gemini")
    with GeminiStub([text("GM-STARTED-AGAIN")]) as stub:
        stub.limit(HOUR)
        env = gemini_env(p, stub, path_with("gemini"))
        watcher = Watcher(layout, env)
        try:
            cli_json(p, env, "launch", "gemini", "Write the parser.", "--model", MODEL, "--alias", "gparser")
            s = wait_until(lambda: paused(p, env, "gparser"), timeout=180)
            assert s["limit"]["estimate"] is False and stub.loop_requests == [], s
            wait_until(lambda: worker(p, env, "w1")["state"] == "exited", timeout=60)
            stub.lift()
            cli_json(p, env, "session", "resume-at", "gparser", "+1s")
            # Its resume: "No previous sessions found" (Gemini kept none); then a new session, with the handoff.
            done = wait_until(
                lambda: (x := worker(p, env, "w1"))["state"] in ("exited", "failed") and x["runs"] == 3 and x,
                timeout=240,
            )
            assert done["state"] == "exited" and done["exit"]["code"] == 0, done
            assert done["runtimes_text"] == "gemini → gemini (started again)", done
            log = open(layout.worker_log("w1"), encoding="utf-8").read()
            assert "No previous sessions found" in log and "GM-STARTED-AGAIN" in log
            sent = json.dumps(stub.loop_requests[-1])
            assert "Write the parser." in sent and "could not be resumed" in sent, sent[:2000]
            old = on_file(layout, s["id"])
            # Ended by its failed resume (one exit signal), saying what followed.
            assert old["state"] == "failed" and "No previous sessions found" in old["exit_reason"], old
            assert old["exit_reason"].endswith("; its work started again in a new session"), old
            assert done["session"] != s["id"]  # the new session
            acts = [a for a in jsonl.read_jsonl(layout.rounds).records if a.get("event") == "action"]
            assert [(a["action"], a["principal"]) for a in acts] == [("dispatch", "watcher"), ("restart", "watcher")]
        finally:
            watcher.stop()


def test_a_stop_before_the_reset_cancels_the_resume_of_a_gemini_worker(proj: Project) -> None:
    p = proj
    layout = Layout(str(p.root))
    p.cocoplus("install", "gemini")
    with LimitedAfterFirst([tool("run_shell_command", command="echo GM-ONE"), text("never sent")]) as stub:
        env = gemini_env(p, stub, path_with("gemini"))
        watcher = Watcher(layout, env)
        try:
            cli_json(p, env, "launch", "gemini", "Write the parser.", "--model", MODEL, "--alias", "gparser")
            s = wait_until(lambda: paused(p, env, "gparser"), timeout=180)
            assert s["limit"]["estimate"] is False and s["limit"]["resume"] == "watcher"
            wait_until(lambda: worker(p, env, "w1")["state"] == "exited", timeout=60)
            p.cocoplus("session", "stop", "--session", "gparser", "--reason", "not now")
            record = wait_until(lambda: (r := on_file(layout, s["id"]))["state"] == "exited" and r, timeout=60)
            assert "gparser is stopped" in record["limit"]["cancelled"], record
            shown = next(x for x in cli_json(p, env, "sessions", "list")["sessions"] if x["alias"] == "gparser")
            assert shown["limit"] is None and shown["paused"] is None  # nothing scheduled any more
            # Brought forward by the operator, the cancelled resume is not scheduled again: nothing comes back.
            stub.lift()
            r = cocoplus(p.project, "session", "resume-at", "gparser", "+1s", env=env, check=False)
            assert r.returncode != 0 and "not paused" in (r.stdout + r.stderr), (r.stdout, r.stderr)
            time.sleep(3)
            assert watcher.proc.poll() is None and worker(p, env, "w1")["runs"] == 1
            assert len(stub.loop_requests) == 1 and len(stub.limited) == 1  # none after the stop
            assert not [a for a in jsonl.read_jsonl(layout.rounds).records if a.get("action") == "dispatch"]
        finally:
            watcher.stop()


def codex_env(p: Project, stub: ResponsesStub) -> dict[str, str]:
    """Codex against `stub`, with no retries of its own (it gives up at the first 429), its hooks not reviewed."""
    home = codex_home(p, stub)
    config = (home / "config.toml").read_text()
    retries = 'env_key = "STUB_API_KEY"\nstream_max_retries = 0\nrequest_max_retries = 0\n'
    (home / "config.toml").write_text(config.replace('env_key = "STUB_API_KEY"\n', retries))
    return p.env(PATH=path_with("codex"), CODEX_HOME=str(home), STUB_API_KEY="sk-test-local")


def test_a_rate_limited_codex_worker_is_paused_and_resumed_from_its_thread(
    proj: Project,
) -> None:
    p = proj
    layout = Layout(str(p.root))
    p.cocoplus("install", "codex")
    with ResponsesStub([text("CX-CARRIED-ON")]) as stub:
        env = codex_env(p, stub)
        home = Path(env["CODEX_HOME"])
        stub.limit(HOUR)
        watcher = Watcher(layout, env)
        try:
            cli_json(p, env, "launch", "codex", "Write the parser.", "--alias", "cparser")
            # Its hooks run (launch skips Codex's review for cocoplus' own) and end its session at the failed turn;
            # the runner pauses it from the limit its output named. Codex passes no reset on: an estimate.
            s = wait_until(lambda: paused(p, env, "cparser"), timeout=180)
            limit = s["limit"]
            assert limit["estimate"] is True and limit["reason"] == "rate limit" and limit["resume"] == "watcher"
            assert "(estimate)" in s["paused"] and len(stub.limited) == 1, s
            w = wait_until(lambda: (x := worker(p, env, "w1"))["state"] == "exited" and x, timeout=60)
            assert w["session"] == s["id"] and w["limit"]["resets_at"] == limit["resets_at"] and w["runs"] == 1, w
            rollout = next(home.glob("sessions/*/*/*/rollout-*.jsonl"))
            assert s["runtime_session_id"] in rollout.name
            # The operator brings the resume forward; the watcher resumes the thread and it carries on.
            stub.lift()
            at = cli_json(p, env, "session", "resume-at", "cparser", "+2s")
            assert at["watcher_running"] is True and at["limit"]["resume"] == "operator"
            done = wait_until(
                lambda: (x := worker(p, env, "w1"))["state"] == "exited" and x["runs"] == 2 and x, timeout=180
            )
            assert done["exit"]["code"] == 0 and not done["paused"], done
            # The same thread, continued: the task of the first run and the watcher's instruction in one request.
            sent = json.dumps(stub.requests[-1])
            assert "Write the parser." in sent and "cut off by your runtime's rate limit" in sent, sent[:2000]
            log = open(layout.worker_log("w1"), encoding="utf-8").read()
            assert f"exec resume {s['runtime_session_id']}" in log and "CX-CARRIED-ON" in log
            acts = [a for a in jsonl.read_jsonl(layout.rounds).records if a.get("action") == "dispatch"]
            assert [a["principal"] for a in acts] == ["watcher"]
        finally:
            watcher.stop()


def test_a_stop_before_the_reset_cancels_the_resume_of_a_codex_worker(proj: Project) -> None:
    p = proj
    layout = Layout(str(p.root))
    p.cocoplus("install", "codex")
    (p.project / "cocoplus.toml").write_text("[workers]\nlimit_retry_s = 10\n")  # the estimated reset comes soon
    with ResponsesStub([text("never sent")]) as stub:
        env = codex_env(p, stub)
        stub.limit(HOUR)
        watcher = Watcher(layout, env)
        try:
            cli_json(p, env, "launch", "codex", "Write the parser.", "--alias", "cparser")
            s = wait_until(lambda: paused(p, env, "cparser"), timeout=180)
            resets = clock.parse_iso(s["limit"]["resets_at"])
            assert resets is not None and s["limit"]["estimate"] is True
            p.cocoplus("session", "stop", "--reason", "not now")  # the whole project, before the reset
            record = wait_until(lambda: (r := on_file(layout, s["id"]))["state"] == "exited" and r, timeout=60)
            assert "AGENT_STOP" in record["limit"]["cancelled"] and time.time() < resets, record
            # Past the reset (and the watcher's next looks), nothing was resumed.
            wait_until(lambda: time.time() > resets + 3, timeout=60)
            assert watcher.proc.poll() is None
            assert worker(p, env, "w1")["runs"] == 1 and len(stub.limited) == 1 and stub.loop_requests == []
            assert not [a for a in jsonl.read_jsonl(layout.rounds).records if a.get("action") == "dispatch"]
        finally:
            watcher.stop()
