"""`cocoplus mcp`: the main-brain and worker tools as a stdio MCP server."""

from __future__ import annotations

from typing import Annotated

import typer

from cocoplus.core.errors import UsageError
from cocoplus.core.vocab import MCP_ROLES as ROLES


def mcp(role: Annotated[str, typer.Option("--role", help="Which tools to serve: brain, worker or all.")] = "all") -> None:
    """Serve cocoplus' supervision tools over MCP on stdin/stdout (agents start this; see README 'MCP')."""
    if role not in ROLES:
        raise UsageError(f"--role must be one of {', '.join(ROLES)}, got {role!r}")
    from cocoplus.mcp import server  # deferred: heavy (the MCP SDK), only for this command

    server.run(role)


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)
