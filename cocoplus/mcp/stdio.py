"""The MCP server on stdin/stdout, answering every line it is sent.

JSON-RPC 2.0 says a request always gets a response.  The SDK's stdio
transport (`mcp.server.stdio.stdio_server`) reads a line of any length,
hands a line it cannot decode to the session as an exception (which the
session drops: the client waits forever), decodes `{"id": null, ...}`,
`{"id": true, ...}` and an object with a `method` but a bad `jsonrpc` as a
notification (never answered), and has no hook to change that.  A line
nested a hundred thousand deep even ended the server (a RecursionError).
So cocoplus reads the wire itself, one line at a time, and decides what
each line gets before the SDK's server sees it (`decode`):

- a line longer than MAX_LINE bytes: -32600 with id null as soon as the cap
  is passed; the rest of the line is read and discarded, never held;
- a line that is not JSON (garbage, truncated, blank), or JSON nested
  deeper than MAX_DEPTH: -32700 with id null;
- JSON that is not a JSON-RPC message (a number, a string, an array (MCP
  has no batches), an object with neither `method` nor `result`/`error`,
  `jsonrpc` other than "2.0", an id that is neither a string nor an
  integer): -32600, with the id when there is a usable one;
- a response whose id names no request this server sent and is waiting
  on: -32600 with id null (never the stray id itself, which could settle
  one of the client's own pending requests); an *error* response with id
  null is the one line left unanswered, since answering it could set two
  such peers answering each other forever;
- a request whose parameters cannot be decoded (a lone surrogate escape
  such as `"\\ud800"`: valid JSON text that pydantic refuses): -32602 with
  its id;
- everything else goes to the SDK's server, which answers an unknown method
  with -32601, an unknown tool or prompt with -32602 (mcp/server.py) and a
  tool's failure as a tool result.

An error that answers no request carries `"id": null` under the protocol
versions before 2025-11-25 and no `id` from that version on (and before one
is negotiated): mcp/protocol.py.

The wire's descriptors are claimed while serving, as the SDK's transport
does: fd 0 points at the null device and fd 1 at stderr, so a child process
or a stray print can neither read the client's lines nor write on the wire.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)

from cocoplus.mcp import protocol

MAX_LINE = 4 * 1024 * 1024
"""Bytes in one line (without its newline); MCP's messages are far smaller."""
MAX_DEPTH = 64
"""Nesting of arrays and objects in one message; MCP's messages nest a handful deep."""
CHUNK = 64 * 1024

RequestId = int | str


class Wire:
    """What the writer learns as it writes: the protocol version the initialize result settled on."""

    version: str | None = None


class Splitter:
    """Cuts the bytes read from the wire into lines, never holding more than MAX_LINE of one.

    `feed` and `end` return the complete lines, each as bytes, or None for a
    line over the cap: None comes as soon as the cap is passed, and the rest
    of that line, up to its newline, is dropped as it arrives.
    """

    def __init__(self, cap: int = MAX_LINE) -> None:
        self.cap = cap
        self._buf = bytearray()
        self._discarding = False

    def feed(self, chunk: bytes) -> list[bytes | None]:
        out: list[bytes | None] = []
        start = 0
        while (nl := chunk.find(b"\n", start)) >= 0:
            piece = chunk[start:nl]
            if self._discarding:
                self._discarding = False
            elif len(self._buf) + len(piece) > self.cap:
                out.append(None)
            else:
                out.append(bytes(self._buf) + piece)
            self._buf.clear()
            start = nl + 1
        rest = chunk[start:]
        if self._discarding:
            return out
        if len(self._buf) + len(rest) > self.cap:
            out.append(None)
            self._buf.clear()
            self._discarding = True
        else:
            self._buf += rest
        return out

    def end(self) -> list[bytes | None]:
        """The last line when the wire closes without a final newline."""
        last = bytes(self._buf)
        self._buf.clear()
        return [last] if last and not self._discarding else []


def _error(code: int, message: str, request_id: RequestId | None = None) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))


def too_long(cap: int = MAX_LINE) -> JSONRPCError:
    return _error(INVALID_REQUEST, f"Invalid Request: the line is longer than {cap} bytes; it is discarded")


