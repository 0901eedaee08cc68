"""What both MCP doors (stdin/stdout and Streamable HTTP) share beyond the tools.

* **An error that answers no request** (a line that is not JSON, a message
  that is not JSON-RPC, an HTTP request the transport refuses) has no id to
  carry.  From protocol version 2025-11-25 the schema's error response has
  an optional `id` that is never null, so it is left out; the earlier
  versions' schemas require an id and JSON-RPC 2.0 says `"id": null`, which
  is what they get.  Before a version is negotiated the server speaks its
  newest, so the id is left out.
* **The SDK's log** is one line on stderr, `cocoplus mcp: ...`, never a
  traceback: the traceback of a failure it logs goes to
  `.cocoplus/logs/cocoplus.log` (core/crashlog.py), and the line says so.
  The SDK's own set-up (a rich handler with tracebacks on the root logger)
  is undone where it is made (`build` in mcp/server.py).
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

from mcp_types import JSONRPCError, JSONRPCMessage, JSONRPCResponse
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS, is_version_at_least

from cocoplus.core.crashlog import log_exception

NULL_ID_LEFT_OUT_FROM = "2025-11-25"
"""The first protocol version whose schema leaves out the id of an error that answers no request."""


def leaves_out_null_id(version: str | None) -> bool:
    """Whether an error with no request id leaves `id` out under `version` (None: not negotiated yet)."""
    if version is None or version not in KNOWN_PROTOCOL_VERSIONS:
        return True
    return is_version_at_least(version, NULL_ID_LEFT_OUT_FROM)


def encode(message: JSONRPCMessage, version: str | None) -> str:
    """The message as one JSON text, as the SDK writes it, an error with no id shaped for `version`."""
    if isinstance(message, JSONRPCError) and message.id is None and leaves_out_null_id(version):
        doc = message.model_dump(mode="json", by_alias=True, exclude_unset=True)
        doc.pop("id", None)
        return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    return message.model_dump_json(by_alias=True, exclude_unset=True)


def without_null_id(body: bytes, version: str | None) -> bytes:
    """An HTTP body holding one JSON-RPC error with `"id": null`, shaped for `version`; any other body as it is."""
    if b'"id":null' not in body.replace(b" ", b"") or not leaves_out_null_id(version):
        return body
    try:
        doc = json.loads(body)
    except ValueError:
        return body
    if not (isinstance(doc, dict) and "error" in doc and "id" in doc and doc["id"] is None):
        return body
    del doc["id"]
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def negotiated(message: JSONRPCMessage) -> str | None:
    """The protocol version an initialize result settles on, or None for any other message."""
    if isinstance(message, JSONRPCResponse) and isinstance(message.result, dict):
        result: dict[str, Any] = message.result
        version = result.get("protocolVersion")
        if isinstance(version, str) and "serverInfo" in result and "capabilities" in result:
            return version
    return None


class OneLine(logging.Handler):
    """The SDK's warnings and errors as one line each on stderr; a traceback goes to the project's log."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = " ".join(record.getMessage().split())[:500]
            exc = record.exc_info[1] if record.exc_info else None
            if exc is not None:
                where = log_exception(f"mcp: {text}", exc)
                first = (str(exc).splitlines() or [""])[0][:300]
                text += f": {type(exc).__name__}" + (f": {first}" if first else "")
                text += f" (details in {where})" if where else ""
            sys.stderr.write(f"cocoplus mcp: {record.levelname.lower()}: {text}\n")
            sys.stderr.flush()
        except Exception:  # noqa: BLE001 - the log must never take the server down
            pass


def quiet_sdk_log(level: int = logging.WARNING) -> None:
    """Send the SDK's loggers (`mcp.*`) to `OneLine` only, once per process."""
    logger = logging.getLogger("mcp")
    if not any(isinstance(h, OneLine) for h in logger.handlers):
        logger.addHandler(OneLine())
    logger.setLevel(level)
    logger.propagate = False
