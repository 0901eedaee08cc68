"""Where unexpected failures go: one traceback block in `.cocoplus/logs/cocoplus.log`.

The user sees one line; the details are kept here for whoever debugs it.
"""

from __future__ import annotations

import os
import sys
import traceback

from cocoplus import __version__
from cocoplus.core import clock
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
        os.makedirs(layout.logs_dir, exist_ok=True)
        with open(layout.cli_log, "a", encoding="utf-8") as fh:
            fh.write(f"--- {clock.iso()} cocoplus {__version__} python {sys.version.split()[0]} {context}\n")
            fh.write("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
        return layout.rel(layout.cli_log)
    except Exception:  # noqa: BLE001 - logging must not turn one failure into two
        return None
