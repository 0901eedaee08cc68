"""`budget status`: a compact bar per session."""

from __future__ import annotations

from pathlib import Path

from cocoplus.cli.commands.budget_cmd import bar
from cocoplus.core import clock, jsonl
from cocoplus.core.paths import Layout
from cocoplus.session import registry


def test_bar_shows_a_share_in_eighths_of_a_cell() -> None:
    assert bar(0, 10) == "·" * 20 + "   0%"
    assert bar(5, 10) == "█" * 10 + "·" * 10 + "  50%"
    assert bar(1, 16, width=2) == "▏" + "·" + "   6%"
    assert bar(30, 10) == "█" * 20 + " 300%"  # over the limit: a full bar, and the share says by how much
    assert bar(1, 0) == "·" * 20 + "   0%"


def test_budget_status_draws_each_sessions_share_of_the_limit(project: Layout, cli) -> None:
    Path(project.config).write_text("[session]\nbudget_limit = 4.0\n")
    for rid, usd in (("a1", 2.0), ("b2", 0.5)):
        rec, _ = registry.ensure(project, "claude", rid, event="SessionStart")
        jsonl.append_jsonl(
            project.spend_log,
            {
                "ts": clock.iso(),
                "kind": "usage",
                "session": rec["id"],
                "alias": rec["alias"],
                "usd": usd,
                "model": "m",
                "category": "execution",
            },
            project.lock("spend"),
        )
    code, out, err = cli("budget", "status", cwd=project.project)
    assert code == 0, err
    assert "session      USD     share of the limit" in out
    assert "cc1 (cs_a1)  2.0000  " + "█" * 10 + "·" * 10 + "  50%" in out
    assert "cc2 (cs_b2)  0.5000  " + "██▌" + "·" * 17 + "  12%" in out
