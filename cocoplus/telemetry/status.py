"""Where traces go and how the export is going, without the OpenTelemetry SDK (doctor, top and the page read this).

Settings: the standard variables of the exporting process win where set (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
`OTEL_EXPORTER_OTLP_ENDPOINT`, their `_HEADERS`; `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` turn the
export off); `[telemetry]` fills in (its endpoint and headers from a project's file only once the file is trusted).

The status file (`Layout.telemetry_status`) is written by the process that exports, after every export: which
process it is, its batch interval, and the last export's outcome (a failure with its HTTP status: a 401 is said as
an authentication failure).  The process holds the `telemetry` lock while it exports, so whether one runs is known
from the lock."""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Mapping
from typing import Any

from cocoplus import config as config_mod
from cocoplus.core import fsio
from cocoplus.core.errors import CocoplusError
from cocoplus.core.lock import is_locked
from cocoplus.core.paths import Layout

LOCK = "telemetry"
NOTHING_EXPORTING = "export pending: nothing exporting"
TRACES_PATH = "/v1/traces"


def _headers(text: str) -> dict[str, str]:
    """`name=value,name=value` (values URL-encoded) as OTEL_EXPORTER_OTLP_HEADERS writes them."""
    out: dict[str, str] = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        if sep and name.strip():
            out[urllib.parse.unquote(name.strip()).lower()] = urllib.parse.unquote(value.strip())
    return out


def shown(url: str) -> str:
    """An endpoint as shown: no user, password or query (where credentials travel)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


def settings(layout: Layout, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Where traces go: `configured`, `endpoint` (the traces URL), `headers`, `interval_s`, `content`, `source`
    (`environment` or `[telemetry]`), `off` (why not, when the variables turn it off) and `ignored` (a project
    file's endpoint left out until the file is trusted)."""
    env = os.environ if environ is None else environ
    cfg = config_mod.load_for(layout)
    out: dict[str, Any] = {
        "configured": False, "endpoint": None, "headers": {}, "source": None, "off": None,
        "interval_s": float(cfg.get("telemetry.interval_s")), "content": bool(cfg.get("telemetry.log_content")),
        "ignored": cfg.ignored_value("telemetry.endpoint") is not None,
    }  # fmt: skip
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        out["off"] = "OTEL_SDK_DISABLED=true"
    elif env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        out["off"] = "OTEL_TRACES_EXPORTER=none"
    endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    if endpoint or base:
        out["source"] = "environment"
        endpoint = endpoint or base.rstrip("/") + TRACES_PATH
    elif cfg.get("telemetry.endpoint"):
        out["source"] = "[telemetry]"
        endpoint = str(cfg.get("telemetry.endpoint")).strip()
        if not endpoint.rstrip("/").endswith(TRACES_PATH):
            endpoint = endpoint.rstrip("/") + TRACES_PATH
    if not endpoint:
        return out
    headers = _headers(str(cfg.get("telemetry.headers") or ""))
    headers.update(_headers(env.get("OTEL_EXPORTER_OTLP_HEADERS", "")))
    headers.update(_headers(env.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "")))
    out.update(configured=out["off"] is None, endpoint=endpoint, headers=headers)
    return out


def configured(layout: Layout, environ: Mapping[str, str] | None = None) -> bool:
    try:
        return bool(settings(layout, environ)["configured"])
    except CocoplusError:
        return False


def read(layout: Layout) -> dict[str, Any]:
    """The status file (`{}` when there is none; `damaged` and `error` when it cannot be read)."""
    try:
        return fsio.read_json(layout.telemetry_status) or {}
    except CocoplusError as exc:
        return {"damaged": True, "error": str(exc)}


def running_pid(layout: Layout) -> int | None:
    """The pid of the process that exports for this project, if one does (-1: one does, its pid is not known)."""
    if not is_locked(layout.lock(LOCK)):
        return None
    pid = read(layout).get("pid")
    return pid if isinstance(pid, int) and pid > 0 else -1


def write(layout: Layout, doc: dict[str, Any]) -> None:
    fsio.ensure_dir(layout.telemetry_dir)
    fsio.atomic_write_json(layout.telemetry_status, doc)


def failure(code: int | None, error: str | None) -> str:
    """A failed export in words."""
    if code in (401, 403):
        return f"authentication failed (HTTP {code}): check the Authorization header ({error or 'refused'})"
    if code is not None:
        return f"HTTP {code}: {error or 'refused'}"
    return error or "the export failed"


def report(layout: Layout, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The export as doctor, top and the page show it: `configured`, `endpoint` (shown), `exporting` (the pid, or
    None), `process`, `last` (the last export), `problem` (one line, or None: nothing exporting, or the last export
    failed) and `ok`."""
    try:
        conf = settings(layout, environ)
    except CocoplusError as exc:
        conf = {"configured": False, "endpoint": None, "off": None, "ignored": False}
        return {"configured": False, "ok": False, "problem": f"telemetry settings: {exc}", "exporting": None}
    doc = read(layout)
    pid = running_pid(layout)
    last = doc.get("last") if isinstance(doc.get("last"), dict) else None
    out: dict[str, Any] = {
        "configured": conf["configured"], "endpoint": shown(conf["endpoint"]) if conf["endpoint"] else None,
        "source": conf.get("source"), "off": conf.get("off"), "ignored": conf.get("ignored"),
        "exporting": pid, "process": doc.get("process") if pid else None, "interval_s": doc.get("interval_s"),
        "last": last, "problem": None
    }  # fmt: skip
    if last is not None and not last.get("ok"):
        out["problem"] = f"trace export failing since {last.get('since') or last.get('at')}: " + failure(
            last.get("code"), last.get("error")
        )
    elif conf["configured"] and pid is None:
        out["problem"] = (
            f"{NOTHING_EXPORTING} (traces for {out['endpoint']}: run `cocoplus telemetry export`, or keep "
            "`cocoplus supervisor run` or `cocoplus serve` running)"
        )
    out["ok"] = out["problem"] is None
    return out
