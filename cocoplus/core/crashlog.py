"""Where unexpected failures go: one traceback block in `.cocoplus/logs/cocoplus.log`.

The user sees one line; the details are kept here for whoever debugs it.
Written with `fsio.append_line` (no symlinks followed, rotated, a loss
recorded if the disk is full).
"""

from __future__ import annotations

import sys
import traceback

from cocoplus import __version__
from cocoplus.core import clock, fsio
from cocoplus.core.paths import Layout, find_state_dir


def log_exception(context: str, exc: BaseException, layout: Layout | None = None) -> str | None:
    """Append the traceback with `context`; return the log's path as shown to users (or None).

    Without `layout`, the project is found from the working directory.
    """
    try:
        if layout is None:
            found = find_state_dir()
            if not found:
                return None
            layout = Layout(found)
        head = f"--- {clock.iso()} cocoplus {__version__} python {sys.version.split()[0]} {context}"
        body = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip("\n")
        # One write for the whole block, so blocks from two processes never interleave.
        if not fsio.append_block(layout.cli_log, head + "\n" + body):
            return None
        return layout.rel(layout.cli_log)
    except Exception:  # noqa: BLE001 - logging must not turn one failure into two
        return None
