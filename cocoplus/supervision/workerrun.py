"""The runner of one managed worker: `python -m cocoplus.supervision.workerrun STATE_DIR WORKER_ID`.

Started detached by `workers.start_runner` (a launch, or a dispatch that
resumes a worker).  It waits for a slot (`workers.claim`, every
`POLL_S`), starts the worker's command in the project directory in a
process group of its own (so `workers kill` stops the runtime and what it
started, and not the runner), copies its output to the worker's log,
rotating it at `[workers] log_max_bytes`, and records how the run ended
(`workers.finish`).  It exits with the runtime's exit code.

SIGTERM to the runner (a queued worker killed, a shutdown) ends the wait,
or passes on to the runtime's process group.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from typing import Any

from cocoplus.core import clock, fsio
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.supervision import workers

POLL_S = 0.25
CHUNK = 64 * 1024


def say(message: str) -> None:
    sys.stderr.write(f"{clock.iso()} worker runner: {message}\n")
    sys.stderr.flush()


class Output:
    """The worker's output log: appended, set aside as `NAME.1` once it would pass `max_bytes`."""

    def __init__(self, path: str, max_bytes: int) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.fd = fsio.open_log(path, max_bytes)
        self.size = os.fstat(self.fd).st_size
        self.lost = False

    def write(self, data: bytes) -> None:
        if self.size and self.size + len(data) > self.max_bytes:
            self.rotate()
        view = memoryview(data)
        while view:
            try:
                n = os.write(self.fd, view)
            except OSError as exc:
                if not self.lost:
                    self.lost = True
                    fsio.note_loss(self.path, exc)
                    say(f"output not kept ({exc.strerror}); later output is dropped")
                return
            view = view[n:]
            self.size += n

    def rotate(self) -> None:
        os.close(self.fd)
        try:
            os.replace(self.path, self.path + ".1")
        except OSError as exc:
            say(f"cannot rotate {self.path} ({exc.strerror})")
        self.fd = fsio.open_log(self.path, self.max_bytes)
        self.size = os.fstat(self.fd).st_size

    def close(self) -> None:
        os.close(self.fd)


def run(layout: Layout, wid: str) -> int:
    stopping: dict[str, Any] = {"child": None, "asked": False}

    def on_term(signum: int, _frame: Any) -> None:
        stopping["asked"] = True
        child = stopping["child"]
        if child is not None:
            try:
                os.killpg(child.pid, signum)
            except OSError:
                pass

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # detached: a closing terminal is none of its business
    max_parallel, log_max = workers.settings(layout)  # the launch checked them a moment ago
    said = ""
    while True:
        if stopping["asked"]:
            say("stopped while queued")
            workers.finish(layout, wid, -signal.SIGTERM, "its runner was stopped before it started")
            return 1
        try:
            max_parallel, log_max = workers.settings(layout)  # a changed limit applies to the queue at once
        except CocoplusError as exc:
            if str(exc) != said:  # an edit in progress must not drop the queue; said once, not every poll
                said = str(exc)
                say(f"keeping max_parallel {max_parallel}: {exc}")
        verdict = workers.claim(layout, wid, max_parallel)
        if verdict == "start":
            break
        if verdict == "gone":
            say("no longer queued (killed or ended meanwhile)")
            return 0
        time.sleep(POLL_S)
    rec = workers.read(layout, wid) or {}
    cmd = rec.get("command")
    if not isinstance(cmd, list) or not cmd or not all(isinstance(a, str) for a in cmd):
        workers.finish(layout, wid, None, "its record holds no command")
        return 1
    out = Output(layout.worker_log(wid), log_max)
    out.write(f"[cocoplus] {clock.iso()} run {rec.get('runs')}: {' '.join(cmd)[:2000]}\n".encode())
    try:
        child = subprocess.Popen(
            cmd, cwd=layout.project, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: `workers kill` stops it and what it started, not this runner
        )  # fmt: skip
    except OSError as exc:
        out.write(f"[cocoplus] cannot start {cmd[0]}: {exc.strerror or exc}\n".encode())
        out.close()
        workers.finish(layout, wid, 127, f"could not start {cmd[0]} ({exc.strerror or exc})")
        return 127
    stopping["child"] = child
    workers.started(layout, wid, child.pid)
    say(f"started pid {child.pid}")
    assert child.stdout is not None
    src = child.stdout.fileno()
    while True:
        try:
            chunk = os.read(src, CHUNK)
        except OSError as exc:
            if exc.errno == errno.EINTR:
                continue
            break
        if not chunk:
            break
        out.write(chunk)
    code = child.wait()
    out.write(f"[cocoplus] {clock.iso()} run {rec.get('runs')} ended: {workers.status_text(code)}\n".encode())
    out.close()
    try:
        done = workers.finish(layout, wid, code)
    except CocoplusError as exc:
        say(f"the end of the run not recorded: {exc}")
        return 1
    say(f"ended: {(done or {}).get('state')} ({workers.status_text(code)})")
    return code if code >= 0 else 128 - code


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write("usage: python -m cocoplus.supervision.workerrun STATE_DIR WORKER_ID\n")
        return 2
    try:
        return run(Layout(argv[0]), argv[1])
    except CocoplusError as exc:
        say(f"error: {exc}")
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
