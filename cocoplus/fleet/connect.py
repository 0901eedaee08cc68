"""One connection to the fleet's NATS servers, with this machine's credentials, TLS and inbox.

The official client, nats-py; only fleet code imports this module (never the
hook, never a CLI command other than `relay` and `fleet`).  Connections do
not reconnect by themselves: the relay owns reconnection (with back-off,
and a full catch-up on every new connection), and a fleet command either
answers or says it could not reach the fleet.  Nor does a connection attempt
go round the servers by itself: nats-py, even with reconnection off, tries a
server that refused it again every `reconnect_time_wait` (2 s) up to
`max_reconnect_attempts` (60) times before it gives up, two minutes in which
a relay said nothing and could not stop; here each server is tried at most
twice, back to back (nats-py drops a server only once its failures exceed
`max_reconnect_attempts`, so 1 is the least), and the attempt fails at once.

`until` waits for something or for a stop, whichever comes first: a
long-lived client (the relay) ends promptly on SIGTERM whatever it was
waiting on (a connection attempt, a catch-up on a server gone silent).
"""

from __future__ import annotations

import asyncio
import random
import ssl
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import nats
from nats.aio.client import Client
from nats.js.errors import ServiceUnavailableError

from cocoplus.fleet import naming
from cocoplus.fleet.options import FleetOptions, FleetUnreachable

CONNECT_TIMEOUT_S = 3
PING_INTERVAL_S = 5  # a silent server (a cut cable, not a closed socket) is noticed within about 3 pings
MAX_OUTSTANDING_PINGS = 3
BACKOFF_MIN_S = 0.2  # connecting again after a failure: the first wait, doubled each time up to BACKOFF_MAX_S
BACKOFF_MAX_S = 10.0
UNAVAILABLE_RETRY_S = 1.0  # a 503 from JetStream (a leader being elected): asked again after this long
CLOSE_S = 0.5  # closing a connection waits no longer than this for a server that stopped answering
CANCEL_WAIT_S = 0.5  # `until`: how long what was cancelled on a stop may take to unwind

T = TypeVar("T")


class Backoff:
    """How long a long-lived client (the relay, the fleet watcher) waits before connecting again.

    Doubling from BACKOFF_MIN_S up to BACKOFF_MAX_S, each wait jittered by
    20% either way so that machines cut off together do not come back together.
    """

    def __init__(self) -> None:
        self.delay = BACKOFF_MIN_S

    def reset(self) -> None:
        """After a connection that lasted: the next wait is the shortest again."""
        self.delay = BACKOFF_MIN_S

    def next(self) -> float:
        wait = self.delay * random.uniform(0.8, 1.2)
        self.delay = min(BACKOFF_MAX_S, self.delay * 2)
        return wait


async def pause(stop: asyncio.Event, seconds: float) -> None:
    """Wait `seconds`, or less if `stop` is set meanwhile."""
    try:
        await asyncio.wait_for(stop.wait(), timeout=seconds)
    except asyncio.TimeoutError:
        pass


async def until(stop: asyncio.Event, aw: Awaitable[T]) -> T | None:
    """`aw`'s result (or its exception), or None as soon as `stop` is set first: `aw` is then cancelled, and given
    at most CANCEL_WAIT_S to unwind."""
    task = asyncio.ensure_future(aw)
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:  # this wait itself cancelled: what it waited for goes too
        task.cancel()
        raise
    finally:
        stopped.cancel()
    if task.done():
        return task.result()
    task.cancel()
    await asyncio.wait({task}, timeout=CANCEL_WAIT_S)
    if task.done() and not task.cancelled():
        task.exception()  # retrieved: an error while unwinding is not reported as never retrieved
    return None


class Pull:
    """Fetching from a pull consumer for a long-lived client, on one connection.

    `fetch` returns what came within `timeout`, [] when nothing did, and []
    after a second's pause when the servers answer 503 (a cluster electing
    the stream's leader): the connection stays, and each spell of 503s is
    logged once (as `what`), not every second.
    """

    def __init__(self, sub: Any, stop: asyncio.Event, log: Callable[[str], None], what: str) -> None:
        self.sub = sub
        self.stop = stop
        self.log = log
        self.what = what
        self.unavailable = False

    async def fetch(self, batch: int, timeout: float) -> list[Any]:
        try:
            msgs = await self.sub.fetch(batch, timeout=timeout)
        except asyncio.TimeoutError:  # nats' own TimeoutError too: nothing new within `timeout`
            self.unavailable = False
            return []
        except ServiceUnavailableError:
            if not self.unavailable:
                self.log(f"{self.what}: the servers answer that JetStream is unavailable; asking again every second")
            self.unavailable = True
            await pause(self.stop, UNAVAILABLE_RETRY_S)
            return []
        self.unavailable = False
        return list(msgs)


