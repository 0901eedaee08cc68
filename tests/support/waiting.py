"""Polling for a condition with a deadline (tests never sleep blindly for an outcome)."""

from __future__ import annotations

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
