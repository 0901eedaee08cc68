"""Sending one notification to one target with apprise: the only module that imports it.

apprise (and the HTTP client under it) is imported on the first send, never
at CLI start-up and never in a hook.  Each target is an apprise URL
(`ntfy://topic`, `mailto://...`, `json://host:port/path`, ...); what is
logged about it is apprise's privacy form of the URL, which hides tokens
and passwords.

What is sent is inert plain text (core.inert: the title on one line, the
body on several), declared as text, so apprise escapes it for a target
that reads HTML or Markdown.  Each message carries its notification id
(outbox.notification_id): as the body's last line, `[cocoplus n_...]`,
and, for the targets whose payload apprise lets us extend (`json://`,
`xml://`, `form://` and their `s` forms), as the field `cocoplus_id`.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from cocoplus.core import inert

_lock = threading.Lock()
_apprise: Any = None
_last_error: dict[int, str] = {}  # thread id -> apprise's last warning in that thread


class _Capture(logging.Handler):
    """Keeps apprise's warnings off the terminal and gives each sending thread its own last one."""

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING and record.thread is not None:
            _last_error[record.thread] = " ".join(record.getMessage().split())[:300]


def _module() -> Any:
    global _apprise
    with _lock:
        if _apprise is None:
            import apprise  # deferred: pulls in requests and its plugins (about 0.25 s); only a notifier sends

            log = logging.getLogger("apprise")
            log.addHandler(_Capture())
            log.propagate = False
            _apprise = apprise
    return _apprise


def _plugin(url: str) -> Any:
    apprise = _module()
    return apprise.Apprise.instantiate(url, suppress_exceptions=True)


def label(url: str) -> str:
    """The URL as it may be shown or logged (secrets hidden), or why it is not a target."""
    plugin = _plugin(url)
    if plugin is None:
        scheme = url.split("://", 1)[0] if "://" in url else url[:20]
        return f"(not an apprise URL: {scheme}://...)"
    shown: str = plugin.url(privacy=True)
    return shown.split("?", 1)[0]


ID_FIELD = "cocoplus_id"


def tag(nid: str) -> str:
    """The line a receiver reads the notification id from."""
    return f"[cocoplus {nid}]"


def send(url: str, title: str, body: str, nid: str | None = None) -> tuple[bool, str | None]:
    """Deliver one message (with its notification id, if given); (True, None) or (False, why). Never raises."""
    me = threading.get_ident()
    _last_error.pop(me, None)
    title, body = inert.line(title), inert.text(body)
    if nid:
        nid = inert.line(nid)
        body = f"{body}\n{tag(nid)}"
    try:
        plugin = _plugin(url)
        if plugin is None:
            return False, "not an apprise URL (or its scheme is not supported)"
        extras = getattr(plugin, "payload_extras", None)
        if nid and isinstance(extras, dict):
            extras[ID_FIELD] = nid
        ok = plugin.notify(body=body, title=title, body_format=_module().NotifyFormat.TEXT)
    except Exception as exc:  # noqa: BLE001 - a plugin's failure is one target's failure, never the notifier's
        return False, f"{type(exc).__name__}: {exc}"
    why = _last_error.pop(me, None)
    return (True, None) if ok else (False, why or "the target refused the message or could not be reached")
