"""A loopback TCP proxy that can cut a machine off from the fleet's server, the way a network outage would.

While cut, it closes every connection through it and refuses new ones
(accepts and closes at once), so the relay behind it sees the server as
down while the server and the other machines carry on.
"""

from __future__ import annotations

import socket
import threading

from tests.fleet.natsserver import free_port


class Proxy:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self.cut = threading.Event()
        self.closing = threading.Event()
        self.lock = threading.Lock()
        self.sockets: set[socket.socket] = set()
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", self.port))
        self.server.listen(64)
        self.server.settimeout(0.2)
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self.closing.is_set():
            try:
                client, _ = self.server.accept()
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                return
            if self.cut.is_set():
                client.close()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=2)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.sockets.update((client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data or self.cut.is_set():
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.close()
                except OSError:
                    pass
            with self.lock:
                self.sockets.discard(src)
                self.sockets.discard(dst)

    def cut_off(self) -> None:
        self.cut.set()
        with self.lock:
            live = list(self.sockets)
        for s in live:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def restore(self) -> None:
        self.cut.clear()

    def close(self) -> None:
        self.closing.set()
        self.cut_off()
        self.server.close()
        self.thread.join(5)
