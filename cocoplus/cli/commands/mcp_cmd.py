"""`cocoplus mcp`: the main-brain and worker tools as a stdio MCP server."""

from __future__ import annotations

import typer

from cocoplus.core.errors import CocoplusError, UsageError

ROLES = ("brain", "worker", "all")


def register(app: typer.Typer) -> None:
    @app.command("mcp")
    def mcp(
        role: str = typer.Option("all", "--role", help="Which tools to serve: brain, worker or all."),
    ) -> None:
        """Serve cocoplus' supervision tools over MCP on stdin/stdout (agents start this; see README 'MCP')."""
        if role not in ROLES:
            raise UsageError(f"--role must be one of {', '.join(ROLES)}, got {role!r}")
        try:
            from cocoplus.mcp import server
        except ImportError as exc:
            raise CocoplusError(
                f"the MCP server needs the `mcp` package ({exc})", hint="pip install 'mcp>=2' into cocoplus' environment"
            ) from None
        server.run(role)
