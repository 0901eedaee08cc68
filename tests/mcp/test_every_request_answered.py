"""Every line sent to `cocoplus mcp` gets a JSON-RPC answer, as JSON-RPC 2.0 requires.

The SDK's stdio transport dropped a line it could not decode, so the client
waited forever: a truncated JSON line, and a request whose arguments hold a
lone surrogate escape (`"\\ud800"`: valid JSON text).  cocoplus.mcp.stdio
answers them: a parse error with no id (`"id": null` under a protocol version before 2025-11-25),
and an error with the request's id.
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
from tests.support.typed import present

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
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


@pytest.mark.slow
def test_a_lone_surrogate_in_arguments_gets_an_error_with_the_request_id(server: Server) -> None:
    # Written by hand: json.dumps would escape the escape.
    server.send_raw(
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"report_progress","arguments":{"status":"working","message":"\\ud800"}}}'
    )
    got = server.answer()
    assert got["id"] == 2 and got["error"]["code"] == -32602, got


@pytest.mark.slow
def test_a_truncated_line_gets_a_parse_error_with_id_null(server: Server) -> None:
    server.send_raw(b'{"jsonrpc":"2.0","id":3,"method":"tools/li')
    got = server.answer()
    assert got == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": got["error"]["message"]}}, got


@pytest.mark.slow
def test_garbage_bytes_get_a_parse_error(server: Server) -> None:
    server.send_raw(b"\xff\xfe not json at all")
    got = server.answer()
    assert got["id"] is None and got["error"]["code"] == -32700, got


@pytest.mark.slow
def test_an_object_that_is_not_a_request_gets_an_error(server: Server) -> None:
    server.send_raw(b'{"id": 7, "no": "method"}')
    got = server.answer()
    assert got["id"] == 7 and got["error"]["code"] == -32600, got


@pytest.mark.slow
def test_the_server_keeps_answering_after_bad_lines(server: Server) -> None:
    server.send_raw(b'{"jsonrpc":"2.0","id":3,"method":"tools/li')
    server.answer()
    server.send({"jsonrpc": "2.0", "id": 4, "method": "tools/list"})
    got = server.answer()
    assert got["id"] == 4 and any(t["name"] == "report_progress" for t in got["result"]["tools"])


# --- The SDK's own client session, with bad lines written raw to the same stdin in between ---

CAP = 4 * 1024 * 1024  # cocoplus.mcp.stdio.MAX_LINE, written out: the test pins the documented figure
PING = b'{"jsonrpc":"2.0","id":"raw-near-cap","method":"ping"}'

# (line, the code of its error answer, the id it carries)
BAD_LINES: list[tuple[bytes, int, str | None]] = [
    (b"[" * 100_000 + b"]" * 100_000, -32700, None),  # ended the server with a RecursionError
    (
        b'{"jsonrpc":"2.0","id":"raw-deep","method":"tools/call","params":{"name":"report_progress","arguments":{"status":'
        + b"[" * 200
        + b"]" * 200
        + b"}}}",
        -32700,
        None,
    ),
    (b'{"jsonrpc":"2.0","id":"raw-huge","method":"ping","pad":"' + b"x" * (CAP + 1024 * 1024) + b'"}', -32600, None),
    (b"\xff\xfe not json at all", -32700, None),
    (b'{"jsonrpc":"2.0","id":"raw-cut","method":"tools/li', -32700, None),
    (b"", -32700, None),
    (b"[1, 2]", -32600, None),
    (b"[]", -32600, None),
    (b'[{"jsonrpc":"2.0","id":"raw-batch","method":"ping"}]', -32600, None),
    (b'"hello"', -32600, None),
    (b"42", -32600, None),
    (b"null", -32600, None),
    (b'{"jsonrpc":"2.0","id":"raw-nothing"}', -32600, "raw-nothing"),
    (b'{"jsonrpc":"1.0","id":"raw-v1","method":"tools/list"}', -32600, "raw-v1"),
    (b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}', -32600, None),  # was taken for a notification
    (b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}', -32600, None),  # was taken for a notification
    (b'{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', -32600, None),
    (b'{"jsonrpc":"2.0","id":"raw-m","method":7}', -32600, "raw-m"),
    (b'{"jsonrpc":"2.0","id":"raw-stray","result":{}}', -32600, None),  # a response to nothing the server asked
    (b'{"jsonrpc":"2.0","id":"raw-stray-err","error":{"code":1,"message":"x"}}', -32600, None),
    (b'{"jsonrpc":"2.0","id":"raw-no-such","method":"no/such/method"}', -32601, "raw-no-such"),
    (
        b'{"jsonrpc":"2.0","id":"raw-sur","method":"tools/call","params":{"name":"report_progress","arguments":{"status":"working","message":"\\ud800"}}}',
        -32602,
        "raw-sur",
    ),
    (b'{"jsonrpc":"2.0","id":"raw-params","method":"tools/list","params":[1]}', -32602, "raw-params"),
]


class RawBeside:
    """`cocoplus mcp` as a child process: an `mcp.ClientSession` talks to it, and raw lines go in between.

    Every line from the server that answers a raw line (an id null, or an id
    starting with "raw-") is kept for `raw`; everything else reaches the session.
    """

    def __init__(self, proc: Any) -> None:
        import anyio

        self.proc = proc
        self.lock = anyio.Lock()
        self.to_session, self.session_reads = anyio.create_memory_object_stream[Any](100)
        self.session_writes, self.from_session = anyio.create_memory_object_stream[Any](100)
        self.raw_send, self.raw_answers = anyio.create_memory_object_stream[dict[str, Any]](100)

    async def pump_to_server(self) -> None:
        async with self.from_session:
            async for item in self.from_session:
                data = item.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
                async with self.lock:
                    await self.proc.stdin.send(data)

    async def pump_from_server(self) -> None:
        import anyio
        from anyio.streams.buffered import BufferedByteReceiveStream
        from mcp.shared.message import SessionMessage
        from mcp_types import jsonrpc_message_adapter

        lines = BufferedByteReceiveStream(self.proc.stdout)
        async with self.to_session, self.raw_send:
            while True:
                try:
                    line = await lines.receive_until(b"\n", 1 << 24)
                except (anyio.EndOfStream, anyio.IncompleteRead):
                    return
                doc = json.loads(line)
                answers_raw = ("result" in doc or "error" in doc) and (
                    doc.get("id") is None or str(doc["id"]).startswith("raw-")
                )
                if answers_raw:
                    await self.raw_send.send(doc)
                else:
                    await self.to_session.send(SessionMessage(jsonrpc_message_adapter.validate_python(doc)))

    async def raw(self, line: bytes) -> dict[str, Any]:
        """Write `line` to the server's stdin and return the one answer it gets."""
        import anyio

        async with self.lock:
            await self.proc.stdin.send(line + b"\n")
        with anyio.fail_after(120):
            return await self.raw_answers.receive()


