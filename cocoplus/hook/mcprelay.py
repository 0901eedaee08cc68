"""`cocoplus mcp` inside a cocoplus sandbox: a relay to the worker's MCP server outside, through the control channel.

Inside a worker's sandbox `.cocoplus/` is read-only and this user's keys are absent, so the MCP server's tools
that write (`report_progress`, `ask_human`, ...) cannot work there.  The runtime still starts `cocoplus mcp` from
`.mcp.json`; inside the sandbox that command is this relay.  It connects to the control channel
(hook/channel.py's `CHANNEL`), sends `MAGIC` and its environment (one field), and from then on the connection
carries MCP's stdio wire: each line read on stdin goes to the channel, where a real `cocoplus mcp` serving the
worker tools runs for this connection (cocoplus/sandbox/mcpbridge.py), and each line it answers comes back on
stdout.  Requests get their responses by id, notifications none, and requests the server sends (with their ids)
come through the same way.

It fails closed and never writes anywhere itself: while the channel cannot be reached (or once it is lost) every
request is answered with a JSON-RPC error saying so, and every request still waiting gets one too.  A line over
`MAX_LINE` bytes is answered at once and never sent.  Standard library only.
"""

import json
import os
import socket
import sys
import threading

from cocoplus.hook import channel

MAGIC = b"MCP/1\n"  # a hook's frame starts with ten ASCII digits: this cannot be one
MAX_LINE = 4 * 1024 * 1024  # bytes in one line, as cocoplus mcp's own cap (mcp/stdio.py)
UNREACHABLE = -32000  # JSON-RPC's implementation-defined server error
INVALID_REQUEST = -32600
CHUNK = 1 << 16


def error_line(rid: "object", code: int, message: str) -> bytes:
    """One JSON-RPC error response, as a line."""
    doc = {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}
    return (json.dumps(doc) + "\n").encode()


def request_id(line: bytes) -> "tuple[bool, object]":
    """(whether `line` is a request, its id): a request has a method and an id (a string or an integer)."""
    try:
        doc = json.loads(line)
    except (ValueError, RecursionError):
        return False, None
    if not isinstance(doc, dict) or not isinstance(doc.get("method"), str) or "id" not in doc:
        return False, None
    rid = doc["id"]
    return isinstance(rid, (str, int)) and not isinstance(rid, bool), rid


def response_id(line: bytes) -> "object":
    try:
        doc = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if isinstance(doc, dict) and "method" not in doc and ("result" in doc or "error" in doc):
        return doc.get("id")
    return None


class Lines:
    """Cuts bytes into lines, never holding more than `cap` bytes of one: a longer line comes as None, once."""

    def __init__(self, cap: int = MAX_LINE) -> None:
        self.cap = cap
        self.buf = bytearray()
        self.discarding = False

    def feed(self, chunk: bytes) -> "list[bytes | None]":
        out: "list[bytes | None]" = []
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            piece = chunk[start:] if nl < 0 else chunk[start:nl]
            if self.discarding:
                pass
            elif len(self.buf) + len(piece) > self.cap:
                out.append(None)
                self.discarding = True
                self.buf.clear()
            else:
                self.buf += piece
            if nl < 0:
                return out
            if not self.discarding:
                out.append(bytes(self.buf))
            self.buf.clear()
            self.discarding = False
            start = nl + 1

    def end(self) -> "list[bytes | None]":
        last = bytes(self.buf)
        self.buf.clear()
        return [last] if last and not self.discarding else []


class Relay:
    """One relay: stdin to the channel, the channel to stdout, and an error for every request it cannot carry."""

    def __init__(self, conn: "socket.socket | None", why: "str | None", out_fd: int = 1) -> None:
        self.conn = conn
        self.broken = why  # why the channel cannot be used, once it cannot
        self.out_fd = out_fd
        self.lock = threading.Lock()  # one line at a time on stdout, and the pending ids with it
        self.pending: "set[object]" = set()

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.out_fd, view) :]

    def refusal(self, rid: "object") -> bytes:
        return error_line(
            rid,
            UNREACHABLE,
            f"cocoplus: this worker's sandbox cannot reach its control channel {channel.CHANNEL} ({self.broken}); "
            "the tool did not run",
        )

    def lose(self, why: str) -> None:
        """The channel is gone: every request still waiting is answered with an error, and every later one."""
        with self.lock:
            if self.broken is None:
                self.broken = why
            waiting, self.pending = self.pending, set()
            for rid in waiting:
                self.write(self.refusal(rid))

    def up(self, line: "bytes | None") -> None:
        """One line read on stdin."""
        if line is None:
            with self.lock:
                self.write(error_line(None, INVALID_REQUEST, f"the line is longer than {MAX_LINE} bytes; discarded"))
            return
        is_request, rid = request_id(line)
        with self.lock:
            if self.broken is None and self.conn is not None:
                try:
                    self.conn.sendall(line + b"\n")
                except OSError as exc:
                    self.broken = exc.strerror or str(exc) or type(exc).__name__
                else:
                    if is_request:
                        self.pending.add(rid)
                    return
            if is_request:
                self.write(self.refusal(rid))
        if self.pending:
            self.lose(self.broken or "the control channel closed")

    def down(self) -> None:
        """The channel's lines to stdout, until it closes; then what still waits is answered with an error."""
        assert self.conn is not None
        lines = Lines()
        why = "the control channel closed"
        while True:
            try:
                chunk = self.conn.recv(CHUNK)
            except OSError as exc:
                why = exc.strerror or str(exc) or type(exc).__name__
                chunk = b""
            for line in lines.feed(chunk) if chunk else lines.end():
                if line is None:
                    continue  # nothing this long comes from cocoplus's server
                rid = response_id(line)
                with self.lock:
                    self.pending.discard(rid)
                    self.write(line + b"\n")
            if not chunk:
                self.lose(why)
                return


def connect(path: str = channel.CHANNEL) -> socket.socket:
    """The channel, with this relay's header sent.  OSError."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
        env = b"\0".join(k + b"=" + v for k, v in os.environb.items())
        conn.sendall(MAGIC + channel.field(env))
    except OSError:
        conn.close()
        raise
    return conn


def relay(path: str = channel.CHANNEL, in_fd: int = 0, out_fd: int = 1) -> int:
    """Relay MCP's wire between `in_fd`/`out_fd` and the channel at `path` until stdin closes."""
    try:
        conn: "socket.socket | None" = connect(path)
        why = None
    except OSError as exc:
        conn, why = None, exc.strerror or str(exc) or type(exc).__name__
    r = Relay(conn, why, out_fd)
    reader = None
    if conn is not None:
        reader = threading.Thread(target=r.down, name="cocoplus-mcp-relay", daemon=True)
        reader.start()
    lines = Lines()
    while True:
        chunk = os.read(in_fd, CHUNK)
        for line in lines.feed(chunk) if chunk else lines.end():
            r.up(line)
        if not chunk:
            break
    if conn is not None and reader is not None:
        try:
            conn.shutdown(socket.SHUT_WR)  # the server outside ends as its stdin does
        except OSError:
            pass
        reader.join(60)
        conn.close()
    return 0


def main(argv: "list[str]") -> int:
    """`cocoplus mcp [--role R]` inside a sandbox: the worker's tools, from outside, whatever the role asked."""
    roles = [b for a, b in zip(argv, [*argv[1:], ""]) if a == "--role"] + [a[7:] for a in argv if a[:7] == "--role="]
    if any(role != "worker" for role in roles):
        sys.stderr.write("cocoplus mcp: inside a cocoplus sandbox only the worker tools are served\n")
        sys.stderr.flush()
    return relay()
