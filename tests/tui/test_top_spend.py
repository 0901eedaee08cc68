"""`cocoplus top` shows spend during a turn: a live estimate (`~`) priced outside the hooks from the session's
transcript, replaced by the priced figure once the turn-end hook has measured it (driven through Textual's pilot)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from cocoplus.core.paths import Layout
from cocoplus.cost import price_table
from cocoplus.session import registry
from cocoplus.tui import app as top
from tests.cost.test_spend import assistant_line, expected_usd
from tests.hook.helpers import fixture, run_hook
from tests.tui.test_top import drive, text_of, until
from tests.tui.test_top_actions import row

MODEL = "claude-sonnet-4-5"


def step(transcript: Path, n: int) -> float:
    """One more model step in the transcript, as Claude Code writes it; what it costs."""
    with transcript.open("a") as fh:
        fh.write(assistant_line(MODEL, f"m{n}", f"r{n}", 100_000, 50_000, session="s-live") + "\n")
    return expected_usd(MODEL, 100_000, 50_000)


def turn_end(layout: Layout, transcript: Path) -> None:
    """The Stop hook, as the runtime runs it: it prices the turn's usage into the spend log."""
    p = fixture("claude-stop.json")
    p.update(cwd=layout.project, session_id="s-live", transcript_path=str(transcript))
    r = run_hook(layout, "Stop", p)
    assert r.code == 0, r


def spend_log(layout: Layout) -> list[dict[str, Any]]:
    if not os.path.exists(layout.spend_log):
        return []
    return [json.loads(x) for x in Path(layout.spend_log).read_text().splitlines()]


def test_spend_during_a_turn_is_a_live_estimate_until_the_turn_end_prices_it(project: Layout, tmp_path: Path) -> None:
    price_table.refresh(project)  # the price table a cocoplus command compiles (a hook never does)
    transcript = tmp_path / "s-live.jsonl"
    transcript.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": "go"}}) + "\n")
    rec, _ = registry.ensure(
        project, "claude", "s-live", event="SessionStart", info={"transcript_path": str(transcript)}
    )
    alias = rec["alias"]
    one = step(transcript, 1)

    async def body(app: top.TopApp, pilot: Any) -> None:
        await until(pilot, lambda: row(app, alias)["spend"] == f"~${one:.2f}")
        assert f"{alias} spend over time: ~${one:.2f} live estimate" in text_of(app, "#spend-label")
        total = one + step(transcript, 2)
        await pilot.press("ctrl+r")  # a transcript is outside .cocoplus: the periodic re-read, now
        await until(pilot, lambda: row(app, alias)["spend"] == f"~${total:.2f}")
        # Priced outside the hooks, in memory: the view wrote no spend and moved no cursor.
        assert spend_log(project) == [] and not os.path.exists(project.cost_cursors)

        turn_end(project, transcript)
        logged = spend_log(project)
        assert len(logged) == 2 and abs(sum(r["usd"] for r in logged) - total) < 1e-9
        await pilot.press("ctrl+r")
        await until(pilot, lambda: row(app, alias)["spend"] == f"${total:.2f}")  # priced: no longer an estimate
        assert "live estimate" not in text_of(app, "#spend-label")

        # The next turn's usage is estimated from where the turn end stopped: nothing is counted twice.
        third = step(transcript, 3)
        await pilot.press("ctrl+r")
        await until(pilot, lambda: row(app, alias)["spend"] == f"~${total + third:.2f}")

    drive(project, body)
