"""File state done safely: atomic whole-file writes, locked read-modify-write,
plain log lines, fixed-width record appends, and setting damaged files aside.

Standard library only (the hook path imports it).  Every JSON document and
log line cocoplus writes under `.cocoplus/` goes through these, and every
JSONL record through `core/jsonl.py`, which stands on them (see
`reference/reliability.md` section 0 for why each step is there), except
where a write must work when these cannot: AGENT_STOP
(`session/killswitch.py`: made even on a full disk, as an empty file or a
directory), iteration spool files (`session/iteration.py`: empty files),
lock files (`core/lock.py`) and the hook's last-resort log line
(`hook/entry.py`, before anything else is imported).  Those open with
O_NOFOLLOW too.  Renames and removals of files one module owns (steer
claims, pid files, round.json, stage.json, the server token) are done by
that module.

No write follows a symbolic link: files are opened with O_NOFOLLOW (or
created new with O_EXCL and renamed over the target, which replaces a link
rather than writing through it), and no directory between the state
directory and the file may be a link either (`roots.dirs_below_root`).
A line that cannot be appended is not lost silently: an empty marker file
next to the log records it (`note_loss`), costing no data blocks.
"""

from __future__ import annotations

import os
import stat as _stat

from cocoplus.core import clock, jsonfast
from cocoplus.core.errors import CocoplusError, StateCorrupt
from cocoplus.core.lock import DEFAULT_TIMEOUT, Budget, Lock
from cocoplus.core.roots import dirs_below_root

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Callable
    from typing import Any


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO planted where a file belongs must not hang an open

MAX_JSON_BYTES = 8 * 1024 * 1024
MAX_TEXT_BYTES = 8 * 1024 * 1024
MAX_LOG_BYTES = 5 * 1024 * 1024
TMP_MARK = ".tmp-"
LOST_MARK = ".lost-"


def refuse_linked_dirs(path: str) -> None:
    """CocoplusError if a directory between the state directory and `path` is a symbolic link.

    Missing directories are fine (they are created as real ones); paths
    outside any state directory are not checked.
    """
    for d in dirs_below_root(path):
        try:
            st = os.lstat(d)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise CocoplusError(f"{d}: cannot examine ({exc.strerror})") from None
        if _stat.S_ISLNK(st.st_mode):
            raise CocoplusError(f"{d}: is a symbolic link; refusing to write {os.path.basename(path)} through it")
        if not _stat.S_ISDIR(st.st_mode):
            raise CocoplusError(f"{d}: exists and is not a directory")


def ensure_dir(path: str) -> None:
    """Create `path` (and parents) as 0700 directories if missing."""
    refuse_linked_dirs(os.path.join(path, "-"))
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except FileExistsError:
        raise CocoplusError(f"{path}: exists and is not a directory") from None
    except OSError as exc:
        raise CocoplusError(f"{path}: cannot create directory ({exc.strerror})") from None


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return True  # not a pid we can judge: keep the file
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def remove_stale_temps(path: str) -> list[str]:
    """Remove `.NAME.tmp-<pid>-<rand>` files next to `path` whose writer is dead; return them.

    A writer killed between creating its temp file and renaming it leaves
    one behind; the next writer of the same file clears it.
    """
    directory = os.path.dirname(path) or "."
    prefix = f".{os.path.basename(path)}{TMP_MARK}"
    removed: list[str] = []
    mine = os.getpid()
    try:
        names = [n for n in os.listdir(directory) if n.startswith(prefix)]
    except OSError:
        return removed
    for name in names:
        pid_text = name[len(prefix) :].split("-", 1)[0]
        if not pid_text.isdigit():
            continue
        pid = int(pid_text)
        if pid == mine or _pid_alive(pid):
            continue
        full = os.path.join(directory, name)
        try:
            os.unlink(full)
            removed.append(full)
        except OSError:
            pass
    return removed


def write_all(fd: int, data: bytes, path: str) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        if n <= 0:  # pragma: no cover - os.write raises rather than return 0
            raise CocoplusError(f"{path}: short write")
        view = view[n:]


def fsync_dir(directory: str) -> None:
    try:
        dfd = os.open(directory, os.O_RDONLY | _CLOEXEC)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(dfd)
    except OSError as exc:  # pragma: no cover - fs without directory fsync
        import errno  # deferred: only on an error (its table costs every hook's start)

        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise
    finally:
        os.close(dfd)


