"""`cocoplus replay RUN --policy FILE` (issue 34, "Replay a policy"): a run recorded by the hook itself, decided again
by the real CLI (a child process) with the functions the hooks decide with live.

The run (tests/report/recorded.py): 40 tool calls of one Claude Code session, calls 22 to 29 the same failing
`pytest -x`, two turn ends whose usage is priced into the spend log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from cocoplus.session import registry
from tests.conftest import assert_no_traceback, run_cli_subprocess
from tests.report import recorded

UNGUARDED = "max_iterations = 1000\nloop_guard_repeats = 0\niteration_warn_at = 0\n"


def policy(tmp_path: Path, text: str) -> str:
    path = tmp_path / "policy.toml"
    path.write_text(text)
    return str(path)


def replay(layout: Layout, path: str) -> dict[str, Any]:
    r = run_cli_subprocess("replay", "cc1", "--policy", path, "--json", cwd=layout.project)
    assert r.code == 0, r
    out: dict[str, Any] = json.loads(r.out)
    return out


def spend(layout: Layout) -> list[dict[str, Any]]:
    return [json.loads(x) for x in Path(layout.spend_log).read_text().splitlines()]


def test_a_cap_of_20_stops_at_call_20_with_what_it_cost_to_there(project: Layout, tmp_path: Path) -> None:
    recorded.record(project, UNGUARDED)
    rep = replay(project, policy(tmp_path, "[session]\nmax_iterations = 20\n"))
    stop = rep["stopped_at"]
    assert (stop["call"], stop["why"], stop["cap"], stop["by"]) == (20, "iteration_cap", 20, "max_iterations")
    assert [(d["call"], d["decision"]) for d in rep["decisions"]] == [(20, "stop")]
    turns = spend(project)  # the first turn end (after call 10) priced one message, the second (after 35) two
    assert len(turns) == 3 and turns[0]["usd"] > 0
    # Up to call 20, the first turn's cost alone.
    assert rep["cost_usd_to_stop"] == round(turns[0]["usd"], 6)
    assert rep["cost_usd_recorded"] == round(sum(t["usd"] for t in turns), 6) > rep["cost_usd_to_stop"]
    assert rep["cost_estimated"] is False  # call 20's time is its transcript's
    assert (stop["tool"], stop["subject"], stop["tool_use_id"]) == ("Bash", "echo step 20", "toolu_rec020")
    assert rep["first_difference"] == {"index": 0, "recorded": None, "replayed": rep["decisions"][0]}


def test_a_loop_guard_of_3_asks_at_call_24_and_stops_at_27_naming_the_call(project: Layout, tmp_path: Path) -> None:
    recorded.record(project, UNGUARDED)
    rep = replay(project, policy(tmp_path, "[session]\nloop_guard_repeats = 3\n"))
    fp = registry.fingerprint({"tool_name": "Bash", "tool_input": recorded.PYTEST})
    ask, stop = rep["decisions"]
    assert (ask["call"], ask["decision"], ask["why"], ask["repeats"], ask["first_call"]) == (
        24, "checkpoint", "repeated tool call", 3, 22,
    )  # fmt: skip
    assert (stop["call"], stop["decision"], stop["why"], stop["repeats"], stop["first_call"]) == (
        27, "stop", "loop_guard", 6, 22,
    )  # fmt: skip
    assert ask["fingerprint"] == stop["fingerprint"] == fp[:24]
    assert (stop["tool"], stop["subject"], stop["tool_use_id"]) == ("Bash", "pytest -x", "toolu_rec027")
    assert rep["stopped_at"]["call"] == 27 and rep["calls"] == 27
    text = run_cli_subprocess("replay", "cc1", "--policy", str(tmp_path / "policy.toml"), cwd=project.project)
    assert text.code == 0, text
    assert (
        "call 24 (cc1): checkpoint by repeated tool call, the same call `Bash pytest -x` from call 22 (3 in a row)"
        in (text.out)
    )
    assert "call 27 (cc1): stop by loop_guard, the same call `Bash pytest -x` from call 22 (6 in a row)" in text.out


def test_twice_on_the_same_record_and_policy_the_json_is_byte_identical(project: Layout, tmp_path: Path) -> None:
    recorded.record(project, UNGUARDED)
    path = policy(tmp_path, "[session]\nmax_iterations = 30\niteration_warn_at = 12\nloop_guard_repeats = 2\n")
    runs = [run_cli_subprocess("replay", "cc1", "--policy", path, "--json", cwd=project.project) for _ in range(2)]
    assert runs[0].code == 0, runs[0]
    assert runs[0].out == runs[1].out
    rep = json.loads(runs[0].out)
    assert [(d["call"], d["decision"]) for d in rep["decisions"]] == [(12, "checkpoint"), (23, "checkpoint"),
                                                                       (25, "stop")]  # fmt: skip


@pytest.mark.parametrize(
    "live",
    [
        "max_iterations = 20\nloop_guard_repeats = 0\niteration_warn_at = 15\n",
        "max_iterations = 200\nloop_guard_repeats = 3\niteration_warn_at = 15\n",
        "max_iterations = 26\nloop_guard_repeats = 2\niteration_warn_at = 0\n",
        "max_iterations = 200\nloop_guard_repeats = 4\niteration_warn_at = 0\n",
    ],
)
def test_under_the_live_policy_replay_decides_as_the_hooks_did(project: Layout, tmp_path: Path, live: str) -> None:
    """Parity: the run recorded with the hooks deciding live under `live`; replayed under the same policy, every
    decision the hooks logged is the replay's, and the replay stops at the last call the hooks let run."""
    answers = recorded.record(project, live)
    rep = replay(project, policy(tmp_path, "[session]\n" + live))
    assert rep["first_difference"] is None
    ran = Path(project.session_calls("cs_" + recorded.SID)).stat().st_size // registry.CALL_WIDTH
    assert rep["stopped_at"] is not None and rep["stopped_at"]["call"] == ran < 40
    denied = [n for n, a in enumerate(answers, 1) if (a.get("hookSpecificOutput") or {}).get("permissionDecision")
              == "deny"]  # fmt: skip
    assert denied and denied[0] == ran + 1  # the hooks refused the call after the replay's stop, and every one after


