"""The supervision rules, row by row: triggers, scope, aliases, turn cap, convergence, workflows, restore."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.errors import CocoplusError, UsageError
from cocoplus.core.paths import Layout
from cocoplus.session import registry
from cocoplus.supervision import autonomy, rounds, scope, signals, triggers, watcher, workflow
from tests.supervision.conftest import Brain, rounds_finished, rounds_started, wait_until
from tests.support.controller import write_controller


def json_lines(path: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in Path(path).read_text().splitlines() if x.strip()]


def classify(layout: Layout, sig: dict[str, Any]) -> str | None:
    doc = autonomy.read(layout)
    records = {r["id"]: r for r in registry.list_sessions(layout)[0]}
    return triggers.classify(sig, doc, records)[0]


def sig(rec: dict[str, Any], kind: str, value: str | None = None) -> dict[str, Any]:
    return {"session": rec["id"], "alias": rec["alias"], "kind": kind, "value": value}


# -- the trigger table, one row each -------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "value", "wakes"),
    [
        ("attention", "pending", "trigger"),
        ("attention", "awaiting_authorization", "trigger"),
        ("attention", "awaiting_decision", "trigger"),
        ("report_progress", "working", None),
        ("report_progress", "completed", "trigger"),
        ("report_progress", "blocked", "trigger"),
        ("report_progress", "needs_review", "trigger"),
        ("notify_blocked", None, "trigger"),
        ("ask_human", None, "trigger"),
        ("request_context", None, None),
        ("stall", "pending", "trigger"),
    ],
)
def test_trigger_table(project: Layout, sessions: dict, kind: str, value: str | None, wakes: str | None) -> None:
    autonomy.enable(project, task_hint="t")
    assert classify(project, sig(sessions["cc1"], kind, value)) == wakes


def test_worker_exit_wakes_while_others_are_active_then_converges(project: Layout, sessions: dict) -> None:
    autonomy.enable(project, task_hint="t")
    assert classify(project, sig(sessions["cc1"], "exit", "exited")) == "trigger"
    for alias in ("cc1", "cc2", "cc3"):
        registry.update(project, sessions[alias]["id"], lambda r: r.update({"state": "exited"}))
    # Only cx1 is still active: its exit is the last one.
    assert classify(project, sig(sessions["cx1"], "exit", "exited")) == "converge"


def test_nothing_wakes_while_supervision_is_off(project: Layout, sessions: dict) -> None:
    assert classify(project, sig(sessions["cc1"], "notify_blocked")) is None
    autonomy.enable(project)
    autonomy.finish(project, "done")
    assert classify(project, sig(sessions["cc1"], "ask_human")) is None


def test_excluded_and_out_of_scope_sessions_never_wake(project: Layout, sessions: dict) -> None:
    autonomy.enable(project)
    scope.exclude(project, "cc2")
    assert classify(project, sig(sessions["cc2"], "notify_blocked")) is None
    scope.set_scope(project, "only", ["cc1"])
    assert classify(project, sig(sessions["cc3"], "ask_human")) is None
    assert classify(project, sig(sessions["cc1"], "ask_human")) == "trigger"


# -- scope modes and aliases ------------------------------------------------------------------------


def test_scope_modes(project: Layout, sessions: dict) -> None:
    ids = {a: r["id"] for a, r in sessions.items()}
    v = scope.set_scope(project, "only", ["cc1", ids["cx1"]])
    assert v["mode"] == "only" and sorted(v["supervised"]) == ["cc1", "cx1"]
    v = scope.set_scope(project, "except", ["cc2"])
    assert v["mode"] == "except" and sorted(v["supervised"]) == ["cc1", "cc3", "cx1"]
    v = scope.set_scope(project, "invert")
    assert v["supervised"] == ["cc2"]
    v = scope.set_scope(project, "invert")
    assert sorted(v["supervised"]) == ["cc1", "cc3", "cx1"]
    v = scope.set_scope(project, "all")
    assert v["excluded"] == [] and sorted(v["supervised"]) == ["cc1", "cc2", "cc3", "cx1"]


def test_invert_only_flips_visible_sessions(project: Layout, sessions: dict) -> None:
    scope.set_scope(project, "except", ["cc1"])
    registry.update(project, sessions["cc3"]["id"], lambda r: r.update({"state": "exited"}))
    v = scope.set_scope(project, "invert")
    # cc3 is no longer visible (exited): untouched (still supervised, not in the visible list).
    assert sorted(v["supervised"]) == ["cc1"]
    assert sessions["cc3"]["id"] not in {e["id"] for e in v["excluded"]}


@pytest.mark.parametrize("mode", ["only", "except"])
@pytest.mark.parametrize("ids", [[], ["nope"], ["cc99", "../x"]])
def test_only_and_except_need_a_valid_id_and_write_nothing(
    project: Layout, sessions: dict, mode: str, ids: list[str]
) -> None:
    scope.set_scope(project, "except", ["cc2"])
    before = Path(project.supervision_state).read_bytes()
    with pytest.raises(UsageError) as ei:
        scope.set_scope(project, mode, ids)
    assert "at least one valid session id" in str(ei.value) and "nothing was changed" in str(ei.value)
    assert Path(project.supervision_state).read_bytes() == before


def test_scope_cli_failure_is_one_line(project: Layout, sessions: dict, cli) -> None:
    code, out, err = cli("supervision", "scope", "only", "ghost", cwd=project.project)
    assert code == 2 and err.count("\n") <= 2 and "valid session id" in err


def test_ids_can_be_full_aliases_or_runtime_ids(project: Layout, sessions: dict) -> None:
    cc2 = sessions["cc2"]
    for ref in (cc2["id"], "cc2", "s-two"):
        assert scope.exclude(project, ref)["id"] == cc2["id"]
        assert scope.exclude(project, ref, excluded=False)["excluded"] is False
    with pytest.raises(CocoplusError, match="no session"):
        scope.exclude(project, "zz9")


def test_enable_resets_turns_and_can_set_scope(project: Layout, sessions: dict) -> None:
    autonomy.enable(project, task_hint="a", max_turns=5)
    autonomy.update(project, lambda d: d["autonomous"].update(turns_used=4))
    st = autonomy.enable(project, task_hint="b", scope_mode="only", scope_session_ids=["cc1"])
    auto = st["autonomous"]
    assert (auto["turns_used"], auto["task_hint"], auto["enabled"]) == (0, "b", True)
    assert auto["scope"]["supervised"] == ["cc1"]
    with pytest.raises(UsageError):
        autonomy.enable(project, max_turns=0)


def test_status_shape_matches_the_seed(project: Layout, cli) -> None:
    code, out, _ = cli("supervision", "status", "--json", cwd=project.project)
    assert json.loads(out)["autonomous"] is None
    write_controller(project)
    cli("supervision", "enable", "--task-hint", "watch the PR", "--max-turns", "7", cwd=project.project)
    auto = json.loads(cli("supervision", "status", "--json", cwd=project.project).out)["autonomous"]
    assert {"enabled", "turns_used", "max_turns", "task_hint"} <= set(auto)
    assert (auto["enabled"], auto["turns_used"], auto["max_turns"], auto["task_hint"]) == (True, 0, 7, "watch the PR")
    cli("supervision", "finish", "--summary", "merged", cwd=project.project)
    auto = json.loads(cli("supervision", "status", "--json", cwd=project.project).out)["autonomous"]
    assert auto["enabled"] is False and auto["finish_summary"] == "merged"
    text = cli("supervision", "status", cwd=project.project).out.splitlines()
    assert text[:2] == [
        "supervision: off; turns 0/7; goal: watch the PR",
        "ended: turned off by the operator; summary: merged",
    ]


# -- rounds: turn cap, single flight -------------------------------------------------------------------


def test_every_round_costs_a_turn_and_the_cap_finishes_supervision_when_the_last_round_ends(
    project: Layout, sessions: dict
) -> None:
    from cocoplus.chat import worker

    Brain(project)
    autonomy.enable(project, task_hint="cap", max_turns=2)
    t = [sig(sessions["cc1"], "attention", "pending")]
    for n in (1, 2):
        assert rounds.start_round(project, t, start_worker=False)["started"]
        worker.serve(project, once=True)
        assert (
            autonomy.status(project)["autonomous"]["enabled"] is True
        )  # the round's reply is in, the round not closed yet
        assert rounds.poll(project, start_worker=False) == {"closed": n}
    # The round that used the last turn has ended: supervision is finished now, with no further trigger.
    auto = autonomy.status(project)["autonomous"]
    assert auto["enabled"] is False and auto["finish_reason"] == "max_turns" and "2/2" in auto["finish_summary"]
    assert auto["turns_used"] == 2
    third = rounds.start_round(project, t, start_worker=False)
    assert not third["started"] and third["why"] == "supervision is off"
    assert [r["number"] for r in rounds_started(project)] == [1, 2]
    assert [r["outcome"] for r in rounds_finished(project)] == ["succeeded", "succeeded"]
    # The finish comes after round 2's end, in the log of the session's steps.
    events = [s["event"] for s in json_lines(project.steps)]
    assert events.count("supervision_finished") == 1


def test_the_cap_finishes_supervision_when_the_last_round_ends_in_a_real_watcher(
    project: Layout, sessions: dict, watchers
) -> None:
    brain = Brain(project, quiet=0.2)
    autonomy.enable(project, task_hint="cap", max_turns=1)
    watchers()
    registry.append_signal(project, sessions["cc1"], "attention", "pending")
    # One trigger, one round (the only one allowed); when it ends, supervision finishes by itself.
    auto = wait_until(lambda: (a := autonomy.status(project)["autonomous"]) and not a["enabled"] and a, timeout=30)
    assert auto["finish_reason"] == "max_turns" and auto["turns_used"] == 1
    assert len(brain.prompts()) == 1 and [r["number"] for r in rounds_finished(project)] == [1]


def test_triggers_during_a_round_make_exactly_one_follow_up(project: Layout, sessions: dict) -> None:
    Brain(project)
    autonomy.enable(project, task_hint="sf")
    first = rounds.start_round(project, [sig(sessions["cc1"], "attention", "pending")], start_worker=False)
    assert first["started"]
    for alias in ("cc2", "cc3", "cx1", "cc2"):
        r = rounds.start_round(project, [sig(sessions[alias], "notify_blocked")], start_worker=False)
        assert not r["started"] and "follow-up" in r["why"]
    from cocoplus.chat import worker

    worker.serve(project, once=True)  # round 1's reply
    follow = rounds.poll(project, start_worker=False)
    assert follow is not None and follow["started"] and follow["round"] == 2
    started = rounds_started(project)
    assert len(started) == 2 and started[1]["source"] == "follow-up"
    assert sorted(t["alias"] for t in started[1]["triggers"]) == ["cc2", "cc3", "cx1"]
    worker.serve(project, once=True)
    assert rounds.poll(project, start_worker=False) == {"closed": 2}
    assert rounds.poll(project, start_worker=False) is None  # nothing more: exactly one follow-up


def test_wake_prompt_is_built_from_files(project: Layout, sessions: dict) -> None:
    text = (
        Path(project.progress)
        .read_text()
        .replace("## In Progress\n", "## In Progress\n- port the billing job\n")
        .replace("## Next\n", "## Next\n- run the load test\n")
    )
    Path(project.progress).write_text(text)
    signals.report_progress(project, "completed", "parser done", session="cc1")
    autonomy.enable(project, task_hint="ship billing", max_turns=9)
    doc = autonomy.read(project)
    prompt = triggers.wake_prompt(project, doc, [sig(sessions["cc1"], "report_progress", "completed")], 1)
    for needle in (
        "ship billing",
        "cc1 reported progress: completed",
        "cc1: claude, running",
        "report_progress completed (parser done)",
        "port the billing job",
        "run the load test",
        "turns used 0 of 9",
        "Ask the human",
        "irreversible",
    ):
        assert needle in prompt, needle


# -- worker signals ------------------------------------------------------------------------------------------


def test_worker_signals_reach_the_log_and_the_ledger(
    project: Layout, sessions: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COCOPLUS_SESSION", sessions["cc2"]["id"])
    signals.report_progress(project, "working", "step 1")
    signals.notify_blocked(project, "tests need a database")
    out = signals.ask_human(project, "may I drop the staging table?")
    ctx = signals.request_context(project, "the plan")
    assert "cocoplus handoff" in ctx["context"]
    kinds = [
        (json.loads(x)["kind"], json.loads(x).get("value")) for x in Path(project.signals).read_text().splitlines()
    ]
    assert kinds == [
        ("report_progress", "working"),
        ("notify_blocked", None),
        ("attention", "awaiting_decision"),
        ("ask_human", None),
        ("request_context", None),
    ]
    rec = registry.resolve(project, "cc2")
    assert rec["attention"] == "awaiting_decision" and rec["last_signal"]["kind"] == "request_context"
    ledger = [json.loads(x) for x in Path(project.ledger("master-agent")).read_text().splitlines()]
    assert (
        ledger[-1]["role"] == "worker"
        and ledger[-1]["text"] == "may I drop the staging table?"
        and ledger[-1]["session_alias"] == "cc2"
    )
    assert out["message"]["id"] == ledger[-1]["id"]
    monkeypatch.delenv("COCOPLUS_SESSION")
    with pytest.raises(UsageError, match="which session"):
        signals.notify_blocked(project, "x")
    with pytest.raises(UsageError, match="progress status"):
        signals.report_progress(project, "sleeping", session="cc1")


# -- workflows -------------------------------------------------------------------------------------------------


def test_workflow_enables_and_closes_its_own_supervision(project: Layout) -> None:
    out = workflow.start(project, "run-1")
    assert out["supervision"] == "enabled" and out["autonomous"]["enabled_by"] == "workflow"
    end = workflow.end(project, "run-1")
    assert end["closed_supervision"] is True and end["autonomous"]["enabled"] is False


def test_workflow_reuses_a_user_supervision_and_never_closes_it(project: Layout) -> None:
    autonomy.enable(project, task_hint="mine")
    out = workflow.start(project, "run-2")
    assert out["supervision"] == "reused"
    end = workflow.end(project, "run-2")
    assert end["closed_supervision"] is False and end["autonomous"]["enabled"] is True
    assert end["autonomous"]["task_hint"] == "mine"


def test_workflow_without_auto_supervise_leaves_it_off(project: Layout, cli) -> None:
    code, out, err = cli("workflow", "start", "run-3", "--no-auto-supervise", "--json", cwd=project.project)
    assert code == 0 and json.loads(out)["supervision"] == "none"
    assert autonomy.status(project)["autonomous"] is None
    code, out, err = cli("workflow", "end", "nope", cwd=project.project)
    assert code == 1 and "no workflow run" in err


def test_convergence_closes_a_workflow_supervision_only_if_it_enabled_it(project: Layout, sessions: dict) -> None:
    workflow.start(project, "run-4")
    sup = watcher.Supervisor(project)
    sup.converge({"alias": "cc1"})
    assert autonomy.status(project)["autonomous"]["enabled"] is False


# -- restore after a restart ------------------------------------------------------------------------------------


def _held_by_old_supervisor(project: Layout, snapshot_age_s: float) -> None:
    from cocoplus.core import clock

    autonomy.enable(project, task_hint="restore me")
    at = clock.iso(clock.parse_iso(clock.iso()) - snapshot_age_s)  # type: ignore[operator]
    autonomy.update(project, lambda d: d["autonomous"].update(holder_pid=999999, snapshot_at=at))


def test_restore_inside_the_ttl_with_a_live_worker(project: Layout, sessions: dict) -> None:
    _held_by_old_supervisor(project, 60)
    sup = watcher.Supervisor(project, environ={"JARVIS_SUPERVISION_RESTORE_TTL_S": "900"})
    assert sup.restore() == "restored"
    assert autonomy.status(project)["autonomous"]["enabled"] is True


def test_restore_outside_the_ttl_closes_with_the_reason(project: Layout, sessions: dict) -> None:
    _held_by_old_supervisor(project, 1200)
    sup = watcher.Supervisor(project, environ={"JARVIS_SUPERVISION_RESTORE_TTL_S": "900"})
    assert sup.restore() == "closed: snapshot too old"
    auto = autonomy.status(project)["autonomous"]
    assert auto["enabled"] is False and "TTL 900s" in auto["finish_reason"]


def test_restore_without_a_recoverable_worker_closes(project: Layout, sessions: dict) -> None:
    _held_by_old_supervisor(project, 10)
    for rec in sessions.values():
        registry.update(project, rec["id"], lambda r: r.update({"state": "exited"}))
    sup = watcher.Supervisor(project, environ={"JARVIS_SUPERVISION_RESTORE_TTL_S": "900"})
    assert sup.restore() == "closed: no recoverable worker"
    assert "no supervised worker is recoverable" in autonomy.status(project)["autonomous"]["finish_reason"]


def test_a_fresh_enable_is_adopted_not_restored(project: Layout) -> None:
    autonomy.enable(project, task_hint="new")
    assert watcher.Supervisor(project).restore() == "adopted"
    assert autonomy.status(project)["autonomous"]["enabled"] is True


def test_the_watcher_reads_the_seed_variables_through_config(project: Layout) -> None:
    from cocoplus.core.errors import ConfigInvalid

    sup = watcher.Supervisor(project, environ={})
    assert (sup.restore_ttl, sup.stall_interval, sup.stall_threshold, sup.stall_cooldown, sup.stall_startup_delay) == (
        900.0,
        90.0,
        900.0,
        1800.0,
        45.0,
    )
    with open(project.config, "w") as fh:
        fh.write("[supervision]\nstall_threshold_s = 120\nrestore_ttl_s = 60\n")
    sup = watcher.Supervisor(project, environ={"JARVIS_SUPERVISION_STALL_THRESHOLD_S": "5"})
    assert (sup.stall_threshold, sup.restore_ttl) == (5.0, 60.0)
    with pytest.raises(ConfigInvalid, match='^environment JARVIS_SUPERVISION_STALL_COOLDOWN_S: .* got "soon"$'):
        watcher.Supervisor(project, environ={"JARVIS_SUPERVISION_STALL_COOLDOWN_S": "soon"})


def test_sessions_list_shows_exclusion(project: Layout, sessions: dict, cli) -> None:
    scope.exclude(project, "cc3")
    listing = json.loads(cli("sessions", "list", "--json", cwd=project.project).out)["sessions"]
    assert {s["alias"]: s["excluded"] for s in listing} == {"cc1": False, "cc2": False, "cc3": True, "cx1": False}
    assert os.path.exists(project.supervision_state)


def test_the_round_prompt_says_when_the_budgets_run_out(project: Layout, sessions: dict) -> None:
    import time

    from cocoplus.cost import forecast
    from tests.cost.test_forecast import install_history

    autonomy.enable(project, task_hint="ship billing", max_turns=9)
    before = triggers.wake_prompt(project, autonomy.read(project), [], 1)
    assert "Budgets at the current rate" in before
    assert "- cost budget: no forecast (no rate: the spend log has no timed usage yet)" in before
    now = time.time()
    times = install_history(project, now)
    prompt = triggers.wake_prompt(project, autonomy.read(project), [], 2)
    w = forecast.when
    assert f"- cost budget: reserve from {w(times['reserve'], now)} (in 2" in prompt  # 21.5 min from now
    assert f"exhausted at {w(times['exhausted'], now)} (in 3" in prompt  # 36.5 min
    assert f"- iteration cap: 200 tool calls reached at {w(times['cap'], now)} (in 2" in prompt  # 29 min
