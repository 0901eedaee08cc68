"""The trace export for every door: its status (doctor, top, the page and `cocoplus telemetry status`) and
`cocoplus telemetry export [--once]` (telemetry/export.py)."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.telemetry import status as telemetry_status


def status(layout: Layout) -> dict[str, Any]:
    """Where traces go (the endpoint shown without credentials), which process exports, the last export's outcome,
    and the problem in one line (nothing exporting, or the last export failed), or None."""
    return telemetry_status.report(layout)


def export(layout: Layout, once: bool = False, interval_s: float | None = None) -> dict[str, Any]:
    """Export the project's spans: one pass (`once`), or every interval until SIGTERM or SIGINT.  Refused while
    another process exports (its lock) or when no endpoint is configured."""
    from cocoplus.telemetry import export as exporting  # deferred: heavy (the OpenTelemetry SDK)

    conf = telemetry_status.settings(layout)
    if not conf["configured"]:
        why = conf["off"] or (
            "no endpoint: set OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), or "
            "[telemetry] endpoint"
            + (" (the project's cocoplus.toml sets one, ignored until `cocoplus trust`)" if conf["ignored"] else "")
        )
        raise CocoplusError(f"telemetry: not exporting: {why}")
    fd = exporting.hold(layout)
    if fd is None:
        pid = telemetry_status.running_pid(layout)
        who = telemetry_status.read(layout).get("process") or "another process"
        raise CocoplusError(f"telemetry: {who} (pid {pid}) exports for this project already")
    try:
        ex = exporting.Exporter(layout, "cocoplus telemetry export", interval_s=interval_s)
        if once:
            got = ex.pass_once()
            ex.exporter.shutdown()
            return {**got, "endpoint": telemetry_status.shown(conf["endpoint"])}

        def on_signal(_signum: int, _frame: Any) -> None:
            ex.stop()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        sys.stderr.write(
            f"cocoplus telemetry: exporting to {telemetry_status.shown(conf['endpoint'])} every "
            f"{ex.conf['interval_s']:g}s\n"
        )
        ex.run()
        return telemetry_status.read(layout).get("last") or {}
    finally:
        os.close(fd)
