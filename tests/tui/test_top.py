"""`cocoplus top` driven headless through Textual's own harness (App.run_test and its pilot)."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from textual.css.query import NoMatches
from textual.widgets import DataTable

from cocoplus.core.paths import Layout
from cocoplus.core.shapes import SessionRecord
from cocoplus.session import registry
from cocoplus.tui import app as top
from cocoplus.tui import render
from tests.tui.conftest import NOW, at


def drive(
    layout: Layout,
    body: Callable[[Any, Any], Awaitable[None]],
    *,
    watch: bool = False,
    size: tuple[int, int] = (80, 24),
) -> top.TopApp:
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
    table = app.query_one("#sessions", DataTable)
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def test_main_screen_shows_every_session_supervision_and_the_conversation(busy: Layout) -> None:
    async def body(app: top.TopApp, pilot: Any) -> None:
        rows = table_rows(app)
        assert [r[0] for r in rows] == ["cc1", "cc2", "cx1", "gm1"]
        # alias, id, runtime, state, attention, last event, age, tool calls, spend: each as wide as it needs
        assert rows[1] == ["cc2", "cs_s-two", "claude", "running", "decide", "ask_human", "3m", "17", "$0.80"]
        assert rows[3] == ["gm1", "cs_g-one", "gemini", "exited", "-", "SessionEnd", "1h", "120", "$4.50"]
        status = text_of(app, "#status")
        # The iterations left are the project's: said once, not on every row.
        assert "proj" in status and "running" in status and "iterations 187/200 (13 left)" in status
        assert "cost reserve $9.20/$10.00" in status
        assert "supervision on · turns 3/60 · no watcher (rounds wait) · goal: land the parser PR" in status
        assert text_of(app, "#round") == "round 3 succeeded: cc2 ask_human, cx1 attention"
        assert "worker cc2: Should the parser accept tabs in indentation?" in text_of(app, "#chat")
        # The cursor starts on the session that waits for the operator: cc2's question before cx1's idle prompt.
        assert app.selected_id() == busy_id(busy, "cc2")
        assert "cc2 spend over time: $0.80" in text_of(app, "#spend-label")
        await pilot.press("up")
        assert "cc1 iterations over time: 42" in text_of(app, "#iter-label")
        assert "cc1 spend over time: $3.75" in text_of(app, "#spend-label")

    drive(busy, body)


def busy_id(layout: Layout, alias: str) -> str:
    return str(registry.resolve(layout, alias)["id"])


LONG = ("0b6f2f0e-6a8e-4c1e-9a3f-2d7c1b5e9a41", "7d1c9e2a-51f0-4b8e-8c2d-9f3a6e0b4c17")  # Claude Code's session ids


def with_long_ids(layout: Layout) -> None:
    for rid, state in zip(LONG, ("completed", "running"), strict=True):
        rec, _ = registry.ensure(layout, "claude", rid, event="SessionStart")

        def change(r: SessionRecord, st: str = state) -> None:
            r.update({"state": st, "last_event": "PostToolUseFailure", "last_event_at": at(1)})

        registry.update(layout, rec["id"], change)


@pytest.mark.parametrize("size", [(120, 30), (80, 24)])
def test_no_alias_or_state_is_cut_and_at_120_columns_no_id(busy: Layout, size: tuple[int, int]) -> None:
    with_long_ids(busy)

    async def body(app: top.TopApp, pilot: Any) -> None:
        titles = [str(c.label) for c in app.query_one("#sessions", DataTable).columns.values()]
        rows = {r[0]: dict(zip(titles, r, strict=True)) for r in table_rows(app)}
        assert set(rows) == {"cc1", "cc2", "cx1", "gm1", "cc3", "cc4"}
        assert rows["cc3"]["state"] == "completed" and rows["cc2"]["attention"] == "decide"
        if size[0] >= 120:
            assert rows["cc3"]["id"] == f"cs_{LONG[0]}" and rows["cc4"]["id"] == f"cs_{LONG[1]}"
            assert rows["cc3"]["last event"] == "PostToolUseFailure"
        else:
            # 80 columns: the runtime and the id go, the alias and the state stay whole.
            assert "id" not in titles and "runtime" not in titles and rows["cc4"]["state"] == "running"
        assert not any("…" in rows[a][k] for a in rows for k in ("alias", "state"))

    drive(busy, body, size=size)


@pytest.mark.slow
def test_stop_and_resume_the_whole_project_from_the_keyboard(busy: Layout) -> None:
    stop = Path(busy.agent_stop)

    async def body(app: top.TopApp, pilot: Any) -> None:
        assert not stop.exists()
        await pilot.press("S")
        await until(pilot, stop.exists)
        await until(pilot, lambda: "STOPPED by tester: stopped from cocoplus top" in text_of(app, "#status"))
        assert json.loads(stop.read_text())["principal"] == "operator"
        await pilot.press("R")  # asks first
        await until(pilot, lambda: isinstance(app.screen, top.ConfirmScreen))
        await pilot.press("n")
        await pilot.pause()
        assert stop.exists()
        await pilot.press("R", "y")
        await until(pilot, lambda: not stop.exists())
        await until(pilot, lambda: "STOPPED" not in text_of(app, "#status"))

    drive(busy, body)


@pytest.mark.slow
def test_steering_every_agent_from_the_keyboard(busy: Layout) -> None:
    async def body(app: top.TopApp, pilot: Any) -> None:
        await pilot.press("T")
        await until(pilot, lambda: isinstance(app.screen, top.AskScreen))
        await pilot.press(*"use the staging db")
        await pilot.press("enter")
        await until(pilot, lambda: Path(busy.steer).exists())
        assert "use the staging db" in Path(busy.steer).read_text()
        await until(pilot, lambda: "steer pending: use the staging db" in text_of(app, "#status"))
        await pilot.press("T", "escape")  # cancelled: nothing more is written
        await pilot.pause()
        assert Path(busy.steer).read_text().count("use the staging db") == 1

    drive(busy, body)


def test_the_log_key_shows_the_selected_sessions_record(busy: Layout) -> None:
    async def body(app: top.TopApp, pilot: Any) -> None:
        await pilot.press("l")  # cc2, where the cursor starts
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


@pytest.mark.slow
def test_it_writes_nothing_it_was_not_asked_to(busy: Layout) -> None:
    before = tree(busy.project)

    async def body(app: top.TopApp, pilot: Any) -> None:
        await until(pilot, lambda: app._watch is not None)
        n = app.reloads
        await pilot.press("ctrl+r", "down", "down")
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
            table = app.query_one("#sessions", DataTable)
            for name in calls:  # each call is recorded, then made
                real = getattr(table, name)

                def spy(*a: Any, _name: str = name, _real: Callable[..., Any] = real, **k: Any) -> Any:
                    calls[_name].append(a)
                    return _real(*a, **k)

                setattr(table, name, spy)
            app.reload()
            app.redraw_ages()
            assert calls == {"clear": [], "update_cell": []}  # nothing new: nothing drawn again
            clock_now[0] = NOW + 60  # a minute later: the ages shown in minutes change, none in hours
            app.redraw_ages()
            changed = {a[0] for a in calls["update_cell"]}
            assert changed and all(a[1] == "age" for a in calls["update_cell"])
            rows = {r[0]: r[6] for r in table_rows(app)}
            assert rows["cc2"] == "4m"  # it was 3m
            n = len(calls["update_cell"])
            app.redraw_ages()
            assert len(calls["update_cell"]) == n and calls["clear"] == []  # same text again: untouched
            registry.update(busy, next(iter(changed)), lambda r: r.update({"state": "paused"}))
            app.reload()
            await pilot.pause()
            assert len(calls["clear"]) == 1 and "paused" in {r[3] for r in table_rows(app)}

    asyncio.run(main())


def test_a_timer_that_fires_while_the_view_closes_draws_nothing_and_raises_nothing(busy: Layout) -> None:
    async def body(app: top.TopApp, pilot: Any) -> None:
        await pilot.press("q")

    app = drive(busy, body)
    # The widgets are gone; the one-second and five-second timers' callbacks may still run once.
    with pytest.raises(NoMatches):
        app.query_one("#sessions")
    app.redraw_ages()
    app.reload()


def columns_of(chart: str) -> list[int]:
    """The height of each bar of a two-line chart, in eighths of a line (0 to 16)."""
    top_line, bottom = chart.split("\n")
    level = {" ": 0, **{b: i + 1 for i, b in enumerate(render.BARS)}}
    return [level[b] + level[t] for t, b in zip(top_line, bottom, strict=True)]


def test_the_charts_show_the_selected_session_and_small_counts_are_visible(busy: Layout) -> None:
    """A session that made 1, then 2, then 3 tool calls: a staircase from zero, not a flat line."""
    rec, _ = registry.ensure(busy, "claude", "s-small", event="SessionStart")
    registry.update(
        busy,
        rec["id"],
        lambda r: r.update({"started_at": at(40), "last_event_at": at(10), "tool_calls": 3, "state": "running"}),
    )
    with open(busy.steps, "a") as fh:
        fh.writelines(
            json.dumps({"ts": at(m), "event": "PostToolUse", "session": rec["id"], "tool_calls": n}) + "\n"
            for m, n in ((30, 1), (20, 2))
        )

    async def body(app: top.TopApp, pilot: Any) -> None:
        aliases = [r[0] for r in table_rows(app)]
        await pilot.press(*["down"] * (aliases.index(rec["alias"]) - app.query_one("#sessions", DataTable).cursor_row))
        await until(pilot, lambda: text_of(app, "#iter-label").startswith(f"{rec['alias']} iterations over time: 3"))
        bars = columns_of(text_of(app, "#iter-chart"))
        assert bars == sorted(bars) and bars[0] == 0 and bars[-1] == 16  # from nothing to the session's most
        assert len({b for b in bars if b}) == 3  # 1, 2 and 3 calls: three heights, each visible

    drive(busy, body)


def test_a_steady_count_is_drawn_at_its_height_not_as_nothing() -> None:
    assert render.spark([2.0, 2.0, 2.0]) == ["███", "███"]
    assert render.spark([0.0, 1.0, 16.0]) == ["  █", " ▁█"]  # 1 beside 16 still shows; 0 shows nothing
    assert render.spark([0.0, 0.001, 100.0])[1][1] == "▁"  # however small against the largest
    assert render.spark([0.0, 0.0]) == ["  ", "  "]


def test_a_round_that_took_actions_lists_them(busy: Layout) -> None:
    """`round_finished` as supervision/rounds.py writes it: the count in `actions`, the phrases in `took`."""
    lines = Path(busy.rounds).read_text().splitlines()
    last = json.loads(lines[-1])
    last.update(actions=2, took=["dispatch cc1 (route: steer)", "stop_session cc2"])
    Path(busy.rounds).write_text("\n".join([*lines[:-1], json.dumps(last)]) + "\n")

    async def body(app: top.TopApp, pilot: Any) -> None:
        assert (
            text_of(app, "#round") == "round 3 succeeded: cc2 ask_human, cx1 attention · "
            "actions: dispatch cc1 (route: steer); stop_session cc2"
        )

    drive(busy, body, size=(120, 30))


def test_a_collision_between_live_sessions_is_shown_above_the_table(busy: Layout) -> None:
    """cc1 and cc2 (running) both changed src/app.py; gm1 did too, but it has ended: one collision, in red."""
    from cocoplus.session import edits

    # Paths are relative to the git tree a session works in: the project is its own, whatever lies above it.
    os.makedirs(os.path.join(busy.project, ".git"), exist_ok=True)
    for alias in ("cc1", "cc2", "gm1"):
        edits.record(busy, busy_id(busy, alias), ["src/app.py"], busy.project, busy.project)
    edits.record(busy, busy_id(busy, "cx1"), ["src/other.py"], busy.project, busy.project)

    async def body(app: top.TopApp, pilot: Any) -> None:
        box = app.query_one("#collisions")
        assert box.display is True
        assert text_of(app, "#collisions") == "collision: cc1 and cc2 both changed src/app.py"
        assert [r[0] for r in table_rows(app)] == ["cc1", "cc2", "cx1", "gm1"]  # the table is all still there

    drive(busy, body)


def test_with_no_collision_the_line_takes_no_room(busy: Layout) -> None:
    async def body(app: top.TopApp, pilot: Any) -> None:
        assert app.query_one("#collisions").display is False

    drive(busy, body)


def test_many_collisions_are_summed_up_on_the_last_line() -> None:
    found = [{"message": f"cc1 and cc2 both changed f{i}.py"} for i in range(5)]
    assert render.collision_lines({"collisions": found}) == [
        "collision: cc1 and cc2 both changed f0.py",
        "collision: cc1 and cc2 both changed f1.py",
        "and 3 more collisions (`cocoplus session list` lists them)",
    ]


def test_top_says_the_operator_is_at_the_machine_while_it_runs_with_the_focus(busy: Layout) -> None:
    """The inbox holds pushes back while `top` runs: it touches this user's presence file (inbox/store.py)."""
    from cocoplus.inbox import store

    assert not store.present(60)

    def away() -> None:
        old = time.time() - 3600
        os.utime(store.presence_file(), (old, old))

    async def body(app: top.TopApp, pilot: Any) -> None:
        await until(pilot, lambda: store.present(60))
        # The terminal loses the focus: the timer no longer says so.
        away()
        app.app_focus = False
        app._present_at = -top.PRESENCE_EVERY_S
        app.present()
        assert not store.present(60)
        await pilot.press("down")  # a key does
        assert store.present(60)

    drive(busy, body)
    assert not os.path.islink(store.presence_file())
