"""normal / reserve / exhausted, applied only at stage boundaries."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cocoplus import config
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.cost import enforce, spend
from cocoplus.session import killswitch
from tests.hook.helpers import fixture
from tests.support.hookdriver import run_hook_here
from tests.support.typed import present


def values(layout: Layout, **session: object) -> dict:
    v = config.load_for(layout).hook_values()
    v["session"].update(session)
    return v


def state(layout: Layout) -> str:
    return json.load(open(layout.budget_state))["state"]


def steps(layout: Layout, event: str) -> list[dict]:
    return [json.loads(x) for x in open(layout.steps).read().splitlines() if f'"event":"{event}"' in x]


@pytest.fixture
def limited(project: Layout) -> Layout:
    with open(project.config, "w") as fh:
        fh.write("[session]\nbudget_limit = 1.00\nbudget_reserve_fraction = 0.10\n")
    return project


def test_thresholds_apply_at_boundaries_only(limited: Layout) -> None:
    v = values(limited)
    spend.add_cost(limited, 0.89)
    enforce.stage_start(limited, "build", v)
    enforce.stage_end(limited, "build", v)
    assert state(limited) == "normal"

    spend.add_cost(limited, 0.01)  # 0.90: reserve, but not before the next boundary
    r = enforce.boundary(limited, v, source="status", enforce=False)
    assert state(limited) == "normal" and r["spent"] == pytest.approx(0.90)
    assert enforce.target_state(r["spent"], 1.0, 0.1) == "reserve"
    with pytest.raises(CocoplusError, match="reserve"):  # the boundary applies it (and refuses the new stage)
        enforce.stage_start(limited, "test", v)
    assert state(limited) == "reserve"
    assert not killswitch.stop_present(limited)
    spend.add_cost(limited, 0.10)  # 1.00: exhausted at the next boundary, not before
    enforce.boundary(limited, v, source="status", enforce=False)
    assert state(limited) == "reserve" and not killswitch.stop_present(limited)
    hook = run_hook_here(limited, "Stop", fixture("claude-stop.json"))
    assert hook.code == 0 and state(limited) == "exhausted" and killswitch.stop_present(limited)
    assert json.load(open(limited.status))["state"] == "exited"
    assert [(c["from"], c["to"]) for c in steps(limited, "budget_state_changed")] == [
        ("normal", "reserve"),
        ("reserve", "exhausted"),
    ]


def test_reserve_refuses_a_new_stage_and_tells_the_agent_once(limited: Layout) -> None:
    v = values(limited)
    spend.add_cost(limited, 0.95)
    with pytest.raises(CocoplusError) as ei:
        enforce.stage_start(limited, "deploy", v)
    assert "reserve" in str(ei.value) and "wrap-up" in str(ei.value)
    assert state(limited) == "reserve"
    assert len(steps(limited, "budget_state_changed")) == 1
    assert steps(limited, "stage_refused")[0]["stage"] == "deploy"
    # The next prompt is told that only wrap-up work remains, once.
    r = run_hook_here(limited, "UserPromptSubmit", fixture("claude-userpromptsubmit.json"))
    assert "only wrap-up work remains" in present(r.json)["hookSpecificOutput"]["additionalContext"]
    again = run_hook_here(limited, "UserPromptSubmit", fixture("claude-userpromptsubmit.json"))
    assert again.out == ""
    # A wrap-up stage may still start.
    enforce.stage_start(limited, "handoff", v, wrap_up=True)
    enforce.stage_end(limited, "handoff", v)


def test_exhausted_stops_the_agent_at_the_boundary_with_exited(limited: Layout) -> None:
    v = values(limited)
    enforce.stage_start(limited, "build", v)
    spend.add_cost(limited, 1.00)
    # A stage in progress is never interrupted: nothing happens until it ends.
    assert not killswitch.stop_present(limited)
    out = enforce.stage_end(limited, "build", v)
    assert out["budget"]["state"] == "exhausted" and out["budget"]["stopped_now"]
    stop = json.load(open(limited.agent_stop))
    assert stop["operator"] == "cocoplus" and "$1.00 of the $1.00 limit" in stop["reason"]
    assert json.load(open(limited.status))["state"] == "exited"
    changes = steps(limited, "budget_state_changed")
    assert [(c["from"], c["to"]) for c in changes] == [("normal", "exhausted")]
    assert "- Cost: $1.00 of $1.00 (exhausted)" in open(limited.progress).read()


def test_exhausted_after_an_execution_error_is_failed(limited: Layout) -> None:
    v = values(limited)
    enforce.stage_start(limited, "build", v)
    spend.add_cost(limited, 1.50)
    enforce.stage_end(limited, "build", v, outcome="error")
    assert json.load(open(limited.status))["state"] == "failed"


def test_no_limit_measures_but_stays_normal(project: Layout) -> None:
    v = values(project)
    spend.add_cost(project, 500.0)
    enforce.stage_start(project, "s", v)
    enforce.stage_end(project, "s", v)
    doc = json.load(open(project.budget_state))
    assert doc["state"] == "normal" and doc["spent"] == 500.0
    assert not killswitch.stop_present(project)


def test_turn_end_is_a_boundary(limited: Layout) -> None:
    spend.add_cost(limited, 1.2)
    r = run_hook_here(limited, "Stop", fixture("claude-stop.json"))
    assert r.code == 0
    assert state(limited) == "exhausted" and killswitch.stop_present(limited)
    assert "cost budget exhausted" in present(r.json)["systemMessage"]


def test_turn_end_is_not_a_boundary_when_configured_off(limited: Layout) -> None:
    with open(limited.config, "a") as fh:
        fh.write("stop_is_boundary = false\n")
    spend.add_cost(limited, 1.2)
    run_hook_here(limited, "Stop", fixture("claude-stop.json"))
    assert state(limited) == "normal" and not killswitch.stop_present(limited)
    assert json.load(open(limited.budget_state))["spent"] == pytest.approx(1.2)  # still measured


def test_turn_end_inside_a_stage_does_not_interrupt_it(limited: Layout) -> None:
    enforce.stage_start(limited, "long", values(limited))
    spend.add_cost(limited, 1.2)
    run_hook_here(limited, "Stop", fixture("claude-stop.json"))
    assert state(limited) == "normal" and not killswitch.stop_present(limited)


def test_damaged_budget_state_fails_closed(limited: Layout) -> None:
    with open(limited.budget_state, "w") as fh:
        fh.write('{"state": "plenty"}')
    with pytest.raises(CocoplusError):
        enforce.stage_start(limited, "x", values(limited))
    assert killswitch.stop_present(limited)
    assert any(n.startswith("budget-state.json.corrupt-") for n in os.listdir(limited.session_dir))


def test_budget_cli(limited: Layout, cli) -> None:
    code, out, err = cli("budget", "add-cost", "0.5", "--category", "landing", "--note", "CI run", cwd=limited.project)
    assert code == 0, err
    code, out, err = cli("budget", "status", "--json", cwd=limited.project)
    rep = json.loads(out)
    assert rep["spent"] == 0.5 and rep["limit"] == 1.0 and rep["remaining"] == 0.5
    assert rep["reserve_threshold"] == 0.9 and rep["state"] == "normal"
    assert rep["by_category"]["landing"] == 0.5
    code, out, err = cli("budget", "add-cost", "-3", cwd=limited.project)
    assert code != 0 and "Traceback" not in err
    code, out, err = cli("stage", "start", "one", cwd=limited.project)
    assert code == 0, err
    code, out, err = cli("stage", "start", "two", cwd=limited.project)
    assert code == 1 and "in progress" in err
    code, out, err = cli("stage", "end", "one", "--outcome", "maybe", cwd=limited.project)
    assert code != 0


def test_budget_status_reports_unpriced_models(project: Layout, tmp_path: Path, cli) -> None:
    from cocoplus.session import registry
    from tests.cost.test_spend import assistant_line

    t = tmp_path / "t.jsonl"
    t.write_text(assistant_line("mystery-model-1", "m1", "r1", 10, 10) + "\n")
    registry.ensure(project, "claude", "u1", event="SessionStart", info={"transcript_path": str(t)})
    code, out, err = cli("budget", "status", cwd=project.project)
    assert code == 0
    assert "mystery-model-1" in err and "[pricing" in err


def test_a_turn_end_without_a_price_table_defers_usage_and_loses_none(project: Layout, tmp_path: Path, cli) -> None:
    """No limit: new usage is left unread (not priced at zero, not dropped) until a command prices it."""
    from tests.cost.test_spend import assistant_line

    t = tmp_path / "t.jsonl"
    t.write_text(assistant_line("claude-haiku-4-5", "m1", "r1", 1000, 1000) + "\n")
    os.unlink(project.price_table)
    r = run_hook_here(project, "Stop", {**fixture("claude-stop.json"), "transcript_path": str(t)})
    assert (r.code, r.out) == (0, "")
    assert not os.path.exists(project.spend_log) and not killswitch.stop_present(project)
    assert "left for the next cocoplus command" in open(project.hook_log).read()
    code, out, err = cli("budget", "status", "--json", cwd=project.project)
    assert code == 0, err
    assert json.loads(out)["spent"] == pytest.approx((1000 * 1.0 + 1000 * 5.0) / 1e6)  # claude-haiku-4-5: $1 in, $5 out
    assert os.path.exists(project.price_table)


def test_a_turn_end_without_a_price_table_stops_an_agent_under_a_limit(limited: Layout, tmp_path: Path, cli) -> None:
    """With a limit, spend that cannot be priced cannot be checked: the agent stops (fail closed) until it is."""
    from tests.cost.test_spend import assistant_line

    t = tmp_path / "t.jsonl"
    t.write_text(assistant_line("claude-haiku-4-5", "m1", "r1", 1000, 1000) + "\n")
    config.compile_for_hook(limited)
    if os.path.exists(limited.price_table):
        os.unlink(limited.price_table)
    r = run_hook_here(limited, "Stop", {**fixture("claude-stop.json"), "transcript_path": str(t)})
    assert r.code == 0 and "price-table.json is missing" in present(r.json)["systemMessage"]
    assert (
        killswitch.stop_present(limited)
        and "cocoplus budget status" in present(killswitch.read_stop(limited))["reason"]
    )
    assert not os.path.exists(limited.spend_log)
    code, out, err = cli("budget", "status", "--json", cwd=limited.project)
    assert code == 0 and json.loads(out)["spent"] == pytest.approx(0.006)


def test_a_budget_stop_at_a_turn_end_sets_the_sessions_record_too(limited: Layout, tmp_path: Path) -> None:
    """After a budget stop the session's own record says it stopped (exited, with the reason), not `running`."""
    from cocoplus.ops import project as project_ops
    from cocoplus.session import registry
    from tests.cost.test_spend import assistant_line

    start = fixture("claude-sessionstart-startup.json")
    t = tmp_path / "t.jsonl"
    t.write_text(assistant_line("claude-haiku-4-5", "m1", "r1", 1000, 300_000) + "\n")  # $1.50 at $5/MTok out
    config.compile_for_hook(limited)
    project_ops.prices_for_hooks(limited)
    assert run_hook_here(limited, "SessionStart", {**start, "transcript_path": str(t)}).code == 0
    assert registry.resolve(limited, "cc1")["state"] == "running"
    r = run_hook_here(
        limited, "Stop", {**fixture("claude-stop.json"), "session_id": start["session_id"], "transcript_path": str(t)}
    )
    assert r.code == 0 and "cost budget exhausted" in present(r.json)["systemMessage"]
    assert killswitch.stop_present(limited)
    rec = registry.resolve(limited, "cc1")
    assert rec["state"] == "exited" and rec["exit_reason"].startswith("cost budget exhausted: spent $1.50")