def atomic_write_bytes(path: str, data: bytes, mode: int = 0o600) -> None:
    """Replace `path` with `data` so readers see the old file or the new one, never a mix.

    Temp file in the same directory, write, fsync, rename over, fsync the
    directory.  On any failure the temp file is removed and the old file is
    left as it was; the error names the path and the cause.
    """
    directory = os.path.dirname(path) or "."
    base = os.path.basename(path)
    refuse_linked_dirs(path)
    tmp = os.path.join(directory, f".{base}{TMP_MARK}{os.getpid()}-{os.urandom(4).hex()}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    try:
        try:
            fd = os.open(tmp, flags, mode)
        except FileNotFoundError:
            ensure_dir(directory)
            fd = os.open(tmp, flags, mode)
    except OSError as exc:
        raise CocoplusError(f"{path}: cannot write ({exc.strerror})") from None
    remove_stale_temps(path)
    try:
        try:
            write_all(fd, data, path)
            os.fsync(fd)
        finally:
            os.close(fd)
        if os.path.isdir(path) and not os.path.islink(path):
            raise CocoplusError(f"{path}: is a directory, expected a file")
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise CocoplusError(f"{path}: cannot write ({exc.strerror or exc})") from None
        raise
    fsync_dir(directory)


def atomic_write_text(path: str, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def dumps(obj: Any) -> str:
    return jsonfast.dumps(obj, indent=2) + "\n"


def atomic_write_json(path: str, obj: Any) -> None:
    atomic_write_bytes(path, dumps(obj).encode("utf-8"))


def read_bytes(path: str, limit: int = MAX_TEXT_BYTES) -> bytes | None:
    """The file's bytes, None if it does not exist; StateCorrupt if it is not a readable file."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | _NONBLOCK)
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise StateCorrupt(path, "is a directory, expected a file") from None
    except OSError as exc:
        import errno  # deferred: only on an error (its table costs every hook's start)

        if exc.errno == errno.ELOOP:
            raise StateCorrupt(path, "is a symbolic link; refusing to follow it") from None
        if exc.errno == errno.ENOTDIR:
            return None
        raise StateCorrupt(path, f"cannot read ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if _stat.S_ISDIR(st.st_mode):
            raise StateCorrupt(path, "is a directory, expected a file")
        if not _stat.S_ISREG(st.st_mode):
            raise StateCorrupt(path, "is not a regular file")
        if st.st_size > limit:
            raise StateCorrupt(path, f"is {st.st_size} bytes, over the {limit}-byte limit")
        chunks = []
        remaining = limit + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            raise StateCorrupt(path, f"is over the {limit}-byte limit")
        return data
    except IsADirectoryError:
        raise StateCorrupt(path, "is a directory, expected a file") from None
    except OSError as exc:
        raise StateCorrupt(path, f"cannot read ({exc.strerror})") from None
    finally:
        os.close(fd)


def read_log(path: str, offset: int | None, limit: int) -> tuple[bytes, int, int]:
    """Part of the plain-text log `path` (no symlinks): (its bytes, where they start, the file's size).

    From `offset` (None: its last `limit` bytes; past the end, as after a
    rotation: from 0), at most `limit` bytes.  A missing file is empty.
    """
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | _NONBLOCK)
    except FileNotFoundError:
        return b"", 0, 0
    except OSError as exc:
        import errno  # deferred: only on an error (its table costs every hook's start)

        why = (
            "is a symbolic link; refusing to follow it" if exc.errno == errno.ELOOP else f"cannot read ({exc.strerror})"
        )
        raise StateCorrupt(path, why) from None
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - limit) if offset is None else (0 if offset > size else offset)
        os.lseek(fd, start, os.SEEK_SET)
        data = os.read(fd, min(limit, size - start)) if size > start else b""
    except OSError as exc:
        raise StateCorrupt(path, f"cannot read ({exc.strerror})") from None
    finally:
        os.close(fd)
    return data, start, size


def decode_text(data: bytes, path: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StateCorrupt(path, f"not UTF-8 text (bad byte at offset {exc.start})") from None


def read_text(path: str, limit: int = MAX_TEXT_BYTES) -> str | None:
    data = read_bytes(path, limit)
    return None if data is None else decode_text(data, path)


def loads_object(data: bytes | str, path: str) -> dict[str, Any]:
    """Parse JSON text that must be one object; StateCorrupt naming `path` otherwise."""
    if isinstance(data, bytes):
        text = decode_text(data, path)
    else:
        text = data
    if not text.strip():
        raise StateCorrupt(path, "is empty")
    try:
        obj = jsonfast.loads(text)
    except RecursionError:
        raise StateCorrupt(path, "nested too deeply to be valid state") from None
    except jsonfast.Truncated as exc:
        raise StateCorrupt(path, short_cause(exc)) from None
    except ValueError as exc:
        raise StateCorrupt(path, f"not valid JSON ({short_cause(exc)})") from None
    if not isinstance(obj, dict):
        raise StateCorrupt(path, f"expected a JSON object, found {json_kind(obj)}")
    return obj


def read_json(path: str, limit: int = MAX_JSON_BYTES) -> dict[str, Any] | None:
    """The JSON object in `path`, None if missing; StateCorrupt if damaged (file left in place)."""
    data = read_bytes(path, limit)
    if data is None:
        return None
    return loads_object(data, path)


def quarantine(path: str, to: str | None = None) -> str | None:
    """Move a damaged file aside as `NAME.corrupt-<time>`; return where it went.

    `to` names the file the copy is kept as a damaged copy *of* (default
    `path` itself), for a file found damaged after it was moved (a claimed
    steer is kept as `STEER.md.corrupt-<time>`).
    """
    if not os.path.lexists(path):
        return None
    base = path if to is None else to
    target = f"{base}.corrupt-{clock.compact()}"
    n = 1
    while os.path.lexists(target):
        n += 1
        target = f"{base}.corrupt-{clock.compact()}-{n}"
    try:
        refuse_linked_dirs(target)
        os.rename(path, target)
    except OSError as exc:
        raise CocoplusError(f"{path}: damaged, and cannot be moved aside ({exc.strerror})") from None
    return target


def quarantined_copies(path: str) -> list[str]:
    """Damaged copies of `path` kept aside earlier."""
    directory = os.path.dirname(path)
    prefix = os.path.basename(path) + ".corrupt-"
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return sorted(os.path.join(directory, n) for n in names if n.startswith(prefix))


def locked_update(
    path: str,
    lock_path: str,
    update: Callable[[dict[str, Any] | None], dict[str, Any]],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    validate: Callable[[dict[str, Any], str], dict[str, Any]] | None = None,
    budget: Budget | None = None,
) -> dict[str, Any]:
    """Read `path`, apply `update`, write the result atomically, all under the sidecar lock.

    `update` receives the current object (None if the file is missing) and
    returns the new one.  A damaged file (bad JSON, or rejected by
    `validate`) is set aside and StateCorrupt is raised naming both places;
    it is never replaced by a fresh value here.  `budget` bounds the lock
    wait together with the caller's other waits.
    """
    with Lock(lock_path, timeout, budget):
        try:
            current = read_json(path)
            if current is not None and validate is not None:
                current = validate(current, path)
        except StateCorrupt as exc:
            kept = quarantine(path)
            raise StateCorrupt(exc.path, exc.cause, kept) from None
        new = update(current)
        atomic_write_json(path, new)
        return new


def open_append(path: str, flags: int) -> int:
    """Open `path` to append, refusing links, directories and anything but a regular file."""
    refuse_linked_dirs(path)
    flags |= os.O_APPEND | os.O_CREAT | _NOFOLLOW | _CLOEXEC | _NONBLOCK
    try:
        try:
            fd = os.open(path, flags, 0o600)
        except FileNotFoundError:
            ensure_dir(os.path.dirname(path))
            fd = os.open(path, flags, 0o600)
    except IsADirectoryError:
        raise CocoplusError(f"{path}: is a directory, expected a file") from None
    except OSError as exc:
        import errno  # deferred: only on an error (its table costs every hook's start)

        if exc.errno == errno.ELOOP:
            raise CocoplusError(f"{path}: is a symbolic link; refusing to follow it") from None
        raise CocoplusError(f"{path}: cannot append ({exc.strerror})") from None
    if not _stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise CocoplusError(f"{path}: is not a regular file; refusing to append to it")
    return fd


def append_fixed(path: str, record: bytes, tail: int = 0, durable: bool = True) -> tuple[int, bytes]:
    """Append one fixed-width record with one write, without a lock; (records now, the last `tail`).

    For logs whose records all have `len(record)` bytes (a session's tool calls): a single `write` of a few
    bytes with O_APPEND is not interleaved with another's, so concurrent appenders need no lock, and the
    count is the size divided by the width.  A file that ends mid-record (a crash inside the write) is
    counted by its whole records; `tail` reads back the last records, aligned to the width.  With `durable`,
    the file's fsync makes the record durable (without, a power loss may cost the last records, never order
    or whole records before them); the directory is synced once, when the file is new.
    """
    width = len(record)
    fd = open_append(path, os.O_RDWR)
    try:
        try:
            n = os.write(fd, record)
            if n != width:
                import errno  # deferred: only on an error (its table costs every hook's start)

                raise OSError(errno.ENOSPC, "short write")
            if durable:
                os.fsync(fd)
        except OSError as exc:
            note_loss(path, exc)
            raise CocoplusError(f"{path}: cannot append ({exc.strerror or exc})") from None
        size = os.fstat(fd).st_size
        if size == width:
            fsync_dir(os.path.dirname(path))  # the first record made the file: its name must last too
        count = size // width
        last = b""
        if tail > 0:
            start = max(0, count - tail) * width
            last = os.pread(fd, count * width - start, start)
    finally:
        os.close(fd)
    return count, last


def open_log(path: str, max_bytes: int = MAX_LOG_BYTES) -> int:
    """An fd appending to the plain-text log `path` (0600, no symlinks), rotated to `NAME.1` past `max_bytes`.

    For a child process's stdout and stderr; the caller closes the fd.
    """
    fd = open_append(path, os.O_WRONLY)
    try:
        st = os.fstat(fd)
        if st.st_size > max_bytes:
            try:
                same = os.lstat(path).st_ino == st.st_ino
            except OSError:
                same = False
            if same:
                os.replace(path, path + ".1")
                os.close(fd)
                fd = open_append(path, os.O_WRONLY)
    except OSError as exc:
        os.close(fd)
        raise CocoplusError(f"{path}: cannot rotate ({exc.strerror})") from None
    return fd


def append_line(path: str, text: str, max_bytes: int = MAX_LOG_BYTES) -> bool:
    """Append `text` as one line (newlines inside become spaces) to the log `path`, with one write.

    The log is opened O_APPEND|O_NOFOLLOW|O_CLOEXEC, mode 0600, refusing a
    symbolic link anywhere below the state directory, and set aside as
    `NAME.1` once it passes `max_bytes`.  Never raises: a line that cannot
    be written leaves a loss marker (`note_loss`) and False is returned.
    For hook.log, cocoplus.log and the other diagnostic logs.
    """
    return _append_text(path, text.replace("\n", " ").rstrip() + "\n", max_bytes)


def append_block(path: str, text: str, max_bytes: int = MAX_LOG_BYTES) -> bool:
    """Like `append_line`, for several lines written together (a traceback): one write, never interleaved."""
    return _append_text(path, text.rstrip("\n") + "\n", max_bytes)


def _append_text(path: str, text: str, max_bytes: int) -> bool:
    data = text.encode("utf-8", "replace")
    try:
        fd = open_log(path, max_bytes)
    except CocoplusError as exc:
        note_loss(path, exc)
        return False
    try:
        n = os.write(fd, data)
        if n != len(data):
            import errno  # deferred: only on an error (its table costs every hook's start)

            raise OSError(errno.ENOSPC, "short write")
        return True
    except OSError as exc:
        note_loss(path, exc)
        return False
    finally:
        os.close(fd)


def _cause_word(cause: BaseException | str) -> str:
    import errno  # deferred: only on an error (its table costs every hook's start)

    if isinstance(cause, OSError) and cause.errno:
        return errno.errorcode.get(cause.errno, f"E{cause.errno}")
    text = str(cause)
    for code, name in errno.errorcode.items():
        if os.strerror(code) in text:
            return name
    if "symbolic link" in text:
        return "ELOOP"
    return "EIO" if isinstance(cause, OSError) else "ERROR"


def note_loss(path: str, cause: BaseException | str) -> str | None:
    """Record that a line meant for the log `path` was lost: an empty file `NAME.lost-<time>-<pid>-<ERRNO>`.

    An empty file needs an inode but no data block, so this works on a full
    disk.  One marker per process and second (a second loss in the same
    second is already on record).  Returns the marker, or None if even that failed.
    """
    directory = os.path.dirname(path) or "."
    marker = os.path.join(
        directory, f"{os.path.basename(path)}{LOST_MARK}{clock.compact()}-{os.getpid()}-{_cause_word(cause)}"
    )
    try:
        refuse_linked_dirs(marker)
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600)
    except FileExistsError:
        return marker
    except (OSError, CocoplusError):
        return None
    os.close(fd)
    return marker


def losses(path: str) -> list[dict[str, Any]]:
    """Loss markers left beside `path` (`note_loss`), oldest first: what was lost, when, by which pid, why."""
    directory = os.path.dirname(path) or "."
    prefix = os.path.basename(path) + LOST_MARK
    try:
        names = sorted(n for n in os.listdir(directory) if n.startswith(prefix))
    except OSError:
        return []
    out: list[dict[str, Any]] = []
    for name in names:
        parts = name[len(prefix) :].split("-")
        when = parts[0] if parts else ""
        pid = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
        cause = parts[2] if len(parts) > 2 else None
        out.append({"file": path, "marker": os.path.join(directory, name), "at": when, "pid": pid, "cause": cause})
    return out


def short_cause(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "..."


def json_kind(obj: object) -> str:
    if obj is None:
        return "null"
    if isinstance(obj, bool):
        return "a boolean"
    if isinstance(obj, (int, float)):
        return "a number"
    if isinstance(obj, str):
        return "a string"
    if isinstance(obj, list):
        return "an array"
    return type(obj).__name__
