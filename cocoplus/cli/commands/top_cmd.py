"""`cocoplus top`: the live terminal view."""

from __future__ import annotations

import sys

import typer

from cocoplus.cli.commands import layout
from cocoplus.core.errors import CocoplusError


def top() -> None:
    """Live view: sessions, supervision, kill switch, steer, conversation. Keys on the selected session: s stop,
    r resume, t steer, d dispatch, a answer, p allow or deny its permission request, l log; S, R, T: the whole
    project; q quit."""
    lay = layout()
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise CocoplusError(
            "cocoplus top needs a terminal",
            hint="`cocoplus session list` and `cocoplus session status` print the same in a pipe",
        )
    from cocoplus.tui.app import TopApp  # deferred: Textual loads for `cocoplus top` only

    TopApp(lay).run()


def register(app: typer.Typer) -> None:
    app.command("top")(top)