class Connection:
    """A connected client, and the errors the server reported on it (a refused permission, say)."""

    def __init__(self, nc: Client, opts: FleetOptions) -> None:
        self.nc = nc
        self.opts = opts
        self.js = nc.jetstream(timeout=5)
        self.errors: list[str] = []

    def explain(self, what: str) -> str:
        """`what` failed: say so, with the server's last complaint if it made one."""
        if self.errors:
            return f"{what}; the server said: {self.errors[-1]}"
        return what

    @property
    def server(self) -> str | None:
        url = getattr(self.nc, "connected_url", None)
        return None if url is None else f"{url.scheme}://{url.hostname}:{url.port}"

    def cluster_size(self) -> int:
        try:
            return max(1, len(self.nc.servers))
        except Exception:  # noqa: BLE001 - a detail of the client; one server is the safe guess
            return 1

    async def close(self) -> None:
        """Close it, waiting at most CLOSE_S (a server that stopped answering is not waited for)."""
        try:
            await asyncio.wait_for(self.nc.close(), CLOSE_S)
        except Exception:  # noqa: BLE001 - closing a connection that already failed must not raise
            pass


def _tls(opts: FleetOptions) -> ssl.SSLContext | None:
    if not (opts.tls_ca or opts.tls_cert or any(u.startswith(("tls://", "wss://")) for u in opts.urls)):
        return None
    ctx = ssl.create_default_context(cafile=opts.tls_ca)
    if opts.tls_cert:
        ctx.load_cert_chain(opts.tls_cert, opts.tls_key)
    return ctx


async def connect(
    opts: FleetOptions,
    *,
    name: str,
    on_closed: Callable[[], Awaitable[None]] | None = None,
) -> Connection:
    """Connect to the first reachable server of the fleet; FleetUnreachable naming them otherwise."""
    holder: dict[str, Connection] = {}
    early: list[str] = []

    async def error_cb(exc: Exception) -> None:
        text = " ".join(str(exc).split()) or type(exc).__name__
        (holder["c"].errors if "c" in holder else early).append(text)

    async def closed_cb() -> None:
        if on_closed is not None:
            await on_closed()

    kwargs: dict[str, Any] = {
        "servers": list(opts.urls),
        "name": name,
        "allow_reconnect": False,
        "max_reconnect_attempts": 1,  # each server at most twice, then NoServersError (see the module's text)
        "reconnect_time_wait": 0,
        "connect_timeout": CONNECT_TIMEOUT_S,
        "ping_interval": PING_INTERVAL_S,
        "max_outstanding_pings": MAX_OUTSTANDING_PINGS,
        "inbox_prefix": naming.inbox_prefix(opts.fleet, opts.machine),
        "error_cb": error_cb,
        "closed_cb": closed_cb,
    }
    if opts.creds_file:
        kwargs["user_credentials"] = opts.creds_file
    if opts.nkey_file:
        kwargs["nkeys_seed"] = opts.nkey_file
    if opts.user:
        kwargs["user"] = opts.user
        kwargs["password"] = opts.password or ""
    if opts.token:
        kwargs["token"] = opts.token
    tls = _tls(opts)
    if tls is not None:
        kwargs["tls"] = tls
    servers = ", ".join(opts.urls)
    try:
        nc = await nats.connect(**kwargs)
    except Exception as exc:  # noqa: BLE001 - nats-py raises many kinds; each becomes one line
        cause = early[-1] if early else (" ".join(str(exc).split()) or type(exc).__name__)
        raise FleetUnreachable(
            f"cannot reach the fleet server ({servers}): {cause}",
            hint="check [fleet] url and the credentials; `cocoplus relay status` shows the relay's last error",
        ) from None
    conn = Connection(nc, opts)
    conn.errors.extend(early)
    holder["c"] = conn
    return conn
