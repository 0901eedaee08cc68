"""Every line sent to `cocoplus mcp` gets a JSON-RPC answer, as JSON-RPC 2.0 requires.

The SDK's stdio transport dropped a line it could not decode, so the client
waited forever: a truncated JSON line, and a request whose arguments hold a
lone surrogate escape (`"\\ud800"`: valid JSON text).  cocoplus.mcp.stdio
answers them: a parse error with id null, and an error with the request's id.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from queue import Empty, Queue
from typing import Any

import pytest

from cocoplus.core.paths import Layout

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


class Server:
    def __init__(self, layout: Layout) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cocoplus", "--dir", layout.project, "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=layout.project,
        )
        self.lines: Queue[bytes] = Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send_raw(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.rstrip(b"\n") + b"\n")
        self.proc.stdin.flush()

    def send(self, obj: dict[str, Any]) -> None:
        self.send_raw(json.dumps(obj).encode())

    def answer(self, timeout: float = 60) -> dict[str, Any]:
        try:
            return json.loads(self.lines.get(timeout=timeout))
        except Empty:
            raise AssertionError("no answer from the MCP server") from None

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def server(project: Layout) -> Any:
    s = Server(project)
    s.send(INIT)
    assert s.answer()["id"] == 1
    s.send(INITIALIZED)
    yield s
    s.close()


def test_a_lone_surrogate_in_arguments_gets_an_error_with_the_request_id(server: Server) -> None:
    # Written by hand: json.dumps would escape the escape.
    server.send_raw(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"report_progress","arguments":{"status":"working","message":"\\ud800"}}}')
    got = server.answer()
    assert got["id"] == 2 and got["error"]["code"] == -32602, got


def test_a_truncated_line_gets_a_parse_error_with_id_null(server: Server) -> None:
    server.send_raw(b'{"jsonrpc":"2.0","id":3,"method":"tools/li')
    got = server.answer()
    assert got == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": got["error"]["message"]}}, got


def test_garbage_bytes_get_a_parse_error(server: Server) -> None:
    server.send_raw(b"\xff\xfe not json at all")
    got = server.answer()
    assert got["id"] is None and got["error"]["code"] == -32700, got


def test_an_object_that_is_not_a_request_gets_an_error(server: Server) -> None:
    server.send_raw(b'{"id": 7, "no": "method"}')
    got = server.answer()
    assert got["id"] == 7 and got["error"]["code"] == -32600, got


def test_the_server_keeps_answering_after_bad_lines(server: Server) -> None:
    server.send_raw(b'{"jsonrpc":"2.0","id":3,"method":"tools/li')
    server.answer()
    server.send({"jsonrpc": "2.0", "id": 4, "method": "tools/list"})
    got = server.answer()
    assert got["id"] == 4 and any(t["name"] == "report_progress" for t in got["result"]["tools"])
