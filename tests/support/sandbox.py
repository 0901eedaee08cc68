"""Whether a test that needs a real sandbox may run: the doctor's probe decides.

A test that needs user namespaces calls `require_sandbox()`: skipped with the doctor's cause and fix where the
probe reports a sandbox cannot be applied, except under `CI=true` as root (the project's own machines, Debian,
where tests/e2e/runtimes/install-sandbox.sh installs bubblewrap): there the probe must succeed, or the test fails.
A test of the `srt` profile calls `require_srt()`: the same, for Anthropic's sandbox runtime as that script
installs it (pinned, in tests/e2e/runtimes/srt), whose bin directory it returns for PATH.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from cocoplus.hook import channel as wire
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


def channel_call(
    layout: Layout, argv: list[str], payload: Mapping[str, object], env: dict[str, str] | None = None
) -> tuple[int, bytes, bytes]:
    """A hook's call to worker w1's control channel, framed as hook/channel.py sends it (its arguments, `env` or this
    process's environment, the project as its directory, `payload` on its stdin): the exit code, stdout, stderr."""
    environ = env if env is not None else dict(os.environ)
    frame = b"".join(
        (
            wire.field(b"\0".join(a.encode() for a in argv)),
            wire.field(b"\0".join(f"{k}={v}".encode() for k, v in environ.items())),
            wire.field(layout.project.encode()),
            wire.field(json.dumps(payload).encode()),
        )
    )
    here = os.getcwd()
    os.chdir(layout.worker_dir("w1"))  # a socket's path is limited to about 100 bytes: connected by its name
    try:
        return wire.exchange(frame, 60, os.path.basename(layout.worker_channel("w1")))
    finally:
        os.chdir(here)
