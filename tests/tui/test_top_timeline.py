"""`cocoplus top`'s timeline pane (issue 34, "See it"; issue 35, "Seen everywhere"), driven through Textual's pilot:
key e shows the selected session's worker's newest events (read by `ops.timeline`, as `cocoplus timeline WORKER`
prints them) under a title naming the worker's sandbox profile and its runtimes; a session of no worker shows its
own; e again hides it.  The project is tests/server/timeline_project.py's (the run the hook recorded, worker w1
under `workspace` that failed over from Claude Code to Codex), its session cc1 marked as w1's, as a launched
worker's session is."""

from __future__ import annotations

from typing import Any

from textual.widgets import DataTable

from cocoplus.core.paths import Layout
from cocoplus.ops import timeline as timeline_ops
from cocoplus.session import registry
from cocoplus.tui import app as top
from cocoplus.tui import render
from tests.report import recorded
from tests.server import timeline_project
from tests.tui.test_top import drive, text_of, until


def test_key_e_shows_the_selected_worker_s_timeline_with_its_sandbox(project: Layout) -> None:
    timeline_project.build(project)
    registry.update(project, timeline_project.CS, lambda r: r.__setitem__("worker", "w1"))
    other, _ = registry.ensure(project, "codex", "x-one", event="SessionStart")
    newest = timeline_ops.timeline(project, "w1", limit=top.TIMELINE_LINES - 1)["events"]
    assert len(newest) == top.TIMELINE_LINES - 1

    async def body(app: top.TopApp, pilot: Any) -> None:
        table = app.query_one("#sessions", DataTable)
        table.move_cursor(row=0)
        await pilot.pause()
        assert app.selected_id() == timeline_project.CS
        pane = app.query_one("#timeline")
        assert pane.display is False  # hidden until asked for: nothing read
        await pilot.press("e")
        title = "timeline of worker w1 (cc1) · sandbox workspace · claude → codex (usage limit)"
        await until(pilot, lambda: text_of(app, "#timeline").startswith(title))
        assert pane.display is True
        shown = text_of(app, "#timeline").splitlines()
        assert len(shown) == top.TIMELINE_LINES
        # The newest events of w1, oldest first, each as `cocoplus timeline w1` says it.
        for line, e in zip(shown[1:], newest, strict=True):
            assert e["kind"] in line and " ".join(e["text"].split())[:30] in line, (line, e)
        assert any("⇄ failover   [codex] failover: claude -> codex (usage limit)" in ln for ln in shown), shown
        assert any("run ended: exit code 0" in ln for ln in shown), shown
        assert recorded.SECRET not in "\n".join(shown)

        # A session of no worker: its own events.
        table.move_cursor(row=[r.value for r in table.rows].index(other["id"]))
        await until(pilot, lambda: text_of(app, "#timeline").startswith("timeline of cx1 (no worker"))
        await pilot.press("e")
        await until(pilot, lambda: pane.display is False)

    drive(project, body, size=(110, 32))


def test_the_pane_s_lines_are_inert_cut_and_marked() -> None:
    rep = {
        "events": [
            {
                "ts": "2026-01-01T10:00:00.000Z",
                "kind": "tool",
                "runtime": "claude",
                "text": "tool call 1",
                "detail": {},
            },
            {"ts": "2026-01-01T10:00:01.000Z", "kind": "stop", "text": "iteration cap\x1b[31m: cap 20", "detail": {}},
            {"ts": "2026-01-01T10:00:02.000Z", "kind": "tool", "text": "x" * 200, "detail": {"ts_estimated": True}},
        ]
    }
    lines = render.timeline_lines(rep, 60, 2)
    assert lines == [
        (" 10:00:01 ■ stop       iteration cap: cap 20", "stop"),
        ("~10:00:02 · tool       " + "x" * 36 + "…", "tool"),  # 60 columns
    ]
    assert render.timeline_lines({"events": []}, 60, 5) == [("(no events recorded)", "")]
    assert render.timeline_title(None) == "timeline: no session selected"
