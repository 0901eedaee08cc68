"""What a round did is recorded and shown: rounds.jsonl, `chat log`, `supervision status` (the page: tests/server)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from cocoplus.chat import worker
from cocoplus.core import jsonl
from cocoplus.core.paths import Layout
from cocoplus.ops import authority
from cocoplus.ops import dispatch as dispatch_ops
from cocoplus.ops import session as session_ops
from cocoplus.supervision import autonomy, rounds
from tests.support.controller import write_controller
from tests.support.trusting import trust_project


def failing_controller(layout: Layout) -> None:
    argv = [sys.executable, "-c", "import sys; sys.stdin.read(); sys.stderr.write('model quota exceeded'); sys.exit(2)"]
    quoted = ", ".join(json.dumps(a) for a in argv)
    Path(layout.config).write_text(
        f'[chat]\ncontroller = "brain"\n[accounts.brain]\nkind = "command"\ncommand = [{quoted}]\n'
    )
    trust_project(layout)


def run_round(layout: Layout, act: Any, monkeypatch: pytest.MonkeyPatch, alias: str = "cc1") -> int:
    """One round woken by `alias` pending, in which `act` runs as the brain would (COCOPLUS_ROUND set), then ends."""
    started = rounds.start_round(
        layout, [{"session": "-", "alias": alias, "kind": "attention", "value": "pending"}], start_worker=False
    )
    assert started["started"], started
    n = int(started["round"])
    with monkeypatch.context() as m:
        m.setenv("COCOPLUS_ROUND", str(n))
        act()
    worker.serve(layout, once=True)
    assert rounds.poll(layout, start_worker=False) == {"closed": n}
    return n


def test_a_rounds_actions_and_outcome_are_in_rounds_jsonl_chat_log_and_status(
    project: Layout, sessions: dict, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_controller(project)
    autonomy.enable(project, task_hint="land it")

    def act() -> None:
        dispatch_ops.dispatch(project, "cc1", "DISPATCH-1: write the tests", by="main brain")
        session_ops.stop_session(project, "cc2", "wait for review", operator="main brain")
        dispatch_ops.dispatch(
            project, "cc3", "DISPATCH-2: and the docs", principal=authority.BRAIN
        )  # as the MCP door does

    n = run_round(project, act, monkeypatch)
    records = jsonl.read_jsonl(project.rounds).records
    acts = [r for r in records if r.get("event") == "action"]
    assert [(a["round"], a["action"], a["alias"], a["by"]) for a in acts[:2]] == [
        (n, "dispatch", "cc1", "main brain"),
        (n, "stop_session", "cc2", "main brain"),
    ]
    assert (acts[2]["alias"], acts[2]["principal"], acts[2]["by"]) == (
        "cc3",
        "brain",
        authority.operator_name(),
    )  # its user's name
    (done,) = [r for r in records if r.get("event") == "round_finished"]
    assert (done["number"], done["outcome"], done["actions"]) == (n, "succeeded", 3)

    code, out, err = cli("chat", "log", cwd=project.project)
    assert code == 0, err
    route = acts[0]["result"]["route"]
    assert (
        f"supervision round {n} finished: 3 action(s): dispatch cc1 (route: {route}); stop_session cc2; dispatch cc3"
        in out
    )
    assert f"] action (round {n}, by main brain): stop_session cc2" in out  # the name it was given
    assert f"] action (round {n}, by the main brain): dispatch cc3" in out  # the brain, not its user's name

    code, out, err = cli("supervision", "status", cwd=project.project)
    assert code == 0, err
    assert f"last round: supervision round {n} finished: 3 action(s)" in out
    assert "stop_session cc2 (by main brain, round 1); undo: `cocoplus session resume --session cc2 --yes`" in out
    # An action the brain took says so, not the name of the user it acts for.
    assert f" (by the main brain, round {n})" in out and f" (by {authority.operator_name()}," not in out
    assert "watcher: not running; `cocoplus supervision watcher run` starts it" in out
    status = json.loads(cli("supervision", "status", "--json", cwd=project.project).out)
    assert status["last_round"]["outcome"] == "succeeded" and [
        a["action"] for a in status["last_round"]["actions"]
    ] == ["dispatch", "stop_session", "dispatch"]
    assert status["supervisor"]["running"] is False


def test_a_round_that_takes_no_action_says_so_and_a_failed_one_says_why(
    project: Layout, sessions: dict, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_controller(project)
    autonomy.enable(project, task_hint="land it")
    first = run_round(project, lambda: None, monkeypatch)
    failing_controller(project)
    second = run_round(project, lambda: None, monkeypatch)
    texts = [
        m["text"]
        for m in json.loads(cli("chat", "log", "--json", cwd=project.project).out)["messages"]
        if m["role"] == "system"
    ]
    assert f"supervision round {first} finished: no action taken" in texts
    (failed,) = [t for t in texts if t.startswith(f"supervision round {second} failed:")]
    assert "model quota exceeded" in failed
    code, out, err = cli("supervision", "status", "--json", cwd=project.project)
    last = json.loads(out)["last_round"]
    assert (last["number"], last["outcome"], last["actions"]) == (second, "failed", [])
    assert "model quota exceeded" in last["error"]
    code, out, err = cli("supervision", "status", cwd=project.project)
    assert f"last round: supervision round {second} failed:" in out and "model quota exceeded" in out
