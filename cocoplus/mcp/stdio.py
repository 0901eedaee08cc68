"""The MCP server on stdin/stdout, answering every line it is sent.

The SDK's stdio transport (`mcp.server.stdio.stdio_server`) hands a line it
cannot decode to the session as an exception, and the session drops it: a
truncated JSON line, or a request whose arguments hold a lone surrogate
escape such as `"\\ud800"` (valid JSON text, which pydantic-core's parser
refuses), gets no answer and the client waits forever.  JSON-RPC 2.0 says a
request always gets a response: an unparsable line gets a parse error
(-32700) with id null, and a request that parses but cannot be decoded
gets an error carrying its id.  This module wraps the SDK's read stream so
that every such line is answered, and serves the SDK's server through it.
"""

from __future__ import annotations

import json
from types import TracebackType
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError


def error_for(exc: Exception) -> JSONRPCError:
    """The JSON-RPC error answering the line that raised `exc` while being decoded."""
    raw = _raw_input(exc)
    request_id: int | str | None = None
    code, message = PARSE_ERROR, "Parse error: the line is not valid JSON"
    doc: Any = raw
    if isinstance(raw, str):
        try:
            # The standard library's parser accepts what JSON allows (a lone surrogate escape
            # included), so the request's id can be found even when the SDK could not decode it.
            doc = json.loads(raw)
        except ValueError:
            doc = None
    if isinstance(doc, dict):
        rid = doc.get("id")
        if isinstance(rid, (str, int)) and not isinstance(rid, bool):
            request_id = rid
        if isinstance(doc.get("method"), str) and "params" in doc:
            code, message = INVALID_PARAMS, f"Invalid params: they cannot be decoded ({_first_error(exc)})"
        else:
            code, message = INVALID_REQUEST, f"Invalid request: it cannot be decoded ({_first_error(exc)})"
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))


def _raw_input(exc: Exception) -> Any:
    """The line (or, once parsed, the object) the SDK failed on, from its validation error."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return None
    try:
        found = errors()
    except Exception:  # noqa: BLE001 - only a hint for the id; a parse error answers without it
        return None
    for err in found[:1]:
        raw = err.get("input")
        return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    return None


def _first_error(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    try:
        msg = errors()[0]["msg"] if callable(errors) else str(exc)
    except Exception:  # noqa: BLE001 - the wording is only for the client's log
        msg = str(exc)
    return str(msg).splitlines()[0][:200] if msg else type(exc).__name__


class AnsweringReadStream:
    """The SDK's read stream, with each undecodable line answered on `write` instead of passed on."""

    def __init__(self, inner: Any, write: Any) -> None:
        self._inner = inner
        self._write = write

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            await self._write.send(SessionMessage(error_for(item)))

    def __aiter__(self) -> AnsweringReadStream:
        return self

    async def __anext__(self) -> Any:
        from anyio import EndOfStream  # deferred: only reached once the server is serving

        try:
            return await self.receive()
        except EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> AnsweringReadStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> bool | None:
        await self.aclose()
        return None


async def serve(server: MCPServer) -> None:
    """`MCPServer.run_stdio_async`, reading through AnsweringReadStream."""
    # The low-level server is what the SDK's own run_stdio_async drives; only the read side differs.
    low = server._lowlevel_server
    async with stdio_server() as (read_stream, write_stream):
        await low.run(AnsweringReadStream(read_stream, write_stream), write_stream, low.create_initialization_options())
