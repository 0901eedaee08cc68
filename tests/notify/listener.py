"""Local notification targets for the tests: an HTTP listener that records what apprise posts,
a server that accepts connections and never answers, and a port nothing listens on."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Listener:
    """Records every POST as (monotonic arrival time, path, JSON body), and its bytes as they came.

    With `answer_after` (an Event), each request is recorded at once but answered only once the event
    is set: the sender has delivered and does not know it yet.
    """

    def __init__(self, answer_after: threading.Event | None = None) -> None:
        self.received: list[tuple[float, str, dict[str, Any]]] = []
        self.raw: list[bytes] = []
        got, raw = self.received, self.raw

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(n)
                raw.append(data)
                got.append((time.monotonic(), self.path, json.loads(data or b"{}")))
                if answer_after is not None:
                    answer_after.wait(120)
                try:
                    self.send_response(200)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                except OSError:
                    pass  # the sender is gone (killed while it waited for this answer)

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str = "notify") -> str:
        return f"json://127.0.0.1:{self.port}/{path}"

    def bodies(self) -> list[dict[str, Any]]:
        return [b for _, _, b in self.received]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Hang:
    """Accepts connections and never answers; notes when each was accepted and when the client gave up."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.accepted: list[float] = []
        self.closed: list[float] = []
        self.conns: list[socket.socket] = []
        self.stopping = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(time.monotonic())
            self.conns.append(conn)
            threading.Thread(target=self._hold, args=(conn,), daemon=True).start()

    def _hold(self, conn: socket.socket) -> None:
        try:
            while conn.recv(65536):  # read the request, never answer; b"" when the client hangs up
                pass
        except OSError:
            pass
        self.closed.append(time.monotonic())

    def url(self) -> str:
        return f"json://127.0.0.1:{self.port}/hang?rto=120&cto=120"

    def close(self) -> None:
        self.stopping = True
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass
        self.sock.close()


def closed_port_url() -> str:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"json://127.0.0.1:{port}/dead"
