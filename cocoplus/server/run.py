"""`cocoplus serve`: bind 127.0.0.1, create the token, run uvicorn.

The socket is bound before the application is built, so the Host/Origin
checks know the real port even with `--port 0` (any free port).  Once it
has started, what it built is frozen out of the garbage collector's scans
(`gc.freeze`): a full collection of the long-lived heap paused the event
loop for 40 to 90 ms.  The token
is new for every run; the file is removed again when the server stops.
The server runs the project's notifier in a thread of its own once
`[notify] urls` is set, as the supervisor does (one of them delivers: the
`notifier` lock; notify/runner.py).
"""

from __future__ import annotations

import errno
import gc
import socket
import sys
import threading
import time
import warnings
import webbrowser
from collections.abc import Callable
from typing import Any

import uvicorn

from cocoplus.core.errors import CocoplusError, UsageError
from cocoplus.core.paths import Layout
from cocoplus.notify import runner as notifier
from cocoplus.server import security
from cocoplus.server.app import create_app
from cocoplus.server.events import Hub

HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def bind(port: int) -> socket.socket:
    if not 0 <= port <= 65535:
        raise UsageError(f"--port must be 0-65535, got {port}")
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets whose proto says TCP; with proto 0,
    # keep-alive responses written in two parts wait ~40 ms for a delayed ACK.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise CocoplusError(
                f"{HOST}:{port} is already in use", hint="choose another with --port (0 picks a free one)"
            ) from None
        raise CocoplusError(f"cannot listen on {HOST}:{port}: {exc.strerror or exc}") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def urls(port: int, token: str) -> tuple[str, str]:
    base = f"http://{HOST}:{port}/"
    return base, f"{base}#token={token}"


def serve(
    layout: Layout,
    port: int = DEFAULT_PORT,
    *,
    open_browser: bool = False,
    announce: Callable[[str], None] | None = None,
    log_level: str = "warning",
) -> int:
    # watchdog warns when a new directory's watch replaces one it already had; harmless, and not for the terminal.
    warnings.filterwarnings("ignore", message="Callback with id", category=RuntimeWarning)
    sock = bind(port)
    port = sock.getsockname()[1]
    token = security.new_token(layout)
    # uvicorn re-raises SIGTERM/SIGINT after its shutdown, so the token file is removed in the lifespan's shutdown.
    hub = Hub(layout)
    app = create_app(layout, token=token, port=port, hub=hub, on_shutdown=lambda: security.remove_token(layout, token))
    base, with_token = urls(port, token)
    say = announce or (lambda line: (sys.stdout.write(line + "\n"), sys.stdout.flush()))
    say(f"cocoplus server for {layout.project}")
    say(f"  page:    {with_token}")
    say(f"  api:     {base}api/v1/  (OpenAPI: {base}api/v1/openapi.json)")
    say(f"  mcp:     {base}mcp  (MCP over Streamable HTTP, with the token)")
    say(
        f"  token:   {token}  (also in {layout.rel(layout.server_token)}, mode 0600; "
        "send it as `Authorization: Bearer <token>`)"
    )
    say("  stop with Ctrl-C")
    config = uvicorn.Config(
        app,
        log_level=log_level,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=3,
        server_header=False,
        proxy_headers=False,
    )

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            # Everything built so far (FastAPI, pydantic, the MCP servers) lives as long as the server: out of the
            # collector's way, so a full collection scans what requests made, not a 40-90 ms pause of the loop.
            gc.collect()
            gc.freeze()

        def handle_exit(self, sig: int, frame: Any) -> None:
            hub.close_streams()  # uvicorn waits for open connections; event streams must end first
            super().handle_exit(sig, frame)

    server = Server(config)
    if open_browser:
        threading.Thread(target=_open_when_up, args=(server, with_token), daemon=True).start()
    notify = notifier.start_thread(layout, by="server")  # [notify]: a slow target never holds up a request
    try:
        server.run(sockets=[sock])
    finally:
        notify.stop(wait=0)  # the lock goes with the process; a hanging target does not hold up its exit
        sock.close()
        security.remove_token(layout, token)
    return 0 if server.started else 1


def _open_when_up(server: Any, url: str) -> None:
    deadline = time.monotonic() + 15
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    if server.started:
        webbrowser.open(url)
