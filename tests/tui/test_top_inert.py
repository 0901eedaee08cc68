"""`cocoplus top` shows what workers, steers and records say as inert text, never as markup
(driven through Textual's pilot)."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest

from cocoplus.core import fsio, vocab
from cocoplus.core.paths import Layout
from cocoplus.ops import session as session_ops
from cocoplus.session import killswitch, registry
from cocoplus.tui import app as top
from tests.support.typed import present
from tests.tui.conftest import at
from tests.tui.test_top import drive, table_rows, text_of, until

NASTY = (
    "\x1b]8;;https://evil.example/\x1b\\link\x1b]8;;\x1b\\ \x1b[31mred\x1b[0m \x1b]0;title\x07\x1b[2J"
    "del\x7f nel\x85 \x9b2Jcsi \u202eevil\u202c \u2066iso\u2069 end\x1b["
)
MARKUP = "[bold red]loud[/] [@click=app.quit]quit[/] [link=https://evil.example/m]m[/link]"
FORBIDDEN = {chr(c) for c in (*range(0x00, 0x20), *range(0x7F, 0xA0))} | set(vocab.BIDI_CONTROLS) | {"\u2028", "\u2029"}
SHOWN = "link red del␡ nel\\x85 csi \\u202eevil\\u202c \\u2066iso\\u2069 end␛["  # NASTY, made inert


def controls(text: str, allowed: str = "") -> list[str]:
    return sorted({c for c in text if c in FORBIDDEN and c not in allowed})


def say_everything(layout: Layout) -> None:
    """A question, a steer, a stop reason, a goal, a round's trigger and a session alias, each untrusted."""
    with open(layout.ledger("master-agent"), "a") as fh:
        fh.write(
            json.dumps({"ts": at(1), "role": "worker", "session_alias": "cc2", "text": f"Q {MARKUP} {NASTY}"}) + "\n"
        )
    session_ops.steer(layout, f"S {NASTY}")
    killswitch.stop(layout, "tester", f"R {NASTY}")
    state = present(fsio.read_json(layout.supervision_state))
    state["autonomous"]["task_hint"] = f"G {NASTY}"
    fsio.atomic_write_json(layout.supervision_state, state)
    with open(layout.rounds, "a") as fh:
        fh.write(
            json.dumps(
                {
                    "ts": at(0.5),
                    "event": "round_started",
                    "number": 4,
                    "triggers": [{"alias": f"T {NASTY}", "kind": "ask_human"}],
                }
            )
            + "\n"
        )
    rec = registry.resolve(layout, "cc1")
    fsio.atomic_write_json(layout.session_record(rec["id"]), rec | {"alias": f"[b]A[/b]{NASTY}"})


def test_untrusted_text_is_shown_inert_and_never_read_as_markup(busy: Layout) -> None:
    say_everything(busy)

    async def body(app: top.TopApp, pilot: Any) -> None:
        await pilot.press("up")  # from cc2 to the first row: the session whose alias is untrusted text
        status, chat, rnd = text_of(app, "#status"), text_of(app, "#chat"), text_of(app, "#round")
        label = text_of(app, "#iter-label") + text_of(app, "#spend-label")
        rows = table_rows(app)
        for shown in (status, chat, rnd, label, *(c for r in rows for c in r)):
            assert controls(shown, "\n") == [], shown
        assert f"STOPPED by tester: R {SHOWN}" in status and f"goal: G {SHOWN}" in status
        assert "steer pending: S link red del␡ nel\\x85 csi " in status
        assert f"worker cc2: Q {MARKUP} {SHOWN}"[:100] in chat  # the line is cut to the width, with "…"
        assert f"T {SHOWN}"[:40] in rnd
        # The alias the charts are labelled with: literal brackets, not bold markup.
        assert label.startswith("[b]A[/b]link red") and "over time" in label
        assert rows[0][0].startswith("[b]A")
        await pilot.press("l")
        await until(pilot, lambda: isinstance(app.screen, top.LogScreen))
        log = str(app.screen.query_one("#log-body").render())
        assert controls(log, "\n") == [] and '"alias": "[b]A[/b]' in log
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, top.LogScreen))

    drive(busy, body, size=(120, 30))


@pytest.mark.slow
def test_a_toast_is_inert_and_not_markup(busy: Layout) -> None:
    async def body(app: top.TopApp, pilot: Any) -> None:
        app.say(f"could not read {MARKUP} {NASTY}", "error")
        await pilot.pause()
        [toast] = list(app._notifications)
        assert toast.markup is False and controls(toast.message) == [] and MARKUP in toast.message

    drive(busy, body)


def test_the_dialogs_show_a_question_a_stop_reason_and_a_permission_request_inert(busy: Layout) -> None:
    from cocoplus.session import permissions
    from cocoplus.supervision import signals
    from tests.tui.test_top_actions import select

    signals.ask_human(busy, f"Q {MARKUP} {NASTY}", session="cc1")
    session_ops.stop_session(busy, "cc1", f"R {MARKUP} {NASTY}", "tester")
    rec = registry.resolve(busy, "cc1")
    permissions.open_request(
        busy, rec, runtime="claude", tool="Bash", tool_input={"command": f"C {MARKUP} {NASTY}"}, wait_s=600, worker=None
    )

    def on_screen(app: top.TopApp, screen: type, shown: bool = True) -> bool:
        return isinstance(app.screen, screen) is shown

    async def body(app: top.TopApp, pilot: Any) -> None:
        await select(app, pilot, "cc1")
        # (the request's input is kept as JSON, whose escapes already make it inert)
        for key, screen, part, closing, inert_text in (
            ("a", top.AskScreen, "#ask-detail", "escape", SHOWN),
            ("r", top.ConfirmScreen, "#confirm-question", "n", SHOWN),
            ("p", top.PermissionScreen, "#permission-request", "escape", "\\u001b]8;;https://evil.example/\\u001b"),
        ):
            await pilot.press(key)
            await until(pilot, partial(on_screen, app, screen))
            shown = str(app.screen.query_one(part).render())
            assert controls(shown, "\n") == [], shown
            assert MARKUP in shown and inert_text in shown, shown
            await pilot.press(closing)
            await until(pilot, partial(on_screen, app, screen, False))

    drive(busy, body, size=(120, 30))
