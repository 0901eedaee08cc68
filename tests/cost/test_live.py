"""The live estimate of a running turn's spend (`cost.live`): what the next measure will add, read without writing."""

from __future__ import annotations

import json
import os
from pathlib import Path

from cocoplus.core.paths import Layout
from cocoplus.cost import live, spend
from cocoplus.session import registry
from tests.cost.test_spend import assistant_line, expected_usd, register
from tests.hook.helpers import FIXTURES


def test_a_codex_turn_is_estimated_as_the_next_measure_prices_it_and_never_twice(
    project: Layout, tmp_path: Path
) -> None:
    t = tmp_path / "rollout.jsonl"
    t.write_bytes((FIXTURES / "codex-rollout-token-count.jsonl").read_bytes())
    rec = register(project, "cx", "codex", t)
    est = live.Estimate(project)
    records = registry.list_sessions(project)[0]
    first = expected_usd("gpt-5.5", 37512 - 30208, 702, 30208)
    assert abs(est.update(records)[rec["id"]]["usd"] - first) < 1e-9  # nothing measured yet: the whole turn
    spend.measure(project, {})
    assert est.update(records) == {}  # the measure has it: nothing left to estimate

    # The next turn: cumulative totals grow; the estimate is the delta from where the measure stopped.
    last = json.loads((FIXTURES / "codex-rollout-token-count.jsonl").read_text().splitlines()[-1])
    last["payload"]["info"]["total_token_usage"].update(
        input_tokens=40000, cached_input_tokens=31000, output_tokens=802
    )
    with t.open("a") as fh:
        fh.write(json.dumps(last) + "\n")
    cursors = Path(project.cost_cursors).read_bytes()
    delta = expected_usd("gpt-5.5", 40000 - 31000, 802, 31000) - first
    assert abs(est.update(records)[rec["id"]]["usd"] - delta) < 1e-9
    assert abs(est.update(records)[rec["id"]]["usd"] - delta) < 1e-9  # read again: the same, not twice
    assert Path(project.cost_cursors).read_bytes() == cursors  # the estimate moved no cursor
    before = spend.totals(project)["spent"]
    spend.measure(project, {})
    assert abs(spend.totals(project)["spent"] - before - delta) < 1e-9
    assert est.update(records) == {}


def test_an_unknown_model_is_counted_as_unpriced_and_an_override_prices_it(project: Layout, tmp_path: Path) -> None:
    t = tmp_path / "t.jsonl"
    t.write_text(assistant_line("acme-local-9000", "m1", "r1", 2_000_000, 1_000_000) + "\n")
    rec = register(project, "s6", "claude", t)
    records = registry.list_sessions(project)[0]
    assert live.Estimate(project, overrides={}).update(records)[rec["id"]] == {"usd": 0.0, "unpriced": 1}
    priced = live.Estimate(project, overrides={"acme-local-9000": {"input": 0.5, "output": 1.5}}).update(records)
    assert abs(priced[rec["id"]]["usd"] - 2.5) < 1e-9
    assert not os.path.exists(project.spend_log) and not os.path.exists(project.cost_cursors)
