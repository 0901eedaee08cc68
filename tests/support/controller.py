"""A controller account that can run, for tests that turn supervision on (it refuses without one)."""

from __future__ import annotations

import sys
from pathlib import Path

from cocoplus.core.paths import Layout
from tests.support.trusting import trust_project


def write_controller(layout: Layout, reply: str = "brain: noted") -> None:
    """Add `[chat] controller = "brain"`, a `command` account that
    prints `reply`, to the project's cocoplus.toml (trusted)."""
    path = Path(layout.config)
    before = path.read_text() if path.exists() else ""
    argv = [sys.executable, "-c", f"import sys; sys.stdin.read(); print({reply!r})"]
    quoted = ", ".join('"' + a.replace("\\", "\\\\").replace('"', '\\"') + '"' for a in argv)
    path.write_text(
        before + f'\n[chat]\ncontroller = "brain"\n[accounts.brain]\nkind = "command"\ncommand = [{quoted}]\n'
    )
    trust_project(layout)
