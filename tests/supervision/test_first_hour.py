"""Supervision in a project that has had sessions before, as a new user meets it.

* Signals from before supervision was enabled are history: a new watcher
  reads them (the log is kept), and none of them is a trigger or closes
  supervision.
* The session `/supervise` is typed in only starts supervision: it is not
  supervised, and its end closes nothing.
* An ended session is `exited`, never `pending`, in every door and in the
  brain's prompt (one definition: `registry.attention_of`).
"""

from __future__ import annotations

import json
import time

import pytest

from cocoplus.core import clock
from cocoplus.core.paths import Layout
from cocoplus.core.shapes import SessionRecord
from cocoplus.ops import sessions as sessions_ops
from cocoplus.session import registry
from cocoplus.supervision import autonomy
from tests.conftest import run_cli_subprocess
from tests.supervision.conftest import Brain, rounds_started, triggers_of, watcher_has_processed_every_signal
from tests.support.waiting import wait_until


def ended_earlier(layout: Layout, rid: str) -> SessionRecord:
    """A session from before: its turn ended (pending), then it exited; both signals are in the log."""
    rec, _ = registry.ensure(layout, "claude", rid, event="SessionStart")
    registry.update(layout, rec["id"], lambda r: r.update({"attention": "pending"}))
    registry.append_signal(layout, rec, "attention", "pending", event="Stop")
    registry.update(layout, rec["id"], lambda r: r.update({"state": "exited"}))
    registry.append_signal(layout, rec, "exit", "exited", event="SessionEnd")
    return rec


@pytest.mark.slow
def test_signals_from_before_supervision_are_history_not_triggers(project: Layout, watchers) -> None:
    Brain(project, quiet=0.2)
    earlier = [ended_earlier(project, f"earlier-{i}") for i in range(3)]
    time.sleep(1.1)  # the signals' times are to the second: supervision is enabled a second later
    live, _ = registry.ensure(project, "claude", "live-1", event="SessionStart")
    autonomy.enable(project, task_hint="ship it")
    watchers()
    watcher_has_processed_every_signal(project, live)
    auto = autonomy.status(project)["autonomous"]
    assert auto["enabled"] is True, auto  # the earlier exits did not converge it
    assert rounds_started(project) == []
    # A signal from now wakes the brain, with only itself as the trigger.
    registry.append_signal(project, live, "attention", "pending", event="Stop")
    got = wait_until(lambda: rounds_started(project), timeout=30)
    assert triggers_of(got[0]) == [("cc4", "attention", "pending")]
    assert all(e["alias"] not in json.dumps(got[0]["triggers"]) for e in earlier)


@pytest.mark.slow
def test_the_session_supervise_is_typed_in_is_not_supervised(project: Layout) -> None:
    from tests.support.controller import write_controller

    write_controller(project)
    typed_in, _ = registry.ensure(project, "claude", "the-persons-session", event="SessionStart")
    worker, _ = registry.ensure(project, "claude", "a-worker", event="SessionStart")
    env = {"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": "the-persons-session"}
    try:
        r = run_cli_subprocess("supervise", "keep", "the", "build", "green", "--json", cwd=project.project, env=env)
        assert r.code == 0, r.err
        auto = json.loads(r.out)["autonomous"]
        assert auto["started_from"] == typed_in["id"] and auto["enabled"]
        assert auto["scope"]["supervised"] == [worker["alias"]]  # not the session it was typed in
        # Its end closes nothing: it was never a supervised worker.
        registry.update(project, typed_in["id"], lambda r: r.update({"state": "exited"}))
        registry.append_signal(project, typed_in, "exit", "exited", event="SessionEnd")
        watcher_has_processed_every_signal(project, worker)
        assert autonomy.status(project)["autonomous"]["enabled"] is True
    finally:
        run_cli_subprocess("supervisor", "stop", cwd=project.project)


def test_a_headless_worker_may_not_start_supervision(project: Layout) -> None:
    r = run_cli_subprocess(
        "supervise", "take", "over", cwd=project.project, env={"COCOPLUS_WORKER": "w1", "COCOPLUS_HEADLESS": "1"}
    )
    assert (
        r.code == 1
        and "refused: cocoplus supervise is typed by a person in their own session, not run by a headless worker"
        in r.err
    )


def test_an_ended_session_is_exited_never_pending_in_every_door(project: Layout) -> None:
    rec = ended_earlier(project, "done-1")
    asked, _ = registry.ensure(project, "claude", "asked-1", event="SessionStart")
    registry.update(project, asked["id"], lambda r: r.update({"attention": "awaiting_decision", "state": "exited"}))
    by_alias = {s["alias"]: s for s in sessions_ops.list_sessions(project)["sessions"]}
    assert (by_alias[rec["alias"]]["state"], by_alias[rec["alias"]]["attention"]) == ("exited", None)
    assert by_alias[asked["alias"]]["attention"] == "awaiting_decision"  # an open question stays open
    cli = json.loads(run_cli_subprocess("sessions", "list", "--json", cwd=project.project).out)
    assert {s["alias"]: s["attention"] for s in cli["sessions"]} == {
        rec["alias"]: None,
        asked["alias"]: "awaiting_decision",
    }
    status = json.loads(run_cli_subprocess("session", "status", "--json", cwd=project.project).out)
    assert status["sessions"]["needs_attention"] == 1
    # The file keeps what the hooks wrote; only what is shown follows the one definition.
    assert json.loads(open(project.session_record(rec["id"])).read())["attention"] == "pending"
    assert registry.attention_of({"state": "running", "attention": "pending"}) == "pending"
    assert clock.iso()  # (the project's clock is what the records use)


def test_the_brains_prompt_lists_ended_sessions_apart_from_the_supervised(project: Layout) -> None:
    from cocoplus.supervision import triggers

    old = ended_earlier(project, "old-1")
    live, _ = registry.ensure(project, "claude", "live-2", event="SessionStart")
    autonomy.enable(project, task_hint="go")
    prompt = triggers.wake_prompt(project, autonomy.read(project), [], 1)
    supervised, _, ended = prompt.partition("Ended sessions")
    assert f"- {live['alias']}" in supervised.split("Supervised sessions", 1)[1]
    assert f"- {old['alias']}" not in supervised and f"- {old['alias']}" in ended


@pytest.mark.slow
def test_sessions_list_says_supervised_only_of_what_supervision_status_calls_supervised_now(project: Layout) -> None:
    old = ended_earlier(project, "old-2")
    live, _ = registry.ensure(project, "claude", "live-3", event="SessionStart")
    aside, _ = registry.ensure(project, "claude", "aside-1", event="SessionStart")
    autonomy.enable(project, task_hint="go")
    r = run_cli_subprocess("supervision", "exclude", aside["alias"], cwd=project.project)
    assert r.code == 0, r.err

    def column() -> dict[str, str]:
        out = run_cli_subprocess("sessions", "list", cwd=project.project, env={"COLUMNS": "300"}).out.splitlines()
        at = out[0].index("supervised")
        return {line.split()[0]: line[at:].strip() for line in out[1:]}

    assert column() == {old["alias"]: "-", live["alias"]: "yes", aside["alias"]: "no (excluded)"}
    status = run_cli_subprocess("supervision", "status", cwd=project.project).out
    assert f"supervised now: {live['alias']}\n" in status, status