def test_a_policy_file_that_cannot_be_used_is_one_line_naming_it(project: Layout, tmp_path: Path) -> None:
    recorded.record(project, UNGUARDED, calls=3)
    for text, words in (
        ("[session\n", "not valid TOML"),
        ("[session]\nmax_iterations = 0\n", "[session] max_iterations must be a whole number from 1"),
        ("[session]\nloop_guard_repeats = 'x'\n", "[session] loop_guard_repeats must be a whole number"),
        ("[session]\nbudget_reserve_fraction = 1.5\n", "[session] budget_reserve_fraction must be a number from 0"),
    ):
        path = policy(tmp_path, text)
        r = run_cli_subprocess("replay", "cc1", "--policy", path, cwd=project.project)
        assert r.code == 1 and r.out == "", r
        assert r.err.startswith(f"cocoplus: error: {path}: ") and words in r.err, r.err
        assert_no_traceback(r.err)
    rep = replay(project, policy(tmp_path, "[session]\nbudget_limit = 5\n[rules]\nallow = ['x']\n"))
    assert rep["not_replayed"] == ["[rules] allow (not replayed)"]
    assert rep["stopped_at"] is None and rep["calls"] == 3


def test_a_secret_in_the_call_it_stops_at_is_redacted_from_the_report(project: Layout, tmp_path: Path) -> None:
    recorded.record(project, UNGUARDED, calls=6)
    path = policy(tmp_path, "[session]\nmax_iterations = 5\n")
    js = run_cli_subprocess("replay", "cc1", "--policy", path, "--json", cwd=project.project)
    text = run_cli_subprocess("replay", "cc1", "--policy", path, cwd=project.project)
    assert js.code == text.code == 0, (js, text)
    stop = json.loads(js.out)["stopped_at"]
    assert (stop["call"], stop["subject"]) == (5, "OPENAI_API_KEY=[redacted] python tools/fetch.py")
    assert recorded.SECRET not in js.out and recorded.SECRET not in text.out


def test_a_cost_budget_asks_for_wrap_up_at_one_turn_end_and_stops_the_run_at_the_next(
    project: Layout, tmp_path: Path
) -> None:
    """At each boundary the spend log records (the turn ends after calls 10 and 35), the spend up to it decided by
    the budget's own `target_state`: the reserve after call 10, exhausted after call 35 (the kill switch: call 36
    is refused)."""
    recorded.record(project, UNGUARDED)
    turns = spend(project)
    first = turns[0]["usd"]
    limit = round(first * 1.2, 6)  # the first turn's spend is past the reserve (half of it), not past the limit
    budget = f"[session]\n{UNGUARDED}budget_limit = {limit}\nbudget_reserve_fraction = 0.5\n"
    rep = replay(project, policy(tmp_path, budget))
    reserve, stop = rep["decisions"]
    assert (reserve["decision"], reserve["call"], reserve["why"]) == ("reserve", 10, "cost budget reserve")
    assert reserve["spent_usd"] == round(first, 6) and reserve["boundary_at"] == turns[0]["ts"]
    s = rep["stopped_at"]
    assert (s["call"], s["refused_call"], s["why"], s["limit_usd"]) == (35, 36, "cost_budget", limit)
    assert s["spent_usd"] == round(sum(t["usd"] for t in turns), 6) and stop["decision"] == "stop"
    assert rep["policy"]["budget_limit"] == limit and rep["not_replayed"] == []
    # No limit (0, the default): the budget decides nothing.
    assert replay(project, policy(tmp_path, f"[session]\n{UNGUARDED}budget_limit = 0\n"))["stopped_at"] is None
    # Twice the whole spend: nothing either; the reserve alone at a fraction that reaches it.
    total = sum(t["usd"] for t in turns)
    twice = f"[session]\n{UNGUARDED}budget_limit = {total * 2}\nbudget_reserve_fraction = 0.6\n"
    rep = replay(project, policy(tmp_path, twice))
    assert rep["stopped_at"] is None and [d["decision"] for d in rep["decisions"]] == ["reserve"]
