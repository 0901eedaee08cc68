"""The JSONL journals under `.cocoplus/` (steps, signals, spend, queues, permission and chat logs): one record a
line, appended whole, read back with what was wrong with the file.

Standard library only (the hook path imports it).  An append (`append_jsonl`)
writes one record as one line with one write, under the journal's lock, after
making the file end on a newline (`repair_tail`: a fragment an interrupted
write left is terminated if it is a whole record, else set aside as
`NAME.torn-<time>` and cut off), so no record is ever glued to another.  A
record that cannot be written leaves a loss marker beside the journal
(`fsio.note_loss`).  A read (`read_jsonl`, `read_jsonl_from` for a follower
that remembers its offset) returns every complete record; a bad line is
reported with its number, and an unterminated last line is a torn tail, not an
error.  The file helpers these stand on (opening without following a link,
atomic writes, size limits) are `core/fsio.py`'s.
"""

from __future__ import annotations

import os

from cocoplus.core import clock, fsio, jsonfast
from cocoplus.core.errors import CocoplusError, StateCorrupt
from cocoplus.core.lock import DEFAULT_TIMEOUT, Budget, Lock

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO planted where a file belongs must not hang an open

MAX_JSONL_BYTES = 256 * 1024 * 1024


class JsonlRead:
    """Records of a JSONL file, and what was wrong with it."""

    __slots__ = ("records", "lines", "offsets", "bad_lines", "torn_tail", "path", "end_offset")

    def __init__(self, path: str) -> None:
        self.path = path
        self.records: list[dict[str, Any]] = []
        self.lines: list[int] = []  # 1-based line number of each record
        self.offsets: list[int] = []  # byte offset where each record's line starts (absolute after read_jsonl_from)
        self.bad_lines: list[tuple[int, str]] = []  # (1-based line number, reason)
        self.torn_tail: bytes | None = None
        self.end_offset = 0  # byte offset just past the last complete line

    @property
    def problems(self) -> list[str]:
        out = [f"{self.path}: line {n}: {why}" for n, why in self.bad_lines]
        if self.torn_tail is not None:
            out.append(
                f"{self.path}: unterminated last line ({len(self.torn_tail)} bytes), "
                "left by an interrupted write; it is set aside on the next append"
            )
        return out


def parse_jsonl(data: bytes, path: str, first_line: int = 1) -> JsonlRead:
    out = JsonlRead(path)
    pos = 0
    lineno = first_line - 1
    n = len(data)
    while pos < n:
        nl = data.find(b"\n", pos)
        if nl == -1:
            out.torn_tail = data[pos:]
            break
        lineno += 1
        raw = data[pos:nl]
        start, pos = pos, nl + 1
        out.end_offset = pos
        if not raw.strip():
            continue
        try:
            obj = jsonfast.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            out.bad_lines.append((lineno, f"not valid JSON ({fsio.short_cause(exc)})"))
            continue
        if not isinstance(obj, dict):
            out.bad_lines.append((lineno, f"expected a JSON object, found {fsio.json_kind(obj)}"))
            continue
        out.records.append(obj)
        out.lines.append(lineno)
        out.offsets.append(start)
    return out


def read_jsonl(path: str, limit: int = MAX_JSONL_BYTES) -> JsonlRead:
    """Every complete record; an unterminated last line is a torn tail, not an error."""
    data = fsio.read_bytes(path, limit)
    return parse_jsonl(data or b"", path)


def read_jsonl_from(path: str, offset: int, limit: int = MAX_JSONL_BYTES) -> JsonlRead:
    """Complete records from byte `offset` on (for followers that remember where they were).

    `end_offset` of the result is absolute.  If the file shrank below
    `offset` (replaced or truncated), reading restarts at 0.
    """
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | _NONBLOCK)
    except FileNotFoundError:
        r = JsonlRead(path)
        r.end_offset = 0
        return r
    except OSError as exc:
        raise StateCorrupt(path, f"cannot read ({exc.strerror})") from None
    try:
        size = os.fstat(fd).st_size
        if offset > size:
            offset = 0
        if size - offset > limit:
            raise StateCorrupt(path, f"{size - offset} unread bytes, over the {limit}-byte limit")
        os.lseek(fd, offset, os.SEEK_SET)
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(fd)
    r = parse_jsonl(b"".join(chunks), path)
    r.end_offset += offset
    r.offsets = [offset + o for o in r.offsets]
    return r


def _last_newline(fd: int, size: int) -> int:
    """Offset just past the last b"\\n" in the file (0 if none)."""
    pos = size
    while pos > 0:
        step = min(65536, pos)
        pos -= step
        chunk = os.pread(fd, step, pos)
        i = chunk.rfind(b"\n")
        if i != -1:
            return pos + i + 1
    return 0


def repair_tail(path: str, fd: int) -> str | None:
    """Make the file end on a newline before an append (caller holds the log's lock).

    A fragment that parses as a JSON object only lacked its newline: it is
    terminated and kept.  Anything else is copied to `NAME.torn-<time>` and
    cut off, so the next record starts on a fresh line and nothing is glued
    to the fragment.  Returns where a cut fragment was kept.
    """
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return None
    start = _last_newline(fd, size)
    fragment = os.pread(fd, size - start, start)
    try:
        obj = jsonfast.loads(fragment.decode("utf-8"))
        complete = isinstance(obj, dict)
    except (UnicodeDecodeError, ValueError, RecursionError):
        complete = False
    if complete:
        fsio.write_all(fd, b"\n", path)
        return None
    kept = f"{path}.torn-{clock.compact()}-{os.getpid()}"
    fsio.atomic_write_bytes(kept, fragment)
    os.ftruncate(fd, start)
    return kept


def append_jsonl(
    path: str,
    record: dict[str, Any],
    lock_path: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    durable: bool = True,
    budget: Budget | None = None,
) -> None:
    """Append one record as one line with one write, under the log's lock.

    A record that cannot be written (a full disk, say) leaves a loss marker
    beside the log (`note_loss`) before the error is raised.
    """
    line = (jsonfast.dumps(record, compact=True) + "\n").encode("utf-8")
    with Lock(lock_path, timeout, budget):
        fd = fsio.open_append(path, os.O_RDWR)
        try:
            try:
                repair_tail(path, fd)
            except (OSError, CocoplusError) as exc:
                fsio.note_loss(path, exc)
                raise CocoplusError(
                    f"{path}: cannot append (the torn last line could not be set aside: {exc})"
                ) from None
            before = os.fstat(fd).st_size
            try:
                n = os.write(fd, line)
                if n != len(line):
                    import errno  # deferred: only on an error (its table costs every hook's start)

                    raise OSError(errno.ENOSPC, "short write")
                if durable:
                    os.fsync(fd)
            except OSError as exc:
                # Leave the log ending on its last whole record.
                try:
                    os.ftruncate(fd, before)
                except OSError:
                    pass
                fsio.note_loss(path, exc)
                raise CocoplusError(f"{path}: cannot append ({exc.strerror or exc})") from None
        finally:
            os.close(fd)
