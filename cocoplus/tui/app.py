"""`cocoplus top`: a live terminal view of every session, supervision, the kill switch and the conversation.

Built with Textual, which `cocoplus top` alone imports.  Everything shown
comes from `ops.view` (read only); the view re-reads when a file under
`.cocoplus/` changes (watchdog, through `cocoplus.watching`; debounced to
a tenth of a second), every few seconds in case an event was missed, and
re-draws the ages every second.  While it runs and its terminal has the
focus (where the terminal says), and at every key, it touches this user's
presence file (`inbox.store.touch_presence`, at most every PRESENCE_EVERY_S
seconds): the inbox pushes nothing to the phone while the operator watches.
In the project it writes nothing until a key asks; every
key acts through the same operation as the CLI (`cocoplus/ops/`), as the
person at the terminal (`ops.authority.caller`: the operator, or inside an
agent's session that worker, whose keys are refused as its commands are).
A key that asks first opens one of `tui/screens.py` from a worker
(`@work`) and waits for its answer (`push_screen_wait`):

  on the selected session                          on the whole project
  s  stop it (its tools only)                      S  stop every agent (AGENT_STOP)
  r  resume it (asks first)                        R  resume the project (asks first)
  t  steer it (its next turn end or prompt)        T  steer (the next prompt of any agent)
  d  dispatch: its next piece of work
  a  answer its question
  p  its permission request: allow or deny
  l  its record and hook log                       ctrl+r  re-read now      q  quit
  e  its timeline (its worker's, with its sandbox profile), shown or hidden

While a session's turn runs, its spend is a live estimate (`~`), priced
here from the usage its transcript shows since the last turn end
(`cost.live`), until the turn end prices it.

Fits 80x24; NO_COLOR turns colour off (Textual honours it).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.coordinate import Coordinate
from textual.css.query import NoMatches
from textual.notifications import SeverityLevel
from textual.widgets import DataTable, Footer, Static

from cocoplus.core import clock, inert
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.cost import live
from cocoplus.inbox import store as presence
from cocoplus.ops import authority, view
from cocoplus.ops import dispatch as dispatch_ops
from cocoplus.ops import permissions as permissions_ops
from cocoplus.ops import session as session_ops
from cocoplus.ops.authority import Principal
from cocoplus.tui import render
from cocoplus.tui.screens import AskScreen, ConfirmScreen, LogScreen, PermissionScreen, request_text, session_log

if TYPE_CHECKING:
    pass

RELOAD_EVERY_S = 5.0
TIMELINE_LINES = 8  # the timeline pane: its title and the newest events of the selected worker
PRESENCE_EVERY_S = 10.0  # well within [inbox] presence_s (120 s by default): one small write per period
DEBOUNCE_S = 0.1
MAX_SAMPLES = 240
OPERATOR_REASON = "stopped from cocoplus top"
NO_CARRIER = (
    "no runtime's cocoplus hooks are installed for this project (nor a cocoplus plugin for you): no agent sees "
    "this stop until they are (`cocoplus install claude|codex|gemini|cursor|cortex|antigravity`)"
)


# The colour of each kind of event, as `cocoplus timeline` colours them (cli/commands/timeline_cmd.py).
TIMELINE_STYLES = {
    "stop": "bold red", "refusal": "red", "failover": "bold magenta", "limit": "magenta", "verdict": "yellow",
    "permission": "yellow", "steer": "cyan", "cost": "green", "round": "blue", "merge": "bold green", "tool": "dim",
    "edit": "dim",
}  # fmt: skip


def _without(rows: list[tuple[str, list[str]]], at: int | None) -> list[tuple[str, list[str]]]:
    """Rows with the age column left out (ages are updated cell by cell)."""
    if at is None:
        return rows
    return [(sid, cells[:at] + cells[at + 1 :]) for sid, cells in rows]


class TopApp(App[None]):
    TITLE = "cocoplus top"
    ENABLE_COMMAND_PALETTE = False  # every action has its key, shown below
    CSS = """
    Screen { layout: vertical; }
    #status { height: 2; }
    #forecast { height: auto; color: $warning; }
    #collisions { height: auto; max-height: 3; color: $error; display: none; }
    #sessions { height: 1fr; min-height: 4; }
    #charts { height: 3; }
    .chart { width: 1fr; height: 3; }
    .chart-label { height: 1; }
    .spark { height: 2; color: $success; }
    #round { height: 1; }
    #chat { height: 4; border-top: solid $primary-darken-2; }
    #timeline { height: 9; border-top: solid $primary-darken-2; display: none; }
    """
    BINDINGS = [
        Binding("s", "stop", "Stop"),
        Binding("S", "stop_all", "Stop all"),
        Binding("r", "resume", "Resume"),
        Binding("R", "resume_all", "Resume all", show=False),
        Binding("t", "steer", "Steer"),
        Binding("T", "steer_all", "Steer all", show=False),
        Binding("d", "dispatch", "Dispatch"),
        Binding("a", "answer", "Answer"),
        Binding("p", "permission", "Permit"),
        Binding("l", "log", "Log"),
        Binding("e", "timeline", "Timeline", show=False),
        Binding("ctrl+r,f5", "reload", "Re-read", show=False),
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
        self.live = live.Estimate(layout)
        self._who: Principal | None = None
        self._watch: Any = None
        self._pending_reload = False
        self._picked = False  # the first selection (the session that waits for the operator) is made once
        self._columns: list[tuple[str, str, int]] | None = None
        # What the table shows now (its rows' text but for the ages, each age cell's text): nothing unchanged
        # is drawn again, so an idle view of many sessions costs next to nothing between changes.
        self._shown_rows: list[tuple[str, list[str]]] | None = None
        self._shown_ages: dict[str, str] = {}
        self._drawn: dict[str, Any] = {}  # widget id -> what it shows
        self._present_at = -PRESENCE_EVERY_S  # when this user's presence file was last touched (monotonic)
        self.show_timeline = False  # the timeline pane (key e): read only while it is shown
        self._timeline_read: tuple[Any, ...] | None = None  # ((whose, width), when read) of what the pane shows

    # -- layout ------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static(id="status")
        yield Static(id="forecast")
        yield Static(id="collisions")
        yield DataTable(id="sessions", cursor_type="row", zebra_stripes=False)
        with Horizontal(id="charts"):
            with Vertical(classes="chart"):
                yield Static(id="iter-label", classes="chart-label")
                yield Static(id="iter-chart", classes="spark")
            with Vertical(classes="chart"):
                yield Static(id="spend-label", classes="chart-label")
                yield Static(id="spend-chart", classes="spark")
        yield Static(id="round")
        yield Static(id="timeline")
        yield Static(id="chat")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.reload()
        if self.watch_files:
            from cocoplus.watching import Watch  # deferred: watchdog starts only with a live view

            self._watch = Watch(self.layout.root, self._file_changed)
            self._watch.start()
        self.set_interval(1.0, self.redraw_ages)
        self.set_interval(RELOAD_EVERY_S, self.reload)
        self.present()
        self.set_interval(PRESENCE_EVERY_S, self.present)

    def on_unmount(self) -> None:
        if self._watch is not None:
            self._watch.stop()

    def on_resize(self) -> None:
        if self.snap is not None:
            self.draw()

    # -- presence ----------------------------------------------------------------------------------
    def present(self, key: bool = False) -> None:
        """Say the operator is at the machine (no push to the phone meanwhile): from the timer while the terminal
        has the focus, or at a key; at most once per PRESENCE_EVERY_S seconds."""
        if not (key or self.app_focus) or time.monotonic() - self._present_at < PRESENCE_EVERY_S:
            return
        self._present_at = time.monotonic()
        try:
            presence.touch_presence()
        except (OSError, CocoplusError):
            pass  # a presence file that cannot be written means pushes are not held: nothing is lost

    def on_key(self) -> None:
        self.present(key=True)

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
            self.snap = view.snapshot(self.layout, now=now, live=self.live)
            self.hist = view.history(self.layout)
        except CocoplusError as exc:
            self.say(str(exc), "error")
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
        try:
            self._draw()
        except NoMatches:
            return  # a timer's re-draw while the view closes: its widgets are gone

    def _draw(self) -> None:
        snap = self.snap
        if snap is None:
            return
        width = self.size.width or 80
        parts = render.status_line(snap)
        supervision = render.supervision_line(snap)
        if self._changed("#status", (parts, supervision)):
            status = Text(no_wrap=True, overflow="ellipsis")
            for text, style in parts:
                status.append(text, style=style or None)
            status.append("\n" + supervision)
            self.query_one("#status", Static).update(status)
        forecast = render.forecast_lines(snap)
        if self._changed("#forecast", forecast):
            box = self.query_one("#forecast", Static)
            box.display = bool(forecast)
            box.update(Text("\n".join(forecast), no_wrap=True, overflow="ellipsis"))
        clashes = render.collision_lines(snap)
        if self._changed("#collisions", clashes):
            box = self.query_one("#collisions", Static)
            box.update(Text("\n".join(clashes), no_wrap=True, overflow="ellipsis"))
            box.display = bool(clashes)  # no room taken while nothing collides
        self._draw_table(snap, width)
        round_line = render.round_line(snap)
        if self._changed("#round", round_line):
            self.query_one("#round", Static).update(Text(round_line, no_wrap=True, overflow="ellipsis"))
        chat = "\n".join(render.chat_lines(snap, width - 1, limit=3))
        if self._changed("#chat", chat):
            self.query_one("#chat", Static).update(Text(chat))
        self._draw_charts(width)
        self._draw_timeline(width)

    def _draw_timeline(self, width: int) -> None:
        """The timeline pane, while shown: the selected session's worker's newest events (its session's, for a
        session of no worker).  Read from the logs (`ops.timeline`, which reads a worker's logs whole) in a thread,
        at a new selection or width, else at most once per RELOAD_EVERY_S."""
        pane = self.query_one("#timeline", Static)
        pane.display = self.show_timeline
        if not self.show_timeline:
            return
        row = self.selected()
        whose = None if row is None else str(row.get("worker") or row["id"])
        key = (whose, width)
        if self._timeline_read is not None and self._timeline_read[0] == key:
            if time.monotonic() - self._timeline_read[1] < RELOAD_EVERY_S:
                return
        self._timeline_read = (key, time.monotonic())
        title = render.timeline_title(row)
        if whose is None:
            self._show_timeline(key, [(title, "")])
            return
        self.run_worker(
            lambda: self._read_timeline(key, whose, title, width), thread=True, exclusive=True, group="timeline"
        )

    def _read_timeline(self, key: tuple[Any, ...], whose: str, title: str, width: int) -> None:
        """From a thread: the events, then drawn on the app's own."""
        from cocoplus.ops import timeline as timeline_ops  # deferred: read only while the pane is shown

        try:
            rep = timeline_ops.timeline(self.layout, whose, limit=TIMELINE_LINES - 1)
        except CocoplusError as exc:
            rep = {"events": [{"kind": "?", "text": str(exc)}]}
        lines = [(title, ""), *render.timeline_lines(rep, width - 1, TIMELINE_LINES - 1)]
        try:
            self.call_from_thread(self._show_timeline, key, lines)
        except RuntimeError:
            pass  # the app is closing

    def _show_timeline(self, key: tuple[Any, ...], lines: list[tuple[str, str]]) -> None:
        if self._timeline_read is None or self._timeline_read[0] != key:
            return  # another selection since
        text = Text(no_wrap=True, overflow="ellipsis")
        for i, (line, kind) in enumerate(lines):
            text.append(("\n" if i else "") + line, style=TIMELINE_STYLES.get(kind, "bold" if i == 0 else ""))
        try:
            self.query_one("#timeline", Static).update(text)
        except NoMatches:
            return  # the view is closing

    def _changed(self, widget: str, content: Any) -> bool:
        """Whether `widget` should be drawn again: what it would show differs from what it shows."""
        if self._drawn.get(widget) == content:
            return False
        self._drawn[widget] = content
        return True

    def _draw_table(self, snap: dict[str, Any], width: int) -> None:
        table = self.query_one("#sessions", DataTable)
        columns = render.columns(snap, width)
        at = next((i for i, (_t, key, _w) in enumerate(columns) if key == "age"), None)
        shown = [(s["id"], cells) for s, cells in zip(snap["sessions"], render.rows(snap, columns), strict=True)]
        rest = _without(shown, at)
        if columns == self._columns and rest == self._shown_rows:
            # The same rows but for their ages: keep the table (and its cursor), change only the ages that differ.
            self._update_ages({sid: cells[at] for sid, cells in shown} if at is not None else {})
            return
        selected = self.selected_id()
        if columns != self._columns:
            table.clear(columns=True)
            for title, key, w in columns:
                table.add_column(title, width=w, key=key)
            self._columns = columns
        else:
            table.clear()
        for s, (sid, cells) in zip(snap["sessions"], shown, strict=True):
            styled = [Text(c, style=self._style(s, key, c)) for c, (_t, key, _w) in zip(cells, columns, strict=True)]
            table.add_row(*styled, key=sid)
        self._shown_rows = rest
        self._shown_ages = {sid: cells[at] for sid, cells in shown} if at is not None else {}
        ids = [s["id"] for s in snap["sessions"]]
        if not self._picked and ids:
            self._picked = True
            selected = self._first_pick(snap)
        if selected is not None and selected in ids:
            table.move_cursor(row=ids.index(selected))

    @staticmethod
    def _style(session: dict[str, Any], key: str, shown: str) -> str:
        if key == "state" and shown in ("failed", "stopped"):
            return "bold red"
        if key == "attention" and shown != "-":
            return "yellow"
        if key == "spend" and session.get("spend_unmeasured"):
            return "italic"
        return ""

    @staticmethod
    def _first_pick(snap: dict[str, Any]) -> str | None:
        """The row the cursor starts on: a session waiting for the operator, a permission request first (it is
        denied by default at its deadline), then a question, then an idle prompt, the longest waiting of its
        kind; else the one heard from last."""
        sessions = snap["sessions"]
        urgency = {"awaiting_authorization": 3, "awaiting_decision": 2, "pending": 1}
        waiting = [s for s in sessions if s.get("attention")]
        if waiting:
            return str(max(waiting, key=lambda s: (urgency.get(str(s["attention"]), 0), s.get("age_s") or 0.0))["id"])
        heard = [s for s in sessions if s.get("age_s") is not None]
        return str(min(heard, key=lambda s: s["age_s"])["id"]) if heard else None

    def _draw_charts(self, width: int) -> None:
        sid = self.selected_id()
        hist = next((h for h in self.hist["sessions"] if h["id"] == sid), None)
        row = self.selected()
        alias = (hist or {}).get("alias") or "-"
        its = sorted(((hist or {}).get("iterations") or []) + self.samples.get(sid or "", []), key=lambda p: str(p[0]))
        spend = list((hist or {}).get("spend") or [])
        now = self.now()
        spend_shown = render.money(float(spend[-1][1]) if spend else 0.0)
        if row is not None and row.get("spend_unmeasured"):
            # The turn under way, at its live estimate, until the turn end prices it.
            spend.append([clock.iso(now), float(row.get("spend") or 0) + float(row["spend_unmeasured"])])
            spend_shown = render.spend_text(row) + " live estimate"
        n = max(8, width // 2 - 2)
        rng = render.series_range(its + spend, now)
        for points, chart, label, unit in (
            (its, "#iter-chart", "#iter-label", "iterations"),
            (spend, "#spend-chart", "#spend-label", "spend"),
        ):
            data = render.resample(points, n, *rng) if rng else [0.0] * n
            shown = spend_shown if unit == "spend" else str(points[-1][1] if points else 0)
            if self._changed(label, (alias, unit, shown)):
                self.query_one(label, Static).update(
                    Text(f"{inert.line(alias)} {unit} over time: {shown}", no_wrap=True, overflow="ellipsis")
                )
            if self._changed(chart, data):
                self.query_one(chart, Static).update(Text("\n".join(render.spark(data)), no_wrap=True))

    def redraw_ages(self) -> None:
        if self.snap is None:
            return
        now = self.now()
        for s in self.snap["sessions"]:
            last = clock.parse_iso(s.get("last_event_at"))
            s["age_s"] = None if last is None else max(0.0, now - last)
        try:
            self._update_ages({s["id"]: render.cell(s, "age", render.AGE_WIDTH) for s in self.snap["sessions"]})
        except NoMatches:
            return  # the view is closing

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

    def selected(self) -> dict[str, Any] | None:
        """The selected session as the last re-read saw it."""
        sid = self.selected_id()
        return next((s for s in (self.snap or {}).get("sessions") or [] if s["id"] == sid), None)

    def on_data_table_row_highlighted(self, _event: DataTable.RowHighlighted) -> None:
        try:
            self._draw_charts(self.size.width or 80)
            self._draw_timeline(self.size.width or 80)
        except NoMatches:
            return  # a highlight handled while the view closes: its widgets are gone

    def say(self, message: str, severity: SeverityLevel = "information") -> None:
        """A toast: its text is inert and never read as markup (an error can quote a file's contents)."""
        self.notify(inert.line(message), severity=severity, markup=False)

    # -- keys --------------------------------------------------------------------------------------
    def principal(self) -> Principal:
        """Who acts: the person at this terminal (found once, at the first key that acts)."""
        if self._who is None:
            self._who = authority.caller(self.layout)
        return self._who

    def _do(self, what: str, fn: Callable[[], Any]) -> None:
        """Run an operation; say what it answered (its `message`, else `what`) and its problems; re-read."""
        try:
            result = fn()
        except CocoplusError as exc:
            self.say(f"{what}: {exc}", "error")
            return
        result = result if isinstance(result, dict) else {}
        self.say(str(result.get("message") or what))
        for problem in result.get("problems") or []:
            self.say(str(problem), "warning")
        if "carried_by" in result and not result["carried_by"]:
            self.say(NO_CARRIER, "warning")
        self.reload()

    def _target(self) -> tuple[str, str] | None:
        """(id, alias) of the selected session, or None (and says so)."""
        row = self.selected()
        if row is None:
            self.say("no session selected", "warning")
            return None
        return str(row["id"]), inert.line(row.get("alias") or row["id"])

    def action_stop(self) -> None:
        target = self._target()
        if target is None:
            return
        sid, alias = target
        self._do(
            f"{alias} stopped: its tools are blocked until you resume it (r)",
            lambda: session_ops.stop_session(self.layout, sid, OPERATOR_REASON, principal=self.principal()),
        )

    def action_stop_all(self) -> None:
        self._do(
            "stopped: every agent's tool calls are denied until resume (R)",
            lambda: session_ops.stop(self.layout, OPERATOR_REASON, principal=self.principal()),
        )

    @work
    async def action_resume(self) -> None:
        target = self._target()
        row = self.selected()
        if target is None or row is None:
            return
        sid, alias = target
        stop = row.get("stopped")
        if not stop:
            also = (
                "; AGENT_STOP stops every session (R resumes the project)"
                if (self.snap or {}).get("kill_switch")
                else ""
            )
            self.say(f"{alias} is not stopped{also}", "warning")
            return
        stop_id = stop.get("id")
        made = f" by {inert.line(stop.get('operator'))}" if stop.get("operator") else ""
        why = f": {inert.line(stop.get('reason'))}" if stop.get("reason") else ""
        if await self.push_screen_wait(ConfirmScreen(f"Resume {alias} (lift its stop{made}{why})?")):
            self._do(
                f"{alias} resumed",
                lambda: session_ops.resume_session(self.layout, sid, stop_id=stop_id, principal=self.principal()),
            )

    @work
    async def action_resume_all(self) -> None:
        if not (self.snap or {}).get("kill_switch"):
            self.say("the project is not stopped (no AGENT_STOP); a stopped session resumes with r", "warning")
            return
        if await self.push_screen_wait(ConfirmScreen("Resume the agents (remove AGENT_STOP)?")):
            self._do("resumed", lambda: session_ops.resume(self.layout, principal=self.principal()))

    @work
    async def action_steer(self) -> None:
        await self._ask_and_do(
            "Steer {alias}: one instruction, at its turn end or next prompt",
            "steer for {alias} written",
            lambda sid, text: session_ops.steer_session(self.layout, sid, text, principal=self.principal()),
        )

    @work
    async def action_steer_all(self) -> None:
        text = await self.push_screen_wait(AskScreen("Steer: one instruction for the agent's next prompt"))
        if text:
            self._do(
                "steer queued for the next prompt",
                lambda: session_ops.steer(self.layout, text, principal=self.principal()),
            )

    @work
    async def action_dispatch(self) -> None:
        await self._ask_and_do(
            "Dispatch to {alias}: its next piece of work",
            "dispatched to {alias}",
            lambda sid, text: dispatch_ops.dispatch(self.layout, sid, text, principal=self.principal()),
        )

    async def _ask_and_do(self, question: str, done: str, act: Callable[[str, str], Any]) -> None:
        """Ask for one line of text about the selected session, then `act(session id, text)` saying `done` (from a
        worker: it waits for the answer)."""
        target = self._target()
        if target is None:
            return
        sid, alias = target
        text = await self.push_screen_wait(AskScreen(question.format(alias=alias)))
        if text:
            self._do(done.format(alias=alias), lambda: act(sid, text))

    @work
    async def action_answer(self) -> None:
        target = self._target()
        if target is None:
            return
        sid, alias = target
        try:
            q = view.question(self.layout, sid)
        except CocoplusError as exc:
            self.say(str(exc), "error")
            return
        if q is None:
            self.say(f"{alias} has asked no question (d dispatches to it)", "warning")
            return

        said = " ".join(inert.line(q.get("text") or "").split())
        detail = f"{alias} asked: {said}" + (" (already answered; this answers it again)" if q.get("answered") else "")
        text = await self.push_screen_wait(AskScreen(f"Answer {alias}'s question", detail))
        if text:
            self._do(
                f"answer sent to {alias}",
                lambda: dispatch_ops.answer(self.layout, sid, text, principal=self.principal()),
            )

    @work
    async def action_permission(self) -> None:
        target = self._target()
        if target is None:
            return
        sid, alias = target
        try:
            pending = view.permission_requests(self.layout, sid)
        except CocoplusError as exc:
            self.say(str(exc), "error")
            return
        if not pending:
            self.say(f"{alias} has no pending permission request", "warning")
            return
        req = pending[0]
        req_id = str(req["id"])
        how = await self.push_screen_wait(PermissionScreen(request_text(req, alias, len(pending) - 1, self.now())))
        if how == "allow":
            self._do(
                f"{req_id} allowed",
                lambda: permissions_ops.approve(self.layout, req_id, principal=self.principal()),
            )
        elif how == "deny":
            self._do(f"{req_id} denied", lambda: permissions_ops.deny(self.layout, req_id, principal=self.principal()))

    def action_log(self) -> None:
        sid = self.selected_id()
        if sid is None:
            self.say("no session selected", "warning")
            return
        from cocoplus.session import registry  # deferred: only the log key reads one record

        try:
            rec = registry.read_record(self.layout, sid) or {"id": sid}
        except CocoplusError as exc:
            self.say(str(exc), "error")
            return
        self.push_screen(LogScreen(f"{rec.get('alias')} ({sid})", session_log(self.layout, rec)))

    def action_timeline(self) -> None:
        """Show or hide the timeline pane (the selected worker's newest events)."""
        self.show_timeline = not self.show_timeline
        self._timeline_read = None
        self._draw_timeline(self.size.width or 80)

    def action_reload(self) -> None:
        self.reload()
