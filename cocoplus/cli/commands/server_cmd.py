"""`cocoplus serve`: the local server (REST, server-sent events, the web page).

FastAPI and uvicorn are imported inside the command, never when the CLI
(let alone a hook) merely starts.
"""

from __future__ import annotations

import typer

from cocoplus.cli.commands import layout


def register(app: typer.Typer) -> None:
    @app.command("serve")
    def serve(
        port: int = typer.Option(8765, "--port", "-p", help="Port on 127.0.0.1 (0 picks a free one)."),
        open_browser: bool = typer.Option(False, "--open", help="Open the page in a browser once the server is up."),
    ) -> None:
        """Serve the REST API, server-sent events and the web page on 127.0.0.1 (writes need the printed token)."""
        from cocoplus.server.run import serve as run_server

        raise typer.Exit(run_server(layout(), port, open_browser=open_browser))
