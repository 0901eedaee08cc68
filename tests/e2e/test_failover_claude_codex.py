"""A Claude Code worker stopped by a rate limit an hour away continues in Codex, end to end with the real CLIs.

The Claude model stand-in answers with the Messages API's own 429
(`retry-after` an hour away): Claude Code gives up at once and passes no
reset time on, so cocoplus estimates it (`[workers] limit_retry_s`, 300 s
by default), which is beyond `[workers] failover_after_s` (kept small here).
With `failover = ["codex"]` the watcher starts a new run of the same worker
in Codex CLI, against its own stand-in, with the handoff: the Codex stand-in
receives the CONTEXT.md predicates byte for byte and the worker's task, told
why it took over.  The worker keeps both runs, and `workers list` says
"claude → codex (rate limit until HH:MM, estimate)"; the Claude session stays
paused (its runtime is still limited), noting that its work went on in codex.

A launched `codex exec` runs the project's hooks only once they were
reviewed in Codex (`/hooks`), so the Codex run records no session here
(as in test_limits_codex_gemini.py): the worker's second run has none.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from cocoplus.core import jsonl
from cocoplus.core.paths import Layout
from tests.e2e.conftest import Project
from tests.e2e.test_codex import codex_home
from tests.e2e.test_workers_claude import cli_json, env_for, worker
from tests.supervision.conftest import Watcher
from tests.supervision.workers_support import stop_workers
from tests.support.model_stubs import AnthropicStub, ResponsesStub, text
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e

HOUR = 3600.0
PREDICATES = (
    "ENV.db=postgres 16 (not 15!)\n"
    'RULE.quotes=say "it\'s done" only when `pytest -q` passes\n'
    "TASK.parser=tokens first, then the grammar; keep   three spaces\n"
)
TASK = "Write the parser for the FOO-17 config files."


@pytest.fixture
def proj(e2e_project: Project) -> Iterator[Project]:
    e2e_project.cocoplus("install", "claude")
    yield e2e_project
    stop_workers(Layout(str(e2e_project.root)))


def strings(value: Any) -> list[str]:
    """Every string inside a request body (each message's text as the model gets it)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def what_happened(p: Project, env: dict[str, str], watcher: Watcher) -> str:
    shown = [watcher.text()[-4000:], json.dumps(cli_json(p, env, "sessions", "list")["sessions"], indent=1)[-4000:]]
    shown.append(json.dumps(cli_json(p, env, "workers", "list"), indent=1)[-4000:])
    log = p.root / "workers" / "w1" / "output.log"
    shown.append(log.read_text()[-3000:] if log.exists() else "(no worker log)")
    return "\n---\n".join(shown)


@pytest.mark.timeout(900)
def test_a_rate_limited_claude_worker_continues_in_codex_from_the_handoff(proj: Project) -> None:
    p = proj
    layout = Layout(str(p.root))
    (p.root / "session" / "CONTEXT.md").write_text("# Context\n\n" + PREDICATES)
    (p.project / "cocoplus.toml").write_text('[workers]\nfailover = ["codex"]\nfailover_after_s = 5\n')
    with AnthropicStub([text("never sent")]) as claude, ResponsesStub([text("CODEX-CARRIED-ON")]) as codex:
        claude.limit(HOUR)
        home = codex_home(p, codex)
        env = dict(env_for(p, claude), CODEX_HOME=str(home), STUB_API_KEY="sk-test-local")
        watcher = Watcher(layout, env)
        try:
            cli_json(p, env, "launch", "claude", TASK, "--alias", "parser")
            try:
                w = wait_until(
                    lambda: (x := worker(p, env, "w1"))["runtime"] == "codex" and x["state"] == "exited" and x,
                    timeout=300,
                )
            except AssertionError:
                raise AssertionError(what_happened(p, env, watcher)) from None
            assert len(claude.limited) >= 1 and claude.loop_requests == []  # Claude Code gave up at once
            # The Codex stand-in got the handoff: the predicates byte for byte, the task, why it took over.
            said = [s for body in codex.loop_requests for s in strings(body.get("input"))]
            handed = [s for s in said if s.startswith("You are taking over cocoplus worker w1 (parser)")]
            assert handed, json.dumps(codex.loop_requests)[-3000:]
            assert PREDICATES.rstrip("\n") in handed[0] and TASK in handed[0]
            assert "Claude Code was stopped by its rate limit" in handed[0]
            # The worker keeps both runs.
            assert w["runs"] == 2 and w["exit"]["code"] == 0, what_happened(p, env, watcher)
            assert [(r["runtime"], r.get("reason")) for r in w["runtimes"]] == [
                ("claude", None),
                ("codex", "rate limit"),
            ]
            claude_session = w["runtimes"][0]["session"]
            assert claude_session and w["runtimes"][1]["from_session"] == claude_session
            assert w["session"] is None  # (no Codex session: its hooks were not reviewed), not the Claude one
            assert re.fullmatch(r"claude → codex \(rate limit until \d\d:\d\d(:\d\d)?, estimate\)", w["runtimes_text"])
            shown = p.cocoplus("workers", "list").stdout
            assert w["runtimes_text"] in shown, shown
            # The Claude session stays paused (claude is still limited), saying its work went on in codex.
            s = next(x for x in cli_json(p, env, "sessions", "list")["sessions"] if x["id"] == claude_session)
            assert s["state"] == "paused" and s["paused"].endswith("; continued in codex"), s
            # The failover is the watcher's action.
            acts = [a for a in jsonl.read_jsonl(layout.rounds).records if a.get("action") == "failover"]
            assert [(a["principal"], a["result"]["to"]) for a in acts] == [("watcher", "codex")], acts
            assert "CODEX-CARRIED-ON" in (p.root / "workers" / "w1" / "output.log").read_text()
        finally:
            watcher.stop()


@pytest.mark.timeout(900)
def test_with_failover_return_the_work_comes_back_to_claude_code_at_the_reset(proj: Project) -> None:
    p = proj
    layout = Layout(str(p.root))
    (p.root / "session" / "CONTEXT.md").write_text("# Context\n\n" + PREDICATES)
    (p.project / "cocoplus.toml").write_text(
        '[workers]\nfailover = ["codex"]\nfailover_after_s = 5\nfailover_return = true\nlimit_retry_s = 30\n'
    )
    with AnthropicStub([text("CLAUDE-BACK-AT-IT")]) as claude, ResponsesStub([text("CODEX-DID-THE-LEXER")]) as codex:
        claude.limit(HOUR)
        home = codex_home(p, codex)
        env = dict(env_for(p, claude), CODEX_HOME=str(home), STUB_API_KEY="sk-test-local")
        watcher = Watcher(layout, env)
        try:
            cli_json(p, env, "launch", "claude", TASK, "--alias", "parser")
            try:
                w = wait_until(
                    lambda: (x := worker(p, env, "w1"))["runtime"] == "codex" and x["state"] == "exited" and x,
                    timeout=300,
                )
            except AssertionError:
                raise AssertionError(what_happened(p, env, watcher)) from None
            claude_session = w["runtimes"][0]["session"]
            s = next(x for x in cli_json(p, env, "sessions", "list")["sessions"] if x["id"] == claude_session)
            assert s["paused"].endswith("; continued in codex; handed back then"), s
            claude.lift()
            # At the (estimated) reset the watcher resumes the Claude session with what Codex did meanwhile.
            try:
                back = wait_until(
                    lambda: (x := worker(p, env, "w1"))["runtime"] == "claude" and x["state"] == "exited" and x,
                    timeout=300,
                )
            except AssertionError:
                raise AssertionError(what_happened(p, env, watcher)) from None
            assert back["runs"] == 3 and back["exit"]["code"] == 0, back
            assert [r["runtime"] for r in back["runtimes"]] == ["claude", "codex", "claude"]
            assert back["runtimes"][2]["reason"] == "handed back" and back["session"] == claude_session
            assert back["runtimes_text"] == "claude → codex → claude (handed back)"
            resumed = [s for body in claude.loop_requests for s in strings(body.get("messages"))]
            handed = [s for s in resumed if "You are taking over cocoplus worker w1 (parser) from Codex CLI" in s]
            assert handed and PREDICATES.rstrip("\n") in handed[0] and "CODEX-DID-THE-LEXER" in handed[0], resumed
            acts = [a for a in jsonl.read_jsonl(layout.rounds).records if a.get("action") in ("failover", "dispatch")]
            assert [(a["action"], a["principal"]) for a in acts] == [("failover", "watcher"), ("dispatch", "watcher")]
        finally:
            watcher.stop()