@pytest.mark.slow
def test_a_real_client_session_keeps_working_between_bad_lines(
    project: Layout, sessions: dict[str, Any], tmp_path: Any
) -> None:
    import os

    import anyio
    from mcp import ClientSession

    stderr_path = tmp_path / "mcp.stderr"
    made: dict[str, Any] = {}

    async def main() -> None:
        with open(stderr_path, "wb") as errlog:
            proc = await anyio.open_process(
                [sys.executable, "-m", "cocoplus", "mcp"],
                cwd=project.project,
                env={**os.environ, "COCOPLUS_OPERATOR": "tester"},
                stderr=errlog,
            )
        async with proc:
            wire = RawBeside(proc)
            async with anyio.create_task_group() as tg:
                tg.start_soon(wire.pump_to_server)
                tg.start_soon(wire.pump_from_server)
                async with ClientSession(wire.session_reads, wire.session_writes) as session:
                    with anyio.fail_after(120):
                        await session.initialize()
                    for n, (line, code, rid) in enumerate(BAD_LINES):
                        got = await wire.raw(line)
                        # The session settles on 2025-11-25, whose error that answers no request has no id.
                        keys = {"jsonrpc", "error"} if rid is None else {"jsonrpc", "id", "error"}
                        assert set(got) == keys and got["jsonrpc"] == "2.0", (line[:80], got)
                        assert (got["error"]["code"], got.get("id")) == (code, rid), (line[:80], got)
                        assert isinstance(got["error"]["message"], str) and got["error"]["message"], got
                        # The next real call, through the session, is served.
                        with anyio.fail_after(120):
                            res = await session.call_tool(
                                "report_progress", {"status": "working", "message": f"after line {n}", "session": "cc1"}
                            )
                        assert not res.is_error and res.structured_content["signal"]["message"] == f"after line {n}", (
                            res
                        )
                    # A line just under the cap is served like any other.
                    assert (await wire.raw(PING + b" " * (CAP - len(PING)))) == {
                        "jsonrpc": "2.0",
                        "id": "raw-near-cap",
                        "result": {},
                    }
                    # An error answering "no request" (id null) is the one line left unanswered: answering it
                    # could set two such peers answering each other forever.
                    async with wire.lock:
                        await present(proc.stdin).send(
                            b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}\n'
                        )
                    with anyio.fail_after(120):
                        made["tools"] = {t.name for t in (await session.list_tools()).tools}
                    # Answers come in the order of the lines: nothing more is on its way for any raw line.
                    with pytest.raises(anyio.WouldBlock):
                        wire.raw_answers.receive_nowait()
                await present(proc.stdin).aclose()
                with anyio.fail_after(120):
                    made["code"] = await proc.wait()
                tg.cancel_scope.cancel()

    anyio.run(main)
    assert made["code"] == 0
    assert "report_progress" in made["tools"]
    signals = [
        s.get("message")
        for s in map(json.loads, open(project.signals).read().splitlines())
        if s["kind"] == "report_progress"
    ]
    assert signals == [f"after line {n}" for n in range(len(BAD_LINES))]
    log = stderr_path.read_text()
    assert log.count(f"a line longer than {CAP} bytes was answered with an error and discarded") == 1, log
    assert log.count("an error response with id null was not answered") == 1, log
