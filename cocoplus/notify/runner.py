"""The notifier: reads cocoplus' logs from its cursors and delivers notifications without blocking anything.

It runs as a thread of `cocoplus supervisor run` (`start_thread`) or in the
foreground (`cocoplus notify run`); one per project (the `notifier` lock;
a watcher's thread waits while another notifier holds it).  It never runs
in a hook.  Every tick it re-reads `[notify]` (a bad value keeps the last
good one and is logged once), reads new log lines (events.py), admits,
deduplicates and queues messages (outbox.py), then hands each target its
oldest owed message in a thread of its own: a target that hangs or refuses
holds up only itself (its back-off grows), never another target, the
logs, or the watcher.  Each target is rate-limited to `[notify]
max_per_minute` (a token bucket; messages beyond wait their turn).  What
was sent, and what failed, goes to `.cocoplus/logs/notify.log`.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from cocoplus import config as config_mod
from cocoplus.core import clock, fsio
from cocoplus.core.errors import CocoplusError
from cocoplus.core.lock import is_locked, try_lock
from cocoplus.core.paths import Layout
from cocoplus.notify import deliver, messages, outbox
from cocoplus.notify import events as ev
from cocoplus.session import registry

TICK = 0.25
CONFIG_EVERY = 2.0
LOCK_RETRY = 5.0

Sender = Callable[[str, str, str], tuple[bool, str | None]]


class Notifier:
    def __init__(self, layout: Layout, environ: dict[str, str] | None = None, *, send: Sender | None = None) -> None:
        self.layout = layout
        self.environ = environ
        self.send = send or deliver.send
        self.lock = threading.RLock()
        self.wake = threading.Event()
        self.stopping = threading.Event()
        self.state: dict[str, Any] | None = None
        self.urls: dict[str, str] = {}
        self.kinds: set[str] = set()
        self.repeat_after = 300.0
        self.per_minute = 10
        self.buckets: dict[str, list[float]] = {}
        self.inflight: set[str] = set()
        self.threads: list[threading.Thread] = []
        self.next_config = 0.0
        self.config_problem: str | None = None

    # -- logging and configuration -------------------------------------------------------
    def log(self, message: str) -> None:
        fsio.append_line(self.layout.notify_log, f"{clock.iso()} notify: {message}")

    def load_config(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now < self.next_config:
            return
        self.next_config = now + CONFIG_EVERY
        try:
            cfg = config_mod.load_for(self.layout, self.environ)
        except CocoplusError as exc:
            if str(exc) != self.config_problem:
                self.config_problem = str(exc)
                self.log(f"configuration not usable ({exc}); keeping the last good [notify] values")
            return
        self.config_problem = None
        self.urls = {outbox.target_id(u): u for u in cfg.get("notify.urls")}
        self.kinds = set(cfg.get("notify.events"))
        self.repeat_after = float(cfg.get("notify.repeat_after_s"))
        self.per_minute = int(cfg.get("notify.max_per_minute"))

    # -- reading the logs ----------------------------------------------------------------------
    def _paths(self) -> dict[str, str]:
        return {s: ev.source_path(self.layout, s) for s in ev.SOURCES}

    def _start_state(self) -> None:
        state, problem = outbox.load(self.layout)
        if problem:
            self.log(problem)
        if state is None:
            state = outbox.fresh(outbox.log_sizes(self._paths()))
            self.log("no saved state: reading the logs from their current ends")
        dropped = outbox.forget_targets(state, list(self.urls))
        if dropped:
            self.log(f"{dropped} message(s) were owed to targets no longer configured; dropped for those")
        self.state = state
        outbox.save(self.layout, state)

    def read_events(self) -> list[dict[str, Any]]:
        assert self.state is not None
        cursors = self.state["cursors"]
        found: list[dict[str, Any]] = []
        for source, path in self._paths().items():
            offset = int(cursors.get(source) or 0)
            try:
                got = fsio.read_jsonl_from(path, offset)
            except CocoplusError as exc:
                self.log(f"cannot read {self.layout.rel(path)}: {exc}")
                continue
            if got.end_offset == offset:
                continue
            cursors[source] = got.end_offset
            for rec in got.records:
                event = ev.to_event(source, rec)
                if event is not None:
                    found.append(self._with_session(event))
        return found

    def _with_session(self, event: dict[str, Any]) -> dict[str, Any]:
        """Name the session by its cs_ id and alias (hooks log the runtime's own id)."""
        sid = event.get("session")
        if not sid or (event.get("alias") and str(sid).startswith("cs_")):
            return event
        try:
            rec = registry.resolve(self.layout, str(sid))
        except CocoplusError:
            return event
        return {**event, "session": rec["id"], "alias": event.get("alias") or rec.get("alias")}

    # -- one tick ------------------------------------------------------------------------------
    def step(self) -> None:
        self.load_config()
        if not self.urls:
            return
        with self.lock:
            if self.state is None:
                self._start_state()
            state = self.state
            assert state is not None
            now = time.time()
            found = self.read_events()
            changed = bool(found)
            for event in found:
                if event["kind"] not in self.kinds:
                    continue
                ok, why = outbox.admit(state, event, now, self.repeat_after)
                if not ok:
                    self.log(f"left out {event['kind']} for {event.get('alias') or event.get('session') or 'the project'}: {why}")
                    continue
                title, body = messages.render(self.layout, event)
                msg, pushed_out = outbox.enqueue(state, event, title, body, list(self.urls), now)
                self.log(f"queued message {msg['id']}: {title}")
                for old in pushed_out:
                    self.log(f"outbox full: dropped message {old['id']} ({old['kind']}) still owed to {len(old['pending'])} target(s)")
            if outbox.forget_targets(state, list(self.urls)):
                changed = True
            if changed:
                outbox.save(self.layout, state)
            self.dispatch(now)

    def _take_token(self, tid: str, now: float) -> bool:
        cap = float(self.per_minute)
        bucket = self.buckets.setdefault(tid, [cap, now])
        bucket[0] = min(cap, bucket[0] + (now - bucket[1]) * cap / 60.0)
        bucket[1] = now
        if bucket[0] < 1.0:
            return False
        bucket[0] -= 1.0
        return True

    def dispatch(self, now: float) -> None:
        assert self.state is not None
        for tid, url in self.urls.items():
            if tid in self.inflight:
                continue
            msg = outbox.next_for(self.state, tid, now)
            if msg is None or not self._take_token(tid, now):
                continue
            self.inflight.add(tid)
            t = threading.Thread(target=self._deliver, args=(tid, url, dict(msg)), name=f"notify-{tid}", daemon=True)
            self.threads = [x for x in self.threads if x.is_alive()] + [t]
            t.start()

    def _deliver(self, tid: str, url: str, msg: dict[str, Any]) -> None:
        try:
            ok, error = self.send(url, msg["title"], msg["body"])
        except Exception as exc:  # noqa: BLE001 - a sender's failure is this target's failure
            ok, error = False, f"{type(exc).__name__}: {exc}"
        with self.lock:
            state = self.state
            if state is not None:
                gave_up = outbox.record(state, msg["id"], tid, ok, error, time.time())
                try:
                    outbox.save(self.layout, state)
                except CocoplusError as exc:
                    self.log(f"state not saved: {exc}")
                if ok:
                    self.log(f"sent message {msg['id']} ({msg['kind']}) to target {tid}")
                else:
                    ts = outbox.target_state(state, tid)
                    self.log(f"target {tid} failed message {msg['id']} ({error}); try {ts['failures']}, next in {outbox.backoff(ts['failures']):g}s")
                if gave_up:
                    self.log(gave_up)
            self.inflight.discard(tid)
        self.wake.set()

    # -- loops -----------------------------------------------------------------------------------
    def loop(self) -> None:
        while not self.stopping.is_set():
            try:
                self.step()
            except CocoplusError as exc:
                self.log(f"error: {exc}")
            except Exception as exc:  # noqa: BLE001 - the notifier must outlive a bad line or file
                self.log(f"unexpected error: {type(exc).__name__}: {exc}")
            self.wake.wait(TICK)
            self.wake.clear()

    def stop(self, wait: float = 5.0) -> None:
        self.stopping.set()
        self.wake.set()
        deadline = time.monotonic() + wait
        for t in list(self.threads):
            t.join(max(0.0, deadline - time.monotonic()))


def lock_path(layout: Layout) -> str:
    return layout.lock("notifier")


def running(layout: Layout) -> bool:
    return is_locked(lock_path(layout))


def run_foreground(layout: Layout, environ: dict[str, str] | None = None) -> int:
    """`cocoplus notify run`: the notifier in this process until SIGINT/SIGTERM."""
    fd = try_lock(lock_path(layout))
    if fd is None:
        raise CocoplusError(
            "a notifier already runs for this project (the supervisor's, or another `cocoplus notify run`)",
            hint="`cocoplus notify status` shows what it did",
        )
    n = Notifier(layout, environ)

    def on_signal(_signum: int, _frame: Any) -> None:
        n.stopping.set()
        n.wake.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        n.log("started (cocoplus notify run)")
        n.loop()
    finally:
        n.stop()
        n.log("stopped")
        os.close(fd)
    return 0


def start_thread(layout: Layout, environ: dict[str, str] | None = None) -> Notifier:
    """The watcher's notifier: a daemon thread that takes the `notifier` lock once `[notify] urls` is set.

    While another notifier holds the lock it waits and tries again; it ends with the watcher's process.
    """
    n = Notifier(layout, environ)

    def main() -> None:
        fd = None
        while not n.stopping.is_set():
            n.load_config(force=True)
            if n.urls:
                fd = try_lock(lock_path(layout))
                if fd is not None:
                    break
            n.stopping.wait(LOCK_RETRY)
        if fd is None:
            return
        n.log("started (in the supervisor)")
        try:
            n.loop()
        finally:
            os.close(fd)

    threading.Thread(target=main, name="cocoplus-notifier", daemon=True).start()
    return n
