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

`limit(seconds)` makes a stand-in answer every model request with its API's
own rate-limit response until that many seconds have passed (status,
headers and body as the real service sends them; docs/runtimes.md cites
the sources): Anthropic's 429 `rate_limit_error` with `retry-after` and
`anthropic-ratelimit-*` headers, OpenAI's 429 `rate_limit_exceeded` with
`retry-after` and `x-ratelimit-*` headers, Gemini's 429 `RESOURCE_EXHAUSTED`
with a `RetryInfo` `retryDelay`.  Each refused request is kept in `limited`
(its time and path), so a test sees when and how often a CLI retried.

One stand-in can serve several conversations at once (workers and a
brain sharing one ANTHROPIC_BASE_URL): `routes` maps a marker to a script
of its own, and a request whose opening (system prompt and first message)
holds the marker follows that script, the first matching marker winning;
other requests follow `script`.  A route's script is a list of turns, or
a function of the request body that returns the next turn.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

Turn = dict[str, Any]
Script = list[Turn] | Callable[[dict[str, Any]], Turn]


def tool(name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "tool", "name": name, "input": arguments}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


class _Stub:
    """Shared plumbing: a threaded server, a script, a request log."""

    def __init__(
        self,
        script: list[dict[str, Any]] | None = None,
        *,
        repeat_last: bool = False,
        routes: dict[str, Script] | None = None,
    ) -> None:
        self.script = list(script or [])
        self.repeat_last = repeat_last
        self.routes = dict(routes or {})
        self.routed: dict[str, list[dict[str, Any]]] = {key: [] for key in self.routes}  # each route's loop requests
        self.plain_reply = "ok"  # the answer to requests outside the agent loop (no tools offered)
        self.requests: list[dict[str, Any]] = []  # every request: {"path", "body"}
        self.loop_requests: list[dict[str, Any]] = []  # agent-loop requests only
        self.lock = threading.Lock()
        self.turn = 0
        self.server: ThreadingHTTPServer | None = None
        self.thread: threading.Thread | None = None
        self.limit_until = 0.0  # epoch seconds: until then every model request gets the rate-limit response
        self.limit_detail: dict[str, Any] = {}
        self.limited: list[dict[str, Any]] = []  # each refused request: {"at": epoch seconds, "path"}

    # -- rate limits ---------------------------------------------------------------
    def limit(self, seconds: float, **detail: Any) -> None:
        """Answer every model request with the API's rate-limit response for the next `seconds` seconds.

        `detail` is per API (a Gemini quota id, for one)."""
        with self.lock:
            self.limit_until = time.time() + seconds
            self.limit_detail = dict(detail)

    def lift(self) -> None:
        with self.lock:
            self.limit_until = 0.0

    def limited_now(self, h: BaseHTTPRequestHandler) -> float | None:
        """The seconds the limit still lasts if it holds now (and the request is counted as refused), else None."""
        with self.lock:
            left = self.limit_until - time.time()
            if left <= 0:
                return None
            self.limited.append({"at": time.time(), "path": h.path})
            return left

    # -- lifecycle -------------------------------------------------------------
    def start(self) -> Self:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # silence
                pass

            def do_GET(self) -> None:
                stub.handle_get(self)

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
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

    def __enter__(self) -> Self:
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
    def opening(self, body: dict[str, Any]) -> str:
        """The text a route's marker is looked for in: the system prompt and the first message (per API)."""
        return json.dumps(body, ensure_ascii=False)

    def route_of(self, body: dict[str, Any]) -> str | None:
        opening = self.opening(body)
        return next((key for key in self.routes if key in opening), None)

    def next_turn(self, body: dict[str, Any]) -> dict[str, Any]:
        key = self.route_of(body) if self.routes else None
        if key is not None:
            with self.lock:
                self.loop_requests.append(body)
                self.routed[key].append(body)
                n = len(self.routed[key])
            script = self.routes[key]
            if callable(script):
                return script(body)
            return script[n - 1] if n <= len(script) else text("Done.")
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


def _rfc3339(at: float) -> str:
    return datetime.fromtimestamp(at, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _send_json(h: BaseHTTPRequestHandler, code: int, obj: Any, headers: dict[str, str] | None = None) -> None:
    data = json.dumps(obj).encode()
    h.send_response(code)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(data)))
    for name, value in (headers or {}).items():
        h.send_header(name, value)
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


