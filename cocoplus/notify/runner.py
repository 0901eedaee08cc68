"""The notifier: reads cocoplus' logs from its cursors and delivers notifications without blocking anything.

It runs as a thread of `cocoplus supervision watcher run` and of `cocoplus serve`
(`start_thread`: it starts within `LOCK_RETRY` seconds of `[notify] urls`
taking effect) or in the foreground (`cocoplus notify run`); one per
project (the `notifier` lock: with a watcher and a server both running,
one delivers and the other's thread waits, taking over from the saved
position when the first ends).  It never runs in a hook.  Every tick it
re-reads `[notify]` (a bad value keeps the last
good one and is logged once), reads new log lines (events.py), admits,
deduplicates and queues messages (outbox.py), then hands each target its
oldest owed message in a thread of its own: a target that hangs or refuses
holds up only itself (its back-off grows), never another target, the
logs, or the watcher.  Each target is rate-limited to `[notify]
max_per_minute` (a token bucket; messages beyond wait their turn).  What
was sent, and what failed, goes to `.cocoplus/logs/notify.log` and, one
JSON record per attempt, to `.cocoplus/notify/deliveries.jsonl`.

Where a notifier with no saved position starts (`took_effect`): at the
moment `[notify] urls` took effect.  From the project's cocoplus.toml, that
is when the file was trusted (`cocoplus trust`, which also saves the
position at once: `begin`); from the user's own configuration file, when
that file last changed; from `COCOPLUS_NOTIFY_URLS`, when this notifier
started (the variable is read at start).  Never more than
`outbox.MAX_EVENT_AGE_S` back.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from cocoplus import config as config_mod
from cocoplus import trust as trust_mod
from cocoplus.core import clock, daemon, fsio, jsonl, userfiles
from cocoplus.core.errors import CocoplusError
from cocoplus.core.lock import is_locked, try_lock
from cocoplus.core.paths import Layout
from cocoplus.cost import forecast
from cocoplus.notify import deliver, messages, outbox
from cocoplus.notify import events as ev
from cocoplus.session import events as steps
from cocoplus.session import registry

TICK = 0.25
CONFIG_EVERY = 2.0
FORECAST_EVERY = 10.0  # how often the forecasts are computed again (they read the spend log)
LOCK_RETRY = 2.0

Sender = Callable[[str, str, str, str], tuple[bool, str | None]]  # (url, title, body, notification id)


class Notifier:
    def __init__(
        self,
        layout: Layout,
        environ: dict[str, str] | None = None,
        *,
        send: Sender | None = None,
        by: str = "notify run",
    ) -> None:
        self.layout = layout
        self.by = by
        self.started_at = time.time()
        self.urls_from: tuple[str, str | None, str | None] = ("default", None, None)  # origin, file, the project's file
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
        self.session_values: dict[str, Any] | None = None  # the budgets the forecasts are measured against
        self.forecast_warn = 0.0
        self.next_forecast = 0.0
        self.failover: tuple[list[str], float] = ([], 0.0)  # `[workers] failover` and `failover_after_s`

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
        self.urls_from = (cfg.origins.get("notify.urls", "default"), cfg.files.get("notify.urls"), cfg.path)
        self.kinds = set(cfg.get("notify.events"))
        self.repeat_after = float(cfg.get("notify.repeat_after_s"))
        self.per_minute = int(cfg.get("notify.max_per_minute"))
        self.forecast_warn = float(cfg.get("notify.forecast_warn_s"))
        self.session_values = dict(cfg.values["session"])
        self.failover = ([str(r) for r in cfg.get("workers.failover")], float(cfg.get("workers.failover_after_s")))

    def what_follows(self, event: dict[str, Any], now: float) -> dict[str, Any]:
        """A pause the watcher is to resume, as things stand when its notification is sent (`follows`): no watcher
        runs to resume it, its work may move to another runtime first (`[workers] failover`, a reset over
        `failover_after_s` away), or the watcher resumes it at the reset.  A failover that happens is its own event."""
        if event.get("kind") != "limited" or event.get("resume") != "watcher":
            return event
        if daemon.SUPERVISOR.running_pid(self.layout) is None:
            return {**event, "follows": "no_watcher"}
        order = [r for r in self.failover[0] if r != event.get("runtime")]  # not the runtime that is paused
        after_s = self.failover[1]
        at = clock.parse_iso(event.get("resets_at"))
        if order and at is not None and at - now > after_s:
            return {**event, "follows": "failover", "failover_to": order}
        return {**event, "follows": "watcher"}

    # -- reading the logs ----------------------------------------------------------------------
    def _paths(self) -> dict[str, str]:
        return {s: ev.source_path(self.layout, s) for s in ev.SOURCES}

    def took_effect(self, now: float) -> tuple[float | None, str]:
        """When `[notify] urls` took effect (None: now, at the logs' ends), and which moment that is, in words."""
        origin, file, project_file = self.urls_from
        t: float | None = None
        if origin == "file" and file is not None and file == project_file:
            try:
                entry = trust_mod.entry(self.layout.project) or {}
            except CocoplusError:
                entry = {}
            t = clock.parse_iso(entry.get("trusted_at"))
            why = f"when {self.layout.rel(file)} was trusted"
        elif origin == "file" and file is not None:
            try:
                t = os.stat(file).st_mtime
            except OSError:
                t = None
            why = f"when {userfiles.shown(file)} last changed"
        else:
            why = f"when this notifier started ({origin} is read at start)"
        if t is None or t >= now:
            return None, why
        if now - t > outbox.MAX_EVENT_AGE_S:
            return now - outbox.MAX_EVENT_AGE_S, f"{why}, but no more than {outbox.MAX_EVENT_AGE_S / 3600:g} h back"
        return t, why

    def _start_state(self) -> None:
        state, problem = outbox.load(self.layout)
        if problem:
            self.log(problem)
        if state is None:
            now = time.time()
            since, why = self.took_effect(now)
            state = outbox.fresh(outbox.positions(self._paths(), since), clock.iso(since or now), why)
            self.log(f"no saved position: reading the logs from {state['since']} ({why})")
        dropped = outbox.forget_targets(state, list(self.urls))
        if dropped:
            self.log(f"{dropped} message(s) were owed to targets no longer configured; dropped for those")
        state["notifier"] = {"pid": os.getpid(), "by": self.by, "started_at": clock.iso(self.started_at)}
        self.state = state
        outbox.save(self.layout, state)

    def read_events(self) -> list[dict[str, Any]]:
        assert self.state is not None
        cursors = self.state["cursors"]
        found: list[dict[str, Any]] = []
        for source, path in self._paths().items():
            offset = int(cursors.get(source) or 0)
            try:
                got = jsonl.read_jsonl_from(path, offset)
            except CocoplusError as exc:
                self.log(f"cannot read {self.layout.rel(path)}: {exc}")
                continue
            if got.end_offset == offset:
                continue
            cursors[source] = got.end_offset
            for rec, at in zip(got.records, got.offsets, strict=True):
                event = ev.to_event(source, rec)
                if event is not None:
                    event["nid"] = outbox.notification_id(self.layout.root, source, at, rec)
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

    # -- budget forecasts ---------------------------------------------------------------------------
    def check_forecast(self, now: float) -> None:
        """Every `FORECAST_EVERY` seconds: a budget forecast to run out within `[notify] forecast_warn_s` is
        logged as a `budget_forecast` step (read back as an event like any other), once for each budget and
        limit (`forecast_warned` in the notifier's state); a count or log seen to go down (`forecast_seen`: it
        started again, `session resume --reset-budget`) may warn again."""
        if now < self.next_forecast:
            return
        self.next_forecast = now + FORECAST_EVERY
        if self.forecast_warn <= 0 or self.session_values is None or "budget_forecast" not in self.kinds:
            return
        assert self.state is not None
        fc = forecast.read(self.layout, self.session_values, now)
        self.state["forecast_checked_at"] = clock.iso(now)
        warned = self.state.setdefault("forecast_warned", {})
        seen = self.state.setdefault("forecast_seen", {})
        for which, used in (("cost", fc["cost"]["spent"]), ("iterations", fc["iterations"]["consumed"])):
            last = seen.get(which)
            if isinstance(last, (int, float)) and used < last:  # the count (or the log) started again
                for key in [k for k in warned if k.startswith(which + ":")]:
                    del warned[key]
            seen[which] = used
        line_of = {"cost": fc["lines"][0], "iterations": fc["lines"][1]}
        for item in forecast.soonest_exhaustion(fc):
            at = clock.parse_iso(item["at"])
            if item["key"] in warned:
                continue  # warned for this budget and limit already
            if at is None or at - now > self.forecast_warn:
                continue
            budget = fc["cost"] if item["budget"] == "cost" else fc["iterations"]
            steps.log_step(
                self.layout,
                "budget_forecast",
                which=item["budget"],  # (`budget` is log_step's lock budget)
                at=item["at"],
                in_s=round(at - now),
                used=item["used"],
                limit=budget.get("limit") if item["budget"] == "cost" else budget.get("cap"),
                rate_per_h=budget.get("rate_per_h"),
                line=line_of[item["budget"]],
            )
            warned[item["key"]] = {"used": item["used"], "at": clock.iso(now)}
            self.log(f"forecast: {line_of[item['budget']]} (within [notify] forecast_warn_s = {self.forecast_warn:g})")
        outbox.save(self.layout, self.state)

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
            try:
                self.check_forecast(now)
            except Exception as exc:  # noqa: BLE001 - a forecast that fails must not hold up the other events
                self.log(f"forecast not checked: {type(exc).__name__}: {exc}")
            found = self.read_events()
            changed = bool(found)
            for event in found:
                if event["kind"] not in self.kinds:
                    continue
                ok, why = outbox.admit(state, event, now, self.repeat_after)
                if not ok:
                    self.log(
                        f"left out {event['kind']} for {event.get('alias') or event.get('session') or 'the project'}: "
                        f"{why}"
                    )
                    continue
                title, body = messages.render(self.layout, self.what_follows(event, now))
                msg, pushed_out = outbox.enqueue(state, event, title, body, list(self.urls), now)
                self.log(f"queued message {msg['id']} {msg['nid']}: {title}")
                for old in pushed_out:
                    self.log(
                        f"outbox full: dropped message {old['id']} ({old['kind']}) "
                        f"still owed to {len(old['pending'])} target(s)"
                    )
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
            ok, error = self.send(url, msg["title"], msg["body"], msg["nid"])
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
                ts = outbox.target_state(state, tid)
                if ok:
                    self.log(f"sent message {msg['id']} {msg['nid']} ({msg['kind']}) to target {tid}")
                else:
                    self.log(
                        f"target {tid} failed message {msg['id']} {msg['nid']} ({error}); try {ts['failures']}, next "
                        f"in {outbox.backoff(ts['failures']):g}s"
                    )
                if gave_up:
                    self.log(gave_up)
                entry = {
                    "nid": msg["nid"], "message": msg["id"], "kind": msg["kind"], "session": msg.get("session"),
                    "alias": msg.get("alias"), "title": msg["title"], "target": tid, "ok": ok, "error": error,
                    "try": None if ok else ts["failures"], "gave_up": True if gave_up else None, "by": self.by,
                }  # fmt: skip
                try:
                    outbox.log_delivery(self.layout, entry)
                except CocoplusError as exc:
                    self.log(f"delivery not recorded in {self.layout.rel(self.layout.notify_deliveries)}: {exc}")
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
    n = Notifier(layout, environ, by="notify run")

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


def start_thread(layout: Layout, environ: dict[str, str] | None = None, by: str = "supervisor") -> Notifier:
    """The notifier of a long-running process (the watcher, the server): a daemon thread that takes the
    `notifier` lock once `[notify] urls` is set (looked for every `LOCK_RETRY` seconds).

    While another notifier holds the lock it waits and tries again, so it takes over when that one ends;
    it ends with its process, or with `stop()`.
    """
    n = Notifier(layout, environ, by=by)

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
        n.log(f"started (in the {by}, pid {os.getpid()})")
        try:
            n.loop()
        finally:
            os.close(fd)

    threading.Thread(target=main, name="cocoplus-notifier", daemon=True).start()
    return n


def begin(layout: Layout, why: str) -> bool:
    """Save the notifier's position as the logs' ends now, if none is saved and no notifier runs: the moment
    `[notify] urls` took effect (`cocoplus trust` of a file that sets them, `notify test`).  True if saved."""
    fd = try_lock(lock_path(layout))
    if fd is None:
        return False  # a notifier runs: it keeps its own position
    try:
        if os.path.lexists(layout.notify_state):
            return False
        paths = {s: ev.source_path(layout, s) for s in ev.SOURCES}
        outbox.save(layout, outbox.fresh(outbox.positions(paths, None), clock.iso(), why))
        fsio.append_line(layout.notify_log, f"{clock.iso()} notify: position saved at the logs' ends ({why})")
        return True
    finally:
        os.close(fd)
