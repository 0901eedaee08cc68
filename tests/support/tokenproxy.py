"""A loopback proxy that adds the server's token, for clients that cannot send a header of their own.

The official MCP conformance suite takes only a URL. `cocoplus serve` wants `Authorization: Bearer
<token>` on every `/mcp` request, so the suite is pointed at this proxy, which forwards each request to
the server as it came, with three changes to its head: the token is set, `Connection: close` (one
request a connection, so every request head passes through here), and a `Host` or `Origin` that names
this proxy's own loopback address is turned into the server's (what a reverse proxy does). Any other
`Host` or `Origin` goes through untouched: the server's DNS-rebinding check still sees it. Bodies and
answers, event streams included, are relayed byte for byte.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

NAMES = ("127.0.0.1", "localhost", "[::1]")
MAX_HEAD = 64 * 1024


class TokenProxy:
    def __init__(self, server_port: int, token: str) -> None:
        self.server_port = server_port
        self.token = token
        self.port = 0
        self.requests: list[str] = []  # request lines, as forwarded
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._server: asyncio.base_events.Server | None = None

    def __enter__(self) -> TokenProxy:
        self._thread.start()
        if not self._ready.wait(10):
            raise AssertionError("the token proxy did not start")
        return self

    def __exit__(self, *exc: Any) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        self._server.close()

    def _head(self, raw: bytes) -> bytes:
        lines = raw.decode("latin-1").split("\r\n")
        self.requests.append(lines[0])
        mine = {f"{n}:{self.port}": f"{n}:{self.server_port}" for n in NAMES}
        out = [lines[0]]
        for line in lines[1:]:
            name, _, value = line.partition(":")
            key, value = name.strip().lower(), value.strip()
            if key in ("authorization", "connection", "keep-alive"):
                continue
            if key == "host":
                value = mine.get(value.lower(), value)
            elif key == "origin" and value.lower().startswith("http://"):
                value = "http://" + mine.get(value[7:].lower(), value[7:])
            out.append(f"{name}: {value}")
        out += [f"Authorization: Bearer {self.token}", "Connection: close"]
        return ("\r\n".join(out) + "\r\n\r\n").encode("latin-1")

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            raw = await client_r.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            client_w.close()
            return
        if len(raw) > MAX_HEAD:
            client_w.close()
            return
        server_r, server_w = await asyncio.open_connection("127.0.0.1", self.server_port)
        server_w.write(self._head(raw[:-4]))
        upstream = asyncio.ensure_future(_pipe(client_r, server_w))
        await _pipe(server_r, client_w)  # the answer, until the server closes (Connection: close)
        upstream.cancel()
        for w in (client_w, server_w):
            w.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        pass