class Holding(_Stub):
    """A stand-in that holds its answer to the agent-loop requests numbered in `hold` (from 1) until `release(n)`:
    `arrived[n]` is set when the request comes.  Mixed in before a stand-in (`class Held(Holding, AnthropicStub)`)."""

    def __init__(self, script: list[dict[str, Any]], hold: tuple[int, ...] = ()) -> None:
        super().__init__(script)
        self.arrived = {n: threading.Event() for n in hold}
        self.gates = {n: threading.Event() for n in hold}

    def next_turn(self, body: dict[str, Any]) -> dict[str, Any]:
        step = super().next_turn(body)
        n = len(self.loop_requests)
        if n in self.gates:
            self.arrived[n].set()
            self.gates[n].wait(180)
        return step

    def release(self, n: int) -> None:
        self.gates[n].set()

    def stop(self) -> None:
        for gate in self.gates.values():
            gate.set()
        super().stop()


class AnthropicStub(_Stub):
    """`usage` sets the token counts reported for every agent-loop answer (to make spend)."""

    def __init__(
        self,
        script: list[dict[str, Any]] | None = None,
        *,
        repeat_last: bool = False,
        usage: dict[str, int] | None = None,
        routes: dict[str, Script] | None = None,
    ) -> None:
        super().__init__(script, repeat_last=repeat_last, routes=routes)
        self.usage = usage

    def opening(self, body: dict[str, Any]) -> str:
        messages = body.get("messages") or [None]
        return json.dumps([body.get("system"), messages[0]], ensure_ascii=False)

    def handle_post(self, h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        path = h.path.split("?")[0]
        if path.endswith("/count_tokens"):
            _send_json(h, 200, {"input_tokens": 100})
            return
        if not path.endswith("/v1/messages"):
            _send_json(h, 404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
            return
        model = body.get("model", "claude-sonnet-4-5")
        left = self.limited_now(h)
        if left is not None:
            self.rate_limited(h, left)
            return
        if body.get("tools"):
            step = self.next_turn(body)
        else:
            step = text(self.plain_reply)
        n = len(self.requests)
        msg_id = f"msg_stub_{n:04d}"
        usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if self.usage and body.get("tools"):
            usage = {**usage, **self.usage}
        start: dict[str, Any] = {
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
                        "content_block": {
                            "type": "tool_use",
                            "id": f"toolu_stub_{n:04d}",
                            "name": step["name"],
                            "input": {},
                        },
                    },
                ),
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "input_json_delta", "partial_json": json.dumps(step["input"])},
                    },
                ),
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ]
            stop_reason = "tool_use"
        else:
            events += [
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                ),
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": step["text"]}},
                ),
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ]
            stop_reason = "end_turn"
        events += [
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": usage["output_tokens"]},
                },
            ),
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

    def rate_limited(self, h: BaseHTTPRequestHandler, left: float) -> None:
        """The Messages API's 429: `retry-after` in whole seconds, the `anthropic-ratelimit-*` headers with their
        reset times in RFC 3339, and the `rate_limit_error` body (docs.anthropic.com/en/api/rate-limits, /errors)."""
        reset = _rfc3339(time.time() + left)
        headers = {
            "retry-after": str(math.ceil(left)),
            "anthropic-ratelimit-requests-limit": "50",
            "anthropic-ratelimit-requests-remaining": "0",
            "anthropic-ratelimit-requests-reset": reset,
            "anthropic-ratelimit-tokens-limit": "40000",
            "anthropic-ratelimit-tokens-remaining": "40000",
            "anthropic-ratelimit-tokens-reset": _rfc3339(time.time()),
            "request-id": f"req_stub{len(self.requests):04d}",
        }
        body = {
            "type": "error",
            "error": {
                "type": "rate_limit_error",
                "message": (
                    "This request would exceed the rate limit for your organization of 50 requests per minute. "
                    "For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response "
                    "headers for current usage. Please reduce the prompt length or the maximum tokens requested, "
                    "or try again later."
                ),
            },
            "request_id": headers["request-id"],
        }
        _send_json(h, 429, body, headers)

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

    def opening(self, body: dict[str, Any]) -> str:
        items = body.get("input")
        first = items[0] if isinstance(items, list) and items else items
        return json.dumps([body.get("instructions"), first], ensure_ascii=False)

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
        left = self.limited_now(h)
        if left is not None:
            self.rate_limited(h, left, model)
            return
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

    def rate_limited(self, h: BaseHTTPRequestHandler, left: float, model: str) -> None:
        """The OpenAI API's 429 for a rate limit: `retry-after`, the `x-ratelimit-*` headers (reset as a duration
        such as `1m10s`) and the `rate_limit_exceeded` error body, whose message says when to try again
        (platform.openai.com/docs/guides/rate-limits, /docs/guides/error-codes)."""
        wait = math.ceil(left)
        headers = {
            "retry-after": str(wait),
            "x-ratelimit-limit-requests": "500",
            "x-ratelimit-remaining-requests": "0",
            "x-ratelimit-reset-requests": _duration(wait),
            "x-ratelimit-limit-tokens": "500000",
            "x-ratelimit-remaining-tokens": "500000",
            "x-ratelimit-reset-tokens": "0s",
            "x-request-id": f"req_stub{len(self.requests):04d}",
        }
        body = {
            "error": {
                "message": (
                    f"Rate limit reached for {model} in organization org-stub on requests per min (RPM): "
                    f"Limit 500, Used 500, Requested 1. Please try again in {wait}s. "
                    "Visit https://platform.openai.com/account/rate-limits to learn more."
                ),
                "type": "requests",
                "param": None,
                "code": "rate_limit_exceeded",
            }
        }
        _send_json(h, 429, body, headers)

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


