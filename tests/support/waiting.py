"""Polling for a condition with a deadline (tests never sleep blindly for an outcome)."""

from __future__ import annotations

import threading
import time
from typing import Any


def wait_until(fn: Any, timeout: float = 30.0, interval: float = 0.05) -> Any:
    """Call `fn` until it returns something truthy; return that, or fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = fn()
        if got:
            return got
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s")


def in_thread(fn: Any, *args: Any, **kwargs: Any) -> tuple[threading.Thread, dict[str, Any]]:
    """Run `fn` in a started thread; its result (or the exception it raised) lands in the returned box."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            box["error"] = exc

    t = threading.Thread(target=target)
    t.start()
    return t, box
