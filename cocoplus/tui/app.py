"""`cocoplus top`: a live terminal view of every session, supervision, the kill switch and the conversation.

Built with Textual, which `cocoplus top` alone imports.  Everything shown
comes from `ops.view` (read only); the view re-reads when a file under
`.cocoplus/` changes (watchdog, through `cocoplus.watching`; debounced to
a tenth of a second), every few seconds in case an event was missed, and
re-draws the ages every second.  It writes nothing until a key asks:

  s  stop the agents (AGENT_STOP; `session stop`)       r  resume (asks first; `session resume`)
  t  steer (one instruction for the next prompt)         l  the selected session's record and hook log
  R  re-read now                                         q  quit

Fits 80x24; NO_COLOR turns colour off (Textual honours it).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.coordinate import Coordinate
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Input, Sparkline, Static

from cocoplus.core import clock, fsio
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.ops import session as session_ops
from cocoplus.ops import view
from cocoplus.tui import render

RELOAD_EVERY_S = 5.0
DEBOUNCE_S = 0.1
MAX_SAMPLES = 240
LOG_LINES = 200
OPERATOR_REASON = "stopped from cocoplus top"


def _without(rows: list[tuple[str, list[str]]], at: int | None) -> list[tuple[str, list[str]]]:
    """Rows with the age column left out (ages are updated cell by cell)."""
    if at is None:
        return rows
    return [(sid, cells[:at] + cells[at + 1 :]) for sid, cells in rows]


class SteerScreen(ModalScreen[str | None]):
    """One line of text for the agent's next prompt; Enter sends, Escape cancels."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    SteerScreen { align: center middle; }
    SteerScreen > Vertical { width: 70; height: 5; border: round $accent; background: $surface; }
    """

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("Steer: one instruction for the agent's next prompt (Enter sends, Esc cancels)")
            yield Input(id="steer-text")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS = [Binding("y", "yes", "Yes"), Binding("n,escape", "no", "No")]
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Static { width: 60; height: 3; border: round $warning; background: $surface; }
    """

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        yield Static(f"{self.question} [y/n]")

    def action_yes(self) -> None:
        self.dismiss(True)

    def action_no(self) -> None:
        self.dismiss(False)


class LogScreen(ModalScreen[None]):
    """A session's record and its lines of the hook log (read only)."""

    BINDINGS = [Binding("escape,q,l", "close", "Close")]
    DEFAULT_CSS = """
    LogScreen { align: center middle; }
    LogScreen > Vertical { width: 100%; height: 100%; border: round $accent; background: $surface; overflow-y: auto; }
    """

    def __init__(self, title: str, text: str) -> None:
        super().__init__()
        self.title_text = title
        self.body = text

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.title_text, style="bold"))
            yield Static(Text(self.body), id="log-body")

    def action_close(self) -> None:
        self.dismiss(None)


def session_log(layout: Layout, rec: dict[str, Any]) -> str:
    """The session's record, then the last lines of the hook log that name it."""
    lines = [json.dumps(rec, indent=2, ensure_ascii=False, default=str), "", f"-- {layout.rel(layout.hook_log)} --"]
    names = [n for n in (rec.get("runtime_session_id"), rec.get("id")) if n]
    try:
        text = fsio.read_text(layout.hook_log, limit=8 * 1024 * 1024) or ""
    except CocoplusError as exc:
        text = ""
        lines.append(str(exc))
    mine = [ln for ln in text.splitlines() if any(str(n) in ln for n in names)]
    lines.extend(mine[-LOG_LINES:] or ["(no hook log lines for this session)"])
    return "\n".join(lines)


