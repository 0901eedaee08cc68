"""A loopback OTLP/HTTP traces receiver: it decodes each `ExportTraceServiceRequest` (protobuf) with
`opentelemetry-proto` and keeps the spans and the request's headers; `status` is what it answers (401 to test an
authentication failure).  No Jaeger, Collector or Tempo package exists to install here, so this stands in."""

from __future__ import annotations

import http.server
import threading
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


def value(v: AnyValue) -> Any:
    """An attribute's value as Python."""
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


def attrs(kvs: Any) -> dict[str, Any]:
    return {kv.key: value(kv.value) for kv in kvs}


@dataclass
class Span:
    """One received span, decoded: ids as hex, attributes as a dict."""

    trace_id: str
    span_id: str
    parent_id: str
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    links: list[tuple[str, str, dict[str, Any]]]
    status: int
    resource: dict[str, Any]
    scope: str


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    spans: list[Span] = field(default_factory=list)


class Receiver:
    """Start with `start()`; `url` is its base endpoint (OTEL_EXPORTER_OTLP_ENDPOINT); `requests` what came."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.requests: list[Request] = []
        self.lock = threading.Lock()
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                req = Request(self.path, {k.lower(): v for k, v in self.headers.items()})
                if owner.status == 200:
                    msg = ExportTraceServiceRequest()
                    msg.ParseFromString(body)
                    for rs in msg.resource_spans:
                        res = attrs(rs.resource.attributes)
                        for ss in rs.scope_spans:
                            for s in ss.spans:
                                req.spans.append(Span(
                                    s.trace_id.hex(), s.span_id.hex(), s.parent_span_id.hex(), s.name,
                                    s.start_time_unix_nano, s.end_time_unix_nano, attrs(s.attributes),
                                    [(e.name, attrs(e.attributes)) for e in s.events],
                                    [(ln.trace_id.hex(), ln.span_id.hex(), attrs(ln.attributes)) for ln in s.links],
                                    s.status.code, res, ss.scope.name,
                                ))  # fmt: skip
                with owner.lock:
                    owner.requests.append(req)
                answer = ExportTraceServiceResponse().SerializeToString() if owner.status == 200 else b"unauthorized"
                self.send_response(owner.status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> Receiver:
        self.thread.start()
        return self

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def spans(self) -> list[Span]:
        with self.lock:
            return [s for r in self.requests for s in r.spans]

    def __enter__(self) -> Receiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
