"""The files each session's tools changed, and where two live sessions changed the same one (a collision).

The hook appends (`record`): every PostToolUse of an edit or write tool
(the runtime's adapter says which files: `edited_paths`) adds one line per
file to `sessions/<cs>.edits` with one write, no lock and no fsync (a lost
line after a crash costs a missed collision, not a wrong one).  Each line
is the path as a JSON string, relative to the session's own tree: the git
checkout or worktree that holds the project directory its runtime names
(`CLAUDE_PROJECT_DIR`, ...), else its working directory (that directory
itself outside git).  So two workers in two git worktrees of one repository
that both change `src/app.py` record the same line, a session started in a
subdirectory agrees with one started at the top, and a file outside the tree
is recorded by its absolute path.

The watcher reads (`Reader`: only what was appended since its last look)
and compares (`collisions`): two sessions that are both still live
(`vocab.ACTIVE_STATES`) and have both changed one path collide on it.
Standard library only at module level (the hook imports `record`).
"""

from __future__ import annotations

import os

from cocoplus.core import fsio, jsonfast
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.core.vocab import ACTIVE_STATES
from cocoplus.runtimes import answers

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any

    from cocoplus.core.shapes import SessionRecord
    from cocoplus.runtimes.protocol import Adapter

READ_LIMIT = 8 * 1024 * 1024  # more than a rotated file and its successor hold (fsio.MAX_LOG_BYTES each)


def relative(path: str, cwd: str | None, root: str | None) -> str:
    """`path` (as a tool named it: absolute, or relative to `cwd`) relative to the tree `root`; absolute if outside."""
    full = os.path.normpath(os.path.join(cwd, path) if cwd else path)
    if root:
        top = os.path.normpath(root)
        if top == "/":
            return full.lstrip("/") or "."
        if full.startswith(top + "/"):
            return full[len(top) + 1 :]
    return full


def tree_root(start: str | None) -> str | None:
    """The git tree `start` is in: the nearest directory at or above it holding `.git` (a checkout's directory, or a
    worktree's file), else `start` itself.  A few `lstat` calls, on edit events only."""
    if not start or not start.startswith("/"):
        return start
    cur = os.path.normpath(start)
    for _ in range(64):
        try:
            os.lstat(cur + "/.git" if cur != "/" else "/.git")
            return cur
        except OSError:
            pass
        if cur == "/":
            break
        cur = os.path.dirname(cur)
    return os.path.normpath(start)


def record(layout: Layout, cs_id: str, paths: list[str], cwd: str | None, root: str | None) -> bool:
    """Append the files one tool call changed to the session's edits, relative to the git tree `root` (the
    session's project or working directory) is in, with one write; never raises (a line that cannot be written
    leaves a loss marker, `fsio.note_loss`)."""
    top = tree_root(root)
    text = "\n".join(jsonfast.dumps(relative(p, cwd, top)) for p in paths)
    return fsio.append_block(layout.session_edits(cs_id), text)


def record_call(
    layout: Layout, cs_id: str, paths: list[str], adapter: Adapter, payload: dict[str, Any], environ: Any
) -> bool:
    """`record` for one tool call: relative to its tree, the project its runtime names (`PROJECT_ENV`), else the
    working directory the payload names (else this process's)."""
    cwd = next(iter(answers.cwd(payload)), None)
    root = next((v for v in (environ.get(n) for n in adapter.PROJECT_ENV) if v and v.startswith("/")), None)
    if cwd is None:
        try:
            cwd = os.getcwd()
        except OSError:
            cwd = None
    return record(layout, cs_id, paths, cwd, root or cwd)


def _parse(data: bytes, into: set[str]) -> None:
    for raw in set(data.split(b"\n")):
        if not raw:
            continue
        try:
            value = jsonfast.loads(raw.decode("utf-8", "replace"))
        except (ValueError, RecursionError):
            continue  # a torn line: what it named is lost, nothing else
        if isinstance(value, str) and value:
            into.add(value)


class Reader:
    """The paths each session changed, read incrementally: each look reads only the whole lines appended since."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[int, int, set[str]]] = {}  # edits file -> (its inode, offset read to, paths)

    def edited(self, layout: Layout, cs_id: str) -> set[str]:
        """The paths session `cs_id` changed (relative to its tree); StateCorrupt if its file cannot be read."""
        path = layout.session_edits(cs_id)
        ino, offset, paths = self._seen.get(path, (-1, 0, set()))
        try:
            now = os.lstat(path).st_ino
        except OSError:
            now = -1  # none yet (or gone): read_log says what is there
        if now != ino:  # new to this reader, or rotated since (the file read before is NAME.1 now)
            try:
                same = os.lstat(path + ".1").st_ino == ino
            except OSError:
                same = False
            old, _s, _z = fsio.read_log(path + ".1", offset if same else 0, READ_LIMIT)
            _parse(old[: old.rfind(b"\n") + 1], paths)
            offset = 0
        data, start, _size = fsio.read_log(path, offset, READ_LIMIT)
        end = data.rfind(b"\n") + 1
        _parse(data[:end], paths)
        self._seen[path] = (now, start + end, paths)
        return paths

    def forget(self, keep: set[str]) -> None:
        """Drop what is held of every edits file but those of the sessions in `keep` (ended ones are not compared)."""
        self._seen = {p: v for p, v in self._seen.items() if os.path.basename(p).rpartition(".")[0] in keep}


def collisions(
    layout: Layout, records: list[SessionRecord], reader: Reader | None = None
) -> tuple[list[dict[str, Any]], list[str]]:
    """(every collision among the live sessions in `records`, problems reading their edits).

    A collision: `{"path", "sessions": [a, b], "aliases", "runtimes", "workers"}`, the pair in the order of
    `records` (the registry's: oldest first), one per pair and path, sorted by path.
    """
    reader = reader or Reader()
    live = [r for r in records if r.get("state") in ACTIVE_STATES and isinstance(r.get("id"), str)]
    problems: list[str] = []
    by_path: dict[str, list[SessionRecord]] = {}
    for rec in live:
        try:
            paths = reader.edited(layout, rec["id"])
        except CocoplusError as exc:
            problems.append(str(exc))
            continue
        for p in paths:
            by_path.setdefault(p, []).append(rec)
    reader.forget({r["id"] for r in live})
    out: list[dict[str, Any]] = []
    for p in sorted(by_path):
        recs = by_path[p]
        for i, a in enumerate(recs):
            for b in recs[i + 1 :]:
                out.append(
                    {
                        "path": p,
                        "sessions": [a["id"], b["id"]],
                        "aliases": [a.get("alias"), b.get("alias")],
                        "runtimes": [a.get("runtime"), b.get("runtime")],
                        "workers": [a.get("worker"), b.get("worker")],
                    }
                )
    return out, problems


def key(collision: dict[str, Any]) -> str:
    """What makes a collision the same one: its pair of sessions and its path."""
    a, b = sorted(collision["sessions"])
    return f"{a}|{b}|{collision['path']}"


def by_session(found: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Per session id, what it collides on: `{"path", "with": the other's alias or id, "session": the other's id}`."""
    out: dict[str, list[dict[str, Any]]] = {}
    for c in found:
        (a, b), (aa, ab) = c["sessions"], c["aliases"]
        out.setdefault(a, []).append({"path": c["path"], "with": ab or b, "session": b})
        out.setdefault(b, []).append({"path": c["path"], "with": aa or a, "session": a})
    return out
