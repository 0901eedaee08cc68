"""Whether a test that needs a real sandbox may run: the doctor's probe decides.

A test that needs user namespaces calls `require_sandbox()`: skipped with the doctor's cause and fix where the
probe reports a sandbox cannot be applied, except under `CI=true` as root (the project's own machines, Debian,
where tests/e2e/runtimes/install-sandbox.sh installs bubblewrap): there the probe must succeed, or the test fails.
A test of the `srt` profile calls `require_srt()`: the same, for Anthropic's sandbox runtime as that script
installs it (pinned, in tests/e2e/runtimes/srt), whose bin directory it returns for PATH.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from cocoplus.sandbox import probe, srt
from tests.support.runtimes import SRT_BIN

_found: dict[str, Any] = {}


def require_sandbox() -> dict[str, Any]:
    """The probe's findings when a sandbox can be applied here; else the test is skipped (or fails on CI)."""
    if "probe" not in _found:
        _found["probe"] = probe.probe()
    found = _found["probe"]
    if not found["ok"]:
        why = f"no sandbox here: {found['cause']}; fix: {found['fix']}"
        if os.environ.get("CI") == "true" and os.geteuid() == 0:
            pytest.fail(f"CI (root, Debian) must be able to sandbox workers: {why}", pytrace=False)
        pytest.skip(why)
    return dict(found)


def _required(found: dict[str, Any], what: str) -> None:
    if found["ok"]:
        return
    why = f"no {what} here: {found['cause']}; fix: {found['fix']}"
    if os.environ.get("CI") == "true" and os.geteuid() == 0:
        pytest.fail(f"CI (root, Debian) must be able to sandbox workers: {why}", pytrace=False)
    pytest.skip(why)


def srt_path() -> str:
    """PATH with the pinned srt (tests/e2e/runtimes/install-sandbox.sh) first."""
    return f"{SRT_BIN}{os.pathsep}{os.environ.get('PATH', os.defpath)}"


def require_srt() -> dict[str, Any]:
    """srt's probe findings (with bubblewrap's `bwrap`) when the `srt` profile can be applied here; else the test
    is skipped (or fails on CI)."""
    found = require_sandbox()
    if "srt" not in _found:
        _found["srt"] = srt.probe(dict(os.environ, PATH=srt_path()))
    held = _found["srt"]
    _required(held, "srt")
    return {**held, "bwrap": found["bwrap"], "PATH": srt_path()}


@contextmanager
def channel_serving(layout: Layout, stderr: int = subprocess.PIPE) -> Iterator[Layout]:
    """The control channel of worker w1 of `layout`'s project (cocoplus/sandbox/channel.py), listening outside
    until the block ends."""
    os.makedirs(layout.worker_dir("w1"), exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "cocoplus.sandbox.channel", layout.root, "w1", layout.project],
        stdout=subprocess.PIPE, stderr=stderr,
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        yield layout
    finally:
        proc.terminate()
        proc.wait(30)
