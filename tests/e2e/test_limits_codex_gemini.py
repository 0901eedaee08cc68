"""Launched Codex and Gemini workers that hit a rate limit, end to end with the real CLIs against scripted models.

* Gemini CLI waits out a `retryDelay` of up to 300 s by itself; beyond that
  it ends the run at once and says the wait (here at the worker's second
  model request: limited at its first, Gemini keeps no session to resume
  from, docs/runtimes.md): the worker is recorded
  `paused` with the reset the stand-in gave (not an estimate). An hour is
  too long to wait here, so the operator schedules the resume sooner
  (`session resume-at W +2s`); the watcher resumes it and it carries on.
* Codex CLI waits out any `retry-after` itself, up to its provider's
  retries; with them set to 0 it fails the turn at once, passing no reset
  time on. A launched `codex exec` runs the project's hooks only once they
  were reviewed in Codex (`/hooks`), so here no session is recorded: the
  limit is recognised from its output and named, and nothing is resumed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest

from cocoplus.core import clock, fsio
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
            acts = [a for a in fsio.read_jsonl(layout.rounds).records if a.get("action") == "dispatch"]
            assert [a["principal"] for a in acts] == ["watcher"]
        finally:
            watcher.stop()


def test_a_rate_limited_codex_worker_without_trusted_hooks_ends_naming_the_limit(proj: Project) -> None:
    p = proj
    p.cocoplus("install", "codex")
    with ResponsesStub([text("never sent")]) as stub:
        home = codex_home(p, stub)
        config = (home / "config.toml").read_text()  # no retries of its own: it gives up at the first 429
        retries = 'env_key = "STUB_API_KEY"\nstream_max_retries = 0\nrequest_max_retries = 0\n'
        (home / "config.toml").write_text(config.replace('env_key = "STUB_API_KEY"\n', retries))
        env = p.env(PATH=path_with("codex"), CODEX_HOME=str(home), STUB_API_KEY="sk-test-local")
        stub.limit(HOUR)
        cli_json(p, env, "launch", "codex", "Write the parser.", "--alias", "cparser")
        w = wait_until(lambda: (x := worker(p, env, "w1"))["state"] not in ("queued", "running") and x, timeout=180)
        # `codex exec` runs project hooks only once reviewed (`/hooks`): no session was recorded, so the limit
        # is recognised from its output and named, but there is nothing to resume.
        assert w["state"] == "failed" and w["session"] is None and len(stub.limited) == 1, w
        assert w["reason"].startswith("stopped by its runtime's rate limit before a session was recorded"), w
        assert w["limit"]["reason"] == "rate limit" and w["limit"]["resets_at"] is None
