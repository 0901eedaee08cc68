"""The OTLP exporter: the timeline's spans (`report/traces.py`) sent over HTTP/protobuf with the OpenTelemetry SDK's
exporter, batched, as they end.  The only module of cocoplus that imports the SDK; never on the hook path.

Each pass (every `[telemetry] interval_s`) builds the spans from the logs, sends those that have ended and are not
in the cursor (`Layout.telemetry_cursor`: the ids sent), at most `BATCH` to a request, and adds each accepted batch
to the cursor: an exporter that restarts, or another that takes over, sends no span twice.  After every pass the
status file says how it went (`telemetry/status.py`); a failure (a 401 above all) shows in doctor, top and the page
from then, within one interval.  One process exports at a time: the one that holds the `telemetry` lock.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry import trace as trace_api
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace.status import Status, StatusCode

from cocoplus import __version__
from cocoplus.core import clock, fsio
from cocoplus.core.errors import CocoplusError
from cocoplus.core.lock import try_lock
from cocoplus.core.paths import Layout
from cocoplus.report import traces
from cocoplus.telemetry import status

BATCH = 512
CURSOR_MAX = 200_000  # span ids kept in the cursor; the oldest go first
_SCOPE = InstrumentationScope("cocoplus", __version__, traces.SEMCONV_URL)
_SDK_LOGGERS = ("opentelemetry.exporter.otlp.proto.http.trace_exporter", "opentelemetry.exporter.otlp.common.http")


def _ns(ts: str | None) -> int | None:
    at = clock.parse_iso(ts)
    return int(round(at * 1e9)) if at is not None else None


def _context(trace_id: str, span_id: str) -> trace_api.SpanContext:
    return trace_api.SpanContext(
        int(trace_id, 16), int(span_id, 16), is_remote=False, trace_flags=trace_api.TraceFlags(0x01)
    )


def readable(span: Mapping[str, Any], resource: Resource) -> ReadableSpan:
    """One built span as the SDK's ReadableSpan, with its derived ids and its recorded times."""
    parent = _context(span["trace_id"], span["parent_id"]) if span.get("parent_id") else None
    events = [Event(e["name"], e["attributes"], _ns(e["ts"])) for e in span["events"]]
    links = [trace_api.Link(_context(ln["trace_id"], ln["span_id"]), ln["attributes"]) for ln in span["links"]]
    start = _ns(span["start"]) or _ns(span["end"])
    end = _ns(span["end"])
    if start is not None and end is not None and end < start:
        end = start
    return ReadableSpan(
        name=span["name"],
        context=_context(span["trace_id"], span["span_id"]),
        parent=parent,
        resource=resource,
        attributes=span["attributes"],
        events=events,
        links=links,
        kind=trace_api.SpanKind.INTERNAL,
        status=Status(StatusCode.ERROR, span["error"]) if span.get("error") else Status(StatusCode.UNSET),
        start_time=start,
        end_time=end,
        instrumentation_scope=_SCOPE,
    )


