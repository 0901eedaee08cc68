"""`cocoplus supervision watcher run`: the watcher that wakes the main brain.

One per project (the `supervisor` lock, held for the process's life; a
second one says which pid runs and exits).  File events from watchdog are
hints that something changed: on every wake the watcher re-reads the files
(new lines of `supervision/signals.jsonl` from a saved offset, the current
round, session records).  It also wakes on a timer, so missed or coalesced
events, an observer that died, or a file system without inotify only
delay it by a tick; if inotify cannot be used it switches to polling.

Triggers are debounced on a monotonic clock (`[supervision]
quiet_window_s`, with `max_wait_s` so a steady stream still gets a round)
and merged into one round; rounds are single flight (see rounds.py).

Sessions paused by their runtime's rate or usage limit are resumed at the
reset, or their resume cancelled by a stop (`resumes.py`).

The stall watchdog and restart restore follow `[supervision]`
`stall_watchdog_interval_s` (<= 0 disables), `stall_threshold_s`,
`stall_cooldown_s`, `stall_watchdog_startup_delay_s` and `restore_ttl_s`,
read at start through `cocoplus.config` like every key; their environment
overrides are the seed's `JARVIS_SUPERVISION_*` variables.  When the
watchdog last fired for a session in an attention state is kept in
`supervision/stall-cooldowns.json` (wall-clock times), so a restarted
watcher keeps the cooldown instead of reporting the same stall again.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, cast

from cocoplus import config as config_mod
from cocoplus.chat import worker as chat_worker
from cocoplus.core import clock, daemon, fsio, jsonl, vocab
from cocoplus.core.errors import CocoplusError
from cocoplus.core.lock import try_lock
from cocoplus.core.paths import Layout
from cocoplus.core.records import SCHEMA_VERSION
from cocoplus.notify import runner as notifier
from cocoplus.session import agents, events, registry
from cocoplus.session.edits import Reader
from cocoplus.supervision import autonomy, collisions, resumes, rounds, workers, workflow
from cocoplus.supervision import triggers as trig
from cocoplus.supervision.scope import supervised
from cocoplus.telemetry import status as telemetry_status
from cocoplus.watching import Watch

if TYPE_CHECKING:
    from cocoplus.core.shapes import Signal

TICK = 0.5
# What a round's trigger keeps of its signal.
TRIGGER_FIELDS = ("session", "alias", "runtime", "kind", "value", "message", "detail", "worker", "ts")
COLLISION_FIELDS = ("path", "other", "other_alias", "other_worker")
WORKERS_EVERY_S = 1.0  # how often launched workers are checked for a death their runner could not record
LIMITS_EVERY_S = 1.0  # how often sessions paused by a rate or usage limit are checked for their reset


# The supervisor as a background process (core/daemon.py): its lock, its pid file, `supervisor run`, its log.
SUPERVISOR = daemon.SUPERVISOR
running_pid = SUPERVISOR.running_pid
stop = SUPERVISOR.stop


def start_detached(layout: Layout, vouched: bool = False) -> int | None:
    """Start `cocoplus supervision watcher run` in the background unless one runs; return its pid.

    Waits for its pid file, not just its lock: the watcher takes the lock first, and until it has written
    supervisor.json a caller would report its pid as unreadable (-1).  `vouched`: cocoplus starts it for
    itself from inside a worker's process tree (a runner whose worker a limit paused): it gets a one-time token
    (session/agents.py `vouch`) that makes it act as the watcher, not as the worker whose runner it descends
    from.
    """
    extra = (lambda: agents.vouch(agents.WATCHER, layout.root)) if vouched else None
    return SUPERVISOR.start_detached(layout, 10.0, env_extra=extra)


class Supervisor:
    def __init__(self, layout: Layout, environ: dict[str, str] | None = None, *, polling: bool | None = None) -> None:
        self.layout = layout
        cfg = config_mod.load_for(layout, environ)  # a bad value is a ConfigInvalid naming it, not a default
        self.quiet = float(cfg.get("supervision.quiet_window_s"))
        self.max_wait = float(cfg.get("supervision.max_wait_s"))
        self.reconcile_every = float(cfg.get("supervision.reconcile_s"))
        self.restore_ttl = float(cfg.get("supervision.restore_ttl_s"))
        self.stall_interval = float(cfg.get("supervision.stall_watchdog_interval_s"))
        self.stall_threshold = float(cfg.get("supervision.stall_threshold_s"))
        self.stall_cooldown = float(cfg.get("supervision.stall_cooldown_s"))
        self.stall_startup_delay = float(cfg.get("supervision.stall_watchdog_startup_delay_s"))
        env = os.environ if environ is None else environ
        self.force_polling = polling if polling is not None else env.get("COCOPLUS_SUPERVISOR_POLLING") == "1"
        self.wake = threading.Event()
        self.stopping = False
        self.pending: list[dict[str, Any]] = []
        self.first_at = 0.0
        self.last_at = 0.0
        self.started = time.monotonic()
        self.next_stall = self.started + self.stall_startup_delay
        self.stall_fired: dict[str, float] = self._load_stall_fired()
        self.next_reconcile = 0.0
        self.next_workers = 0.0
        self.next_collisions = 0.0
        self.edits = Reader()  # what each live session changed, read as it grows
        self.said: set[str] = set()  # problems already logged
        self.next_limits = 0.0
        self.watch: Any = None
        self.watching: dict[str, Any] | None = None  # what supervisor.json says of the watch
        self.started_at = clock.iso()
        self.fleet: Any = None  # cocoplus.supervision.fleetwatch.Signals, with a fleet configured
        self.closing: Signal | None = None

    # -- logging -----------------------------------------------------------------
    def log(self, message: str) -> None:
        sys.stderr.write(f"{clock.iso()} supervisor: {message}\n")
        sys.stderr.flush()

    # -- file events ---------------------------------------------------------------
    def _on_change(self, path: str) -> None:
        top = os.path.relpath(path, self.layout.root).split(os.sep)[0]
        if top in ("locks", "logs", "workers") or ".tmp-" in os.path.basename(
            path
        ):  # workers/: output; checked on a timer
            return
        self.wake.set()

    def _start_observer(self) -> None:
        self.watch = Watch(self.layout.root, self._on_change, polling=self.force_polling, log=self.log)
        kind = self.watch.start()
        if kind != "none":
            self.log(f"watching {self.layout.root} ({kind})")
        self._record_watching()

    def _record_watching(self) -> None:
        """supervisor.json says how files are watched (`supervision status`, `doctor`), and changes with it."""
        now = self.watch.state() if self.watch is not None else None
        if now == self.watching:
            return
        self.watching = now
        try:
            fsio.atomic_write_json(
                self.layout.supervisor_pid, {"pid": os.getpid(), "started_at": self.started_at, "watching": now}
            )
        except CocoplusError as exc:
            self.log(f"cannot record how files are watched: {exc}")

    # -- signals -> triggers ----------------------------------------------------------
    def _cursor_path(self) -> str:
        return self.layout.supervisor_cursor

    def read_signals(self) -> list[Signal]:
        try:
            cur = fsio.read_json(self._cursor_path()) or {}
        except CocoplusError:
            cur = {}
        offset = int(cur.get("signals_offset") or 0)
        try:
            size = os.path.getsize(self.layout.signals)
        except OSError:
            return []
        if size == offset:
            return []
        got = jsonl.read_jsonl_from(self.layout.signals, offset)
        if got.end_offset != offset:
            fsio.atomic_write_json(self._cursor_path(), {"signals_offset": got.end_offset, "updated_at": clock.iso()})
        return cast("list[Signal]", got.records)  # as registry.append_signal wrote them

    def process_signals(self) -> None:
        sigs = self.read_signals()
        if not sigs:
            return
        doc = autonomy.read(self.layout)
        records = {r["id"]: r for r in registry.list_sessions(self.layout)[0]}
        for sig in sigs:
            verdict, why = trig.classify(sig, doc, records)
            if verdict == "trigger":
                t = {k: sig.get(k) for k in TRIGGER_FIELDS}
                t.update({k: sig.get(k) for k in COLLISION_FIELDS if k in sig})  # a collision names a second session
                self.add_trigger(t)
            elif verdict == "converge":
                self.converge(sig)
                doc = autonomy.read(self.layout)

    def _start_fleet(self) -> None:
        """With a fleet configured, every other machine's signals too (cocoplus/supervision/fleetwatch.py)."""
        from cocoplus.fleet import options  # deferred: only a watcher reads the fleet configuration

        if not options.configured(self.layout.project):
            return
        try:
            opts = options.load(self.layout.project)
        except CocoplusError as exc:
            self.log(f"fleet signals not read: {exc}")
            return
        from cocoplus.supervision import (
            fleetwatch as watch,  # deferred: nats-py, loaded only when a fleet is configured
        )

        self.fleet = watch.start(opts, self.wake.set, self.log)

    def process_fleet_signals(self) -> None:
        got = self.fleet.take() if self.fleet is not None else []
        if not got:
            return
        from cocoplus.supervision import fleetwatch as watch  # deferred: as in _start_fleet

        doc = autonomy.read(self.layout)
        for event in got:
            t, _why = watch.classify(event, doc)
            if t is not None:
                self.add_trigger(t)

    def add_trigger(self, t: dict[str, Any]) -> None:
        now = time.monotonic()
        if not self.pending:
            self.first_at = now
        self.last_at = now
        self.pending.append(t)

    def converge(self, sig: Signal) -> None:
        """The last supervised worker exited: close supervision, after the brain saw what was pending.

        If triggers are waiting (typically the worker's own turn end, fired
        just before its exit) or a round is running, they are answered
        first and supervision closes once that round is over.
        """
        if self.pending or rounds.current(self.layout) is not None:
            self.closing = sig
            self.add_trigger(
                {k: sig.get(k) for k in ("session", "alias", "runtime", "kind", "value", "ts")}
                | {"message": "the last supervised worker; supervision closes after this round"}
            )
            return
        self.close(sig)

    def close_if_due(self) -> None:
        if self.closing is None or self.pending or rounds.current(self.layout) is not None:
            return
        sig, self.closing = self.closing, None
        doc = autonomy.read(self.layout)
        active = [
            r
            for r in registry.list_sessions(self.layout)[0]
            if r.get("state") in vocab.ACTIVE_STATES and supervised(doc, r["id"])
        ]
        if not active:
            self.close(sig)

    def close(self, sig: Signal) -> None:
        starting = [r["id"] for r in workers.records(self.layout)[0] if r.get("state") in workers.LIVE]
        if starting:  # launched, its session not recorded yet (or a run between two): supervision goes on
            self.log(f"not closing: worker(s) {', '.join(starting)} launched and not ended")
            return
        auto = autonomy.read(self.layout).get("autonomous") or {}
        self.pending.clear()
        if not auto.get("enabled"):
            return  # finished already (by the brain, the turn cap, the operator): its reason stands
        summary = f"no supervised worker is active any more (last: {sig.get('alias') or sig.get('session')} exited)"
        if auto.get("enabled_by") == "workflow":
            workflow.close_if_owned(self.layout, auto.get("workflow_run"), summary)
        else:
            autonomy.finish(self.layout, summary, reason="converged")
        self.pending.clear()
        self.log("supervision converged and finished: " + summary)

    def maybe_flush(self) -> None:
        if not self.pending:
            return
        now = time.monotonic()
        if now - self.last_at < self.quiet and now - self.first_at < self.max_wait:
            return
        batch, self.pending = self.pending, []
        try:
            result = rounds.start_round(self.layout, batch)
        except CocoplusError as exc:
            self.log(f"round not started: {exc}")
            return
        self.log(f"{len(batch)} trigger(s): {result}")

    # -- stall watchdog ---------------------------------------------------------------
    def _load_stall_fired(self) -> dict[str, float]:
        """`session|attention` -> when the watchdog last fired for it (epoch seconds), from the last run too."""
        try:
            doc = fsio.read_json(self.layout.stall_cooldowns) or {}
        except CocoplusError as exc:
            kept = fsio.quarantine(self.layout.stall_cooldowns)
            events.log_step(self.layout, "stall_cooldowns_damaged", cause=getattr(exc, "cause", str(exc)), kept_at=kept)
            return {}
        raw = doc.get("fired")
        fired: dict[str, Any] = raw if isinstance(raw, dict) else {}
        out: dict[str, float] = {}
        for key, ts in fired.items():
            at = clock.parse_iso(ts) if isinstance(ts, str) else None
            if at is not None:
                out[str(key)] = at
        return out

    def _save_stall_fired(self, wall: float) -> None:
        keep = {k: at for k, at in self.stall_fired.items() if wall - at < self.stall_cooldown}
        self.stall_fired = keep
        fsio.ensure_dir(self.layout.supervision_dir)
        doc = {
            "schema_version": SCHEMA_VERSION,
            "fired": {k: clock.iso(at) for k, at in keep.items()},
            "updated_at": clock.iso(),
        }
        fsio.atomic_write_json(self.layout.stall_cooldowns, doc)

    def stall_check(self) -> None:
        interval = self.stall_interval
        if interval <= 0:
            return
        now = time.monotonic()
        if now < self.next_stall:
            return
        self.next_stall = now + interval
        doc = autonomy.read(self.layout)
        auto = doc.get("autonomous")
        if not auto or not auto.get("enabled"):
            return
        threshold = self.stall_threshold
        cooldown = self.stall_cooldown
        wall = clock.parse_iso(clock.iso()) or time.time()
        for rec in registry.list_sessions(self.layout)[0]:
            att = rec.get("attention")
            if (
                rec.get("state") not in vocab.ACTIVE_STATES
                or att not in trig.WAKE_ATTENTION
                or not supervised(doc, rec["id"])
            ):
                continue
            since = clock.parse_iso(rec.get("attention_since") or rec.get("last_event_at"))
            key = f"{rec['id']}|{att}"
            if since is None or not registry.stall_due(since, wall, threshold, self.stall_fired.get(key), cooldown):
                continue
            self.stall_fired[key] = wall
            self._save_stall_fired(wall)
            events.log_step(
                self.layout,
                "stall_detected",
                session=rec["id"],
                alias=rec.get("alias"),
                attention=att,
                seconds=int(wall - since),
            )
            self.add_trigger(
                {
                    "session": rec["id"],
                    "alias": rec.get("alias"),
                    "runtime": rec.get("runtime"),
                    "kind": "stall",
                    "value": att,
                    "message": f"in {att} for {int(wall - since)}s",
                }
            )

    # -- restart restore ---------------------------------------------------------------
    def restore(self) -> str:
        doc = autonomy.read(self.layout)
        auto = doc.get("autonomous")
        if not auto or not auto.get("enabled"):
            return "nothing to restore"
        if auto.get("holder_pid") in (None, os.getpid()):
            # Enabled since no supervisor last held it (a fresh enable): adopt it, there is nothing to restore.
            autonomy.touch_snapshot(self.layout, os.getpid())
            return "adopted"
        ttl = self.restore_ttl
        snap = clock.parse_iso(auto.get("snapshot_at") or auto.get("updated_at"))
        age = (clock.parse_iso(clock.iso()) or time.time()) - (snap or 0)
        if snap is None or age > ttl:
            autonomy.finish(
                self.layout,
                None,
                reason=f"not restored after a restart: the last snapshot is {int(age)}s old (TTL {ttl:g}s)",
            )
            events.log_step(
                self.layout, "supervision_not_restored", reason="snapshot older than the TTL", age_s=int(age)
            )
            return "closed: snapshot too old"
        live = [
            r
            for r in registry.list_sessions(self.layout)[0]
            if r.get("state") in vocab.ACTIVE_STATES and supervised(doc, r["id"])
        ]
        if not live:
            autonomy.finish(
                self.layout, None, reason="not restored after a restart: no supervised worker is recoverable"
            )
            events.log_step(self.layout, "supervision_not_restored", reason="no recoverable worker")
            return "closed: no recoverable worker"
        autonomy.touch_snapshot(self.layout, os.getpid())
        events.log_step(self.layout, "supervision_restored", age_s=int(age), workers=[r.get("alias") for r in live])
        return "restored"

    # -- loop -------------------------------------------------------------------------------
    def reconcile(self) -> None:
        now = time.monotonic()
        if now < self.next_reconcile:
            return
        self.next_reconcile = now + min(self.reconcile_every, max(1.0, self.restore_ttl / 3))
        chat_worker.recover(self.layout)
        autonomy.touch_snapshot(self.layout, os.getpid())
        if self.watch is not None:
            self.watch.ensure_alive()
            self._record_watching()

    def workers_check(self) -> None:
        """A launched worker whose runner died with it is recorded `failed`, and a session whose runtime died
        unannounced `exited` (their exit signals wake the brain or close supervision)."""
        now = time.monotonic()
        if now < self.next_workers:
            return
        self.next_workers = now + WORKERS_EVERY_S
        try:
            for wid in workers.reconcile(self.layout):
                self.log(f"worker {wid} died with its runner: recorded failed")
        except CocoplusError as exc:
            self.log(f"workers not checked: {exc}")  # the rest of the step still runs
        # A session whose runtime died unannounced (SIGKILL, SIGTERM: no SessionEnd) is recorded exited,
        # with its exit signal, as the records are read (registry.settle_exits); its signal is processed next.
        try:
            for cs in registry.settle_exits(self.layout, registry.list_sessions(self.layout, settle=False)[0]):
                self.log(f"session {cs}: its runtime's process is gone: recorded exited")
        except CocoplusError as exc:
            self.log(f"sessions not checked: {exc}")

    def collision_check(self) -> None:
        """Two live sessions that changed the same path: a `collision` signal, once per pair and path (read with
        the others by process_signals, in this step)."""
        now = time.monotonic()
        if now < self.next_collisions:
            return
        self.next_collisions = now + collisions.CHECK_EVERY_S
        sent, problems = collisions.check(self.layout, self.edits)
        for sig in sent:
            self.log(f"collision: {sig['message']}")
        for problem in problems:
            if problem not in self.said:  # once, not every second
                self.said.add(problem)
                self.log(f"collisions: {problem}")

    def limits_check(self) -> None:
        """Sessions paused by their runtime's limit: resumed at the reset, or their resume cancelled (resumes.py)."""
        now = time.monotonic()
        if now < self.next_limits:
            return
        self.next_limits = now + LIMITS_EVERY_S
        resumes.check(self.layout, self.log)

    def step(self) -> None:
        self.workers_check()
        self.limits_check()
        try:
            self.collision_check()
        except CocoplusError as exc:
            self.log(f"collisions not checked: {exc}")  # the rest of the step still runs
        self.process_signals()
        self.process_fleet_signals()
        rounds.poll(self.layout)
        self.stall_check()
        self.maybe_flush()
        self.close_if_due()
        self.reconcile()

    def run(self) -> int:
        fd = try_lock(self.layout.lock("supervisor"))
        if fd is None:
            pid = running_pid(self.layout)
            sys.stderr.write(f"cocoplus supervisor: already running for this project (pid {pid})\n")
            return 1
        fsio.ensure_dir(self.layout.supervision_dir)
        fsio.atomic_write_json(self.layout.supervisor_pid, {"pid": os.getpid(), "started_at": self.started_at})

        def on_signal(signum: int, _frame: Any) -> None:
            self.stopping = True
            self.wake.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        self.log(f"started (pid {os.getpid()}); restore: {self.restore()}")
        self._start_observer()
        self._start_fleet()
        notifier.start_thread(
            self.layout, by="supervisor"
        )  # [notify]: a thread of its own; a slow target never holds up this loop
        start_traces(self.layout, "cocoplus supervisor run")  # [telemetry]: likewise, when traces are configured
        try:
            while not self.stopping:
                try:
                    self.step()
                except CocoplusError as exc:
                    self.log(f"error: {exc}")
                except Exception as exc:  # noqa: BLE001 - the watcher must survive a bad file
                    self.log(f"unexpected error: {type(exc).__name__}: {exc}")
                timeout = TICK
                if self.pending:
                    now = time.monotonic()
                    timeout = max(
                        0.01, min(TICK, self.quiet - (now - self.last_at), self.max_wait - (now - self.first_at))
                    )
                self.wake.wait(timeout)
                self.wake.clear()
        finally:
            if self.watch is not None:
                self.watch.stop()
            if self.fleet is not None:
                self.fleet.stop()
            try:
                os.unlink(self.layout.supervisor_pid)
            except OSError:
                pass
            os.close(fd)  # releases the supervisor lock
            self.log("stopped")
        return 0


