"""How the reply worker is started: one start for a burst of sends, and a lower scheduling priority.

A worker takes a moment to start (a Python start) before it holds its lock; every send in that moment used to
start another, each of them a whole interpreter importing cocoplus only to find the lock taken and exit: fifty
concurrent sends took the cores from the server's answers for seconds.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from cocoplus.chat import worker
from cocoplus.core.paths import Layout
from tests.server.conftest import stop_background, wait_until


def nice_of(pid: int) -> int:
    """The scheduling nice value of a process (field 19 of /proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[16])


def test_a_burst_of_starts_starts_one_worker_at_a_lower_priority(project: Layout) -> None:
    started: list[int | None] = []
    gate = threading.Barrier(8)

    def send() -> None:
        gate.wait()
        started.append(worker.ensure_worker(project))

    threads = [threading.Thread(target=send) for _ in range(8)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        pids = [p for p in started if p is not None]
        assert len(started) == 8 and len(pids) == 1, started
        # Still starting, or running: no other is started.
        assert worker.ensure_worker(project) is None
        wait_until(lambda: worker.worker_running(project) and os.path.exists(project.chat_worker_pid), timeout=60)
        assert worker.ensure_worker(project) is None
        assert nice_of(pids[0]) == min(19, os.nice(0) + worker.NICE), "the worker runs at a lower priority"
    finally:
        stop_background(project)


def test_a_worker_that_died_while_starting_is_started_again(project: Layout) -> None:
    first = worker.ensure_worker(project)
    assert first is not None
    os.kill(first, 9)
    wait_until(lambda: worker._started[project.root][0].poll() is not None, timeout=30)
    try:
        second = worker.ensure_worker(project)
        assert second is not None and second != first
    finally:
        wait_until(lambda: worker.worker_running(project), timeout=60)
        stop_background(project)


def test_the_worker_run_in_this_process_keeps_its_priority(project: Layout) -> None:
    """`serve` lowers the priority only when asked (the `chat worker` command asks): a caller that runs it in its
    own process keeps its own."""
    before = os.nice(0)
    worker.serve(project, once=True)
    assert os.nice(0) == before
