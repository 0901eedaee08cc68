"""A session paused by its runtime's rate or usage limit: recognised per runtime, recorded, shown, resumed or not.

* Each adapter says how its runtime reports a limit: Claude Code's
  `StopFailure` `error: "rate_limit"` hook event and its headless output (the
  real CLI's lines, tests/fixtures/runtime-streams/claude-rate-limit.jsonl);
  nothing else it sends is a limit.
* The hook (run as the runtime runs it) records the session `paused` with an
  estimated reset `[workers] limit_retry_s` away and one `limited` signal; a
  SessionEnd after it does not overwrite `paused`; another StopFailure
  error still makes it `pending`.
* A session limited again soon after a resume backs off (twice the wait);
  a reset the runtime gave is kept and not marked as an estimate.
* The watcher's `decide`: a project stop, a session stop or supervision
  finishing cancels; the reset passing resumes; used-up tries give up.
* The notifier turns the `limited` signal into a `limited` event; the
  queue holds a worker of a limited runtime and says why, and lets other
  runtimes' workers pass.
* Codex's and Gemini CLI's own lines of a limit are recognised (Gemini's
  with the reset it names); a run limited before its session was recorded
  is `failed` naming the limit, one whose hook said nothing is paused from
  its output.
* `session resume-at` reads a time and schedules an interactive session
  (never resumed by itself); used-up tries give up; `top` and the snapshot
  show the pause.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core import clock, jsonl
from cocoplus.core.errors import CocoplusError, UsageError
from cocoplus.core.paths import Layout
from cocoplus.core.shapes import SessionRecord
from cocoplus.notify import events as notify_events
from cocoplus.notify import messages
from cocoplus.ops import session as session_ops
from cocoplus.runtimes import registry as runtimes
from cocoplus.session import killswitch, limits, registry
from cocoplus.supervision import resumes
from tests.hook.helpers import fixture
from tests.support.hookdriver import run_hook_here

STREAMS = Path(__file__).resolve().parent.parent / "fixtures" / "runtime-streams"


def _write_toml(layout: Layout, text: str) -> None:
    Path(layout.project, "cocoplus.toml").write_text(text)


# -- recognising a limit, per runtime ---------------------------------------------------------------


def test_claude_reports_a_rate_limit_by_its_stop_failure_and_nothing_else() -> None:
    claude = runtimes.get("claude")
    got = claude.limit_of("stop_failure", fixture("claude-stopfailure-rate-limit.json"))
    assert got == {"reason": "rate limit", "resets_at": None, "detail": "429 Too Many Requests"}
    for error in ("overloaded", "server_error", "billing_error", "unknown"):
        assert claude.limit_of("stop_failure", {"error": error}) is None
    assert claude.limit_of("stop", {"error": "rate_limit"}) is None


def test_claude_headless_output_of_a_rate_limit_is_recognised_from_the_real_cli_lines() -> None:
    claude = runtimes.get("claude")
    lines = [json.loads(x) for x in (STREAMS / "claude-rate-limit.jsonl").read_text().splitlines()]
    found = [claude.output_limit(e) for e in lines]
    assert found[0] is None  # init
    assert all(f is not None and f["reason"] == "rate limit" and f["resets_at"] is None for f in found[1:]), found
    for name in ("claude-two-commands.jsonl", "claude-not-logged-in.jsonl"):
        ordinary = [json.loads(x) for x in (STREAMS / name).read_text().splitlines() if x.strip()]
        assert ordinary and [claude.output_limit(e) for e in ordinary] == [None] * len(ordinary), name


@pytest.mark.parametrize("name", ["codex", "gemini", "cursor", "cortex"])
def test_the_other_runtimes_declare_no_hook_event_for_a_limit(name: str) -> None:
    a = runtimes.get(name)
    assert a.limit_of("stop_failure", {"error": "rate_limit"}) is None
    assert a.limit_of("stop", {"error": "rate_limit"}) is None


def test_codex_names_the_thread_a_run_limited_without_hooks_resumes_from(tmp_path: Path) -> None:
    codex = runtimes.get("codex")
    lines = [json.loads(x) for x in (STREAMS / "codex-rate-limit.jsonl").read_text().splitlines()]
    tid = lines[0]["thread_id"]
    rollout = tmp_path / "sessions" / "2026" / "12" / "02" / f"rollout-2026-12-02T16-36-57-{tid}.jsonl"
    env = {"CODEX_HOME": str(tmp_path)}
    assert codex.output_session(lines[0], env) == {"id": tid, "transcript_path": None}  # not written (yet)
    rollout.parent.mkdir(parents=True)
    rollout.write_text("{}\n")
    assert codex.output_session(lines[0], env) == {"id": tid, "transcript_path": str(rollout)}
    assert [codex.output_session(e, env) for e in lines[1:]] == [None] * (len(lines) - 1)
    for bad in ("*", "../../etc", f"{tid[:-1]}*", tid.upper(), 7):  # only a thread id: nothing to glob or to climb by
        assert codex.output_session({"type": "thread.started", "thread_id": bad}, env) is None, bad
    for name in ("claude", "gemini", "cursor", "cortex"):  # their hooks record their sessions
        assert runtimes.get(name).output_session({"type": "system", "session_id": tid}, env) is None


# -- the hook ----------------------------------------------------------------------------------------


def _session(layout: Layout) -> SessionRecord:
    recs, problems = registry.list_sessions(layout, settle=False)
    assert not problems and len(recs) == 1, (recs, problems)
    return recs[0]


def _signals(layout: Layout) -> list[dict[str, Any]]:
    return jsonl.read_jsonl(layout.signals).records


def test_a_rate_limited_stop_failure_pauses_the_session_with_an_estimate_and_session_end_keeps_it(
    project: Layout,
) -> None:
    _write_toml(project, "[workers]\nlimit_retry_s = 120\n")
    payload = fixture("claude-stopfailure-rate-limit.json")
    registry.ensure(project, "claude", payload["session_id"], event="SessionStart", info={"worker": "w1"})
    before = time.time()
    r = run_hook_here(project, "StopFailure", payload)
    assert (r.code, r.out) == (0, ""), r
    rec = _session(project)
    limit = rec["limit"]
    assert rec["state"] == "paused" and rec["attention"] is None
    assert limit["reason"] == "rate limit" and limit["estimate"] is True and limit["tries"] == 0
    assert limit["detail"] == "429 Too Many Requests" and limit["resume"] == "watcher"  # a managed worker
    at = clock.parse_iso(limit["resets_at"])
    assert at is not None and before + 120 - 1 <= at <= time.time() + 120 + 1
    sigs = _signals(project)
    assert [(s["kind"], s["value"], s["estimate"]) for s in sigs] == [("limited", "rate limit", True)]
    assert sigs[0]["resets_at"] == limit["resets_at"]
    # Claude Code's own SessionEnd follows: the session stays paused, and no exit signal is sent.
    end = {k: payload[k] for k in ("session_id", "transcript_path", "cwd")} | {
        "hook_event_name": "SessionEnd",
        "reason": "other",
    }
    assert run_hook_here(project, "SessionEnd", end).code == 0
    rec = _session(project)
    assert rec["state"] == "paused" and rec["limit"] == limit
    assert [s["kind"] for s in _signals(project)] == ["limited"]


def test_an_interactive_session_limited_then_quit_ends_and_resume_at_can_still_bring_it_back(project: Layout) -> None:
    payload = fixture("claude-stopfailure-rate-limit.json")
    assert run_hook_here(project, "StopFailure", payload).code == 0
    rec = _session(project)
    assert rec["state"] == "paused" and rec["limit"]["resume"] is None  # nobody resumes it behind the person's back
    end = {k: payload[k] for k in ("session_id", "transcript_path", "cwd")} | {"hook_event_name": "SessionEnd"}
    assert run_hook_here(project, "SessionEnd", end).code == 0
    assert _session(project)["state"] == "exited"  # quit: it is not kept active (supervision may converge)
    out = session_ops.resume_at(project, rec["alias"], "+5m")
    after = _session(project)
    assert after["state"] == "paused" and after["limit"]["resume"] == "operator" and "; resume at " in out["paused"]


def test_a_stop_failure_that_is_not_a_limit_still_makes_the_session_pending(project: Layout) -> None:
    payload = dict(fixture("claude-stopfailure-rate-limit.json"), error="overloaded")
    assert run_hook_here(project, "StopFailure", payload).code == 0
    rec = _session(project)
    assert (rec["state"], rec["attention"], rec.get("limit")) == ("running", "pending", None)


# -- the record --------------------------------------------------------------------------------------


def test_a_limit_again_soon_after_a_resume_backs_off_and_a_given_reset_is_no_estimate() -> None:
    now = 1_800_000_000.0
    rec: SessionRecord = {"id": "cs_x", "state": "running", "worker": "w1"}
    first = limits.pause(rec, {"reason": "rate limit", "resets_at": None}, 60, now)
    assert (first["tries"], clock.parse_iso(first["resets_at"]), first["resume"]) == (0, now + 60, "watcher")
    rec["limit"].update(tries=1, resumed_at=clock.iso(now + 60))
    rec["state"] = "running"
    again = limits.pause(rec, {"reason": "rate limit", "resets_at": None}, 60, now + 70)
    assert (again["tries"], clock.parse_iso(again["resets_at"])) == (1, now + 70 + 120)
    # The same limit told a second time (its hook, then its run's output): the first telling stands.
    twice = limits.pause(rec, {"reason": "rate limit", "resets_at": None}, 60, now + 71)
    assert twice is again and (rec["limit"]["tries"], rec["limit"]["resets_at"]) == (1, again["resets_at"])
    rec["limit"].update(tries=3, resumed_at=clock.iso(now + 200))
    rec["state"] = "running"
    third = limits.pause(rec, {"reason": "rate limit", "resets_at": None}, 60, now + 210)
    assert clock.parse_iso(third["resets_at"]) == now + 210 + 480
    # A day later it is a new limit: the count starts again.
    rec["limit"].update(resumed_at=clock.iso(now))
    rec["state"] = "running"
    fresh = limits.pause(rec, {"reason": "usage limit", "resets_at": None}, 60, now + 86400)
    assert fresh["tries"] == 0
    rec["state"] = "running"
    given = limits.pause(rec, {"reason": "usage limit", "resets_at": now + 86400 + 3000}, 60, now + 86400)
    assert given["estimate"] is False and clock.parse_iso(given["resets_at"]) == now + 86400 + 3000
    assert limits.wait_s(60, 30) == limits.BACKOFF_CAP_S


def test_the_words_every_door_shows() -> None:
    now = time.time()
    at = now + 3600
    limit = {"reason": "rate limit", "resets_at": clock.iso(at), "estimate": True, "resume": "watcher", "tries": 0}
    hhmm = time.strftime("%H:%M", time.localtime(at))
    words = limits.text(limit, now)
    assert words is not None and words.startswith(f"paused: rate limit, resets {hhmm} (estimate); resumed then")
    assert limits.text(dict(limit, estimate=False, resume=None), now) == (
        f"paused: rate limit, resets {hhmm}; not resumed by itself (cocoplus session resume-at)"
    )
    rec = {"state": "paused", "limit": limit, "runtime": "claude", "id": "cs_a", "alias": "cc1"}
    assert limits.active(rec) is limit and limits.active(dict(rec, state="running")) is None
    assert limits.limited_runtimes([rec], now)["claude"]["alias"] == "cc1"
    assert limits.limited_runtimes([rec], at + 1) == {}


ABSURD: list[tuple[str, dict[str, Any], str]] = [
    ("a wait of 10^20 s", {"resets_in": 1e20}, "the runtime's retry time (in 1e+20 s) is beyond 7 days"),
    (
        "a wait just past 7 days",
        {"resets_in": 7 * 86400 + 1},
        "the runtime's retry time (in 604801 s) is beyond 7 days",
    ),
    ("an infinite wait", {"resets_in": float("inf")}, "the runtime's retry time (in inf s) is not a time"),
    ("a wait that is NaN", {"resets_in": float("nan")}, "the runtime's retry time (in nan s) is not a time"),
    ("a wait of minus infinity", {"resets_in": float("-inf")}, "the runtime's retry time (in -inf s) is not a time"),
    ("a wait beyond any float", {"resets_in": 10**400}, "(a number beyond any float) is not a time"),
    ("a reset at epoch 1e300", {"resets_at": 1e300}, "the runtime's reset time (epoch 1e+300) is beyond 7 days"),
    ("a reset in the year 2400", {"resets_at": 13569465600.0}, "(2400-01-01T00:00:00.000Z) is beyond 7 days"),
    ("a reset that is NaN", {"resets_at": float("nan")}, "the runtime's reset time (nan) is not a time"),
    ("a reset beyond any float", {"resets_at": -(10**400)}, "(a number beyond any float) is not a time"),
]


@pytest.mark.parametrize(("case", "given", "words"), ABSURD, ids=[c[0] for c in ABSURD])
def test_an_absurd_reset_or_retry_time_pauses_until_the_7_day_ceiling_and_says_so(
    case: str, given: dict[str, Any], words: str
) -> None:
    now = 1_800_000_000.0
    assert limits.CEILING_S == 7 * 86400
    at, said = limits.reset_from(given, now)
    assert at == now + limits.CEILING_S and said is not None and said.endswith(words), (case, said)
    rec: SessionRecord = {"id": "cs_x", "state": "running", "worker": "w1"}
    limit = limits.pause(rec, dict(given, reason="rate limit"), 60, now)
    assert rec["state"] == "paused" and clock.parse_iso(limit["resets_at"]) == now + limits.CEILING_S
    assert limit["estimate"] is False and limit["clamped"] == said
    until = limits.hhmm(now + limits.CEILING_S, now)
    assert limits.text(limit, now) == f"paused: rate limit; {said}; paused until {until}; resumed then by the watcher"
    assert json.loads(json.dumps(limit)) == limit  # a record any door can read back


def test_a_reset_or_wait_within_the_ceiling_is_kept_and_one_past_or_not_positive_is_the_estimate() -> None:
    now = 1_800_000_000.0
    assert limits.reset_from({"resets_in": 7 * 86400}, now) == (now + limits.CEILING_S, None)  # at the ceiling
    assert limits.reset_from({"resets_at": now + 3600}, now) == (now + 3600, None)
    assert limits.reset_from({"resets_in": 30, "since": clock.iso(now - 10)}, now) == (now + 20, None)
    for none in ({}, {"resets_at": None, "resets_in": None}, {"resets_at": now - 5}, {"resets_at": -1e300},
                 {"resets_in": 0}, {"resets_in": -5}, {"resets_at": True}, {"resets_in": "598s"},
                 {"resets_in": 30, "since": clock.iso(now - 60)}):  # fmt: skip
        assert limits.reset_from(none, now) == (None, None), none
        rec: SessionRecord = {"id": "cs_x", "state": "running"}
        limit = limits.pause(rec, dict(none, reason="rate limit"), 60, now)
        assert limit["estimate"] is True and limit["clamped"] is None
        assert clock.parse_iso(limit["resets_at"]) == now + 60


def test_gemini_s_message_with_a_wait_of_a_thousand_digits_is_clamped_not_a_crash() -> None:
    gemini = runtimes.get("gemini")
    for wait, said in (
        ("100000000000000000000", "(in 1e+20 s) is beyond 7 days"),
        ("9" * 1000, "(in inf s) is not a time"),
    ):
        message = f"You exceeded your current quota. Please retry in {wait}s."
        found = gemini.output_limit({"type": "result", "status": "error", "error": {"message": message}})
        assert found is not None
        rec: SessionRecord = {"id": "cs_x", "state": "running", "worker": "w1"}
        now = time.time()
        limit = limits.pause(rec, found, 60, now)
        assert clock.parse_iso(limit["resets_at"]) == pytest.approx(now + limits.CEILING_S, abs=0.002)
        assert limit["clamped"] == f"the runtime's retry time {said}"


def test_a_reset_no_system_can_show_reads_as_a_question_mark_not_an_error() -> None:
    assert limits.hhmm(1e300) == "?" and limits.hhmm(float("nan")) == "?"
    words = limits.text({"reason": "rate limit", "resets_at": "9999-12-31T23:59:59Z", "resume": None})
    assert words is not None and words.startswith("paused: rate limit, resets ")


# -- the watcher's decision --------------------------------------------------------------------------


def _paused(layout: Layout, resets_in: float, **limit: Any) -> SessionRecord:
    rec, _ = registry.ensure(layout, "claude", "rid-1", event="StopFailure", info={"worker": "w1"})
    now = time.time()

    def change(r: SessionRecord) -> None:
        limits.pause(r, {"reason": "rate limit", "resets_at": None}, resets_in, now)
        r["limit"].update(limit)

    return registry.update(layout, rec["id"], change)


def test_the_watcher_decides_resume_wait_cancel_or_give_up(project: Layout) -> None:
    rec = _paused(project, 60)
    now = time.time()
    on: dict[str, Any] = {"enabled": True}
    assert resumes.decide(project, rec, rec["limit"], now, on)[0] == "wait"
    assert resumes.decide(project, rec, rec["limit"], now + 120, on) == ("resume", "the limit has reset")
    used = dict(rec["limit"], tries=limits.MAX_TRIES)
    assert resumes.decide(project, rec, used, now + 120, on)[0] == "give_up"
    watched = dict(rec["limit"], supervised=True)
    assert resumes.decide(project, rec, watched, now + 120, {"enabled": False}) == ("cancel", "supervision finished")
    killswitch.stop(project, "op", "wait for the review")
    assert resumes.decide(project, rec, rec["limit"], now, on) == ("cancel", "the project is stopped (AGENT_STOP)")


def test_a_stop_cancels_the_resume_and_the_session_ends_with_one_exit_signal(project: Layout) -> None:
    rec = _paused(project, 3600)
    killswitch.stop(project, "op", "not now")
    done = resumes.check(project)
    assert done == [(rec["alias"], "cancel", "the project is stopped (AGENT_STOP)")]
    after = registry.read_record(project, rec["id"])
    assert after is not None and after["state"] == "exited" and after["limit"]["cancelled"]
    assert [(s["kind"], s["value"]) for s in _signals(project)] == [("exit", "exited")]
    assert resumes.check(project) == []  # once


# -- the notifier ------------------------------------------------------------------------------------


def test_the_limited_signal_is_a_notification_naming_the_reset() -> None:
    at = time.time() + 600
    sig = {
        "kind": "limited", "value": "rate limit", "session": "cs_a", "alias": "w-cc1", "ts": clock.iso(),
        "resets_at": clock.iso(at), "estimate": True, "resume": "watcher",
    }  # fmt: skip
    event = notify_events.to_event("signals", sig)
    assert event is not None and event["kind"] == "limited"
    head = messages.headline(event)
    assert head.startswith("w-cc1 paused: rate limit, resets ") and "(estimate)" in head
    assert "session stop --session w-cc1" in messages.command(event)
    assert "resume-at" in messages.command(dict(event, resume=None))


# -- session resume-at ---------------------------------------------------------------------------------


def test_resume_at_reads_a_time_and_schedules_an_interactive_session(project: Layout) -> None:
    now = time.time()
    assert resumes.parse_time("+30m", now) == now + 1800
    assert resumes.parse_time("2099-01-02T15:00:00Z") == clock.parse_iso("2099-01-02T15:00:00Z")
    at = resumes.parse_time("15:00", now)
    assert 0 < at - now <= 86400 + 3600 and time.strftime("%H:%M", time.localtime(at)) == "15:00"
    # Digits are ASCII digits: `²` passes str.isdigit() and then failed int() as an internal error.
    for bad in ("soon", "25:00", "+5d", "", "+" + "9" * 5000 + "h", "+²m", "+٣m", "١٥:٠٠", "1²:00"):
        with pytest.raises(UsageError, match="TIME"):
            resumes.parse_time(bad, now)
    rec, _ = registry.ensure(project, "claude", "rid-2", event="SessionStart")
    with pytest.raises(CocoplusError, match="not paused by a rate or usage limit"):
        session_ops.resume_at(project, rec["alias"], "+5m")

    def change(r: SessionRecord) -> None:
        limits.pause(r, {"reason": "usage limit", "resets_at": None}, 60, now)

    registry.update(project, rec["id"], change)
    assert resumes.check(project, now=now + 3600) == []  # interactive: never resumed by itself
    # A time no record can hold is one line, not a traceback.
    for far in ("+99999999999999999999h", "+9999999999999999999s"):
        with pytest.raises(UsageError, match=r"is not a date cocoplus can schedule: give one before the year 10000"):
            session_ops.resume_at(project, rec["alias"], far)
    out = session_ops.resume_at(project, rec["alias"], "+10m")
    assert out["limit"]["resume"] == "operator" and "; resume at " in out["paused"] and out["watcher_running"] is False
    cur = registry.read_record(project, rec["id"])
    assert cur is not None
    assert resumes.decide(project, cur, cur["limit"], now + 60, {})[0] == "wait"
    assert resumes.decide(project, cur, cur["limit"], now + 660, {}) == ("resume", "the limit has reset")


# -- a headless run whose hook did not say it ---------------------------------------------------------


def test_a_run_whose_output_reports_a_limit_pauses_its_session_and_ends_exited_not_failed(project: Layout) -> None:
    from cocoplus.supervision import workerrun, workers

    rec, _ = registry.ensure(project, "claude", "rid-3", event="SessionStart", info={"worker": "w1"})
    os.makedirs(project.worker_dir("w1"))
    Path(project.worker_record("w1")).write_text(json.dumps(
        {"schema_version": 1, "id": "w1", "runtime": "claude", "task": "t", "state": "running", "runs": 1,
         "created_at": clock.iso(), "started_at": clock.iso()}
    ))  # fmt: skip
    tail = (STREAMS / "claude-rate-limit.jsonl").read_text()
    found = workerrun.output_limit("claude", "[cocoplus] run 1\n" + tail + "not json\n")
    assert found is not None and found["reason"] == "rate limit"
    assert workerrun.output_limit("claude", (STREAMS / "claude-two-commands.jsonl").read_text()) is None
    done = workers.finish(project, "w1", 1, "API Error: Request rejected (429) (exit code 1)", limit=found)
    assert done is not None and done["state"] == "exited" and done["limit"]["reason"] == "rate limit"
    assert done["reason"].startswith("paused: rate limit, resets ") and done["reason"].endswith("(exit code 1)")
    sess = registry.read_record(project, rec["id"])
    assert sess is not None and sess["state"] == "paused" and sess["limit"]["resume"] == "watcher"
    assert [(s["kind"], s.get("worker")) for s in _signals(project)] == [("limited", "w1")]


def test_a_resumed_run_limited_again_told_by_its_hook_and_its_output_is_paused_once_with_the_try_counted(
    project: Layout,
) -> None:
    from cocoplus.supervision import workerrun, workers

    payload = fixture("claude-stopfailure-rate-limit.json")
    rec, _ = registry.ensure(project, "claude", payload["session_id"], event="SessionStart", info={"worker": "w1"})
    os.makedirs(project.worker_dir("w1"))
    Path(project.worker_record("w1")).write_text(json.dumps(
        {"schema_version": 1, "id": "w1", "runtime": "claude", "task": "t", "state": "running", "runs": 2,
         "created_at": clock.iso(), "started_at": clock.iso()}
    ))  # fmt: skip
    # The watcher resumed it (try 1) and the run met the limit again: its StopFailure hook paused it first.
    registry.update(project, rec["id"], lambda r: limits.pause(r, {"reason": "rate limit"}, 20))
    registry.update(project, rec["id"], lambda r: r.update({"state": "running"}) or r["limit"].update(
        tries=1, resumed_at=clock.iso()))  # fmt: skip
    assert run_hook_here(project, "StopFailure", payload).code == 0
    told = registry.read_record(project, rec["id"])
    assert told is not None and (told["state"], told["limit"]["tries"]) == ("paused", 1)
    # Then its run ends and its output says the same: the pause stands as the hook made it, told once.
    found = workerrun.output_limit("claude", (STREAMS / "claude-rate-limit.jsonl").read_text())
    workers.finish(project, "w1", 1, "API Error: Request rejected (429) (exit code 1)", limit=found)
    sess = registry.read_record(project, rec["id"])
    assert sess is not None and sess["limit"] == told["limit"] and sess["state"] == "paused"
    assert [s["kind"] for s in _signals(project)] == ["limited"]


def test_codex_and_gemini_headless_output_of_a_limit_is_recognised_from_the_real_cli_lines() -> None:
    codex, gemini = runtimes.get("codex"), runtimes.get("gemini")
    cx = [codex.output_limit(json.loads(x)) for x in (STREAMS / "codex-rate-limit.jsonl").read_text().splitlines()]
    assert [f["reason"] if f else None for f in cx] == [None] * (len(cx) - 1) + ["rate limit"]
    assert cx[-1] is not None and cx[-1]["resets_at"] is None  # Codex passes no reset time on: an estimate
    gm = [gemini.output_limit(json.loads(x)) for x in (STREAMS / "gemini-rate-limit.jsonl").read_text().splitlines()]
    found = gm[-1]
    assert gm[:-1] == [None] * (len(gm) - 1) and found is not None
    assert (found["reason"], found["resets_in"]) == ("rate limit", 598.0)
    rec: SessionRecord = {"state": "running"}
    now = time.time()
    limit = limits.pause(rec, found, 300, now)
    assert limit["estimate"] is False and clock.parse_iso(limit["resets_at"]) == pytest.approx(now + 598, abs=0.002)
    for name, other in (("codex-missing-key.jsonl", codex), ("codex-two-commands.jsonl", codex),
                        ("gemini-two-commands.jsonl", gemini)):  # fmt: skip
        lines = [json.loads(x) for x in (STREAMS / name).read_text().splitlines() if x.strip().startswith("{")]
        assert lines and [other.output_limit(e) for e in lines] == [None] * len(lines), name


def test_used_up_tries_give_up_and_the_session_ends_so_supervision_can_converge(project: Layout) -> None:
    rec = _paused(project, 1, tries=limits.MAX_TRIES)
    assert registry.read_record(project, rec["id"])["state"] in ("paused",)  # type: ignore[index]
    done = resumes.check(project, now=time.time() + 60)
    assert done == [(rec["alias"], "give_up", f"still limited after {limits.MAX_TRIES} resumes")]
    after = registry.read_record(project, rec["id"])
    assert after is not None and after["state"] == "exited" and "given up" in after["exit_reason"]
    assert [(s["kind"], s["value"]) for s in _signals(project)] == [("exit", "exited")]


def test_top_and_the_page_snapshot_show_the_pause(project: Layout) -> None:
    from cocoplus.ops import view
    from cocoplus.tui import render

    rec = _paused(project, 600)
    snap = view.snapshot(project)
    shown = next(s for s in snap["sessions"] if s["id"] == rec["id"])
    assert shown["paused"].startswith("paused: rate limit, resets ") and "(estimate)" in shown["paused"]
    cell = render.text(shown, "state")
    assert cell.startswith("paused: rate limit, resets ") and cell.endswith("(estimate)"), cell
    running, _ = registry.ensure(project, "claude", "rid-9", event="SessionStart")
    other = next(s for s in view.snapshot(project)["sessions"] if s["id"] == running["id"])
    assert other["paused"] is None and render.text(other, "state") == "running"


# -- the queue ---------------------------------------------------------------------------------------


def _queued(layout: Layout, wid: str, runtime: str, at: str) -> None:
    os.makedirs(layout.worker_dir(wid))
    Path(layout.worker_record(wid)).write_text(json.dumps(
        {"schema_version": 1, "id": wid, "runtime": runtime, "task": "t", "state": "queued", "runs": 0,
         "created_at": at, "queued_at": at, "runner": {"pid": os.getpid(), "start_ticks": None}}
    ))  # fmt: skip


def test_the_queue_holds_a_limited_runtimes_worker_saying_why_and_lets_others_pass(project: Layout) -> None:
    from cocoplus.session import procinfo
    from cocoplus.supervision import workers

    me = procinfo.start_ticks(os.getpid())
    _queued(project, "w2", "claude", "2026-01-01T00:00:01.000Z")
    _queued(project, "w3", "codex", "2026-01-01T00:00:02.000Z")
    for wid in ("w2", "w3"):
        rec = json.loads(Path(project.worker_record(wid)).read_text())
        rec["runner"]["start_ticks"] = me
        Path(project.worker_record(wid)).write_text(json.dumps(rec))
    paused = _paused(project, 600)  # a claude worker's session, paused for ten minutes
    assert workers.claim(project, "w2", 4) == "wait"
    held = workers.read(project, "w2")
    assert held is not None and held["held"]["reason"].startswith("held: its runtime's rate limit resets ")
    assert "(estimate)" in held["held"]["reason"] and paused["alias"] in held["held"]["reason"]
    assert workers.claim(project, "w3", 4) == "start"  # another runtime's worker behind it is not held up
    # The reset passes: the claude worker starts, and says nothing about a hold any more.
    registry.update(project, paused["id"], lambda r: r["limit"].update(resets_at=clock.iso(time.time() - 1)))
    assert workers.claim(project, "w2", 4) == "start"
    started = workers.read(project, "w2")
    assert started is not None and started["state"] == "running" and started["held"] is None
