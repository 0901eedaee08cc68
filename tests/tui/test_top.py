"""`cocoplus top` driven headless through Textual's own harness (App.run_test and its pilot)."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from cocoplus.session import registry
from cocoplus.tui import app as top
from tests.tui.conftest import NOW


def drive(layout: Layout, body: Callable[[Any, Any], Awaitable[None]], *, watch: bool = False, size: tuple[int, int] = (80, 24)) -> top.TopApp:
    app = top.TopApp(layout, now=lambda: NOW, watch=watch)

    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await body(app, pilot)

    asyncio.run(main())
    return app


async def until(pilot: Any, cond: Callable[[], Any], timeout: float = 20.0) -> Any:
    """Let the app run until `cond()` holds (the pilot's pause hands control to the app's loop)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        await pilot.pause(0.05)
    raise AssertionError(f"condition not met within {timeout}s")


def text_of(app: top.TopApp, selector: str) -> str:
    return str(app.query_one(selector).render())


def table_rows(app: top.TopApp) -> list[list[str]]:
    table = app.query_one("#sessions")
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def test_main_screen_shows_every_session_supervision_and_the_conversation(busy: Layout) -> None:
    async def body(app: top.TopApp, pilot: Any) -> None:
        rows = table_rows(app)
        assert [r[0] for r in rows] == ["cc1", "cc2", "cx1", "gm1"]
        # alias, state, attention, last event, age, iterations used, left, spend (80 columns: no runtime column)
        assert rows[1] == ["cc2", "running", "decide", "ask_human", "3m", "17", "13", "$0.80"]
        assert rows[3][:2] == ["gm1", "exited"] and rows[3][5:] == ["120", "13", "$4.50"]
        status = text_of(app, "#status")
        assert "proj" in status and "running" in status and "iterations 187/200" in status and "cost reserve $9.20/$10.00" in status
        assert "supervision on · turns 3/60" in status and "land the parser PR" in status
        assert text_of(app, "#round") == "round 3 (succeeded): cc2 ask_human, cx1 attention"
        assert "worker cc2: Should the parser accept tabs in indentation?" in text_of(app, "#chat")
        assert "cc1 spend over time: $3.75" in text_of(app, "#spend-label")
        await pilot.press("down")
        assert "cc2 iterations over time: 17" in text_of(app, "#iter-label")

    drive(busy, body)


def test_wide_terminal_adds_the_runtime_column(busy: Layout) -> None:
    async def body(app: top.TopApp, pilot: Any) -> None:
        assert table_rows(app)[2][:2] == ["cx1", "codex"]

    drive(busy, body, size=(120, 30))


def test_stop_and_resume_from_the_keyboard(busy: Layout) -> None:
    stop = Path(busy.agent_stop)

    async def body(app: top.TopApp, pilot: Any) -> None:
        assert not stop.exists()
        await pilot.press("s")
        await until(pilot, stop.exists)
        await until(pilot, lambda: "STOPPED by tester: stopped from cocoplus top" in text_of(app, "#status"))
        await pilot.press("r")  # asks first
        await pilot.press("n")
        await pilot.pause()
        assert stop.exists()
        await pilot.press("r", "y")
        await until(pilot, lambda: not stop.exists())
        await until(pilot, lambda: "STOPPED" not in text_of(app, "#status"))

    drive(busy, body)


def test_steering_from_the_keyboard(busy: Layout) -> None:
    async def body(app: top.TopApp, pilot: Any) -> None:
        await pilot.press("t")
        await pilot.press(*"use the staging db")
        await pilot.press("enter")
        await until(pilot, lambda: Path(busy.steer).exists())
        assert "use the staging db" in Path(busy.steer).read_text()
        await until(pilot, lambda: "steer pending: use the staging db" in text_of(app, "#status"))
        await pilot.press("t", "escape")  # cancelled: nothing more is written
        await pilot.pause()
        assert Path(busy.steer).read_text().count("use the staging db") == 1

    drive(busy, body)


def test_the_log_key_shows_the_selected_sessions_record(busy: Layout) -> None:
    async def body(app: top.TopApp, pilot: Any) -> None:
        await pilot.press("down", "l")
        await until(pilot, lambda: isinstance(app.screen, top.LogScreen))
        assert '"alias": "cc2"' in str(app.screen.query_one("#log-body").render())
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, top.LogScreen))

    drive(busy, body)


def test_an_update_arrives_from_a_file_change(busy: Layout, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(top, "RELOAD_EVERY_S", 3600.0)  # only a file event can bring the change

    async def body(app: top.TopApp, pilot: Any) -> None:
        await until(pilot, lambda: app._watch is not None and app._watch.kind != "none")
        before = app.reloads
        registry.ensure(busy, "claude", "s-new", event="SessionStart")
        await until(pilot, lambda: "cc3" in [r[0] for r in table_rows(app)])
        assert app.reloads > before

    drive(busy, body, watch=True)


def tree(root: str) -> dict[str, tuple[int, int]]:
    out = {}
    for d, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(d, name)
            st = os.lstat(p)
            out[p] = (st.st_mtime_ns, st.st_size)
    return out


def test_it_writes_nothing_it_was_not_asked_to(busy: Layout) -> None:
    before = tree(busy.project)

    async def body(app: top.TopApp, pilot: Any) -> None:
        await until(pilot, lambda: app._watch is not None)
        n = app.reloads
        await pilot.press("R", "down", "down")
        await until(pilot, lambda: app.reloads > n)
        app.redraw_ages()

    drive(busy, body, watch=True)
    assert tree(busy.project) == before


def test_snapshot_of_the_main_screen(busy: Layout, snap_compare: Any) -> None:
    project = Path(busy.project)
    app = top.TopApp(busy, now=lambda: NOW, watch=False)
    assert snap_compare(app, terminal_size=(80, 24)), f"differs from the stored snapshot ({project.name})"


def test_an_unchanged_view_draws_nothing_again_and_ages_change_cell_by_cell(busy: Layout) -> None:
    """Idle cost: a re-read that finds nothing new keeps the table; only age cells whose text changed are set."""
    clock_now = [NOW]
    app = top.TopApp(busy, now=lambda: clock_now[0], watch=False)
    calls: dict[str, list[Any]] = {"clear": [], "update_cell": []}

    async def main() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            table = app.query_one("#sessions")
            real_clear, real_update = table.clear, table.update_cell
            table.clear = lambda *a, **k: (calls["clear"].append(a), real_clear(*a, **k))[1]  # type: ignore[method-assign]
            table.update_cell = lambda *a, **k: (calls["update_cell"].append(a), real_update(*a, **k))[1]  # type: ignore[method-assign]
            app.reload()
            app.redraw_ages()
            assert calls == {"clear": [], "update_cell": []}  # nothing new: nothing drawn again
            clock_now[0] = NOW + 60  # a minute later: the ages shown in minutes change, none in hours
            app.redraw_ages()
            changed = {a[0] for a in calls["update_cell"]}
            assert changed and all(a[1] == "age" for a in calls["update_cell"])
            rows = {r[0]: r[4] for r in table_rows(app)}
            assert rows["cc2"] == "4m"  # it was 3m
            n = len(calls["update_cell"])
            app.redraw_ages()
            assert len(calls["update_cell"]) == n and calls["clear"] == []  # same text again: untouched
            registry.update(busy, next(iter(changed)), lambda r: r.update(state="paused"))
            app.reload()
            await pilot.pause()
            assert len(calls["clear"]) == 1 and "paused" in {r[1] for r in table_rows(app)}

    asyncio.run(main())
