"""`cocoplus serve`: bind 127.0.0.1 (or the `--public` URL's own address), create the token, run uvicorn.

With `--public URL` (docs/guides/phone.md) the server is reached at URL as well: a Tailscale name through
`tailscale serve`, a TLS tunnel the user runs, or a LAN address.  Where it listens (`bind_address`): on
`--bind ADDRESS` when given; else on the URL's own address when that is a plain-http IP address (of this machine:
binding fails otherwise), on the URL's port; else on 127.0.0.1, behind the proxy that serves the URL (https is
always a proxy's: this server speaks plain HTTP).  Which Host and Origin it accepts: the URL's and the loopback
ones (inbox/site.py).  Plain http to an address other than loopback or a Tailscale name is refused unless
`--insecure-http` says so: the page's links carry tokens.  The page's address is written for the inbox's pushes
(`store.write_page`) and forgotten when the server stops.

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
from cocoplus.inbox import site, store
from cocoplus.notify import runner as notifier
from cocoplus.server import security
from cocoplus.server.app import create_app
from cocoplus.server.events import Hub
from cocoplus.supervision import watcher

HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def bind(port: int, host: str = HOST) -> socket.socket:
    if not 0 <= port <= 65535:
        raise UsageError(f"--port must be 0-65535, got {port}")
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets whose proto says TCP; with proto 0,
    # keep-alive responses written in two parts wait ~40 ms for a delayed ACK.
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise CocoplusError(
                f"{where} is already in use", hint="choose another with --port (0 picks a free one)"
            ) from None
        if exc.errno == errno.EADDRNOTAVAIL:
            raise CocoplusError(
                f"cannot listen on {where}: it is not an address of this machine (give --bind ADDRESS)"
            ) from None
        raise CocoplusError(f"cannot listen on {where}: {exc.strerror or exc}") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def urls(port: int, token: str, host: str = HOST) -> tuple[str, str]:
    name = f"[{host}]" if ":" in host else ("127.0.0.1" if host in ("0.0.0.0", "") else host)
    base = f"http://{name}:{port}/"
    return base, f"{base}#token={token}"


def public_site(public: str | None, insecure_http: bool) -> site.Public | None:
    """The `--public` URL, refused (one line) when links over it would travel readable and the operator did not
    say `--insecure-http`."""
    if not public:
        return None
    pub = site.parse(public)
    if site.needs_insecure_flag(pub) and not insecure_http:
        raise UsageError(
            f"--public {pub.url}: plain http to another machine would carry answer links and the device cookie "
            "readable on the way; serve it over https (`tailscale serve`, a TLS tunnel) or a Tailscale *.ts.net "
            "name, or add --insecure-http to accept that"
        )
    return pub


def bind_address(pub: site.Public | None, bind_host: str | None, port: int | None) -> tuple[str, int]:
    """Where the server listens (the module's docstring says why): (address, port)."""
    if bind_host:
        return bind_host, DEFAULT_PORT if port is None else port
    direct = pub is not None and pub.scheme == "http" and site.ip_of(pub.host) is not None
    if pub is None or not direct:
        return HOST, DEFAULT_PORT if port is None else port
    own = pub.port if pub.port is not None else site.DEFAULT_PORTS[pub.scheme]
    if port is not None and port != own:
        raise UsageError(f"--port {port}: the server listens on {pub.url} itself, so on its port ({own})")
    return pub.host, own


def serve(
    layout: Layout,
    port: int | None = DEFAULT_PORT,
    *,
    open_browser: bool = False,
    announce: Callable[[str], None] | None = None,
    log_level: str = "warning",
    public: str | None = None,
    bind_host: str | None = None,
    insecure_http: bool = False,
) -> int:
    # watchdog warns when a new directory's watch replaces one it already had; harmless, and not for the terminal.
    warnings.filterwarnings("ignore", message="Callback with id", category=RuntimeWarning)
    pub = public_site(public, insecure_http)
    host, port = bind_address(pub, bind_host, port)
    sock = bind(port, host)
    port = sock.getsockname()[1]
    token = security.new_token(layout)

    def shutdown() -> None:
        security.remove_token(layout, token)
        if pub is not None:
            store.clear_page()

    # uvicorn re-raises SIGTERM/SIGINT after its shutdown, so the token file is removed in the lifespan's shutdown.
    hub = Hub(layout)
    app = create_app(layout, token=token, port=port, hub=hub, on_shutdown=shutdown,
                     public_url=pub.url if pub else None)  # fmt: skip
    base, with_token = urls(port, token, host)
    say = announce or (lambda line: (sys.stdout.write(line + "\n"), sys.stdout.flush()))
    say(f"cocoplus server for {layout.project}")
    say(f"  page:    {with_token}")
    say(f"  api:     {base}api/v1/  (OpenAPI: {base}api/v1/openapi.json)")
    if pub is None:
        say(f"  mcp:     {base}mcp  (MCP over Streamable HTTP, with the token)")
    else:
        store.write_page(pub.url, insecure_http, layout.project)
        say(f"  public:  {pub.url}/inbox  (the decision page; pair your phone with `cocoplus inbox pair`)")
        say("  mcp:     not served (--public)")
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
    watcher.start_traces(layout, "cocoplus serve")  # [telemetry]: in a thread, when traces are configured
    try:
        server.run(sockets=[sock])
    finally:
        notify.stop(wait=0)  # the lock goes with the process; a hanging target does not hold up its exit
        sock.close()
        shutdown()
    return 0 if server.started else 1


def _open_when_up(server: Any, url: str) -> None:
    deadline = time.monotonic() + 15
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    if server.started:
        webbrowser.open(url)
