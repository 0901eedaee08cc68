"""Operations: what every door (the CLI, the REST server, the MCP server) can do, once.

One function per operation, grouped by door group (`session`, `sessions`,
`budget`, `chat`, `supervision`, `worker`, `project`).  Each takes the
layout and plain arguments and returns a plain, JSON-able result; a
handled failure is a `CocoplusError` that each door renders its own way
(one line and an exit code, an HTTP status, a tool error).  Doors parse
their input and render the result; they decide nothing else, so the CLI's
`--json`, the REST endpoint and the MCP tool for one operation answer with
the same data (tests/ops/test_doors_agree.py).

Nothing here imports typer, rich, fastapi or mcp.
"""

from __future__ import annotations

import getpass
import os


def operator_name() -> str:
    """The login name of whoever runs the door (COCOPLUS_OPERATOR overrides)."""
    name = os.environ.get("COCOPLUS_OPERATOR")
    if name:
        return name
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - getpass raises various errors without a passwd entry
        return "unknown"
