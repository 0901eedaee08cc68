"""A launched Claude Code worker that hits a rate limit, end to end with the real CLI against a scripted model.

The model stand-in answers with the Messages API's own 429 (`limit()`:
`rate_limit_error`, `retry-after` an hour away, the `anthropic-ratelimit-*`
headers), so Claude Code gives up at once (it waits out a `retry-after`
under about a minute by itself) and passes no reset time on: cocoplus
estimates it from `[workers] limit_retry_s`, kept small here.

* The worker is recorded `paused` with an estimate, and every door says so;
  a second claude worker launched meanwhile is held in the queue and says
  why; the watcher resumes the first at the estimated reset, finds it
  limited again and backs off (twice the wait); once the limit is lifted
  the next resume carries on from the handoff and the held worker starts.
* A session stop before the reset cancels the scheduled resume: the worker
  is never run again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core import clock, jsonl
from cocoplus.core.paths import Layout
from tests.e2e.conftest import Project
from tests.e2e.test_workers_claude import cli_json, env_for, worker
from tests.supervision.conftest import Watcher
from tests.supervision.workers_support import stop_workers
from tests.support.model_stubs import AnthropicStub, text
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e

HOUR = 3600.0


@pytest.fixture
def proj(e2e_project: Project) -> Iterator[Project]:
    e2e_project.cocoplus("install", "claude")
    yield e2e_project
    stop_workers(Layout(str(e2e_project.root)))


def session(p: Project, env: dict[str, str], alias: str) -> dict[str, Any] | None:
    return next((s for s in cli_json(p, env, "sessions", "list")["sessions"] if s["alias"] == alias), None)


def paused(p: Project, env: dict[str, str], alias: str, tries: int = 0) -> dict[str, Any] | None:
    s = session(p, env, alias)
    return s if s and s["state"] == "paused" and s["limit"] and s["limit"]["tries"] == tries else None


def what_happened(p: Project, env: dict[str, str], watcher: Watcher) -> str:
    """The watcher's log, the sessions and the workers, for a failure's message."""
    shown = [watcher.text()[-4000:], json.dumps(cli_json(p, env, "sessions", "list")["sessions"], indent=1)[-4000:]]
    shown.append(json.dumps(cli_json(p, env, "workers", "list"), indent=1)[-4000:])
    return "\n---\n".join(shown)


@pytest.mark.timeout(900)  # three Claude Code runs, two resets and a held worker, on a loaded machine too
def test_a_rate_limited_worker_is_paused_then_resumed_at_the_reset_and_a_queued_one_waits(proj: Project) -> None:
    p = proj
    layout = Layout(str(p.root))
    Path(p.project / "cocoplus.toml").write_text("[workers]\nlimit_retry_s = 20\n")
    with AnthropicStub([text("parser carried on"), text("tests written")]) as stub:
        stub.limit(HOUR)
        env = env_for(p, stub)
        watcher = Watcher(layout, env)
        try:
            cli_json(p, env, "launch", "claude", "Write the parser.", "--alias", "parser")
            s = wait_until(lambda: paused(p, env, "parser"), timeout=120)
            limit = s["limit"]
            assert limit["reason"] == "rate limit" and limit["estimate"] is True and limit["resume"] == "watcher"
            waited = clock.parse_iso(limit["resets_at"]) - clock.parse_iso(limit["at"])  # type: ignore[operator]
            assert waited == pytest.approx(20, abs=0.01)
            assert s["paused"].startswith("paused: rate limit, resets ") and "(estimate)" in s["paused"]
            assert len(stub.limited) == 1 and stub.loop_requests == []  # it gave up at once, no retry of its own
            w1 = wait_until(lambda: (x := worker(p, env, "w1"))["state"] == "exited" and x, timeout=60)
            assert w1["limit"]["reason"] == "rate limit" and "(estimate)" in w1["paused"], w1
            # A second claude worker now would hit the same wall: it waits in the queue and says why.
            cli_json(p, env, "launch", "claude", "Write the tests.", "--alias", "tests")
            w2 = wait_until(
                lambda: (x := worker(p, env, "w2"))["state"] == "queued" and x.get("held") and x, timeout=60
            )
            assert (
                w2["held"]["reason"].startswith("held: its runtime's rate limit") and "parser" in w2["held"]["reason"]
            )
            shown = p.cocoplus("workers", "list").stdout
            assert "paused: rate limit, resets" in shown and "(estimate)" in shown, shown
            assert "held: its runtime's rate limit" in shown, shown
            assert "paused: rate limit" in p.cocoplus("sessions", "list").stdout
            assert "parser paused: rate limit" in p.cocoplus("session", "status").stdout
            # The operator is told (the `limited` signal the notifier reads).
            sig = [x for x in jsonl.read_jsonl(layout.signals).records if x["kind"] == "limited"]
            assert [(x["alias"], x["value"], x["estimate"], x["resume"]) for x in sig[:1]] == [
                ("parser", "rate limit", True, "watcher")
            ]

            # The watcher resumes it at the reset; still limited, it is paused again and waits twice as long.
            # (20 s to the reset, then a whole Claude Code start, on a machine the rest of the suite loads)
            try:
                again = wait_until(lambda: paused(p, env, "parser", tries=1), timeout=300)
            except AssertionError:
                raise AssertionError(what_happened(p, env, watcher)) from None
            waited = clock.parse_iso(again["limit"]["resets_at"]) - clock.parse_iso(again["limit"]["at"])  # type: ignore[operator]
            assert waited == pytest.approx(40, abs=0.01) and len(stub.limited) >= 2

            # The limit lifts: the next resume carries on, from the handoff, and the held worker starts.
            stub.lift()
            done = wait_until(
                lambda: (x := worker(p, env, "w1"))["state"] == "exited" and x["runs"] >= 3 and not x["paused"] and x,
                timeout=180,
            )
            assert done["session_state"] == "exited" and done["exit"]["code"] == 0, done
            resumed = json.dumps(stub.loop_requests)
            assert "cut off by your runtime's rate limit" in resumed and "PROGRESS.md" in resumed
            started = wait_until(lambda: (x := worker(p, env, "w2"))["state"] == "exited" and x, timeout=180)
            assert started["held"] is None and "Write the tests." in resumed + json.dumps(stub.loop_requests)
            assert clock.parse_iso(started["started_at"]) >= clock.parse_iso(limit["resets_at"])  # type: ignore[operator]
            # Each resume is the watcher's, recorded as such.
            acts = [a for a in jsonl.read_jsonl(layout.rounds).records if a.get("action") == "dispatch"]
            assert len(acts) >= 2 and {a.get("principal") for a in acts} == {"watcher"}, acts
        finally:
            watcher.stop()


def test_a_stop_before_the_reset_cancels_the_resume(proj: Project) -> None:
    p = proj
    layout = Layout(str(p.root))
    Path(p.project / "cocoplus.toml").write_text("[workers]\nlimit_retry_s = 10\n")
    with AnthropicStub([text("never sent")]) as stub:
        stub.limit(HOUR)
        env = env_for(p, stub)
        watcher = Watcher(layout, env)
        try:
            cli_json(p, env, "launch", "claude", "Write the parser.", "--alias", "parser")
            s = wait_until(lambda: paused(p, env, "parser"), timeout=120)
            resets = clock.parse_iso(s["limit"]["resets_at"])
            assert resets is not None
            p.cocoplus("session", "stop", "--session", "parser", "--reason", "not now")
            ended = wait_until(lambda: (x := session(p, env, "parser")) and x["state"] == "exited" and x, timeout=60)
            assert ended["limit"] is None and ended["paused"] is None  # nothing scheduled any more
            record = json.loads(Path(layout.session_record(s["id"])).read_text())
            assert "stopped" in record["limit"]["cancelled"] and time.time() < resets
            # Past the reset (and the watcher's next looks), nothing was resumed.
            wait_until(lambda: time.time() > resets + 3, timeout=60)
            assert watcher.proc.poll() is None
            w1 = worker(p, env, "w1")
            assert w1["runs"] == 1 and len(stub.limited) == 1 and stub.loop_requests == []
            assert not [a for a in jsonl.read_jsonl(layout.rounds).records if a.get("action") == "dispatch"]
        finally:
            watcher.stop()
