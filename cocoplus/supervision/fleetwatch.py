"""Fleet supervision: the signals of every other machine's sessions, fed to this project's watcher.

With a fleet configured, `cocoplus supervision watcher run` starts one `Signals`
source: a thread with its own event loop that reads the fleet's events
stream (`cocoplus.F.ev.*.*.signal`, every machine's and project's worker
signals as their relays publish them) through this machine's durable
consumer `watcher--M`, and hands each signal of another project to the
watcher as a trigger candidate.  The watcher then treats them as it treats
its own: the same trigger table, debounce, single flight and turn cap
(`cocoplus.supervision.watcher`), so a burst from many machines becomes
one round.

A remote session is named by its fleet target (`machine/project/alias`),
which is what the brain's tools take to act on it.  It is supervised
unless its own project excludes it or this project's scope leaves it out
(`only` mode without it listed); its exit wakes the brain but never closes
this project's supervision.  Signals of this same project are skipped (the
watcher reads them from the file).  The consumer's position survives
restarts; a signal is acknowledged once handed to the watcher.  Losing
the server only delays fleet signals: the source reconnects with back-off.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from typing import Any

from nats.js import api

from cocoplus.fleet import naming
from cocoplus.fleet.connect import Backoff, Pull, connect, pause
from cocoplus.fleet.options import FleetOptions, FleetUnreachable
from cocoplus.supervision import triggers as trig

FETCH = 256


def target(event: dict[str, Any]) -> str | None:
    """`machine/project/alias` of the session a published signal is about (None if it names none)."""
    sess = event.get("session") or {}
    rec = event.get("record") or {}
    alias = sess.get("alias") or rec.get("alias") or rec.get("session")
    machine, project = event.get("machine"), event.get("project")
    if not (isinstance(alias, str) and isinstance(machine, str) and isinstance(project, str)):
        return None
    return f"{machine}/{project}/{alias}"


def classify(event: dict[str, Any], doc: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """(the trigger for one signal from another project, or None; why), by the watcher's own trigger table."""
    key = target(event)
    if key is None:
        return None, "no session"
    sess = dict(event.get("session") or {})
    if sess.get("excluded"):
        return None, "excluded by its own project"
    rec = event.get("record") or {}
    sig = {**rec, "session": key}
    verdict, why = trig.classify(sig, doc, {key: sess})
    if verdict is None:
        return None, why
    # "converge" means this was its project's last worker; here it is one worker of the fleet: it wakes the brain
    t = {k: rec.get(k) for k in ("runtime", "kind", "value", "message", "detail", "ts")}
    t.update(session=key, alias=key, machine=event.get("machine"), project=event.get("project"), fleet=True)
    return t, why


class Signals:
    """The fleet signal source of one watcher (a daemon thread); `take()` returns what arrived since the last call."""

    def __init__(self, opts: FleetOptions, wake: Callable[[], None], log: Callable[[str], None]) -> None:
        self.opts = opts
        self.wake = wake
        self.log = log
        self.lock = threading.Lock()
        self.items: list[dict[str, Any]] = []
        self.received = 0
        self.connected = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self.stop_event: asyncio.Event | None = None
        self.thread = threading.Thread(target=self._run, name="fleet-signals", daemon=True)

    def start(self) -> Signals:
        self.thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        loop, ev = self.loop, self.stop_event
        if loop is not None and ev is not None:
            loop.call_soon_threadsafe(ev.set)
        self.thread.join(timeout)

    def take(self) -> list[dict[str, Any]]:
        with self.lock:
            out, self.items = self.items, []
        return out

    # -- the thread ------------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except Exception as exc:  # noqa: BLE001 - the watcher goes on with local signals; the log says why
            self.log(f"fleet signals stopped: {type(exc).__name__}: {exc}")

    async def _main(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.stop_event = asyncio.Event()
        backoff = Backoff()
        last_error = None
        while not self.stop_event.is_set():
            try:
                conn = await connect(self.opts, name=f"cocoplus watcher {self.opts.machine}/{self.opts.project}")
            except FleetUnreachable as exc:
                if exc.message != last_error:
                    self.log(f"fleet signals: {exc.message}; retrying with back-off")
                    last_error = exc.message
                await pause(self.stop_event, backoff.next())
                continue
            self.log(f"fleet signals: reading every machine's signals from {conn.server}")
            last_error = None
            try:
                await self._consume(conn)
                backoff.reset()
            except Exception as exc:  # noqa: BLE001 - any failure ends this connection; the loop connects again
                self.log("fleet signals: " + conn.explain(" ".join(str(exc).split()) or type(exc).__name__))
            finally:
                self.connected = False
                await conn.close()
            await pause(self.stop_event, backoff.next())

    async def _consume(self, conn: Any) -> None:
        assert self.stop_event is not None
        o = self.opts
        durable = naming.watcher_consumer(o.machine)
        cfg = api.ConsumerConfig(
            name=durable,
            durable_name=durable,
            filter_subject=naming.events_filter(o.fleet, "signal"),
            ack_policy=api.AckPolicy.EXPLICIT,
            deliver_policy=api.DeliverPolicy.NEW,
        )
        sub = await conn.js.pull_subscribe(
            cfg.filter_subject or "", durable=durable, stream=naming.events_stream(o.fleet), config=cfg
        )
        self.connected = True
        pull = Pull(sub, self.stop_event, self.log, "fleet signals")
        while not self.stop_event.is_set():
            msgs = await pull.fetch(FETCH, 1)
            got = []
            for m in msgs:
                try:
                    doc = json.loads(m.data)
                except (ValueError, UnicodeDecodeError):
                    doc = None
                if isinstance(doc, dict) and (doc.get("machine"), doc.get("project")) != (o.machine, o.project):
                    got.append(doc)
            if got:
                with self.lock:
                    self.items.extend(got)
                    self.received += len(got)
                self.wake()
            for m in msgs:
                await m.ack()


def start(opts: FleetOptions, wake: Callable[[], None], log: Callable[[str], None]) -> Signals:
    return Signals(opts, wake, log).start()