def _duration(seconds: int) -> str:
    """OpenAI's form of a wait in its `x-ratelimit-reset-*` headers: `1s`, `6m0s`, `1h2m3s`."""
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return (f"{h}h" if h else "") + (f"{m}m" if h or m else "") + f"{s}s"


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

    def opening(self, body: dict[str, Any]) -> str:
        contents = body.get("contents") or [None]
        return json.dumps([body.get("systemInstruction"), contents[0]], ensure_ascii=False)

    def handle_post(self, h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        path = h.path.split("?")[0]
        model, _, method = path.rpartition("/")[2].partition(":")
        if method == "countTokens":
            _send_json(h, 200, {"totalTokens": 100})
            return
        if method not in ("streamGenerateContent", "generateContent"):
            _send_json(h, 404, {"error": {"code": 404, "message": path, "status": "NOT_FOUND"}})
            return
        left = self.limited_now(h)
        if left is not None:
            self.rate_limited(h, left, model)
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

    def rate_limited(self, h: BaseHTTPRequestHandler, left: float, model: str) -> None:
        """The Gemini API's 429 `RESOURCE_EXHAUSTED`: a `QuotaFailure` naming the quota (per minute unless
        `limit(quota_id=...)` names another), a `Help` link and a `RetryInfo` whose `retryDelay` says when to
        retry; the message says it too (ai.google.dev/gemini-api/docs/troubleshooting, google.rpc error details)."""
        quota = str(self.limit_detail.get("quota_id") or "GenerateRequestsPerMinutePerProjectPerModel")
        delay = f"{left:.6f}".rstrip("0").rstrip(".") + "s"
        body = {
            "error": {
                "code": 429,
                "message": (
                    "You exceeded your current quota, please check your plan and billing details. For more "
                    "information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. "
                    f"To monitor your current usage, head to: https://ai.dev/usage?tab=rate-limit. \n* Quota "
                    f"exceeded for metric: generativelanguage.googleapis.com/generate_content_requests, limit: 60, "
                    f"model: {model}\nPlease retry in {delay}."
                ),
                "status": "RESOURCE_EXHAUSTED",
                "details": [
                    {
                        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                        "violations": [
                            {
                                "quotaMetric": "generativelanguage.googleapis.com/generate_content_requests",
                                "quotaId": quota,
                                "quotaDimensions": {"location": "global", "model": model},
                                "quotaValue": "60",
                            }
                        ],
                    },
                    {
                        "@type": "type.googleapis.com/google.rpc.Help",
                        "links": [
                            {
                                "description": "Learn more about Gemini API quotas",
                                "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
                            }
                        ],
                    },
                    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{math.ceil(left)}s"},
                ],
            }
        }
        _send_json(h, 429, body)

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
