"""One module per command group; each registers itself on the root app."""

from __future__ import annotations

import getpass
import os

from cocoplus.core.paths import Layout, discover

JSON_HELP = "Print JSON (stable; see README 'JSON output')."


def layout() -> Layout:
    return discover()


def operator_name() -> str:
    """The login name of whoever runs the command (COCOPLUS_OPERATOR overrides)."""
    name = os.environ.get("COCOPLUS_OPERATOR")
    if name:
        return name
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - getpass raises various errors without a passwd entry
        return "unknown"
