"""Sidecar locks: finite timeouts, release on SIGKILL, and mutual exclusion with filelock."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import filelock
import pytest

from cocoplus.core import lock as lockmod
from cocoplus.core.errors import LockTimeout
from cocoplus.core.lock import Budget, Lock
from tests.support.typed import present

WORKERS = os.path.join(os.path.dirname(__file__), "workers.py")


class Holder:
    """A child process holding a lock (cocoplus.core.lock.Lock or filelock.FileLock)."""

    def __init__(self, tmp_path, kind: str, lock_path: str) -> None:
        n = len(os.listdir(tmp_path))
        self.ready = str(tmp_path / f"ready-{n}")
        self.release_file = str(tmp_path / f"release-{n}")
        self.proc = subprocess.Popen(
            [sys.executable, WORKERS, "hold", kind, lock_path, self.ready, self.release_file],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 20
        while not os.path.exists(self.ready):
            if self.proc.poll() is not None:
                raise AssertionError(f"holder died: {present(self.proc.stderr).read()}")
            assert time.monotonic() < deadline, "holder never took the lock"
            time.sleep(0.005)

    def release(self) -> None:
        open(self.release_file, "w").close()
        self.proc.communicate(timeout=20)
        assert self.proc.returncode == 0

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.communicate(timeout=20)
        assert self.proc.returncode == -signal.SIGKILL

    def cleanup(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def locked_elsewhere(path: str) -> bool:
    """Whether another process sees `path` as locked."""
    code = "import sys; from cocoplus.core.lock import is_locked; sys.exit(0 if is_locked(sys.argv[1]) else 3)"
    probe = subprocess.run([sys.executable, "-c", code, path], timeout=20)
    assert probe.returncode in (0, 3)
    return probe.returncode == 0


@pytest.fixture
def holder(tmp_path):
    made: list[Holder] = []

    def make(kind: str, lock_path: str) -> Holder:
        h = Holder(tmp_path, kind, lock_path)
        made.append(h)
        return h

    yield make
    for h in made:
        h.cleanup()


@pytest.fixture
def lock_path(tmp_path):
    d = tmp_path / "locks"
    return str(d / "state.lock")


def test_lock_times_out_in_bounded_time(holder, lock_path):
    h = holder("cocoplus", lock_path)
    start = time.monotonic()
    with pytest.raises(LockTimeout) as info:
        Lock(lock_path, timeout=0.3).acquire()
    elapsed = time.monotonic() - start
    assert 0.3 <= elapsed < 3.0  # bounded: the timeout plus scheduling slack
    assert lock_path in str(info.value) and "0.3s" in str(info.value)
    h.release()
    with Lock(lock_path, timeout=2):
        pass


class LateClock:
    """`time` as the lock sees it on a loaded machine: each sleep returns half a second late."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept = 0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept += 1
        self.now += seconds + 0.5


def test_a_lock_that_overran_its_timeout_names_the_timeout_not_the_time_it_took(holder, lock_path, monkeypatch):
    """The message is the same however late the last wake-up came (it once said "0.31s" for a 0.3 s lock)."""
    holder("cocoplus", lock_path)
    clock = LateClock()
    monkeypatch.setattr(lockmod, "time", clock)
    with pytest.raises(LockTimeout) as info:
        Lock(lock_path, timeout=0.3).acquire()
    assert clock.slept >= 1 and clock.now - 1000.0 > 0.5  # it really waited past its timeout
    assert f"{lock_path}: lock still held by another process after 0.3s" in str(info.value), str(info.value)
    assert info.value.timeout == 0.3


def test_a_wait_a_budget_cut_short_names_the_lock_timeout_too(holder, lock_path):
    holder("cocoplus", lock_path)
    with pytest.raises(LockTimeout) as info:
        Lock(lock_path, timeout=5, budget=Budget(0.2)).acquire()
    text = str(info.value)
    assert "lock still held by another process after 0." in text and "the lock's timeout is 5s" in text
    assert info.value.timeout == 5


def test_zero_timeout_tries_once(holder, lock_path):
    holder("cocoplus", lock_path)
    start = time.monotonic()
    with pytest.raises(LockTimeout):
        Lock(lock_path, timeout=0).acquire()
    assert time.monotonic() - start < 1.5


def test_lock_is_released_when_holder_is_killed(holder, lock_path):
    h = holder("cocoplus", lock_path)
    assert lockmod.is_locked(lock_path)
    h.kill()
    start = time.monotonic()
    with Lock(lock_path, timeout=5):
        assert time.monotonic() - start < 2.0
    assert os.path.exists(lock_path), "the lock file stays (never deleted)"


def test_filelock_holder_excludes_cocoplus_lock(holder, lock_path):
    h = holder("filelock", lock_path)
    with pytest.raises(LockTimeout):
        Lock(lock_path, timeout=0.2).acquire()
    h.release()
    with Lock(lock_path, timeout=2):
        pass


def test_cocoplus_holder_excludes_filelock(holder, lock_path):
    h = holder("cocoplus", lock_path)
    with pytest.raises(filelock.Timeout):
        filelock.FileLock(lock_path, timeout=0.2).acquire()
    h.release()
    fl = filelock.FileLock(lock_path, timeout=2)
    with fl:
        assert fl.is_locked
    assert os.path.exists(lock_path)


def test_reentrant_in_one_thread_exclusive_across_threads(lock_path):
    outer = Lock(lock_path, timeout=1)
    result: dict[str, object] = {}
    with outer:
        with Lock(lock_path, timeout=0.1):  # same thread: no deadlock
            pass

        def other() -> None:
            try:
                Lock(lock_path, timeout=0.2).acquire()
                result["got"] = True
            except LockTimeout:
                result["got"] = False

        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert result["got"] is False
    # After the outer release another thread can take it.

    def again() -> None:
        lk = Lock(lock_path, timeout=1)
        lk.acquire()
        lk.release()
        result["again"] = True

    t = threading.Thread(target=again)
    t.start()
    t.join()
    assert result["again"] is True


def test_release_after_nested_acquire_only_unlocks_at_depth_zero(lock_path):
    lk = Lock(lock_path, timeout=1)
    lk.acquire()
    lk.acquire()
    lk.release()
    # Still held: another process cannot take it.
    assert locked_elsewhere(lock_path)
    lk.release()
    assert not locked_elsewhere(lock_path)


def test_lock_refuses_symlink(tmp_path):
    target = tmp_path / "victim"
    target.write_text("keep me")
    link = tmp_path / "x.lock"
    link.symlink_to(target)
    from cocoplus.core.errors import CocoplusError

    with pytest.raises(CocoplusError, match="symbolic link"):
        Lock(str(link), timeout=0.1).acquire()
    assert target.read_text() == "keep me"
