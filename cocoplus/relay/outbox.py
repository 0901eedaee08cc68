"""The appended files a relay mirrors to the fleet, and how far each has been published.

Sources: `supervision/signals.jsonl` (attention changes and worker
signals), `supervision/rounds.jsonl` (supervision rounds) and each
conversation's `chat/<conv>/ledger.jsonl` (master-agent messages).  Each
complete line becomes one message on its own subject
(`cocoplus.F.ev.M.P.signal|round|message.<conv>`), in order.

A source's cursor is (inode, byte offset).  It advances only after the
server has stored the messages, and the server's last message for a source
says how far it got (headers `Cocoplus-Ino`, `Cocoplus-End`), so after a
crash between the two nothing is published twice; the message id
(`M/P/source/inode/offset`) lets the server drop a repeat within its
duplicate window as well.  A file replaced by a new one (another inode, or
shorter than the cursor) is read again from its start.
"""

from __future__ import annotations

import os
from typing import Any

from cocoplus.core import clock, fsio, jsonfast
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.core.records import SCHEMA_VERSION
from cocoplus.fleet import naming

READ_LIMIT = 4 * 1024 * 1024  # per source and pass; the rest follows on the next pass
_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)


class Source:
    __slots__ = ("key", "kind", "path", "suffix", "conversation")

    def __init__(self, key: str, kind: str, path: str, suffix: str, conversation: str | None = None) -> None:
        self.key = key
        self.kind = kind
        self.path = path
        self.suffix = suffix  # the subject's last token(s), after cocoplus.F.ev.M.P.
        self.conversation = conversation


def conversation_token(conv: str) -> str:
    """A conversation id as one subject token (ids never hold `~`, so this is reversible)."""
    return conv.replace(".", "~")


def sources(layout: Layout) -> list[Source]:
    from cocoplus.chat import store  # deferred: the chat store is needed only once a relay runs

    out = [
        Source("signals", "signal", layout.signals, "signal"),
        Source("rounds", "round", layout.rounds, "round"),
    ]
    try:
        convs = store.conversations(layout)
    except CocoplusError:
        convs = []
    for conv in convs:
        out.append(
            Source(f"ledger.{conv}", "message", layout.ledger(conv), "message." + conversation_token(conv), conv)
        )
    return out


def subject(fleet: str, machine: str, project: str, src: Source) -> str:
    return f"{naming.event_subject(fleet, machine, project, src.suffix)}"


class Line:
    __slots__ = ("start", "end", "record", "error")

    def __init__(self, start: int, end: int, record: dict[str, Any] | None, error: str | None) -> None:
        self.start = start
        self.end = end
        self.record = record
        self.error = error


def read_new(path: str, cursor: dict[str, Any] | None) -> tuple[int | None, int, list[Line]]:
    """(inode, where reading started, complete lines after the cursor); (None, 0, []) for a missing file."""
    try:
        fd = os.open(path, _FLAGS)
    except FileNotFoundError:
        return None, 0, []
    except OSError as exc:
        raise CocoplusError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        offset = int((cursor or {}).get("offset") or 0)
        if (cursor or {}).get("ino") != st.st_ino or offset > st.st_size:
            offset = 0
        os.lseek(fd, offset, os.SEEK_SET)
        data = b""
        while len(data) < READ_LIMIT:
            chunk = os.read(fd, min(1 << 20, READ_LIMIT - len(data)))
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    lines: list[Line] = []
    pos = 0
    while True:
        nl = data.find(b"\n", pos)
        if nl == -1:
            break
        raw = data[pos:nl]
        start, end = offset + pos, offset + nl + 1
        pos = nl + 1
        if not raw.strip():
            continue
        try:
            obj = jsonfast.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            lines.append(Line(start, end, None, f"not valid JSON ({type(exc).__name__})"))
            continue
        if not isinstance(obj, dict):
            lines.append(Line(start, end, None, "not a JSON object"))
            continue
        lines.append(Line(start, end, obj, None))
    return st.st_ino, offset, lines


# -- cursors ----------------------------------------------------------------------------------


def load_cursors(layout: Layout) -> dict[str, dict[str, Any]]:
    try:
        doc = fsio.read_json(layout.fleet_cursors) or {}
    except CocoplusError:
        fsio.quarantine(layout.fleet_cursors)  # kept for the operator; the server's record says how far we got
        doc = {}
    got = doc.get("sources")
    return {k: v for k, v in got.items() if isinstance(v, dict)} if isinstance(got, dict) else {}


def save_cursors(layout: Layout, cursors: dict[str, dict[str, Any]]) -> None:
    fsio.ensure_dir(layout.fleet_dir)
    fsio.atomic_write_json(
        layout.fleet_cursors, {"schema_version": SCHEMA_VERSION, "updated_at": clock.iso(), "sources": cursors}
    )


def message_id(machine: str, project: str, src: Source, ino: int, start: int) -> str:
    return f"{machine}/{project}/{src.key}/{ino}/{start}"


def body(machine: str, project: str, src: Source, line: Line, session: dict[str, Any] | None) -> dict[str, Any]:
    """One line as the fleet receives it: the record as written, with where it came from.

    A signal carries the session's state at the time it was published
    (alias, runtime, state, attention, excluded), which is what a fleet
    watcher classifies it with.
    """
    out: dict[str, Any] = {
        "machine": machine,
        "project": project,
        "kind": src.kind,
        "source": src.key,
        "offset": line.start,
        "record": line.record,
    }
    if src.conversation is not None:
        out["conversation"] = src.conversation
    if src.kind == "signal":
        out["session"] = session
    return out
