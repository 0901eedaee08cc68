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
        self.plain_reply = "ok"  # the answer to requests outside the agent loop (no tools offered)
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
    """`usage` sets the token counts reported for every agent-loop answer (to make spend)."""

    def __init__(self, script: list[dict[str, Any]] | None = None, *, repeat_last: bool = False, usage: dict[str, int] | None = None) -> None:
        super().__init__(script, repeat_last=repeat_last)
        self.usage = usage

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
            step = text(self.plain_reply)
        n = len(self.requests)
        msg_id = f"msg_stub_{n:04d}"
        usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if self.usage and body.get("tools"):
            usage = {**usage, **self.usage}
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
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None}, "usage": {"output_tokens": usage["output_tokens"]}}),
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


# -- OpenAI Responses API ---------------------------------------------------------------------------


class ResponsesStub(_Stub):
    """`POST /v1/responses` as Codex CLI calls it (SSE), or as a plain HTTP client does (JSON).

    A tool step becomes one `function_call` output item (`call_id`, `name`,
    `arguments` as a JSON string); a text step one `message` item with an
    `output_text` part.  Codex offers its shell as `exec_command` with a
    `cmd` string argument.
    """

    def handle_get(self, h: BaseHTTPRequestHandler) -> None:
        if h.path.split("?")[0].endswith("/models"):
            _send_json(h, 200, {"object": "list", "data": [], "models": []})
            return
        super().handle_get(h)

    def handle_post(self, h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        path = h.path.split("?")[0]
        if not path.endswith("/responses"):
            _send_json(h, 404, {"error": {"type": "not_found", "message": path}})
            return
        model = body.get("model", "gpt-5")
        step = self.next_turn(body) if body.get("tools") else text(self.plain_reply)
        n = len(self.requests)
        resp_id = f"resp_stub_{n:04d}"
        if step["type"] == "tool":
            item: dict[str, Any] = {
                "type": "function_call",
                "id": f"fc_stub_{n:04d}",
                "call_id": f"call_stub_{n:04d}",
                "name": step["name"],
                "arguments": json.dumps(step["input"]),
                "status": "completed",
            }
        else:
            item = {
                "type": "message",
                "id": f"msg_stub_{n:04d}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": step["text"], "annotations": []}],
            }
        usage = {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        }
        response = {
            "id": resp_id,
            "object": "response",
            "created_at": 0,
            "model": model,
            "status": "in_progress",
            "output": [],
        }
        done = {**response, "status": "completed", "output": [item], "usage": usage}
        if not body.get("stream"):
            _send_json(h, 200, done)
            return
        added = dict(item, status="in_progress")
        if item["type"] == "function_call":
            added["arguments"] = ""
        else:
            added["content"] = []
        events: list[tuple[str | None, Any]] = []

        def event(name: str, **fields: Any) -> None:
            events.append((name, {"type": name, "sequence_number": len(events), **fields}))

        event("response.created", response=response)
        event("response.output_item.added", output_index=0, item=added)
        if item["type"] == "message":
            event("response.output_text.delta", item_id=item["id"], output_index=0, content_index=0, delta=step["text"])
        event("response.output_item.done", output_index=0, item=item)
        event("response.completed", response=done)
        _send_sse(h, events)

    def function_outputs(self) -> list[str]:
        """Text of every function_call_output the model received, in order of first appearance."""
        seen: list[str] = []
        for body in self.loop_requests:
            items = body.get("input")
            if not isinstance(items, list):
                continue
            for item in items:
                if not isinstance(item, dict) or item.get("type") != "function_call_output":
                    continue
                out = item.get("output")
                if isinstance(out, list):
                    out = "".join(str(x.get("text", "")) for x in out if isinstance(x, dict))
                elif isinstance(out, dict):
                    out = str(out.get("content", json.dumps(out)))
                out = str(out)
                if out not in seen:
                    seen.append(out)
        return seen


# -- Gemini API ---------------------------------------------------------------------------------------------


def _fill_schema(schema: Any, key: str = "") -> Any:
    """A small value matching a JSON schema (Gemini CLI's routing / next-speaker side calls ask for JSON)."""
    if not isinstance(schema, dict):
        return "ok"
    if key == "next_speaker":
        return "user"  # let the loop end when the script says so
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: _fill_schema(v, k) for k, v in props.items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    return "stub"


class GeminiStub(_Stub):
    """`POST /v1beta/models/M:streamGenerateContent?alt=sse` (agent loop) and `:generateContent` (side calls).

    A tool step becomes a `functionCall` part (`name`, `args`); a text step a
    `text` part.  Gemini CLI offers its shell as `run_shell_command` with a
    `command` argument.  Side calls that ask for JSON (routing, next
    speaker) get a value built from their response schema.
    """

    def handle_post(self, h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        path = h.path.split("?")[0]
        model, _, method = path.rpartition("/")[2].partition(":")
        if method == "countTokens":
            _send_json(h, 200, {"totalTokens": 100})
            return
        if method not in ("streamGenerateContent", "generateContent"):
            _send_json(h, 404, {"error": {"code": 404, "message": path, "status": "NOT_FOUND"}})
            return
        offered = any(isinstance(t, dict) and t.get("functionDeclarations") for t in body.get("tools") or [])
        if offered:
            step = self.next_turn(body)
        else:
            config = body.get("generationConfig") or {}
            schema = config.get("responseJsonSchema") or config.get("responseSchema")
            step = text(json.dumps(_fill_schema(schema)) if schema is not None else "ok")
        if step["type"] == "tool":
            part: dict[str, Any] = {"functionCall": {"name": step["name"], "args": step["input"]}}
        else:
            part = {"text": step["text"]}
        answer = {
            "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            "modelVersion": model or "gemini-2.5-pro",
            "responseId": f"stub-{len(self.requests):04d}",
        }
        if method == "generateContent":
            _send_json(h, 200, answer)
            return
        _send_sse(h, [(None, answer)])

    def function_responses(self) -> list[str]:
        """Every functionResponse.response the model received (as JSON text), in order of first appearance."""
        seen: list[str] = []
        for body in self.loop_requests:
            for content in body.get("contents") or []:
                if not isinstance(content, dict):
                    continue
                for part in content.get("parts") or []:
                    fr = part.get("functionResponse") if isinstance(part, dict) else None
                    if not isinstance(fr, dict):
                        continue
                    resp = fr.get("response")
                    out = resp if isinstance(resp, str) else json.dumps(resp, ensure_ascii=False)
                    if out not in seen:
                        seen.append(out)
        return seen
