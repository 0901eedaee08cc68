"""When the handoff (PROGRESS.md) last changed, by cocoplus' own record rather than the file's time.

A file's modification time says when it was last written on this disk: a
`git clone` or a copy makes an old handoff look brand new.  So whenever
cocoplus rewrites PROGRESS.md (its budget lines, after every tool call) or
creates it, it first notes in `session/handoff-stamp.json` the checksum of
the handoff's content (everything but the Iteration Budget section) and
when that content last changed: if the content still matches the stamp,
the stamp's time stands; if not, someone edited it, and the file's time
before this write is when.  Readers take the older of the stamp's time and the
file's while the content matches the stamp, and the file's time otherwise.

Standard library only (the PostToolUse hook calls `note`).
"""

from __future__ import annotations

from cocoplus.core import clock, fsio, progress
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.core.records import SCHEMA_VERSION

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any


def read_stamp(layout: Layout) -> dict[str, Any] | None:
    """The stamp, or None when there is none or it cannot be used (it is only a hint)."""
    try:
        doc = fsio.read_json(layout.handoff_stamp)
    except CocoplusError:
        return None
    if not doc or not isinstance(doc.get("checksum"), str) or clock.parse_iso(doc.get("content_updated_at")) is None:
        return None
    return doc


def note(layout: Layout, text: str, changed_at: float) -> None:
    """Before cocoplus replaces PROGRESS.md: record its content's checksum and when it last changed.

    `changed_at` is the file's modification time as found; it is used only
    when the content differs from the stamp (someone edited the handoff).
    """
    checksum = progress.content_checksum(text)
    stamp = read_stamp(layout)
    if stamp is not None and stamp["checksum"] == checksum:
        return
    if stamp is not None and progress.matches_earlier_form(stamp["checksum"], text):
        updated = stamp["content_updated_at"]  # unchanged, stamped in the earlier form: keep its time
    else:
        updated = clock.iso(changed_at)
    doc = {"schema_version": SCHEMA_VERSION, "checksum": checksum, "content_updated_at": updated}
    try:
        fsio.atomic_write_json(layout.handoff_stamp, doc)
    except CocoplusError:
        pass  # only a hint: the file's time is used instead


def updated_at(layout: Layout, text: str, mtime: float) -> tuple[float, str]:
    """(when the handoff's content last changed, where that came from: `stamp` or `file time`)."""
    stamp = read_stamp(layout)
    if stamp is not None and progress.checksum_matches(stamp["checksum"], text):
        at = clock.parse_iso(stamp["content_updated_at"])
        # Unchanged since the stamp, so it changed no later than either time
        # (a copy that keeps file times can make the file's the older one).
        if at is not None and at < mtime:
            return at, "stamp"
    return mtime, "file time"
