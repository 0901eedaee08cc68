"""Scripted stand-ins for model APIs, served on 127.0.0.1 for end-to-end tests.

Each stand-in answers the agent loop's requests from a script of turns
(a tool call, or a final text) and records every request body, so a test
can see exactly what reached "the model": a denial reason in a tool
result, a steer in added context, the handoff at session start.

* `AnthropicStub`: `POST /v1/messages` (Claude Code), streaming SSE.
* `ResponsesStub`: `POST /v1/responses` (Codex and the openai backend), SSE or JSON.
* `GeminiStub`: `POST /v1beta/models/M:streamGenerateContent` and `:generateContent`.

A request that is not part of the agent loop (no tools offered: titles,
summaries, routing) is answered with a short text and does not consume
the script.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def tool(name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "tool", "name": name, "input": arguments}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


class _Stub:
    """Shared plumbing: a threaded server, a script, a request log."""

    def __init__(self, script: list[dict[str, Any]] | None = None, *, repeat_last: bool = False) -> None:
        self.script = list(script or [])
        self.repeat_last = repeat_last
        self.requests: list[dict[str, Any]] = []  # every request: {"path", "body"}
        self.loop_requests: list[dict[str, Any]] = []  # agent-loop requests only
        self.lock = threading.Lock()
        self.turn = 0
        self.server: ThreadingHTTPServer | None = None
        self.thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------
    def start(self) -> _Stub:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # silence
                pass

            def do_GET(self) -> None:  # noqa: N802
                stub.handle_get(self)

            def do_HEAD(self) -> None:  # noqa: N802
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                with stub.lock:
                    stub.requests.append({"path": self.path, "body": body, "headers": dict(self.headers)})
                stub.handle_post(self, body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def __enter__(self) -> _Stub:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self.server is not None
        return self.server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- script ------------------------------------------------------------------
    def next_turn(self, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.loop_requests.append(body)
            if self.turn < len(self.script):
                step = self.script[self.turn]
                self.turn += 1
                return step
            if self.repeat_last and self.script:
                self.turn += 1
                return self.script[-1]
            self.turn += 1
            return text("Done.")

    def handle_get(self, h: BaseHTTPRequestHandler) -> None:
        _send_json(h, 404, {"error": {"type": "not_found", "message": "not here"}})

    def handle_post(self, h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def all_text(self) -> str:
        """Every loop request body as one JSON string (to search for what reached the model)."""
        return "\n".join(json.dumps(b, ensure_ascii=False) for b in self.loop_requests)


def _send_json(h: BaseHTTPRequestHandler, code: int, obj: Any) -> None:
    data = json.dumps(obj).encode()
    h.send_response(code)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    h.wfile.write(data)


def _send_sse(h: BaseHTTPRequestHandler, events: list[tuple[str | None, Any]]) -> None:
    chunks = []
    for name, data in events:
        line = ""
        if name:
            line += f"event: {name}\n"
        line += f"data: {json.dumps(data)}\n\n"
        chunks.append(line.encode())
    payload = b"".join(chunks)
    h.send_response(200)
    h.send_header("Content-Type", "text/event-stream")
    h.send_header("Cache-Control", "no-cache")
    h.send_header("Content-Length", str(len(payload)))
    h.end_headers()
    h.wfile.write(payload)


# -- Anthropic Messages API ---------------------------------------------------------------------


class AnthropicStub(_Stub):
    def handle_post(self, h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        path = h.path.split("?")[0]
        if path.endswith("/count_tokens"):
            _send_json(h, 200, {"input_tokens": 100})
            return
        if not path.endswith("/v1/messages"):
            _send_json(h, 404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
            return
        model = body.get("model", "claude-sonnet-4-5")
        if body.get("tools"):
            step = self.next_turn(body)
        else:
            step = text("ok")
        n = len(self.requests)
        msg_id = f"msg_stub_{n:04d}"
        usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        start = {
            "type": "message_start",
            "message": {
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            },
        }
        events: list[tuple[str | None, Any]] = [("message_start", start)]
        if step["type"] == "tool":
            events += [
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {"type": "tool_use", "id": f"toolu_stub_{n:04d}", "name": step["name"], "input": {}},
                    },
                ),
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": json.dumps(step["input"])}},
                ),
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ]
            stop_reason = "tool_use"
        else:
            events += [
                ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": step["text"]}}),
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ]
            stop_reason = "end_turn"
        events += [
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None}, "usage": {"output_tokens": 5}}),
            ("message_stop", {"type": "message_stop"}),
        ]
        if body.get("stream"):
            _send_sse(h, events)
        else:
            content = (
                [{"type": "tool_use", "id": f"toolu_stub_{n:04d}", "name": step["name"], "input": step["input"]}]
                if step["type"] == "tool"
                else [{"type": "text", "text": step["text"]}]
            )
            _send_json(h, 200, {**start["message"], "content": content, "stop_reason": stop_reason})

    def tool_results(self) -> list[str]:
        """Text of every tool_result block the model received, in order of first appearance."""
        seen: list[str] = []
        for body in self.loop_requests:
            for m in body.get("messages", []):
                content = m.get("content")
                if not isinstance(content, list):
                    continue
                for block in content:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        c = block.get("content")
                        if isinstance(c, list):
                            c = "".join(x.get("text", "") for x in c if isinstance(x, dict))
                        c = str(c)
                        if c not in seen:
                            seen.append(c)
        return seen
