"""`cocoplus top`'s supervision line and round line tell one story, through a real watcher, a real chat worker
and a brain that answers when the test lets it (driven through Textual's pilot): a round is `running` only
while something runs it, and one left behind with no watcher says it was interrupted."""

from __future__ import annotations

from typing import Any

from cocoplus.core.paths import Layout
from cocoplus.session import registry
from cocoplus.supervision import autonomy
from cocoplus.tui import app as top
from tests.supervision.conftest import Brain, Watcher, rounds_started, stop_chat_worker
from tests.tui.test_top import drive, text_of, until


def lines(app: top.TopApp) -> tuple[str, str]:
    """(the supervision line, the round line)."""
    return text_of(app, "#status").splitlines()[1], text_of(app, "#round")


def agree(app: top.TopApp) -> bool:
    """The two lines agree: with no watcher, no round is shown as simply running."""
    sup, rnd = lines(app)
    return "no watcher" not in sup or " running:" not in rnd


def test_the_supervision_and_round_lines_agree_as_the_watcher_stops_and_the_round_is_left(project: Layout) -> None:
    brain = Brain(project, gated=True, quiet=0.2)
    rec, _ = registry.ensure(project, "claude", "s-one", event="SessionStart")
    autonomy.enable(project, task_hint="ship it")
    watcher = Watcher(project)

    async def body(app: top.TopApp, pilot: Any) -> None:
        registry.append_signal(project, rec, "attention", "pending", event="Stop")
        await until(pilot, lambda: rounds_started(project), timeout=30)
        # The watcher runs the round (the brain is still answering).
        await until(pilot, lambda: lines(app)[1] == "round 1 running: cc1 attention" and "watcher pid" in lines(app)[0])
        assert lines(app)[0].startswith("supervision on · turns 1/")

        watcher.stop()  # the brain's turn goes on; nothing will close the round
        await until(pilot, lambda: "no watcher (rounds wait)" in lines(app)[0])
        await until(pilot, lambda: lines(app)[1] == "round 1 running (no watcher to close it): cc1 attention")
        assert agree(app)

        brain.open()  # the turn ends; with no watcher, the round is left unclosed
        await until(pilot, lambda: lines(app)[1] == "round 1 interrupted (no watcher): cc1 attention", timeout=60)
        assert agree(app)

        autonomy.finish(project, "done for today", reason="turned off by the operator")
        await until(
            pilot, lambda: lines(app)[0].startswith("supervision off") and lines(app)[0].endswith("· no watcher")
        )
        assert lines(app)[1] == "round 1 interrupted (no watcher): cc1 attention" and agree(app)

    try:
        drive(project, body, watch=True)
    finally:
        brain.open()
        watcher.stop()
        stop_chat_worker(project)
