"""`cocoplus serve`: the local server (REST, server-sent events, the web page)."""

from __future__ import annotations

from typing import Annotated

import typer

from cocoplus.cli.commands import layout


def serve(
    port: Annotated[int, typer.Option("--port", "-p", help="Port on 127.0.0.1 (0 picks a free one).")] = 8765,
    open_browser: Annotated[
        bool, typer.Option("--open", help="Open the page in a browser once the server is up.")
    ] = False,
) -> None:
    """Serve the REST API, server-sent events and the web page on 127.0.0.1 (writes need the printed token)."""
    from cocoplus.inbox import runner  # deferred: only serve starts the phone's service
    from cocoplus.server.run import serve as run_server  # deferred: heavy (FastAPI, uvicorn), only for this command

    runner.ensure_running()  # this user's `cocoplus inbox run`, when phone channels are configured

    raise typer.Exit(run_server(layout(), port, open_browser=open_browser))


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
