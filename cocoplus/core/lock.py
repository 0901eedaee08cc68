"""Sidecar file locks with a finite timeout (standard library only).

A lock is `fcntl.flock` on `.cocoplus/locks/<name>.lock`, the same primitive
`filelock.FileLock` uses on Unix, so the two exclude each other on the same
path (tests/core/test_lock.py proves it).  Lock files are never deleted:
deleting a locked path lets two processes hold "the same" lock.

Within one thread a lock is re-entrant; different threads and processes
exclude each other.  The OS drops the lock when its holder dies, so a
`kill -9` never leaves a stale lock behind.

Waits are bounded twice: by the lock's own timeout, and by a `Budget` (a
deadline shared by every lock one process takes).  A hook sets one
process-wide budget from the timeout its runtime kills it at
(`set_process_budget(Budget.for_hook(...))`), so the sum of all its waits
stays inside that timeout whatever each caller asks for.
"""

from __future__ import annotations

import os
import stat as _stat
import time
from _thread import get_ident

from cocoplus.core.errors import CocoplusError, LockTimeout
from cocoplus.core.roots import dirs_below_root

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from types import TracebackType


try:  # pragma: no cover - Windows has no fcntl; cocoplus targets POSIX first
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

DEFAULT_TIMEOUT = 10.0

# A hook must be done this long before its runtime's timeout: interpreter
# start-up, the answer, and a loaded machine all need time besides lock waits.
HOOK_MARGIN_S = 3.0
HOOK_MARGIN_FRACTION = 0.3


def hook_margin(timeout_s: float) -> float:
    """How long before its runtime's timeout a hook with timeout `timeout_s` (no wait in it) stops waiting."""
    return max(HOOK_MARGIN_S, HOOK_MARGIN_FRACTION * float(timeout_s))


def wait_allowed(hook_timeout_s: float, base_s: float) -> float:
    """How long one wait inside a hook (the turn-end hold, a permission request) may last when its runtime
    kills it after `hook_timeout_s`: what is left once the hook's other work is provided for, which is
    `base_s` (`[hooks] timeout_s`, the timeout of a hook without a wait) and never less than its margin."""
    base = min(float(base_s), float(hook_timeout_s))
    return max(0.0, float(hook_timeout_s) - max(base, hook_margin(base)))


# (thread id, lock path) -> [fd, depth]
_held: dict[tuple[int, str], list[int]] = {}


class Budget:
    """A deadline that several lock waits draw from: `Budget(7.0)` allows 7 s of waiting in all."""

    __slots__ = ("seconds", "deadline")

    def __init__(self, seconds: float, started: float | None = None) -> None:
        self.seconds = max(0.0, float(seconds))
        self.deadline = (time.monotonic() if started is None else started) + self.seconds

    @classmethod
    def for_hook(cls, hook_timeout_s: float, started: float | None = None, base_s: float | None = None) -> Budget:
        """The lock budget of a hook its runtime kills after `hook_timeout_s` seconds.

        The margin is at least HOOK_MARGIN_S (and 30% of long timeouts), so
        a hook whose every lock is held still answers in time.  `started`
        is a `time.monotonic()` reading taken when the process began.  For a
        hook whose timeout includes a wait (the turn-end hold, a permission
        request), `base_s` is the part that is not the wait (`[hooks]
        timeout_s`): the margin is taken from that, not from the whole.
        """
        return cls(float(hook_timeout_s) - hook_margin(hook_timeout_s if base_s is None else base_s), started)

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def __repr__(self) -> str:
        return f"Budget({self.seconds:g}s, {self.remaining():.2f}s left)"


_process_budget: Budget | None = None


def set_process_budget(budget: Budget | None) -> Budget | None:
    """Make every lock this process takes draw from `budget` (None: no process-wide bound).

    Returns the budget it replaces.
    """
    global _process_budget
    old, _process_budget = _process_budget, budget
    return old


def allowed_wait(timeout: float, budget: Budget | None = None) -> float:
    """How long a lock may wait: its timeout, cut to what `budget` and the process budget have left."""
    wait = timeout
    for b in (budget, _process_budget):
        if b is not None:
            wait = min(wait, b.remaining())
    return max(0.0, wait)


class Lock:
    """`with Lock(path, timeout=5): ...` holds an exclusive flock on `path`.

    `budget` (and the process budget, if one is set) can shorten the wait;
    with nothing left, the lock is tried once.
    """

    __slots__ = ("path", "timeout", "budget", "_key")

    def __init__(self, path: str, timeout: float = DEFAULT_TIMEOUT, budget: Budget | None = None) -> None:
        self.path = path
        self.timeout = timeout
        self.budget = budget
        self._key = (get_ident(), path)

    def acquire(self) -> None:
        entry = _held.get(self._key)
        if entry is not None:
            entry[1] += 1
            return
        fd = _open_lock_file(self.path)
        start = time.monotonic()
        wait = allowed_wait(self.timeout, self.budget)
        deadline = start + wait
        delay = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                import errno  # deferred: only on an error (its table costs every hook's start)

                if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    os.close(fd)
                    raise CocoplusError(f"{self.path}: cannot lock ({exc.strerror})") from None
            now = time.monotonic()
            if now >= deadline:
                os.close(fd)
                raise LockTimeout(self.path, self.timeout, wait)
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
    # O_NONBLOCK: a FIFO planted at the path must not hang the open.
    flags = (
        os.O_RDWR
        | os.O_CREAT
        | getattr(os, "O_NOFOLLOW", 0)
        | getattr(os, "O_CLOEXEC", 0)
        | getattr(os, "O_NONBLOCK", 0)
    )
    for d in dirs_below_root(path):  # the locks directory must not lead elsewhere either
        if os.path.islink(d):
            raise CocoplusError(f"{d}: is a symbolic link; refusing to lock through it")
    try:
        try:
            fd = os.open(path, flags, 0o600)
        except FileNotFoundError:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            fd = os.open(path, flags, 0o600)
    except OSError as exc:
        import errno  # deferred: only on an error (its table costs every hook's start)

        if exc.errno == errno.ELOOP:
            raise CocoplusError(f"{path}: refusing to lock through a symbolic link") from None
        if exc.errno == errno.EISDIR:
            raise CocoplusError(f"{path}: is a directory, expected a lock file") from None
        raise CocoplusError(f"{path}: cannot open lock file ({exc.strerror})") from None
    if not _stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise CocoplusError(f"{path}: is not a regular file; refusing to use it as a lock")
    return fd
