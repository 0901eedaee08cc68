"""Inside a sandbox whose network is limited: the way out, then the worker's runtime.

`python -S forward.py PROXY_SOCKET [--map PORT=HOST]... -- COMMAND...`, started by bubblewrap in the worker's own
network namespace (nothing there but its loopback).  It listens on its loopback, forks a process that carries
each connection to the worker's proxy (outside, cocoplus/sandbox/netproxy.py) through the Unix socket mounted at
PROXY_SOCKET, and then becomes COMMAND, with HTTP_PROXY and HTTPS_PROXY naming its port.  Each `--map PORT=HOST`
is a model endpoint on the loopback outside (a stand-in, a local gateway) at HOST:PORT: a connection to PORT on the
loopback inside (127.0.0.1, and ::1 where there is one) is carried to HOST:PORT outside, through the proxy, so that
a base URL naming it works unchanged.

The forwarder decides nothing: the proxy outside does.  It ends with the sandbox (its pid namespace ends with the
runtime).  Standard library only, and no cocoplus import: it runs before the runtime, on every start.
"""

from __future__ import annotations

import os
import socket
import sys
import threading

CHUNK = 64 * 1024
HEAD_MAX = 64 * 1024
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
DIRECT = "localhost,127.0.0.1,::1"  # its own loopback: inside the sandbox, not the host's


def pipe(src: socket.socket, dst: socket.socket) -> None:
    """Copy `src` to `dst` until `src` ends, then end `dst`'s writing side."""
    try:
        while chunk := src.recv(CHUNK):
            dst.sendall(chunk)
    except OSError:
        pass
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def outside(path: str, target: str | None) -> socket.socket | None:
    """A connection to the proxy; for a mapped port, already tunnelled to that port on the loopback outside."""
    up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        up.connect(path)
        if target is None:
            return up
        up.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head and len(head) < HEAD_MAX:
            chunk = up.recv(4096)
            if not chunk:
                break
            head += chunk
        if head.split(b" ", 2)[1:2] == [b"200"] and head.endswith(b"\r\n\r\n"):
            return up
    except OSError:
        pass
    up.close()
    return None


def carry(conn: socket.socket, path: str, target: str | None) -> None:
    up = outside(path, target)
    if up is None:
        conn.close()
        return
    back = threading.Thread(target=pipe, args=(up, conn), daemon=True)
    back.start()
    pipe(conn, up)
    back.join()
    conn.close()
    up.close()


def serve(listener: socket.socket, path: str, target: str | None) -> None:
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            continue
        threading.Thread(target=carry, args=(conn, path, target), daemon=True).start()


def listen(port: int, family: int = socket.AF_INET) -> socket.socket:
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("::1" if family == socket.AF_INET6 else "127.0.0.1", port))
    s.listen(128)
    return s


def also_v6(port: int) -> list[socket.socket]:
    """The same port on ::1, where the sandbox's loopback has it (`localhost` may name either)."""
    try:
        return [listen(port, socket.AF_INET6)]
    except OSError:
        return []


def main(argv: list[str]) -> int:
    if "--" not in argv or argv.index("--") < 1 or argv.index("--") == len(argv) - 1:
        sys.stderr.write("usage: forward.py PROXY_SOCKET [--map PORT]... -- COMMAND...\n")
        return 2
    cut = argv.index("--")
    path, opts, command = argv[0], argv[1:cut], argv[cut + 1 :]
    mapped = [opts[i + 1].partition("=") for i in range(0, len(opts) - 1, 2) if opts[i] == "--map"]
    try:
        general = listen(0)
        listeners: list[tuple[socket.socket, str | None]] = [(general, None)]
        for number, _, host in mapped:
            where = f"[{host}]:{number}" if ":" in host else f"{host}:{number}"
            listeners += [(s, where) for s in (listen(int(number)), *also_v6(int(number)))]
    except OSError as exc:
        sys.stderr.write(f"cocoplus: the sandbox's way to its proxy cannot listen on its loopback ({exc}): blocked\n")
        return 126
    port = general.getsockname()[1]
    if os.fork() == 0:
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        for listener, to in listeners[1:]:
            threading.Thread(target=serve, args=(listener, path, to), daemon=True).start()
        serve(general, path, None)
        os._exit(0)
    for listener, _ in listeners:
        listener.close()
    env = dict(os.environ)
    env.update(dict.fromkeys(PROXY_VARS, f"http://127.0.0.1:{port}"))
    env.update(NO_PROXY=DIRECT, no_proxy=DIRECT, NODE_USE_ENV_PROXY="1")
    try:
        os.execvpe(command[0], command, env)
    except OSError as exc:
        sys.stderr.write(f"cocoplus: cannot run {command[0]} ({exc.strerror})\n")
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
