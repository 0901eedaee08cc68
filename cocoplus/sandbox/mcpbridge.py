"""The outside end of a sandboxed worker's MCP relay (hook/mcprelay.py): a real `cocoplus mcp` for one connection.

The worker's control channel (sandbox/channel.py) hands each connection that starts with the relay's `MAGIC` to
a process forked for it, which runs `serve` here, off the channel's accept loop: an `ask_human` waiting minutes
for its answer never holds up a hook.  `serve` starts one `cocoplus mcp --role worker` for the connection, the
MCP server of the worker's runtime, with the identity the channel gives (as for hooks): this project's
`COCOPLUS_DIR`, this worker's `COCOPLUS_WORKER`, the worker's directory, and the channel's own environment.  Of
the environment the relay sends only the variables that name the runtime's session are taken; nothing else it
says (a capability, `PYTHONPATH`, `LD_PRELOAD`, another project) reaches the server.  The role is always
`worker`: the sandbox holds no capability.

Each line from the relay goes to the server's stdin, and each line the server writes goes back: its responses by
their ids, its own requests and notifications as they come.  Every connection has its own server, so an id one
connection forges never reaches another's requests, and the server answers a response to nothing it asked with
an error (mcp/stdio.py).  Before a `tools/call` goes on, the session it speaks for (its `session` argument, else
the one the environment names) must be this worker's: a call for another worker's session is refused here with
an error.  A line longer than `MAX_LINE` is answered with an error and never held.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from typing import IO, Any

from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.hook import mcprelay
from cocoplus.runtimes import registry as runtimes
from cocoplus.session import registry

MAX_LINE = mcprelay.MAX_LINE
MAX_ENV = 1 << 20  # bytes of the relay's environment field
HEADER_TIMEOUT_S = 30.0
INVALID_PARAMS = -32602
SESSION_VARS = ("COCOPLUS_SESSION", *runtimes.session_env())  # as signals.which_session reads them
# The channel's own environment, less what names a state, a worker, a session or a capability.
IDENTITY = ("COCOPLUS_DIR", "COCOPLUS_WORKER", "COCOPLUS_WORKER_ALIAS", "COCOPLUS_MCP_TOKEN", *SESSION_VARS)
MAX_VALUE = 400


def recv_exact(conn: socket.socket, n: int) -> bytes:
    chunks: list[bytes] = []
    got = 0
    while got < n:
        chunk = conn.recv(min(n - got, 1 << 16))
        if not chunk:
            raise ValueError("the relay's header is cut short")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_header(conn: socket.socket) -> dict[str, str]:
    """The relay's environment, from its header.  ValueError, OSError."""
    conn.settimeout(HEADER_TIMEOUT_S)
    if recv_exact(conn, len(mcprelay.MAGIC)) != mcprelay.MAGIC:
        raise ValueError("not an MCP relay")
    length = recv_exact(conn, 10)
    if not length.isdigit() or int(length) > MAX_ENV:
        raise ValueError("the relay's environment is malformed or too large")
    env: dict[str, str] = {}
    for item in recv_exact(conn, int(length)).split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            env[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    conn.settimeout(None)
    return env


def server_env(asked: dict[str, str], layout: Layout, wid: str, alias: str | None) -> dict[str, str]:
    """The server's environment: the channel's own, this worker's identity, and the session the relay names."""
    env = {k: v for k, v in os.environ.items() if k not in IDENTITY}
    for name in SESSION_VARS:
        value = asked.get(name)
        if value and len(value) <= MAX_VALUE and "\0" not in value:
            env[name] = value
    env["COCOPLUS_DIR"] = layout.root
    env["COCOPLUS_WORKER"] = wid
    if alias:
        env["COCOPLUS_WORKER_ALIAS"] = alias
    return env


def foreign_session(layout: Layout, wid: str, doc: Any, env: dict[str, str]) -> str | None:
    """Why a `tools/call` is refused: it speaks for a session that is not this worker's; else None."""
    if not isinstance(doc, dict) or doc.get("method") != "tools/call":
        return None
    params = doc.get("params")
    args = params.get("arguments") if isinstance(params, dict) else None
    named = args.get("session") if isinstance(args, dict) else None
    refs = [named] if isinstance(named, str) and named else [env[v] for v in SESSION_VARS if env.get(v)]
    for ref in refs:
        try:
            rec = registry.resolve(layout, ref)
        except (CocoplusError, OSError, ValueError):
            continue
        if rec.get("worker") == wid:
            return None
        return f"session {rec.get('alias') or rec.get('id')} is not worker {wid}'s; this channel serves {wid} only"
    return None  # nothing names a known session: the server says which session it cannot tell


class Bridge:
    """One relay's connection and its server."""

    def __init__(self, conn: socket.socket, proc: subprocess.Popen[bytes], layout: Layout, wid: str) -> None:
        self.conn = conn
        self.proc = proc
        self.layout = layout
        self.wid = wid
        self.env: dict[str, str] = {}
        self.lock = threading.Lock()  # one line at a time to the relay

    def send(self, data: bytes) -> None:
        with self.lock:
            self.conn.sendall(data)

    def up_line(self, line: bytes | None, stdin: IO[bytes]) -> None:
        if line is None:
            self.send(mcprelay.error_line(None, mcprelay.INVALID_REQUEST, f"the line is longer than {MAX_LINE} bytes"))
            return
        try:
            doc = json.loads(line)
        except (ValueError, RecursionError):
            doc = None  # the server answers what is not JSON-RPC
        why = foreign_session(self.layout, self.wid, doc, self.env)
        if why is not None:
            assert isinstance(doc, dict)
            rid = doc.get("id")
            self.send(mcprelay.error_line(rid if isinstance(rid, (str, int)) else None, INVALID_PARAMS, why))
            return
        stdin.write(line + b"\n")
        stdin.flush()

    def up(self) -> None:
        """The relay's lines to the server, until the relay closes; then the server's stdin closes."""
        stdin = self.proc.stdin
        assert stdin is not None
        lines = mcprelay.Lines()
        try:
            while True:
                chunk = self.conn.recv(mcprelay.CHUNK)
                for line in lines.feed(chunk) if chunk else lines.end():
                    self.up_line(line, stdin)
                if not chunk:
                    return
        except OSError:
            return
        finally:
            try:
                stdin.close()
            except OSError:
                pass

    def down(self) -> None:
        """The server's lines to the relay, until the server ends."""
        stdout = self.proc.stdout
        assert stdout is not None
        try:
            while chunk := os.read(stdout.fileno(), mcprelay.CHUNK):
                self.send(chunk)
        except OSError:
            pass


def serve(conn: socket.socket, layout: Layout, wid: str, cwd: str, alias: str | None) -> int:
    """Serve one relay's connection (in a process forked for it) until either side ends."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the channel ignores it; this process waits for its server
    try:
        asked = read_header(conn)
    except (OSError, ValueError) as exc:
        try:
            conn.sendall(mcprelay.error_line(None, mcprelay.INVALID_REQUEST, f"cocoplus: refused: {exc}"))
        except OSError:
            pass
        return 1
    env = server_env(asked, layout, wid, alias)
    proc = subprocess.Popen(
        [sys.executable, "-m", "cocoplus", "mcp", "--role", "worker"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        cwd=cwd if os.path.isdir(cwd) else layout.project, env=env, start_new_session=True,
    )  # fmt: skip
    bridge = Bridge(conn, proc, layout, wid)
    bridge.env = env
    reader = threading.Thread(target=bridge.up, name="cocoplus-mcp-up", daemon=True)
    reader.start()
    bridge.down()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    reader.join(30)
    return 0
