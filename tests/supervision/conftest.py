"""Supervision fixtures: a project with sessions, a recording brain, and a real watcher process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from cocoplus.core.shapes import SessionRecord
from cocoplus.session import registry
from tests.support.trusting import trust_project
from tests.support.waiting import wait_until

BRAIN = """\
import os, sys, time
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
prompt = sys.stdin.read()
name = os.path.join(d, f"{time.time_ns()}.txt")
with open(name + ".part", "w") as fh:
    fh.write(prompt)
os.replace(name + ".part", name)  # a prompt is seen whole or not at all
time.sleep(float(sys.argv[2]))
gate, deadline = sys.argv[3], time.monotonic() + 60
while gate != "-" and not os.path.exists(gate) and time.monotonic() < deadline:
    time.sleep(0.05)
print("brain: noted")
"""


class Brain:
    """A `command` backend that records every prompt it gets as a file, then answers after `sleep`
    seconds (and, with `gated`, not before `open()` is called: 60 s at most)."""

    def __init__(
        self, layout: Layout, sleep: float = 0.0, quiet: float = 0.5, max_wait: float = 10.0, gated: bool = False
    ) -> None:
        self.layout = layout
        self.dir = Path(layout.project) / "prompts"
        self.gate = Path(layout.project) / "brain-gate"
        script = Path(layout.project) / "brain.py"
        script.write_text(BRAIN)
        gate = str(self.gate) if gated else "-"
        Path(layout.config).write_text(
            f'[chat]\ncontroller = "brain"\n[accounts.brain]\nkind = "command"\n'
            f'command = ["{sys.executable}", "{script}", "{self.dir}", "{sleep}", "{gate}"]\n'
            f"[supervision]\nquiet_window_s = {quiet}\nmax_wait_s = {max_wait}\nreconcile_s = 1\n"
        )
        trust_project(layout)  # the tests are about what the brain is asked (docs/guides/configuration.md, "Trust")

    def open(self) -> None:
        self.gate.touch()

    def prompts(self) -> list[str]:
        if not self.dir.exists():
            return []
        return [p.read_text() for p in sorted(self.dir.glob("*.txt"))]


def rounds_started(layout: Layout) -> list[dict[str, Any]]:
    try:
        lines = Path(layout.rounds).read_text().splitlines()
    except FileNotFoundError:
        return []
    return [r for r in (json.loads(x) for x in lines) if r["event"] == "round_started"]


def rounds_finished(layout: Layout) -> list[dict[str, Any]]:
    try:
        lines = Path(layout.rounds).read_text().splitlines()
    except FileNotFoundError:
        return []
    return [r for r in (json.loads(x) for x in lines) if r["event"] == "round_finished"]


def triggers_of(rnd: dict[str, Any]) -> list[tuple[Any, Any, Any]]:
    """A round's triggers as (alias, kind, value)."""
    return [(t.get("alias"), t.get("kind"), t.get("value")) for t in rnd["triggers"]]


def signals_read_to(layout: Layout) -> int:
    """How far the watcher has read `supervision/signals.jsonl` (the offset it saves in supervision/cursor.json)."""
    try:
        return int(json.loads((Path(layout.supervision_dir) / "cursor.json").read_text())["signals_offset"])
    except (OSError, ValueError, KeyError):
        return 0


def watcher_has_processed_every_signal(layout: Layout, rec: SessionRecord) -> None:
    """Wait until the running watcher has read and classified every signal written so far.

    This is the proof that the watcher was alive and processing before a test
    asserts that something did not happen.  The watcher saves its offset
    before it classifies what it read, so one more signal, one that never
    wakes anybody (a `working` heartbeat from `rec`), is written and waited
    for too: once the offset passes it, the watcher has finished with
    everything before it.
    """
    end = os.path.getsize(layout.signals) if os.path.exists(layout.signals) else 0
    wait_until(lambda: signals_read_to(layout) >= end, timeout=20)
    registry.append_signal(layout, rec, "report_progress", "working")
    end = os.path.getsize(layout.signals)
    wait_until(lambda: signals_read_to(layout) >= end, timeout=20)


class Watcher:
    def __init__(self, layout: Layout, env: dict[str, str] | None = None, polling: bool = False) -> None:
        self.layout = layout
        full = dict(os.environ, COCOPLUS_DIR=layout.root, **(env or {}))
        argv = [sys.executable, "-m", "cocoplus", "supervisor", "run"] + (["--polling"] if polling else [])
        self.log = Path(layout.project) / "supervisor.log"
        self.fh = self.log.open("w")
        self.proc = subprocess.Popen(argv, cwd=layout.project, env=full, stdout=self.fh, stderr=subprocess.STDOUT)
        wait_until(lambda: "watching" in self.log.read_text() or self.proc.poll() is not None, timeout=20)
        assert self.proc.poll() is None, self.log.read_text()

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.fh.close()
        return self.proc.returncode

    def text(self) -> str:
        return self.log.read_text()


def stop_chat_worker(layout: Layout) -> None:
    try:
        pid = json.load(open(layout.chat_worker_pid))["pid"]
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError, KeyError):
        pass


@pytest.fixture
def sessions(project: Layout):
    """Three claude sessions cc1..cc3 and a codex session cx1, all running."""
    made = {}
    for rid, runtime in (("s-one", "claude"), ("s-two", "claude"), ("s-three", "claude"), ("x-one", "codex")):
        rec, _ = registry.ensure(project, runtime, rid, event="SessionStart")
        made[rec["alias"]] = rec
    yield made
    stop_chat_worker(project)


@pytest.fixture
def watchers(project: Layout):
    started: list[Watcher] = []

    def start(**kw: Any) -> Watcher:
        w = Watcher(project, **kw)
        started.append(w)
        return w

    yield start
    for w in started:
        w.stop()
    stop_chat_worker(project)
