"""The screens `cocoplus top` opens over its view: a line of text to send (`AskScreen`), a yes or no
(`ConfirmScreen`), a permission request to allow or deny (`PermissionScreen`), a session's record and hook log
(`LogScreen`), and the texts they show.

Built with Textual, which `cocoplus top` alone imports (tui/app.py opens
them).  Every text from a file is made inert (`core/inert.py`) and never read
as markup.
"""

from __future__ import annotations

import json

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from cocoplus.core import clock, fsio, inert
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.core.shapes import PermissionRequest, SessionRecord
from cocoplus.tui import render

LOG_LINES = 200


class AskScreen(ModalScreen[str | None]):
    """One line of text (a steer, a dispatch, an answer), under what it is for; Enter sends, Escape cancels."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    AskScreen { align: center middle; }
    AskScreen > Vertical { width: 90%; max-width: 100; height: auto; border: round $accent; background: $surface; }
    AskScreen #ask-detail { max-height: 6; color: $text-muted; }
    """

    def __init__(self, heading: str, detail: str | None = None) -> None:
        super().__init__()
        self.heading = heading
        self.detail = detail

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(f"{self.heading} (Enter sends, Esc cancels)"), id="ask-heading")
            if self.detail:
                yield Static(Text(self.detail), id="ask-detail")
            yield Input(id="ask-text")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS = [Binding("y", "yes", "Yes"), Binding("n,escape", "no", "No")]
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Static { width: 90%; max-width: 100; height: auto; border: round $warning; background: $surface; }
    """

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        yield Static(Text(f"{self.question} [y/n]"), id="confirm-question")

    def action_yes(self) -> None:
        self.dismiss(True)

    def action_no(self) -> None:
        self.dismiss(False)


class PermissionScreen(ModalScreen[str | None]):
    """A pending permission request, shown whole: `a` allows it, `d` denies it, Escape leaves it pending."""

    BINDINGS = [
        Binding("a", "allow", "Allow"),
        Binding("d", "deny", "Deny"),
        Binding("escape", "cancel", "Leave pending"),
    ]
    DEFAULT_CSS = """
    PermissionScreen { align: center middle; }
    PermissionScreen > Static {
        width: 90%; max-width: 100; height: auto; border: round $warning; background: $surface;
    }
    """

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        yield Static(
            Text(self.text + "\n\n[a] allow once   [d] deny   [Esc] leave it pending"), id="permission-request"
        )

    def action_allow(self) -> None:
        self.dismiss("allow")

    def action_deny(self) -> None:
        self.dismiss("deny")

    def action_cancel(self) -> None:
        self.dismiss(None)


def request_text(req: PermissionRequest, alias: str, others: int, now: float) -> str:
    """A permission request as the person answering it reads it (every field from the file made inert)."""
    deadline = clock.parse_iso(req.get("deadline"))
    left = f"; denied by default in {render.age(max(0.0, deadline - now))}" if deadline is not None else ""
    lines = [
        f"{inert.line(alias)} asks to use {inert.line(req.get('tool'))} (request {inert.line(req.get('id'))}{left})",
        f"rule: {inert.line(req.get('rule'))}",
        "input: " + " ".join(inert.line(req.get("input") or "-").split()),
    ]
    touched = [inert.line(p) for p in req.get("protected") or [] if isinstance(p, str)]
    if touched:
        lines.append(f"changes what runs: it writes {', '.join(touched)} (allowing it allows this one call only)")
    if req.get("why"):
        lines.append(f"why it asks: {inert.line(req.get('why'))}")
    if others:
        lines.append(f"({others} more pending for this session: answered one at a time, oldest first)")
    return "\n".join(lines)


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
            yield Static(Text(inert.line(self.title_text), style="bold"))
            yield Static(Text(inert.text(self.body)), id="log-body")

    def action_close(self) -> None:
        self.dismiss(None)


def session_log(layout: Layout, rec: SessionRecord) -> str:
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