def _deeper_than(doc: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _usable_id(doc: dict[str, Any]) -> RequestId | None:
    rid = doc.get("id")
    return rid if isinstance(rid, (str, int)) and not isinstance(rid, bool) else None


def decode(line: bytes, outstanding: set[RequestId]) -> SessionMessage | JSONRPCError | None:
    """What one line gets: a message for the SDK's server, an error answer, or (None) nothing.

    `outstanding` holds the ids of the requests this server sent and still
    waits on; a response to one of them is passed on and its id forgotten.
    """
    text = line.decode("utf-8", "replace")  # as the SDK's transport reads its stdin
    try:
        doc = json.loads(text)
    except RecursionError:
        return _error(PARSE_ERROR, f"Parse error: the JSON is nested deeper than {MAX_DEPTH} levels")
    except ValueError:
        return _error(PARSE_ERROR, "Parse error: the line is not valid JSON")
    if _deeper_than(doc, MAX_DEPTH):
        return _error(PARSE_ERROR, f"Parse error: the JSON is nested deeper than {MAX_DEPTH} levels")
    if isinstance(doc, list):
        return _error(
            INVALID_REQUEST, "Invalid Request: a JSON array; MCP sends one message (an object) a line, never a batch"
        )
    if not isinstance(doc, dict):
        kind = {str: "a string", bool: "a boolean", type(None): "null"}.get(type(doc), "a number")
        return _error(INVALID_REQUEST, f"Invalid Request: {kind}, not a JSON-RPC message (an object)")
    rid = _usable_id(doc)
    if doc.get("jsonrpc") != "2.0":
        return _error(INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"', rid)
    if "method" in doc:
        if not isinstance(doc["method"], str):
            return _error(INVALID_REQUEST, 'Invalid Request: "method" must be a string', rid)
        if "id" in doc and rid is None:
            return _error(INVALID_REQUEST, 'Invalid Request: "id" must be a string or an integer')
    elif "result" in doc or "error" in doc:
        if rid is None or rid not in outstanding:
            if "error" in doc and doc.get("id") is None:
                return None
            return _error(
                INVALID_REQUEST,
                f"Invalid Request: a response to request {json.dumps(doc.get('id'))}, "
                "which this server is not waiting on",
            )
    else:
        return _error(
            INVALID_REQUEST,
            'Invalid Request: neither a request ("method" and "id"), a notification ("method") '
            'nor a response ("result" or "error")',
            rid,
        )
    try:
        message = jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValueError as exc:  # pydantic's ValidationError
        if "params" in doc and "method" in doc:
            return _error(INVALID_PARAMS, f"Invalid params: they cannot be decoded ({_first_error(exc)})", rid)
        return _error(INVALID_REQUEST, f"Invalid Request: it cannot be decoded ({_first_error(exc)})", rid)
    if isinstance(message, (JSONRPCResponse, JSONRPCError)) and message.id is not None:
        outstanding.discard(message.id)
    return SessionMessage(message)


def _first_error(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    try:
        msg = errors()[0]["msg"] if callable(errors) else str(exc)
    except Exception:  # noqa: BLE001 - the wording is only for the client's log
        msg = str(exc)
    return str(msg).splitlines()[0][:200] if msg else type(exc).__name__


def _note(text: str) -> None:
    """One line on stderr, which MCP clients keep as the server's log."""
    try:
        sys.stderr.write(f"cocoplus mcp: {text}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


async def _read(
    fd: int,
    to_server: MemoryObjectSendStream[SessionMessage | Exception],
    answers: MemoryObjectSendStream[SessionMessage],
    outstanding: set[RequestId],
) -> None:
    splitter = Splitter()
    async with to_server, answers:
        while True:
            chunk = await anyio.to_thread.run_sync(os.read, fd, CHUNK, abandon_on_cancel=True)
            for line in splitter.feed(chunk) if chunk else splitter.end():
                if line is None:
                    _note(f"a line longer than {MAX_LINE} bytes was answered with an error and discarded")
                    got: SessionMessage | JSONRPCError | None = too_long()
                else:
                    got = decode(line, outstanding)
                if isinstance(got, JSONRPCError):
                    await answers.send(SessionMessage(got))
                elif got is not None:
                    await to_server.send(got)
                elif line is not None:
                    _note("an error response with id null was not answered (it answers no request)")
            if not chunk:
                return


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


async def _write(
    fd: int,
    messages: MemoryObjectReceiveStream[SessionMessage],
    outstanding: set[RequestId],
    serving: anyio.CancelScope,
    wire: Wire | None = None,
) -> None:
    wire = wire or Wire()
    async with messages:
        async for item in messages:
            msg = item.message
            if isinstance(msg, JSONRPCRequest):
                outstanding.add(msg.id)  # before it is written: the client cannot answer sooner
            wire.version = protocol.negotiated(msg) or wire.version
            data = (protocol.encode(msg, wire.version) + "\n").encode()
            try:
                await anyio.to_thread.run_sync(_write_all, fd, data)
            except OSError as exc:  # the client is gone: nothing more can be answered
                _note(f"cannot write to the client ({exc.strerror or exc}); stopping")
                serving.cancel()
                return


@contextmanager
def _claimed(fd: int, diversion: int) -> Iterator[int]:
    """A private duplicate of `fd` to serve the wire on, with `fd` itself pointed at `diversion` meanwhile.

    Where that cannot be done (a descriptor missing), the wire is served on `fd` itself, as the SDK does.
    """
    try:
        private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        yield fd
        return
    try:
        try:
            os.dup2(diversion, fd)
        except OSError:
            pass  # left in place: a stray write could reach the wire, as without the claim
        yield private
    finally:
        try:
            os.dup2(private, fd)
        finally:
            os.close(private)


async def serve(server: MCPServer) -> None:
    """`MCPServer.run_stdio_async`, with every line read and answered by this module."""
    # The low-level server is what the SDK's own run_stdio_async drives; only the transport differs.
    low = server._lowlevel_server
    outstanding: set[RequestId] = set()
    in_send, in_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    out_send, out_recv = anyio.create_memory_object_stream[SessionMessage](0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        with _claimed(0, devnull) as wire_in, _claimed(1, 2) as wire_out:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_write, wire_out, out_recv, outstanding, tg.cancel_scope)
                tg.start_soon(_read, wire_in, in_send, out_send.clone(), outstanding)
                async with out_send, in_recv:
                    await low.run(in_recv, out_send, low.create_initialization_options())
    finally:
        os.close(devnull)