class TopApp(App[None]):
    TITLE = "cocoplus top"
    CSS = """
    Screen { layout: vertical; }
    #status { height: 2; }
    #sessions { height: 1fr; min-height: 4; }
    #charts { height: 3; }
    .chart { width: 1fr; height: 3; }
    .chart-label { height: 1; }
    Sparkline { height: 2; }
    #round { height: 1; }
    #chat { height: 4; border-top: solid $primary-darken-2; }
    """
    BINDINGS = [
        Binding("s", "stop", "Stop"),
        Binding("r", "resume", "Resume"),
        Binding("t", "steer", "Steer"),
        Binding("l", "log", "Log"),
        Binding("R", "reload", "Re-read", show=False),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, layout: Layout, *, now: Callable[[], float] = time.time, watch: bool = True) -> None:
        super().__init__()
        self.layout = layout
        self.now = now
        self.watch_files = watch
        self.snap: dict[str, Any] | None = None
        self.hist: dict[str, Any] = {"sessions": []}
        self.samples: dict[str, list[list[Any]]] = {}
        self.reloads = 0
        self._watch: Any = None
        self._pending_reload = False
        self._width_mode: bool | None = None
        # What the table shows now (its rows' text but for the ages, each age cell's text): nothing unchanged
        # is drawn again, so an idle view of many sessions costs next to nothing between changes.
        self._shown_rows: list[tuple[str, list[str]]] | None = None
        self._shown_ages: dict[str, str] = {}
        self._drawn: dict[str, Any] = {}  # widget id -> what it shows

    # -- layout ------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static(id="status")
        yield DataTable(id="sessions", cursor_type="row", zebra_stripes=False)
        with Horizontal(id="charts"):
            with Vertical(classes="chart"):
                yield Static(id="iter-label", classes="chart-label")
                yield Sparkline([0.0], id="iter-chart")
            with Vertical(classes="chart"):
                yield Static(id="spend-label", classes="chart-label")
                yield Sparkline([0.0], id="spend-chart")
        yield Static(id="round")
        yield Static(id="chat")
        yield Footer()

    def on_mount(self) -> None:
        self.reload()
        if self.watch_files:
            from cocoplus.watching import Watch  # deferred: watchdog starts only with a live view

            self._watch = Watch(self.layout.root, self._file_changed)
            self._watch.start()
        self.set_interval(1.0, self.redraw_ages)
        self.set_interval(RELOAD_EVERY_S, self.reload)

    def on_unmount(self) -> None:
        if self._watch is not None:
            self._watch.stop()

    def on_resize(self) -> None:
        if self.snap is not None:
            self.draw()

    # -- data --------------------------------------------------------------------------------------
    def _file_changed(self, path: str) -> None:
        """From the watchdog thread: any change but locks, logs and temp files schedules one re-read."""
        top = os.path.relpath(path, self.layout.root).split(os.sep)[0]
        if top in ("locks", "logs") or ".tmp-" in os.path.basename(path):
            return
        try:
            self.call_from_thread(self._schedule_reload)
        except RuntimeError:
            pass  # the app is closing

    def _schedule_reload(self) -> None:
        if not self._pending_reload:
            self._pending_reload = True
            self.set_timer(DEBOUNCE_S, self.reload)

    def reload(self) -> None:
        self._pending_reload = False
        now = self.now()
        try:
            self.snap = view.snapshot(self.layout, now=now)
            self.hist = view.history(self.layout)
        except CocoplusError as exc:
            self.notify(str(exc), severity="error")
            return
        for s in self.snap["sessions"]:
            pts = self.samples.setdefault(s["id"], [])
            if not pts or pts[-1][1] != s["iterations"]:
                pts.append([clock.iso(now), s["iterations"]])
                del pts[:-MAX_SAMPLES]
        self.reloads += 1
        self.draw()

    # -- drawing -----------------------------------------------------------------------------------
    def draw(self) -> None:
        snap = self.snap
        if snap is None:
            return
        width = self.size.width or 80
        parts = render.status_line(snap)
        supervision = render.supervision_line(snap)
        if self._changed("#status", (parts, supervision)):
            status = Text()
            for text, style in parts:
                status.append(text, style=style or None)
            status.append("\n" + supervision)
            self.query_one("#status", Static).update(status)
        self._draw_table(snap, width)
        round_line = render.round_line(snap)
        if self._changed("#round", round_line):
            self.query_one("#round", Static).update(Text(round_line, no_wrap=True, overflow="ellipsis"))
        chat = "\n".join(render.chat_lines(snap, width - 1, limit=3))
        if self._changed("#chat", chat):
            self.query_one("#chat", Static).update(Text(chat))
        self._draw_charts(width)

    def _changed(self, widget: str, content: Any) -> bool:
        """Whether `widget` should be drawn again: what it would show differs from what it shows."""
        if self._drawn.get(widget) == content:
            return False
        self._drawn[widget] = content
        return True

    def _draw_table(self, snap: dict[str, Any], width: int) -> None:
        table = self.query_one("#sessions", DataTable)
        wide = width >= render.WIDE
        columns = render.columns(width)
        at = next((i for i, (_t, key, _w) in enumerate(columns) if key == "age"), None)
        shown = [(s["id"], cells) for s, cells in zip(snap["sessions"], render.rows(snap, width), strict=True)]
        rest = _without(shown, at)
        if self._width_mode == wide and rest == self._shown_rows:
            # The same rows but for their ages: keep the table (and its cursor), change only the ages that differ.
            self._update_ages({sid: cells[at] for sid, cells in shown} if at is not None else {})
            return
        selected = self.selected_id()
        if self._width_mode != wide:
            table.clear(columns=True)
            for title, _key, w in columns:
                table.add_column(title, width=w, key=title)
            self._width_mode = wide
        else:
            table.clear()
        for sid, cells in shown:
            styled = [Text(c, style="bold red" if key == "state" and c in ("failed",) else "yellow" if key == "attention" and c != "-" else "") for c, (_t, key, _w) in zip(cells, columns, strict=True)]
            table.add_row(*styled, key=sid)
        self._shown_rows = rest
        self._shown_ages = {sid: cells[at] for sid, cells in shown} if at is not None else {}
        if selected is not None:
            ids = [s["id"] for s in snap["sessions"]]
            if selected in ids:
                table.move_cursor(row=ids.index(selected))

    def _draw_charts(self, width: int) -> None:
        sid = self.selected_id()
        hist = next((h for h in self.hist["sessions"] if h["id"] == sid), None)
        alias = (hist or {}).get("alias") or "-"
        its = sorted(((hist or {}).get("iterations") or []) + self.samples.get(sid or "", []), key=lambda p: str(p[0]))
        spend = (hist or {}).get("spend") or []
        n = max(8, width // 2 - 2)
        for points, chart, label, unit in ((its, "#iter-chart", "#iter-label", "iterations"), (spend, "#spend-chart", "#spend-label", "spend")):
            rng = render.series_range(its + spend)
            data = render.resample(points, n, *rng) if rng else [0.0]
            last = points[-1][1] if points else 0
            shown = f"${float(last):.2f}" if unit == "spend" else str(last)
            if self._changed(label, (alias, unit, shown)):
                self.query_one(label, Static).update(f"{alias} {unit} over time: {shown}")
            if self._changed(chart, data):
                self.query_one(chart, Sparkline).data = data

    def redraw_ages(self) -> None:
        if self.snap is None:
            return
        now = self.now()
        for s in self.snap["sessions"]:
            last = clock.parse_iso(s.get("last_event_at"))
            s["age_s"] = None if last is None else max(0.0, now - last)
        self._update_ages({s["id"]: render.cell(s, "age", 5) for s in self.snap["sessions"]})

    def _update_ages(self, ages: dict[str, str]) -> None:
        """Set the age cells whose text changed (one shown in minutes or hours changes far less than every second)."""
        table = self.query_one("#sessions", DataTable)
        for sid, text in ages.items():
            if self._shown_ages.get(sid) == text:
                continue
            try:
                table.update_cell(sid, "age", text)
            except Exception:  # noqa: BLE001 - a row that went away between two draws
                continue
            self._shown_ages[sid] = text

    def selected_id(self) -> str | None:
        table = self.query_one("#sessions", DataTable)
        if not table.row_count:
            return None
        try:
            key = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key
        except Exception:  # noqa: BLE001 - no cursor yet
            return None
        return None if key is None or key.value is None else str(key.value)

    def on_data_table_row_highlighted(self, _event: DataTable.RowHighlighted) -> None:
        self._draw_charts(self.size.width or 80)

    # -- keys --------------------------------------------------------------------------------------
    def _do(self, what: str, fn: Callable[[], Any]) -> None:
        try:
            fn()
        except CocoplusError as exc:
            self.notify(f"{what}: {exc}", severity="error")
            return
        self.notify(what)
        self.reload()

    def action_stop(self) -> None:
        # TODO(lead): once ops.session.stop takes `session=`, stop the selected session here
        # (and keep a key for the whole project); until then `s` stops every agent of the project.
        self._do("stopped: every tool call is denied until resume", lambda: session_ops.stop(self.layout, OPERATOR_REASON))

    def action_resume(self) -> None:
        def answered(yes: bool | None) -> None:
            if yes:
                self._do("resumed", lambda: session_ops.resume(self.layout))

        self.push_screen(ConfirmScreen("Resume the agents (remove AGENT_STOP)?"), answered)

    def action_steer(self) -> None:
        def answered(text: str | None) -> None:
            if text:
                self._do("steer queued for the next prompt", lambda: session_ops.steer(self.layout, text))

        self.push_screen(SteerScreen(), answered)

    def action_log(self) -> None:
        sid = self.selected_id()
        if sid is None:
            self.notify("no session selected", severity="warning")
            return
        from cocoplus.session import registry  # deferred: only the log key reads one record

        try:
            rec = registry.read_record(self.layout, sid) or {"id": sid}
        except CocoplusError as exc:
            self.notify(str(exc), severity="error")
            return
        self.push_screen(LogScreen(f"{rec.get('alias')} ({sid})", session_log(self.layout, rec)))

    def action_reload(self) -> None:
        self.reload()