def start_traces(layout: Layout, by: str) -> None:
    """Export the timeline as traces in a thread of this process when they are configured and no other process
    exports (telemetry/export.py); a settings file that cannot be read leaves the export to `doctor` to report."""
    try:
        if not telemetry_status.configured(layout):
            return
    except CocoplusError:
        return
    from cocoplus.telemetry import export  # deferred: heavy (the OpenTelemetry SDK), only when traces are configured

    export.start_thread(layout, by)


def status(layout: Layout) -> dict[str, Any]:
    pid = running_pid(layout)
    try:
        info = fsio.read_json(layout.supervisor_pid) or {}
    except CocoplusError:
        info = {}
    return {
        "running": pid is not None, "pid": pid, "started_at": info.get("started_at") if pid else None,
        "watching": info.get("watching") if pid else None, "round": rounds.current(layout), **autonomy.status(layout),
    }  # fmt: skip


def watching(layout: Layout) -> dict[str, Any] | None:
    """How the running supervisor watches the files (`{"kind", "why"}`), or None (not running, or not yet known)."""
    if running_pid(layout) is None:
        return None
    try:
        got = (fsio.read_json(layout.supervisor_pid) or {}).get("watching")
    except CocoplusError:
        return None
    return got if isinstance(got, dict) else None


def supervise(
    layout: Layout, goal: str | None, max_turns: int | None = None, started_from: str | None = None
) -> dict[str, Any]:
    """`/supervise GOAL`: enable with GOAL as task_hint, make sure the watcher runs, run one round now.
    `started_from`: the session `/supervise` was typed in (never supervised)."""
    out = autonomy.enable(layout, task_hint=goal, max_turns=max_turns, started_from=started_from)
    pid = start_detached(layout)
    records = registry.list_sessions(layout)[0]
    initial = [
        {
            "session": None,
            "alias": None,
            "kind": "initial",
            "value": None,
            "message": f"{len(records)} session(s) known",
        }
    ]
    rnd = rounds.start_round(layout, initial, source="initial")
    return {**out, "supervisor": {"started": pid is not None, "pid": pid or running_pid(layout)}, "initial_round": rnd}
