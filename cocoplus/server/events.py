"""Server-sent events: which parts of `.cocoplus/` changed, as hints to re-read.

File events come from watchdog, watching `.cocoplus/` the way the
supervisor does (inotify, falling back to polling where inotify cannot be
used; a move counts for its source and its destination; temp files, locks and logs
ignored; the observer restarted if its thread dies).  Events are never
counted or trusted for content: each path is mapped to a topic, topics are
collected for a short interval and sent as one event each, and a client
re-reads the matching endpoint.  A full scan of the tree (sizes and
modification times) every `reconcile_s` catches whatever the observer
missed (coalesced or dropped events, a queue overflow).

Topics and what to re-read:

* `session`: the operator state (status, pod state, AGENT_STOP, STEER.md,
  budgets, the handoff files, the task queue, steps) -> `GET /api/v1/session`
* `sessions`: agent-session records, per-session stops, steers and held
  turn ends -> `GET /api/v1/coding-sessions`
* `supervision`: supervision state, scope and worker signals ->
  `GET /api/v1/session-os/main-brain/autonomous` and the session list
* `round`: supervision rounds -> `GET /api/v1/session-os/main-brain/rounds`
* `ledger`: a conversation's messages, tasks or settings (`conversations`
  names which) -> `GET /api/v1/projects/{conversation}`
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

from cocoplus.core import clock
from cocoplus.core.paths import Layout
from cocoplus.watching import Watch

TOPICS = ("session", "sessions", "supervision", "round", "ledger")
IGNORED_DIRS = ("locks", "logs", "worktrees", "secrets")
IGNORED_FILES = frozenset(
    {"server-token", "supervision/cursor.json", "chat/worker.json", "supervision/supervisor.json"}
)
QUEUE_MAX = 256


def classify(rel: str) -> tuple[str, str | None] | None:
    """(topic, conversation) for a path relative to `.cocoplus/`, or None to ignore it."""
    rel = rel.replace(os.sep, "/").strip("/")
    if not rel or rel == ".":
        return None
    parts = rel.split("/")
    base = parts[-1]
    if parts[0] in IGNORED_DIRS or ".tmp-" in base or base.endswith(".lock") or rel in IGNORED_FILES:
        return None
    if parts[0] == "chat":
        if len(parts) >= 2 and parts[1] != "worker.json":
            return "ledger", parts[1]
        return None
    if parts[0] == "supervision":
        if base in ("round.json", "rounds.jsonl"):
            return "round", None
        return "supervision", None
    if parts[0] in ("sessions", "session-stops", "holds", "steer-sessions"):
        return "sessions", None
    if parts[0] == "resumes":
        return None  # output of resumed runs, like a log
    if parts[0] == "workers":
        return ("sessions", None) if base == "worker.json" else None  # a worker's state; its output is a log
    return "session", None


class Hub:
    """Collects changed topics from the file watcher and fans them out to SSE clients."""

    def __init__(
        self, layout: Layout, *, interval: float = 0.15, reconcile_s: float = 2.0, polling: bool | None = None
    ) -> None:
        self.layout = layout
        self.interval = interval
        self.reconcile_s = reconcile_s
        self.force_polling = polling if polling is not None else os.environ.get("COCOPLUS_SUPERVISOR_POLLING") == "1"
        self._lock = threading.Lock()
        self._dirty: dict[str, set[str]] = {}
        self._generations: dict[str, int] = {}  # events noted per topic, ever: what the answer cache compares
        self._subscribers: set[asyncio.Queue[dict[str, Any] | None]] = set()
        self._seq = 0
        self._task: asyncio.Task[None] | None = None
        self._fingerprint: dict[str, tuple[int, int]] | None = None
        self._seen: set[str] = set()  # paths the watcher reported since the last scan
        self.watch: Any = None
        self.observer_kind = "none"
        self.closed = False

    # -- the watcher -------------------------------------------------------------
    def note(self, path: str, *, from_scan: bool = False) -> None:
        """A file event for `path` (absolute or relative to `.cocoplus/`); thread-safe."""
        rel = os.path.relpath(path, self.layout.root) if os.path.isabs(path) else path
        if rel.startswith(".."):
            return
        got = classify(rel)
        if got is None:
            return
        topic, conv = got
        with self._lock:
            self._dirty.setdefault(topic, set()).add(conv or "")
            self._generations[topic] = self._generations.get(topic, 0) + 1
            if not from_scan:
                self._seen.add(rel.replace(os.sep, "/"))

    def generation(self, topics: tuple[str, ...]) -> tuple[int, ...]:
        """How many file events each of `topics` has had (server/cache.py keeps an answer while these stay)."""
        with self._lock:
            return tuple(self._generations.get(t, 0) for t in topics)

    def _start_observer(self) -> None:
        # No inotify (instances used up, a file system without it): polling, said once on stderr, the server's log.
        self.watch = Watch(self.layout.root, self.note, polling=self.force_polling, log=_log)
        self.observer_kind = self.watch.start()

    @property
    def watching_why(self) -> str | None:
        return self.watch.why if self.watch is not None else None

    def _check_observer(self) -> None:
        if self.watch is not None:
            self.watch.ensure_alive()
            self.observer_kind = self.watch.kind

    # -- reconciliation ----------------------------------------------------------
    def scan(self) -> dict[str, tuple[int, int]]:
        """Size and mtime of every file that maps to a topic."""
        out: dict[str, tuple[int, int]] = {}
        root = self.layout.root
        for dirpath, dirnames, filenames in os.walk(root):
            rel_dir = os.path.relpath(dirpath, root)
            if rel_dir == ".":
                dirnames[:] = [d for d in dirnames if d not in IGNORED_DIRS]
                rel_dir = ""
            for name in filenames:
                rel = f"{rel_dir}/{name}" if rel_dir else name
                if classify(rel) is None:
                    continue
                try:
                    st = os.lstat(os.path.join(dirpath, name))
                except OSError:
                    continue
                out[rel] = (st.st_size, st.st_mtime_ns)
        return out

    def reconcile(self) -> None:
        """Note what changed since the last scan and the watcher did not report."""
        with self._lock:
            seen, self._seen = self._seen, set()
        now = self.scan()
        before = self._fingerprint
        self._fingerprint = now
        if before is None:
            return
        changed = (set(now) ^ set(before)) | {r for r in now if r in before and now[r] != before[r]}
        for rel in changed - seen:
            self.note(rel, from_scan=True)

    # -- fan-out -------------------------------------------------------------------
    def subscribe(self) -> asyncio.Queue[dict[str, Any] | None]:
        q: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue(QUEUE_MAX)
        self._subscribers.add(q)
        return q

    def unsubscribe(self, q: asyncio.Queue[dict[str, Any] | None]) -> None:
        self._subscribers.discard(q)

    def _take(self) -> dict[str, set[str]]:
        with self._lock:
            dirty, self._dirty = self._dirty, {}
        return dirty

    def _publish(self, topic: str, convs: set[str]) -> None:
        self._seq += 1
        event = {"id": self._seq, "topic": topic, "ts": clock.iso()}
        if topic == "ledger":
            event["conversations"] = sorted(c for c in convs if c)
        for q in list(self._subscribers):
            if q.full():  # a client that does not read: drop its backlog, tell it to re-read everything
                while not q.empty():
                    q.get_nowait()
                q.put_nowait({"id": self._seq, "topic": "resync", "ts": event["ts"]})
            else:
                q.put_nowait(event)

    async def _run(self) -> None:
        next_reconcile = time.monotonic()
        while not self.closed:
            await asyncio.sleep(self.interval)
            now = time.monotonic()
            if now >= next_reconcile:
                next_reconcile = now + self.reconcile_s
                try:
                    self._check_observer()
                    if self._subscribers:
                        await asyncio.to_thread(self.reconcile)
                    else:
                        self._fingerprint = None  # nobody listens: no scanning; the next scan sets a new baseline
                except Exception:  # noqa: BLE001 - a bad directory entry must not stop the events
                    pass
            dirty = self._take()
            if not self._subscribers:
                continue
            for topic in TOPICS:
                if topic in dirty:
                    self._publish(topic, dirty[topic])

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._start_observer()
        self._fingerprint = self.scan()
        self._task = self._loop.create_task(self._run())

    def _end_streams(self) -> None:
        self.closed = True
        for q in list(self._subscribers):
            try:
                q.put_nowait(None)
            except asyncio.QueueFull:
                q.get_nowait()
                q.put_nowait(None)

    def close_streams(self) -> None:
        """End every event stream (callable from any thread or a signal handler).

        The server calls this when it is asked to stop, before it waits for
        open connections: an event stream never ends by itself.
        """
        self.closed = True
        loop = getattr(self, "_loop", None)
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._end_streams)

    async def stop(self) -> None:
        self._end_streams()
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001
                pass
        if self.watch is not None:
            self.watch.stop()

    def info(self) -> dict[str, Any]:
        obs = self.watch.observer if self.watch is not None else None
        return {
            "observer": self.observer_kind,
            "why": self.watching_why,
            "alive": bool(obs and obs.is_alive()),
            "subscribers": len(self._subscribers),
        }


def _log(message: str) -> None:
    sys.stderr.write(f"{clock.iso()} cocoplus serve: {message}\n")
    sys.stderr.flush()


def _frame(event: dict[str, Any]) -> str:
    return f"id: {event['id']}\nevent: {event['topic']}\ndata: {json.dumps(event, separators=(',', ':'))}\n\n"


async def stream(hub: Hub, keepalive: float = 15.0) -> AsyncIterator[str]:
    """The body of `GET /api/v1/events`: a `hello`, then one event per changed topic."""
    q = hub.subscribe()
    try:
        yield "retry: 2000\n" + _frame(
            {
                "id": 0,
                "topic": "hello",
                "ts": clock.iso(),
                "topics": list(TOPICS),
                "watching": hub.observer_kind,
                "watching_why": hub.watching_why,
            }
        )
        while not hub.closed:
            try:
                event = await asyncio.wait_for(q.get(), timeout=keepalive)
            except asyncio.TimeoutError:
                yield ": keepalive\n\n"
                continue
            if event is None:
                return
            yield _frame(event)
    finally:
        hub.unsubscribe(q)