class _Heard(logging.Handler):
    """What the SDK's exporter logs while one batch is sent: its error line holds the HTTP status."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.lines.append(record.getMessage())
        except Exception:  # noqa: BLE001 - a message that cannot be formatted is left out
            pass


def _code(lines: list[str]) -> int | None:
    for line in reversed(lines):
        head, sep, rest = line.partition(" code: ")
        if sep:
            word = rest.split(",", 1)[0].strip()
            return int(word) if word.isdigit() else None
    return None


_UNREAD = {"telemetry", "locks", "logs", "worktrees"}  # what the export writes, or what the timeline does not read


def _signature(layout: Layout) -> int:
    """The names, sizes and modification times of the files under `.cocoplus/` the timeline may read, hashed."""
    marks: list[tuple[str, int, int]] = []
    for top, dirs, files in os.walk(layout.root):
        if top == layout.root:
            dirs[:] = [d for d in dirs if d not in _UNREAD]
        for name in files:
            try:
                st = os.lstat(os.path.join(top, name))
            except OSError:
                continue
            marks.append((os.path.join(top, name), st.st_size, st.st_mtime_ns))
    return hash(tuple(sorted(marks)))


def _read_cursor(layout: Layout) -> list[str]:
    try:
        doc = fsio.read_json(layout.telemetry_cursor) or {}
    except CocoplusError:
        return []  # a damaged cursor: spans may be sent again (a backend keeps one per id)
    sent = doc.get("sent")
    return [s for s in sent if isinstance(s, str)] if isinstance(sent, list) else []


class Exporter:
    """One project's trace export: `pass_once` sends what has ended; `run` does so every interval until stopped."""

    def __init__(
        self, layout: Layout, process: str, environ: Mapping[str, str] | None = None, interval_s: float | None = None
    ) -> None:
        self.layout = layout
        self.process = process
        self.environ = dict(os.environ if environ is None else environ)
        self.conf = status.settings(layout, self.environ)
        if interval_s is not None:
            self.conf["interval_s"] = interval_s
        self.stopping = threading.Event()
        self.started_at = clock.iso()
        self.resource = Resource.create(
            {"service.name": "cocoplus", "service.version": __version__, "cocoplus.project": layout.project}
        )
        self.exporter = OTLPSpanExporter(
            endpoint=self.conf["endpoint"], headers=self.conf["headers"], timeout=max(1.0, self.conf["interval_s"])
        )
        self.failing_since: str | None = None
        self.seen: int | None = None  # the files' signature at the last pass that went through

    def _status(self, last: dict[str, Any], pending: int) -> None:
        status.write(self.layout, {
            "pid": os.getpid(), "process": self.process, "started_at": self.started_at,
            "interval_s": self.conf["interval_s"], "endpoint": status.shown(self.conf["endpoint"]),
            "last": last, "pending": pending, "semconv": traces.SEMCONV_VERSION,
        })  # fmt: skip

    def pass_once(self) -> dict[str, Any]:
        """Send every ended span not sent yet: `{"ok", "spans" (sent), "pending", "code", "error"}`.  When no file
        under `.cocoplus/` changed since the last pass that went through, nothing can have ended: no reading."""
        seen = _signature(self.layout)
        if seen == self.seen and self.failing_since is None:
            return {"at": clock.iso(), "ok": True, "spans": 0, "code": None, "error": None, "pending": 0}
        built = traces.build(self.layout, content=self.conf["content"], environ=self.environ)
        sent = _read_cursor(self.layout)
        done = set(sent)
        ready = [s for s in built["spans"] if s["end"] is not None and s["span_id"] not in done]
        count = 0
        last: dict[str, Any] = {"at": clock.iso(), "ok": True, "spans": 0, "code": None, "error": None}
        for i in range(0, len(ready), BATCH):
            batch = ready[i : i + BATCH]
            ok, code, error = self._send(batch)
            if not ok:
                self.failing_since = self.failing_since or last["at"]
                last.update(ok=False, code=code, error=error, spans=count, since=self.failing_since)
                self._status(last, len(ready) - count)
                return {**last, "pending": len(ready) - count}
            count += len(batch)
            sent.extend(s["span_id"] for s in batch)
            fsio.ensure_dir(self.layout.telemetry_dir)
            fsio.atomic_write_json(self.layout.telemetry_cursor, {"sent": sent[-CURSOR_MAX:]})
        self.failing_since = None
        self.seen = seen
        last.update(spans=count)
        self._status(last, 0)
        return {**last, "pending": 0}

    def _send(self, batch: list[dict[str, Any]]) -> tuple[bool, int | None, str | None]:
        heard = _Heard()
        loggers = [logging.getLogger(name) for name in _SDK_LOGGERS]
        for lg in loggers:
            lg.addHandler(heard)
            lg.propagate = False  # its lines go to the status file, not to stderr
        try:
            result = self.exporter.export([readable(s, self.resource) for s in batch])
        except Exception as exc:  # noqa: BLE001 - any failure of the SDK is an export failure, said in the status
            return False, None, f"{type(exc).__name__}: {exc}"
        finally:
            for lg in loggers:
                lg.removeHandler(heard)
        if result is SpanExportResult.SUCCESS:
            return True, None, None
        error = heard.lines[-1] if heard.lines else "the export failed"
        return False, _code(heard.lines), error

    def run(self, on_pass: Callable[[dict[str, Any]], None] | None = None) -> None:
        """Every interval, a pass, until `stop`."""
        while not self.stopping.is_set():
            try:
                got = self.pass_once()
            except Exception as exc:  # noqa: BLE001 - the exporter outlives a bad pass, and says what went wrong
                error = str(exc) if isinstance(exc, CocoplusError) else f"{type(exc).__name__}: {exc}"
                got = {"ok": False, "error": error, "code": None, "spans": 0, "pending": None}
                self._status({"at": clock.iso(), "ok": False, "spans": 0, "code": None, "error": error}, 0)
            if on_pass is not None:
                on_pass(got)
            self.stopping.wait(self.conf["interval_s"])
        self.exporter.shutdown()

    def stop(self) -> None:
        self.stopping.set()


def hold(layout: Layout) -> int | None:
    """Take the `telemetry` lock (the fd that holds it), or None when another process exports."""
    fsio.ensure_dir(os.path.dirname(layout.lock(status.LOCK)))
    return try_lock(layout.lock(status.LOCK))


def start_thread(layout: Layout, by: str) -> threading.Thread | None:
    """In a process that stays up (the supervisor, the server): export in a thread of its own when telemetry is
    configured, while no other process exports.  The thread tries the lock again every interval."""
    if not status.configured(layout):
        return None

    def loop() -> None:
        exporter: Exporter | None = None
        stopping = threading.Event()
        while not stopping.is_set():
            fd = hold(layout)
            if fd is None:
                stopping.wait(5.0)
                continue
            try:
                exporter = Exporter(layout, by)
                exporter.run()
            except CocoplusError:
                stopping.wait(5.0)
            finally:
                os.close(fd)

    t = threading.Thread(target=loop, name="cocoplus-telemetry", daemon=True)
    t.start()
    return t
