"""Failover: a worker paused by a distant limit continues in another runtime (supervision/resumes.py).

* `[workers] failover`, `failover_after_s`, `failover_return`: defaults, and
  a runtime not in the registry is a one-line error naming the file.
* `decide`: a managed worker whose reset is over `failover_after_s` away
  fails over to the first runtime of the list on PATH and not limited; not
  an interactive session, not one the operator scheduled, not a nearer
  reset, not a runtime limited or missing, not while its run is ending; a
  stop still cancels first.  Once failed over it waits for the reset, then
  ends (or, with `failover_return`, its work is handed back once the other
  run has ended).
* The handoff a take-over starts with (`handoff.takeover`): why, PROGRESS.md,
  the CONTEXT.md predicates byte for byte, the task, the last report, the last
  steer.
* With real runner processes and stand-in `claude` and `codex` scripts: the
  watcher's check starts the new run with the handoff, the worker keeps both
  runs, the doors say "claude → codex (rate limit until HH:MM, estimate)", the
  action is the watcher's, and the paused session still holds claude's queue.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cocoplus import config as config_mod
from cocoplus.core import clock, jsonl
from cocoplus.core.errors import ConfigInvalid
from cocoplus.core.paths import Layout
from cocoplus.core.shapes import SessionRecord, WorkerRecord
from cocoplus.notify import events as notify_events
from cocoplus.notify import messages
from cocoplus.ops import view
from cocoplus.session import handoff, killswitch, limits, registry, steering
from cocoplus.supervision import resumes, workers
from tests.supervision.workers_support import stop_workers
from tests.support.waiting import wait_until
from tests.support.wired import hooks_installed

PREDICATES = "ENV.db=postgres 16 (not 15!)\nRULE.style=keep `ruff format` quiet; no   tabs\nTASK.parser=half done\n"
CONTEXT = "# Context\n\n" + PREDICATES + "# OLD.gone=commented out\n"

FAKE = """#!/bin/sh
# Stand-in runtime: keeps its last argument (the prompt) and says one line of its stream.
for last in "$@"; do :; done
printf '%s' "$last" > "$FAKE_DIR/$(basename "$0").prompt"
echo '{"type":"assistant","message":{"content":[{"type":"text","text":"REPORT-7: the lexer is done"}]}}'
exit 0
"""


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, project: Layout) -> Iterator[Layout]:
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    for name in ("claude", "codex"):
        script = bindir / name
        script.write_text(FAKE)
        script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_DIR", str(tmp_path))
    hooks_installed(project, "claude", "codex")  # launch refuses a runtime that would run no cocoplus hook
    yield project
    stop_workers(project)


def _config(layout: Layout, text: str) -> None:
    Path(layout.project, "cocoplus.toml").write_text(text)


def _paused(layout: Layout, resets_in: float, worker: str | None = "w1", **limit: Any) -> SessionRecord:
    info = {"worker": worker} if worker else {}
    rec, _ = registry.ensure(layout, "claude", f"rid-{worker}", event="StopFailure", info=info)
    now = time.time()

    def change(r: SessionRecord) -> None:
        limits.pause(r, {"reason": "rate limit", "resets_at": None}, resets_in, now)
        r["limit"].update(limit)

    return registry.update(layout, rec["id"], change)


def _plan(**over: Any) -> dict[str, Any]:
    base = {"order": ["codex", "gemini"], "after_s": 60.0, "return": False, "on_path": {"codex", "gemini"},
            "walls": {}, "busy": set()}  # fmt: skip
    base.update(over)
    return base


# -- settings ----------------------------------------------------------------------------------------


def test_the_failover_settings_default_to_none_and_a_runtime_not_known_is_a_one_line_error(project: Layout) -> None:
    cfg = config_mod.load_for(project)
    assert cfg.get("workers.failover") == [] and cfg.get("workers.failover_return") is False
    assert cfg.get("workers.failover_after_s") == 900.0
    _config(project, '[workers]\nfailover = ["codex", "gemini"]\nfailover_after_s = 30\n')
    cfg = config_mod.load_for(project)
    assert cfg.get("workers.failover") == ["codex", "gemini"] and cfg.get("workers.failover_after_s") == 30.0
    _config(project, '[workers]\nfailover = ["codex", "opencode"]\n')
    with pytest.raises(ConfigInvalid) as exc:
        config_mod.load_for(project)
    text = str(exc.value)
    assert "cocoplus.toml" in text and "failover" in text and "opencode" in text and "\n" not in text


# -- the decision --------------------------------------------------------------------------------------


def test_a_distant_reset_fails_over_to_the_first_runtime_on_path_and_not_limited(project: Layout) -> None:
    rec = _paused(project, 3600)
    now = time.time()
    on: dict[str, Any] = {"enabled": True}
    verdict, why = resumes.decide(project, rec, rec["limit"], now, on, _plan())
    assert verdict == "failover" and why.endswith("codex takes over"), why
    assert resumes.failover_target(rec, rec["limit"], now, _plan()) == "codex"
    # codex limited itself, or not on PATH: the next of the list; none left: it waits for the reset.
    walls = {"codex": {"reason": "rate limit"}}
    assert resumes.failover_target(rec, rec["limit"], now, _plan(walls=walls)) == "gemini"
    assert resumes.failover_target(rec, rec["limit"], now, _plan(on_path={"gemini"})) == "gemini"
    assert resumes.decide(project, rec, rec["limit"], now, on, _plan(on_path=set()))[0] == "wait"
    assert resumes.decide(project, rec, rec["limit"], now, on, _plan(order=[]))[0] == "wait"
    assert resumes.decide(project, rec, rec["limit"], now, on, None)[0] == "wait"
    # Its own runtime is never the one it fails over to.
    assert resumes.failover_target(rec, rec["limit"], now, _plan(order=["claude"])) is None
    # A reset nearer than failover_after_s is waited for.
    assert resumes.decide(project, rec, rec["limit"], now, on, _plan(after_s=7200))[0] == "wait"
    # Its run is still ending: not yet.
    assert resumes.decide(project, rec, rec["limit"], now, on, _plan(busy={"w1"}))[0] == "wait"
    # Past the reset it is resumed as before.
    assert resumes.decide(project, rec, rec["limit"], now + 3700, on, _plan())[0] == "resume"
    # A stop comes first.
    killswitch.stop(project, "op", "not now")
    assert resumes.decide(project, rec, rec["limit"], now, on, _plan())[0] == "cancel"


def test_an_interactive_session_or_one_the_operator_scheduled_does_not_fail_over(project: Layout) -> None:
    now = time.time()
    alone = _paused(project, 3600, worker=None)
    assert alone["limit"]["resume"] is None
    assert resumes.failover_target(alone, dict(alone["limit"], resume="operator"), now, _plan()) is None
    rec = _paused(project, 3600)
    scheduled = dict(rec["limit"], resume="operator", resume_at=clock.iso(now + 3600))
    assert resumes.decide(project, rec, scheduled, now, {}, _plan())[0] == "wait"


def test_after_the_failover_it_waits_for_the_reset_then_ends_or_is_handed_back(project: Layout) -> None:
    rec = _paused(project, 3600)
    now = time.time()
    gone = dict(rec["limit"], failover={"to": "codex", "worker": "w1", "return": False})
    assert resumes.decide(project, rec, gone, now, {}, _plan()) == ("wait", "its work goes on in codex until the reset")
    assert resumes.decide(project, rec, gone, now + 3700, {}, _plan()) == ("end", "its work went on in codex")
    back = dict(rec["limit"], failover={"to": "codex", "worker": "w1", "return": True})
    assert resumes.decide(project, rec, back, now + 3700, {}, _plan(busy={"w1"}))[0] == "wait"
    assert resumes.decide(project, rec, back, now + 3700, {}, _plan())[0] == "hand_back"
    assert str(limits.text(gone, now)).endswith("; continued in codex")
    assert str(limits.text(back, now)).endswith("; continued in codex; handed back then")
    # Ended at the reset: exited, one exit signal, nothing resumed.
    registry.update(project, rec["id"], lambda r: r["limit"].update(failover=gone["failover"]))
    registry.update(project, rec["id"], lambda r: r["limit"].update(resets_at=clock.iso(now - 1)))
    done = resumes.check(project)
    assert done == [(rec["alias"], "end", "its work went on in codex")]
    after = registry.read_record(project, rec["id"])
    assert after is not None and after["state"] == "exited" and "went on in codex" in after["exit_reason"]


@pytest.mark.slow
def test_a_worker_whose_runtime_keeps_no_session_starts_again_at_most_max_tries_times(proj: Layout) -> None:
    workers.launch(proj, "claude", "Write the parser.", by="alice", alias="parser")
    wait_until(lambda: (workers.read(proj, "w1") or {}).get("state") == "exited", timeout=60)
    rec = _paused(proj, 3600)
    said = "No conversation found with session ID: rid-w1"  # what `claude -p --resume` says of one it did not keep
    got = resumes.restart(proj, rec, said)
    assert got.startswith("Claude Code kept no session to resume (No conversation found") and "starts again" in got
    w = wait_until(lambda: (x := workers.read(proj, "w1")) and x["state"] == "exited" and x["runs"] == 2 and x)
    assert [(r["runtime"], r.get("reason")) for r in w["runtimes"]] == [("claude", None), ("claude", "started again")]
    prompt = w["command"][2]  # claude -p PROMPT ...
    assert "Write the parser." in prompt and "its session could not be resumed" in prompt
    ended = registry.read_record(proj, rec["id"])
    assert ended is not None and ended["state"] == "exited" and "started again" in ended["exit_reason"]

    # After MAX_TRIES starts again, the next session that cannot be resumed is given up.
    def another(i: int) -> SessionRecord:  # the session each new run's SessionStart hook records
        rec, _ = registry.ensure(proj, "claude", f"rid-{i}", event="SessionStart", info={"worker": "w1"})
        return registry.update(proj, rec["id"], lambda r: limits.pause(r, {"reason": "rate limit"}, 60))

    for i in range(limits.MAX_TRIES - 1):
        resumes.restart(proj, another(i), said)
        n = len(workers.read(proj, "w1")["runtimes"])  # type: ignore[index]
        wait_until(
            lambda n=n: (x := workers.read(proj, "w1")) and x["state"] == "exited" and x["runs"] == n, timeout=90
        )
    last = another(limits.MAX_TRIES)
    assert f"not started again (already {limits.MAX_TRIES} times)" in resumes.restart(proj, last, said)
    gave_up = registry.read_record(proj, last["id"])
    assert gave_up is not None and gave_up["state"] == "exited" and "resume given up" in gave_up["exit_reason"]
    assert workers.read(proj, "w1")["runs"] == limits.MAX_TRIES + 1  # type: ignore[index]
    acts = [a for a in jsonl.read_jsonl(proj.rounds).records if a.get("action") == "restart"]
    assert len(acts) == limits.MAX_TRIES and {a["principal"] for a in acts} == {"watcher"}


# -- the handoff -----------------------------------------------------------------------------------------


def test_the_takeover_handoff_carries_the_predicates_byte_for_byte_the_task_the_report_and_the_steer(
    project: Layout,
) -> None:
    Path(project.context).write_text(CONTEXT)
    Path(project.progress).write_text("# Progress\n\n## Done\n- PROG-1 the lexer\n")
    worker = {"id": "w1", "alias": "parser", "task": "Write the parser for the config files."}
    text = handoff.takeover(
        project, worker, "Claude Code", "Codex CLI", "Claude Code was stopped by its rate limit",
        last_report="REPORT-7: the lexer is done", last_steer="STEER-3: skip the YAML part",
    )  # fmt: skip
    assert text.startswith("You are taking over cocoplus worker w1 (parser) from Claude Code: Claude Code was")
    assert PREDICATES.rstrip("\n") in text and "OLD.gone" not in text
    for part in ("PROG-1 the lexer", "Write the parser for the config files.", "REPORT-7", "STEER-3"):
        assert part in text
    assert text.index("PROGRESS.md ==") < text.index("Active predicates") < text.index("The worker's task")


def test_a_takeover_handoff_too_long_for_one_argument_cuts_the_task_then_the_steer_and_keeps_the_predicates(
    project: Layout,
) -> None:
    Path(project.context).write_text(CONTEXT)
    task = "T" * (60 * 1024) + " TASK-END"  # near the longest task a launch takes
    steer = "S" * (60 * 1024) + " STEER-END"
    text = handoff.takeover(project, {"id": "w1", "task": task}, "Claude Code", "Codex CLI", "why", last_steer=steer)
    size = len(text.encode("utf-8"))
    assert handoff.MAX_TAKEOVER_BYTES - 200 < size <= handoff.MAX_TAKEOVER_BYTES  # cut just enough
    assert PREDICATES.rstrip("\n") in text and "STEER-END" in text and "TASK-END" not in text
    assert "the whole of it: `cocoplus workers list --json`, worker w1]" in text
    longer = handoff.takeover(
        project,
        {"id": "w1", "task": task},
        "Claude Code",
        "Codex CLI",
        "why",
        last_steer="S" * steer.count("S") * 2 + " STEER-END",
    )  # the task cut to nothing is not enough: the steer is cut too
    assert len(longer.encode("utf-8")) <= handoff.MAX_TAKEOVER_BYTES and "STEER-END" not in longer
    assert PREDICATES.rstrip("\n") in longer and "rounds.jsonl]" in longer


# -- the take-over, with real runners ---------------------------------------------------------------------


def test_the_watcher_fails_a_limited_worker_over_to_codex_with_the_handoff_and_the_worker_keeps_both_runs(
    proj: Layout, tmp_path: Path
) -> None:
    Path(proj.context).write_text(CONTEXT)
    _config(proj, '[workers]\nfailover = ["codex"]\nfailover_after_s = 60\nlimit_retry_s = 3600\n')
    workers.launch(proj, "claude", "Write the parser.", by="alice", alias="parser")
    wait_until(lambda: (workers.read(proj, "w1") or {}).get("state") == "exited", timeout=120)
    # Its session, paused by a limit an hour away (as its StopFailure hook records it).
    rec, _ = registry.ensure(proj, "claude", "rid-parser", event="SessionStart", info={"worker": "w1"})
    now = time.time()
    rec = registry.update(
        proj, rec["id"], lambda r: limits.pause(r, {"reason": "rate limit", "resets_at": None}, 3600, now)
    )
    steering.steer(proj, "STEER-3: skip the YAML part", "alice", session=rec["id"])
    lines: list[str] = []
    done = resumes.check(proj, lines.append)
    assert [(d[0], d[1]) for d in done] == [(rec["alias"], "failover")], (done, lines)
    prompt = wait_until(lambda: (p := tmp_path / "codex.prompt").exists() and p.read_text(), timeout=60)
    assert PREDICATES.rstrip("\n") in prompt and "Write the parser." in prompt
    assert "REPORT-7: the lexer is done" in prompt and "STEER-3: skip the YAML part" in prompt
    assert "Claude Code was stopped by its rate limit" in prompt
    w = wait_until(lambda: (x := workers.read(proj, "w1")) and x["state"] == "exited" and x, timeout=60)
    assert w["runtime"] == "codex" and w["runs"] == 2 and w["command"][1:3] == ["exec", "--json"]
    assert [(r["runtime"], r.get("reason")) for r in w["runtimes"]] == [("claude", None), ("codex", "rate limit")]
    assert w["runtimes"][0]["session"] == rec["id"] and w["runtimes"][1]["by"] == resumes.FAILOVER_BY
    shown = workers.describe(proj, w)
    hhmm = limits.hhmm(clock.parse_iso(rec["limit"]["resets_at"]))
    assert shown["runtimes_text"] == f"claude → codex (rate limit until {hhmm}, estimate)"
    assert shown["session"] is None  # not the claude session: the codex run recorded none (no hooks here)
    page = next(x for x in view.snapshot(proj)["sessions"] if x["id"] == rec["id"])  # the page's sessions
    assert page["failover"] == shown["runtimes_text"] and page["runtime"] == "claude"
    # The paused session says so, still holds claude's queue, and is not failed over twice.
    after = registry.read_record(proj, rec["id"])
    assert after is not None and after["state"] == "paused" and after["limit"]["failover"]["to"] == "codex"
    assert "claude" in limits.limited_runtimes([after])
    assert resumes.check(proj, lines.append) == []
    # The watcher's action, recorded as such.
    acts = [a for a in jsonl.read_jsonl(proj.rounds).records if a.get("action") == "failover"]
    assert [(a["principal"], a["result"]["to"]) for a in acts] == [("watcher", "codex")]
    steps = [s for s in jsonl.read_jsonl(proj.steps).records if s.get("event") == "limit_failover"]
    assert [(s["principal"], s["to"]) for s in steps] == [("watcher", "codex")]
    # The operator is told of it as an event of its own (not as the pause's promise).
    told = notify_events.to_event("steps", steps[0])
    assert told is not None and told["kind"] == "failover"
    assert messages.headline(told) == f"{rec['alias']}'s work goes on in codex (failover: w1)"


def test_workers_list_shows_the_runtimes_a_worker_ran_in(capsys: pytest.CaptureFixture[str]) -> None:
    from cocoplus.cli.commands import workers_cmd

    until = time.time() + 3600
    rec: WorkerRecord = {"id": "w1", "state": "running", "runtime": "codex", "task": "t", "runtimes": [
        {"runtime": "claude"}, {"runtime": "codex", "reason": "rate limit", "until": clock.iso(until)}]}  # fmt: skip
    assert workers.runtimes_text(rec) == f"claude → codex (rate limit until {limits.hhmm(until)})"
    assert workers.runtimes_text({"runtime": "claude"}) is None
    workers_cmd.render_list({"workers": [dict(rec, runtimes_text=workers.runtimes_text(rec))], "running": 1,
                             "queued": 0, "max_parallel": 4})  # fmt: skip
    shown = capsys.readouterr().out
    assert re.search(r"claude → codex \(rate limit until \d\d:\d\d\)", shown), shown


def test_a_failover_that_cannot_start_is_recorded_and_not_tried_again_with_that_runtime(
    project: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cocoplus.core.errors import CocoplusError

    rec = _paused(project, 3600)
    wrec = {"id": "w1", "runtime": "claude", "task": "Write the parser.", "state": "exited"}
    monkeypatch.setattr(workers, "read", lambda _layout, _wid: dict(wrec))

    def refuse(*_a: Any, **_k: Any) -> dict[str, Any]:
        raise CocoplusError("worker w1: its worktree is gone")

    monkeypatch.setattr(workers, "take_over", refuse)
    plan = _plan(order=["codex"])
    with pytest.raises(CocoplusError):
        resumes.fail_over(project, rec, rec["limit"], time.time(), plan)
    after = registry.read_record(project, rec["id"])
    assert after is not None and after["state"] == "paused" and after["limit"]["failover"] is None
    assert after["limit"]["failover_failed"] == {"codex": "worker w1: its worktree is gone"}
    assert resumes.decide(project, after, after["limit"], time.time(), {}, plan)[0] == "wait"
    acts = [a for a in jsonl.read_jsonl(project.rounds).records if a.get("action") == "failover"]
    assert [(a["principal"], a["error"]) for a in acts] == [("watcher", "worker w1: its worktree is gone")]


def test_the_hand_back_resumes_the_first_session_with_the_handoff_of_what_was_done_meanwhile(
    project: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cocoplus.supervision import dispatch

    Path(project.context).write_text(CONTEXT)
    rec = _paused(project, 3600)
    over = {"to": "codex", "worker": "w1", "return": True}
    rec = registry.update(project, rec["id"], lambda r: r["limit"].update(failover=over, resets_at=clock.iso(1)))
    wrec = {"id": "w1", "runtime": "codex", "task": "Write the parser.", "state": "exited"}
    monkeypatch.setattr(workers, "read", lambda _layout, _wid: dict(wrec))
    monkeypatch.setattr(workers, "last_report", lambda _layout, _wid: "REPORT-9: codex wrote the grammar")
    sent: list[tuple[str, str | None]] = []

    def fake_dispatch(_layout: Layout, ref: str, text: str, by: str, **kw: Any) -> dict[str, Any]:
        sent.append((text, kw.get("principal")))
        return {"route": "resume", "message": "resumed"}

    monkeypatch.setattr(dispatch, "dispatch", fake_dispatch)
    monkeypatch.setattr(resumes, "plan", lambda *_a, **_k: _plan(order=["codex"]))
    done = resumes.check(project)
    assert [(d[1], d[2]) for d in done] == [("hand_back", "try 1: resumed")]
    ((text, principal),) = sent
    assert principal == "watcher" and text.startswith("You are taking over cocoplus worker w1 from Codex CLI")
    (step,) = [s for s in jsonl.read_jsonl(project.steps).records if s.get("event") == "limit_hand_back"]
    told = notify_events.to_event("steps", step)
    assert told is not None and told["kind"] == "hand_back" and told["from"] == "codex"
    assert (
        messages.headline(told) == f"{rec['alias']}'s work comes back from codex to claude (claude's limit has reset)"
    )
    # the runtime whose limit reset is named, never the one that took over
    reason = rec["limit"].get("reason") or "rate limit"
    assert (
        f"from Codex CLI: Claude Code's {reason} has reset, so the work done meanwhile in Codex CLI comes back" in text
    )
    assert "its rate limit has reset" not in text and "its usage limit has reset" not in text
    assert PREDICATES.rstrip("\n") in text and "REPORT-9: codex wrote the grammar" in text
