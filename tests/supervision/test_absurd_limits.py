"""A limit whose reset or retry time is absurd, with real runner processes and stand-in runtimes.

A stand-in named `claude`, `codex` or `gemini` first on PATH waits for its
gate, then prints its runtime's own lines of a limit (the real CLIs' lines of
tests/fixtures/runtime-streams, with the wait in them made absurd: 10^20 s)
and exits 1, as the real CLI does.  The test records the worker's session
before releasing the gate, as its SessionStart hook would have.

* Gemini CLI's message names the wait: 10^20 s is beyond the 7-day ceiling,
  so the worker is paused until 7 days from now and its record, its session,
  its `limited` signal and the notification say so; its runner ends normally
  (no traceback in its log), and the worker is `exited`, not `failed`.
* Claude Code's and Codex's messages pass no reset time on (cocoplus
  estimates it): the absurd number in their text changes nothing, and their
  runners end normally too.
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
from cocoplus.core.shapes import SessionRecord
from cocoplus.notify import events as notify_events
from cocoplus.notify import messages
from cocoplus.session import limits, procinfo, registry
from cocoplus.supervision import watcher, workers
from tests.supervision.workers_support import stop_workers
from tests.support.waiting import wait_until
from tests.support.wired import hooks_installed

STREAMS = Path(__file__).resolve().parent.parent / "fixtures" / "runtime-streams"
ABSURD = "100000000000000000000"  # 10^20 s

STAND_IN = """#!/bin/sh
# Stand-in runtime: once $FAKE_DIR/go exists, its runtime's lines of a limit, then exit 1 as the real CLI does.
i=0
while [ ! -e "$FAKE_DIR/go" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done
cat "$FAKE_DIR/$(basename "$0").jsonl"
exit 1
"""


def _streams() -> dict[str, str]:
    """Each runtime's real lines of a limit, with an absurd wait written into them."""
    gemini = (STREAMS / "gemini-rate-limit.jsonl").read_text()
    assert "Please retry in 597.590585s." in gemini and "Suggested retry after 598s." in gemini
    gemini = gemini.replace("597.590585s", f"{ABSURD}s").replace("598s", f"{ABSURD}s")
    claude = (STREAMS / "claude-rate-limit.jsonl").read_text().replace("try again later", f"try again in {ABSURD}s")
    codex = (
        (STREAMS / "codex-rate-limit.jsonl").read_text().replace("request id:", f"retry after {ABSURD}s, request id:")
    )
    return {"gemini": gemini, "claude": claude, "codex": codex}


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, project: Layout) -> Iterator[Layout]:
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    for name, stream in _streams().items():
        (tmp_path / f"{name}.jsonl").write_text(stream)
        script = bindir / name
        script.write_text(STAND_IN)
        script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_DIR", str(tmp_path))
    hooks_installed(project, "claude", "codex", "gemini")  # launch refuses a runtime that would run no cocoplus hook
    yield project
    (tmp_path / "go").touch()
    stop_workers(project)
    if watcher.running_pid(project) is not None:  # the runner starts one to resume the worker at the reset
        watcher.stop(project)


def _run_to_its_limit(layout: Layout, runtime: str) -> tuple[dict[str, Any], SessionRecord, str]:
    """Launch a worker of `runtime`, record its session as its hook would, let it meet its limit; (its record once
    its runner has ended, its session, its runner's log)."""
    workers.launch(layout, runtime, "the parser", by="alice", alias="wk")
    rec = wait_until(lambda: (r := workers.read(layout, "w1")) and r.get("pid") and r)
    registry.ensure(layout, runtime, f"rid-{runtime}", event="SessionStart", info={"worker": "w1"})
    (Path(layout.project).parent / "go").touch()
    done = wait_until(lambda: (r := workers.read(layout, "w1")) and r["state"] not in workers.LIVE and r, timeout=30)
    runner = rec["runner"]
    wait_until(lambda: procinfo.alive(runner["pid"], runner.get("start_ticks")) is not True, timeout=30)
    log = Path(layout.worker_runner_log("w1")).read_text()
    sess = registry.read_record(layout, str(done["session"]))
    assert sess is not None
    return done, sess, log


def test_a_gemini_retry_time_of_10_to_the_20_seconds_pauses_the_worker_until_the_7_day_ceiling(proj: Layout) -> None:
    before = time.time()
    done, sess, log = _run_to_its_limit(proj, "gemini")
    # The runner did not crash: it recorded the end, said so, and exited; no traceback anywhere in its log.
    assert "Traceback" not in log and "OverflowError" not in log, log
    assert "ended: exited (exit code 1)" in log, log
    assert done["state"] == "exited", done
    limit = sess["limit"]
    assert sess["state"] == "paused" and limit["resume"] == "watcher" and limit["estimate"] is False, sess
    at = clock.parse_iso(limit["resets_at"])
    assert at is not None and before + limits.CEILING_S <= at <= time.time() + limits.CEILING_S
    assert limit["clamped"] == "the runtime's retry time (in 1e+20 s) is beyond 7 days"
    words = f"the runtime's retry time (in 1e+20 s) is beyond 7 days; paused until {limits.hhmm(at)}"
    assert words in done["reason"] and done["reason"].startswith("paused: rate limit; "), done["reason"]
    assert done["limit"]["clamped"] == limit["clamped"]
    # The `limited` signal and the notification it becomes say it too.
    sig = [s for s in jsonl.read_jsonl(proj.signals).records if s["kind"] == "limited"]
    assert len(sig) == 1 and sig[0]["clamped"] == limit["clamped"] and words in sig[0]["message"], sig
    event = notify_events.to_event("signals", sig[0])
    assert event is not None and words in messages.headline(event), event


@pytest.mark.parametrize("runtime", ["claude", "codex"])
def test_an_absurd_wait_in_a_message_that_passes_no_reset_time_on_leaves_the_estimate(
    proj: Layout, runtime: str
) -> None:
    # Claude Code and Codex pass no reset time on (docs/runtimes.md): cocoplus estimates it, whatever the text says.
    stream = (Path(proj.project).parent / f"{runtime}.jsonl").read_text()
    assert f"{ABSURD}s" in stream
    before = time.time()
    done, sess, log = _run_to_its_limit(proj, runtime)
    assert "Traceback" not in log and "ended: exited (exit code 1)" in log, log
    assert done["state"] == "exited" and sess["state"] == "paused", (done, sess)
    limit = sess["limit"]
    assert limit["estimate"] is True and limit["clamped"] is None, limit
    at = clock.parse_iso(limit["resets_at"])
    assert at is not None and 0 < at - before <= limits.BACKOFF_CAP_S + 60
    assert json.dumps(limit)  # (a plain record)
