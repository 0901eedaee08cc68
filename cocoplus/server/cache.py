"""The read routes answered from memory.

Building the status report or the session list reads a dozen files and
takes tens of milliseconds; the page and scripts ask for them again and
again while nothing changes.  An answer is kept, as the JSON bytes sent,
until one of three things says it may be out of date:

* a file event for one of its topics (the same events, classified by
  `events.classify`, that drive the event stream: the Hub counts them per
  topic);
* a stamp: the size, modification time and inode of the directories whose
  entries atomic writes replace (a write is a rename, which changes its
  directory), of the logs that are appended to, and of `cocoplus.toml`.
  Taking it costs a dozen `stat` calls, so an event the watcher missed
  (coalesced, dropped, or no watcher at all) serves an old answer for no
  longer than the request that notices the change;
* its age: `max_age` seconds, for what changes with the clock alone (ages,
  a stale handoff, a runtime process that died without a hook).

One request builds a missing answer at a time per route; the others wait
for it.  The response says which it got: `X-Cocoplus-Cache: hit` or `built`.
A build that fails is not kept: its error is the answer, as before.  A plain
GET whose kept answer is good is sent before any routing (`KeptReads` in
server/routes/base.py): checking the stamp is all such a request costs.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from cocoplus.core.paths import Layout

MAX_AGE_S = 5.0


def encode(result: Any) -> bytes:
    """As FastAPI's JSONResponse encodes a result."""
    return json.dumps(result, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode("utf-8")


class Cache:
    def __init__(
        self, layout: Layout, generation: Callable[[tuple[str, ...]], tuple[int, ...]], max_age: float = MAX_AGE_S
    ) -> None:
        self.layout = layout
        self.generation = generation
        self.max_age = max_age
        self._entries: dict[str, tuple[tuple[int, ...], tuple[Any, ...], float, bytes]] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self.builds = 0  # how many answers were built (tests and the bench read it)
        lay = layout
        self._stamped = (
            lay.root, lay.session_dir, lay.sessions_dir, lay.session_stops_dir, lay.supervision_dir, lay.workers_dir,
            lay.permission_requests_dir, lay.steps, lay.task_queue, lay.signals, lay.rounds, lay.config,
        )  # fmt: skip

    def stamp(self) -> tuple[Any, ...]:
        out: list[Any] = []
        for path in self._stamped:
            try:
                st = os.stat(path)
            except OSError:
                out.append(None)
                continue
            out.append((st.st_mtime_ns, st.st_size, st.st_ino))
        return tuple(out)

    def _fresh(self, key: str, gen: tuple[int, ...], stamp: tuple[Any, ...], now: float) -> bytes | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        e_gen, e_stamp, at, body = entry
        return body if e_gen == gen and e_stamp == stamp and now - at < self.max_age else None

    def peek(self, key: str, topics: tuple[str, ...]) -> bytes | None:
        """The kept answer if it is still good, without waiting or building (cheap enough for the event loop)."""
        return self._fresh(key, self.generation(topics), self.stamp(), time.monotonic())

    def answer(self, key: str, topics: tuple[str, ...], build: Callable[[], Any]) -> tuple[bytes, bool]:
        """(the JSON bytes of `build()`, whether they were built now): from memory while nothing says they changed."""
        gen, stamp, now = self.generation(topics), self.stamp(), time.monotonic()
        body = self._fresh(key, gen, stamp, now)
        if body is not None:
            return body, False
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            # Another request may have built it while this one waited: taken afresh after the wait.
            gen, stamp, now = self.generation(topics), self.stamp(), time.monotonic()
            body = self._fresh(key, gen, stamp, now)
            if body is not None:
                return body, False
            body = encode(build())
            self.builds += 1
            self._entries[key] = (gen, stamp, now, body)
            return body, True
