"""`cocoplus serve`: the local server (REST, server-sent events, the web page, the decision page)."""

from __future__ import annotations

from typing import Annotated

import typer

from cocoplus.cli.commands import layout


def serve(
    port: Annotated[
        int | None,
        typer.Option(
            "--port",
            "-p",
            help="Port to listen on (default 8765; 0 picks a free one; with --public on the URL's "
            "own address, the URL's port).",
        ),
    ] = None,
    open_browser: Annotated[
        bool, typer.Option("--open", help="Open the page in a browser once the server is up.")
    ] = False,
    public: Annotated[
        str | None,
        typer.Option(
            "--public",
            help="Also reachable at this URL (https://machine.tailnet.ts.net behind `tailscale serve`, a TLS tunnel, "
            "or a LAN address): its Host and Origin are accepted, every read needs the token or a paired device, "
            "MCP is not served, and the decision page's links use it (docs/guides/phone.md).",
        ),
    ] = None,
    bind: Annotated[
        str | None,
        typer.Option(
            "--bind",
            help="Listen on this address (default: 127.0.0.1, or the --public URL's own address when it is a "
            "plain-http IP address).",
        ),
    ] = None,
    insecure_http: Annotated[
        bool,
        typer.Option(
            "--insecure-http",
            help="Accept a plain-http --public URL of another machine (not loopback, not *.ts.net): its links and "
            "the device cookie then travel readable.",
        ),
    ] = False,
) -> None:
    """Serve the REST API, server-sent events, the web page and the decision page on 127.0.0.1 (or at --public
    URL); changes need the printed token or a paired device."""
    from cocoplus.inbox import runner  # deferred: only serve starts the phone's service
    from cocoplus.server.run import serve as run_server  # deferred: heavy (FastAPI, uvicorn), only for this command

    runner.ensure_running()  # this user's `cocoplus inbox run`, when phone channels are configured

    raise typer.Exit(
        run_server(
            layout(), port, open_browser=open_browser, public=public, bind_host=bind, insecure_http=insecure_http
        )
    )


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
