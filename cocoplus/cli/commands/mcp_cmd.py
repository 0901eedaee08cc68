"""`cocoplus mcp`: the main-brain and worker tools as a stdio MCP server; `cocoplus mcp token` prints the capability."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from cocoplus.core.errors import UsageError
from cocoplus.core.vocab import MCP_ROLES as ROLES


def mcp(
    what: Annotated[
        str | None,
        typer.Argument(
            metavar="[token]", help="`token`: print this user's capability (for COCOPLUS_MCP_TOKEN) and exit."
        ),
    ] = None,
    role: Annotated[
        str | None,
        typer.Option(
            "--role",
            help="Which tools to serve: worker (the default), or brain or all with COCOPLUS_MCP_TOKEN set to this "
            "user's capability (without it: the worker tools).",
        ),
    ] = None,
) -> None:
    """Serve cocoplus' supervision tools over MCP on stdin/stdout (agents start this; see 'MCP' in the
    documentation)."""
    if what is not None:
        if what != "token":
            raise UsageError(f"mcp: unknown argument {what!r} (`cocoplus mcp token` prints the capability)")
        from cocoplus.ops import authority  # deferred: only `mcp token` checks who asks

        who = authority.caller()
        authority.require(who, "capability", "mcp token")
        sys.stdout.write(f"{authority.capability()}\n")
        return
    if role is not None and role not in ROLES:
        raise UsageError(f"--role must be one of {', '.join(ROLES)}, got {role!r}")
    from cocoplus.mcp import server  # deferred: heavy (the MCP SDK), only for this command

    server.run(role)


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)
