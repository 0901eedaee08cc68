"""Sidecar file locks with a finite timeout (standard library only).

A lock is `fcntl.flock` on `.cocoplus/locks/<name>.lock`, the same primitive
`filelock.FileLock` uses on Unix, so the two exclude each other on the same
path (tests/core/test_lock.py proves it).  Lock files are never deleted:
deleting a locked path lets two processes hold "the same" lock.

Within one thread a lock is re-entrant; different threads and processes
exclude each other.  The OS drops the lock when its holder dies, so a
`kill -9` never leaves a stale lock behind.
"""

from __future__ import annotations

import errno
import os
import time
from _thread import get_ident

from cocoplus.core.errors import CocoplusError, LockTimeout

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from types import TracebackType


try:  # pragma: no cover - Windows has no fcntl; cocoplus targets POSIX first
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

DEFAULT_TIMEOUT = 10.0

# (thread id, lock path) -> [fd, depth]
_held: dict[tuple[int, str], list[int]] = {}


class Lock:
    """`with Lock(path, timeout=5): ...` holds an exclusive flock on `path`."""

    __slots__ = ("path", "timeout", "_key")

    def __init__(self, path: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.path = path
        self.timeout = timeout
        self._key = (get_ident(), path)

    def acquire(self) -> None:
        entry = _held.get(self._key)
        if entry is not None:
            entry[1] += 1
            return
        fd = _open_lock_file(self.path)
        deadline = time.monotonic() + self.timeout
        delay = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    os.close(fd)
                    raise CocoplusError(f"{self.path}: cannot lock ({exc.strerror})") from None
            now = time.monotonic()
            if now >= deadline:
                os.close(fd)
                raise LockTimeout(self.path, self.timeout)
            time.sleep(min(delay, deadline - now))
            delay = min(delay * 2, 0.05)
        _held[self._key] = [fd, 1]

    def release(self) -> None:
        entry = _held.get(self._key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] == 0:
            del _held[self._key]
            try:
                fcntl.flock(entry[0], fcntl.LOCK_UN)
            finally:
                os.close(entry[0])

    def __enter__(self) -> Lock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def try_lock(path: str) -> int | None:
    """Take `path` without waiting; return the fd that holds it, or None if busy.

    For process-lifetime singletons (one supervisor, one chat worker): the
    caller keeps the fd open for as long as it runs.
    """
    fd = _open_lock_file(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def is_locked(path: str) -> bool:
    """True if some process holds `path` right now."""
    if not os.path.exists(path):
        return False
    fd = try_lock(path)
    if fd is None:
        return True
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)
    return False


def _open_lock_file(path: str) -> int:
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        return os.open(path, flags, 0o600)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        return os.open(path, flags, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise CocoplusError(f"{path}: refusing to lock through a symbolic link") from None
        raise CocoplusError(f"{path}: cannot open lock file ({exc.strerror})") from None
