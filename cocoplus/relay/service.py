"""`cocoplus relay run`: mirror this project's `.cocoplus/` to the fleet and bring the fleet's commands home.

One relay per project (the `relay` lock).  The files stay the source of
truth, and nothing local waits on the network: the hooks, `session stop`
and every other command work the same with or without a relay, with or
without a server.  The relay:

* publishes the project's state (sessions, run state, kill switch, steer,
  supervision, the commands applied here) to `$KV.cocoplus-F.M.P.state`
  whenever it changes, and a heartbeat to `...relay` every `heartbeat_s`;
* publishes every new line of the signals, rounds and conversation ledgers
  to `cocoplus.F.ev.M.P.*`, once each (cocoplus/relay/outbox.py);
* reads the commands for this project through its durable consumer
  (`cocoplus.F.cmd.M.P.<sender>`), checks each on receipt (its sender is
  the subject's last token, which only that machine's NATS user may publish
  on; its body must agree; not too old, not a replay, not republished by a
  stream), applies each once through the same operations the CLI calls, as
  principal `fleet:<sender>` (cocoplus/fleet/commands.py), publishes the
  project's state, then the answer to `cocoplus.F.ack.M.P.<id>`, then
  acknowledges the message.  A refusal is answered and logged (the relay's
  log and logs/authority.jsonl), never applied.

File events (watchdog) wake it; a timer (the heartbeat) does too, so a
missed event only delays a publication.  When the connection is lost (the
server is down, the network is cut, a cluster node is killed) the relay
connects again with exponential back-off (0.2 s doubling to 10 s, with
jitter), to any server of `[fleet] url`, and on every new connection first
catches up: it checks the streams, resumes its consumer where the server
says it stopped, and publishes what changed meanwhile.  A command delivered
again after a crash or a lost connection is answered from
`.cocoplus/fleet/commands.jsonl`, not applied again.

SIGTERM (or SIGINT) ends it within STOP_WITHIN_S, connected or not: a
connection attempt, a catch-up or a back-off under way is given up at once
(`connect.until`), and a connected relay tells the fleet it stopped (at most
GOODBYE_S) and closes its connection (at most `connect.CLOSE_S`).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import threading
import time
from typing import Any

from nats.js.errors import NotFoundError

from cocoplus import __version__
from cocoplus.core import clock, fsio
from cocoplus.core.errors import CocoplusError
from cocoplus.core.lock import try_lock
from cocoplus.core.paths import Layout, is_valid_id
from cocoplus.core.records import SCHEMA_VERSION
from cocoplus.fleet import commands, naming, process, streams
from cocoplus.fleet.connect import Backoff, Connection, Pull, connect, pause, until
from cocoplus.fleet.options import FleetOptions, FleetUnreachable
from cocoplus.relay import apply, outbox, snapshot

STABLE_S = 10.0  # a connection that lasted this long resets the back-off
COALESCE_S = 0.02  # file events arriving together are handled in one pass
IN_PROGRESS_EVERY_S = 3.0  # while a command is applied, the server is told it is still being worked on
STOP_WITHIN_S = 2.0  # SIGTERM ends the relay within this, whatever it was doing
GOODBYE_S = 1.0  # a stopping relay's last word to the fleet waits no longer than this


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, default=str).encode("utf-8")


class Relay:
    def __init__(self, layout: Layout, opts: FleetOptions, *, polling: bool = False) -> None:
        self.layout = layout
        self.opts = opts
        self.polling = polling
        self.applied = apply.Applied(layout, window_s=opts.max_command_age_s + apply.REMEMBER_SLACK_S)
        self.cursors = outbox.load_cursors(layout)
        self.stopping = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self.changed: asyncio.Event | None = None
        self.stop_event: asyncio.Event | None = None
        self.lost: asyncio.Event | None = None
        self.last_state: bytes | None = None
        self.last_beat = 0.0
        self.lock = threading.Lock()
        self.status: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "pid": os.getpid(),
            "started_at": clock.iso(),
            **opts.describe(),
            "connected": False,
            "server": None,
            "connected_at": None,
            "disconnected_at": None,
            "last_error": None,
            "retry_in_s": None,
            "commands_applied": 0,
            "commands_refused": 0,
            "events_published": 0,
            "watching": None,
        }

    # -- bookkeeping -----------------------------------------------------------------------
    def log(self, message: str) -> None:
        sys.stderr.write(f"{clock.iso()} relay {self.opts.machine}/{self.opts.project}: {message}\n")
        sys.stderr.flush()

    def write_status(self, **changes: Any) -> None:
        self.status.update(changes)
        try:
            fsio.ensure_dir(self.layout.fleet_dir)
            fsio.atomic_write_json(self.layout.relay_state, self.status)
        except CocoplusError as exc:
            self.log(f"cannot write {self.layout.rel(self.layout.relay_state)}: {exc}")

    def _on_change(self, path: str) -> None:
        top = os.path.relpath(path, self.layout.root).split(os.sep)[0]
        if top in ("locks", "logs", "fleet") or fsio.TMP_MARK in os.path.basename(path):
            return
        loop, changed = self.loop, self.changed
        if loop is not None and changed is not None:
            loop.call_soon_threadsafe(changed.set)

    # -- the process ------------------------------------------------------------------------
    def run(self) -> int:
        fd = try_lock(self.layout.lock(process.LOCK))
        if fd is None:
            sys.stderr.write(
                f"cocoplus relay: already running for this project (pid {process.running_pid(self.layout)})\n"
            )
            return 1
        from cocoplus.watching import Watch  # deferred: watchdog starts threads; only the running relay needs it

        watch = Watch(self.layout.root, self._on_change, polling=self.polling, log=self.log)
        try:
            self.write_status()
            kind = watch.start()  # no inotify (instances used up, a file system without it): polling, said once
            self.write_status(watching=watch.state())
            self.log(
                f"started (pid {os.getpid()}, fleet {self.opts.fleet}, servers {', '.join(self.opts.urls)}; watching: "
                f"{kind})"
            )
            asyncio.run(self.main())
        finally:
            watch.stop()
            self.write_status(pid=None, connected=False, stopped_at=clock.iso())
            os.close(fd)  # releases the relay lock
            self.log("stopped")
        return 0

    def _request_stop(self) -> None:
        self.stopping = True
        if self.stop_event is not None:
            self.stop_event.set()

    async def main(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.changed = asyncio.Event()
        self.stop_event = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            self.loop.add_signal_handler(sig, self._request_stop)
        backoff = Backoff()
        while not self.stopping:
            try:
                conn = await until(
                    self.stop_event,
                    connect(
                        self.opts,
                        name=f"cocoplus relay {self.opts.machine}/{self.opts.project}",
                        on_closed=self._on_closed,
                    ),
                )
            except FleetUnreachable as exc:
                wait = backoff.next()
                if self.status.get("last_error") != exc.message:
                    self.log(f"{exc.message}; retrying with back-off")
                self.write_status(connected=False, last_error=exc.message, retry_in_s=round(wait, 2))
                await pause(self.stop_event, wait)
                continue
            if conn is None:  # stopped while connecting
                break
            began = time.monotonic()
            try:
                await until(self.stop_event, self.session(conn))  # (a stop during its catch-up ends it too)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - any failure ends this connection; the loop connects again
                why = conn.explain(" ".join(str(exc).split()) or type(exc).__name__)
                self.log(f"connection to {conn.server} ended: {why}")
                self.write_status(last_error=why)
            finally:
                if self.stopping:
                    await self._goodbye(conn)
                await conn.close()
                self.write_status(connected=False, disconnected_at=clock.iso())
            if time.monotonic() - began >= STABLE_S:
                backoff.reset()
            if not self.stopping:
                wait = backoff.next()
                self.write_status(retry_in_s=round(wait, 2))
                await pause(self.stop_event, wait)

    async def _on_closed(self) -> None:
        if self.lost is not None:
            self.lost.set()

    # -- one connection -------------------------------------------------------------------------
    async def session(self, conn: Connection) -> None:
        assert self.changed is not None and self.stop_event is not None
        self.lost = asyncio.Event()
        made = await streams.ensure(conn)
        if made:
            self.log(f"created {', '.join(made)}")
        sub = await streams.command_subscription(conn)
        kv = await conn.js.key_value(naming.bucket(self.opts.fleet))
        await self.resync(conn)
        self.last_state = None  # publish the state again on every connection
        self.last_beat = 0.0
        self.write_status(
            connected=True, server=conn.server, connected_at=clock.iso(), last_error=None, retry_in_s=None
        )
        self.log(f"connected to {conn.server}")
        await self.mirror_once(conn, kv)
        tasks = [
            asyncio.create_task(self.command_loop(conn, sub, kv), name="commands"),
            asyncio.create_task(self.mirror_loop(conn, kv), name="mirror"),
            asyncio.create_task(self.lost.wait(), name="lost"),
            asyncio.create_task(self.stop_event.wait(), name="stop"),
        ]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        for t in done:
            if t.get_name() == "lost":
                raise FleetUnreachable("the connection was closed")
            exc = t.exception()
            if exc is not None:
                raise exc

    async def _goodbye(self, conn: Connection) -> None:
        """Tell the fleet this relay stopped on purpose (best effort, at most GOODBYE_S), so it is shown stopped, not
        lost."""

        async def say() -> None:
            kv = await conn.js.key_value(naming.bucket(self.opts.fleet))
            await kv.put(naming.relay_key(self.opts.machine, self.opts.project), _dumps(self._beat_doc(running=False)))

        try:
            await asyncio.wait_for(say(), GOODBYE_S)
        except Exception:  # noqa: BLE001 - leaving must not fail; the fleet then sees it as not heard from
            pass

    # -- commands ---------------------------------------------------------------------------------
    async def command_loop(self, conn: Connection, sub: Any, kv: Any) -> None:
        assert self.stop_event is not None
        wait = max(1.0, min(self.opts.heartbeat_s, 30.0))
        pull = Pull(sub, self.stop_event, self.log, "commands")
        while True:
            for msg in await pull.fetch(1, wait):
                await self.handle(conn, msg, kv)

    async def _keep_alive(self, msg: Any) -> None:
        while True:
            await asyncio.sleep(IN_PROGRESS_EVERY_S)
            try:
                await msg.in_progress()
            except Exception:  # noqa: BLE001 - a lost connection shows up where the command is acknowledged
                return

    async def handle(self, conn: Connection, msg: Any, kv: Any = None) -> None:
        """One command: checked on receipt, applied once (or refused), the state published, then acknowledged.

        The sender is the subject's last token, which the account lets only that machine's user publish on;
        a refusal names why, in the relay's log and in logs/authority.jsonl as principal `fleet:<sender>`.
        """
        o = self.opts
        sender = naming.cmd_sender(msg.subject or "", o.fleet, o.machine, o.project)
        meta = getattr(msg, "metadata", None)
        seq = meta.sequence.stream if meta is not None else None
        stored = meta.timestamp.timestamp() if meta is not None and meta.timestamp is not None else None
        try:
            doc = json.loads(msg.data)
        except (ValueError, UnicodeDecodeError):
            doc = None
        cid = doc.get("id") if isinstance(doc, dict) else None
        cmd: dict[str, Any] = doc if isinstance(doc, dict) else {}
        try:
            if sender is None:
                raise commands.Rejected(f"its subject {msg.subject!r} names no sending machine")
            if "Nats-Stream" in (msg.headers or {}):
                raise commands.Rejected(
                    f"it was republished by stream {msg.headers['Nats-Stream']!r}, not sent by a machine"
                )
            cmd = commands.check(doc, o.machine, o.project, sender)
            old = commands.too_old(cmd, stored, o.max_command_age_s)
            if old is not None:
                raise commands.Rejected(old)
            keep = asyncio.create_task(self._keep_alive(msg))
            try:
                answer: dict[str, Any] = await asyncio.to_thread(self._apply, cmd, seq)
            finally:
                keep.cancel()
        except commands.Rejected as exc:
            answer = {"ok": False, "error": f"refused: {exc}", "duplicate": False, "refused": True}
            self.log(f"command {cid!r} (stream message {seq}) from {sender or 'an unknown sender'} refused: {exc}")
            await asyncio.to_thread(self._record_refusal, doc, sender, cid, seq, str(exc))
        else:
            what = "answered again" if answer.get("duplicate") else ("applied" if answer.get("ok") else "failed")
            self.log(f"command {cmd['id']} ({cmd['type']} from {cmd.get('operator')} on {sender}): {what}")
        if kv is not None and answer.get("ok") and not answer.get("duplicate"):
            await self.publish_state(
                kv
            )  # acknowledged only once the fleet can see what it did (a resume names that stop)
        if isinstance(cid, str) and is_valid_id(cid) and all(cid.split(".")):
            ack = {
                "id": cid,
                "batch": cmd.get("batch"),
                "type": cmd.get("type"),
                "machine": o.machine,
                "project": o.project,
                "session": cmd.get("session"),
                "sender": sender,
                "seq": seq,
                **answer,
                "acknowledged_at": clock.iso(),
            }
            await conn.js.publish(
                naming.ack_subject(o.fleet, o.machine, o.project, cid),
                _dumps(ack),
                headers={"Nats-Msg-Id": f"ack/{o.machine}/{o.project}/{cid}/{seq}"},
                stream=naming.ack_stream(o.fleet),
            )
        await msg.ack_sync()
        if answer.get("refused"):
            self.write_status(commands_refused=self.status["commands_refused"] + 1)
        elif not answer.get("duplicate"):
            self.write_status(commands_applied=self.status["commands_applied"] + 1)
        assert self.changed is not None
        self.changed.set()

    def _apply(self, cmd: dict[str, Any], seq: int | None) -> dict[str, Any]:
        with self.lock:
            self.applied.prune_now_and_then()
            return apply.apply(self.layout, self.applied, cmd, seq)

    def _record_refusal(self, doc: Any, sender: str | None, cid: Any, seq: int | None, why: str) -> None:
        from cocoplus.ops import authority  # deferred: loads the session modules; only a refusal needs it

        who = authority.fleet(sender or "unknown")
        claimed = {k: doc.get(k) for k in ("type", "from", "operator", "sent_at")} if isinstance(doc, dict) else {}
        authority.record(
            self.layout, who, commands.action(doc), "refused", why=f"fleet command refused: {why}",
            target=cid if isinstance(cid, str) else None, seq=seq, claimed=claimed or None,
        )  # fmt: skip

    # -- mirroring ------------------------------------------------------------------------------------
    async def mirror_loop(self, conn: Connection, kv: Any) -> None:
        assert self.changed is not None
        while True:
            timeout = max(0.05, self.last_beat + self.opts.heartbeat_s - time.monotonic())
            try:
                await asyncio.wait_for(self.changed.wait(), timeout=timeout)
                await asyncio.sleep(COALESCE_S)
            except asyncio.TimeoutError:
                pass
            self.changed.clear()
            await self.mirror_once(conn, kv)

    async def mirror_once(self, conn: Connection, kv: Any) -> None:
        await self.publish_events(conn)
        await self.publish_state(kv)
        if time.monotonic() - self.last_beat >= self.opts.heartbeat_s:
            await kv.put(naming.relay_key(self.opts.machine, self.opts.project), _dumps(self._beat_doc(running=True)))
            self.last_beat = time.monotonic()

    def _beat_doc(self, running: bool) -> dict[str, Any]:
        return {
            "running": running,
            "pid": os.getpid(),
            "started_at": self.status["started_at"],
            "connected_at": self.status.get("connected_at"),
            "heard_at": clock.iso(),
            "heartbeat_s": self.opts.heartbeat_s,
            "cocoplus": __version__,
        }

    def _snapshot(self) -> dict[str, Any]:
        with self.lock:
            return snapshot.build(self.layout, self.opts.machine, self.opts.project, self.applied)

    async def publish_state(self, kv: Any) -> None:
        doc = await asyncio.to_thread(self._snapshot)
        data = _dumps(doc)
        if data == self.last_state:
            return
        await kv.put(naming.state_key(self.opts.machine, self.opts.project), _dumps(snapshot.stamped(doc)))
        self.last_state = data

    async def resync(self, conn: Connection) -> None:
        """Take the server's word for how far each source was published (a crash may have lost our cursor)."""
        o = self.opts
        for src in await asyncio.to_thread(outbox.sources, self.layout):
            try:
                last = await conn.js.get_last_msg(
                    naming.events_stream(o.fleet), outbox.subject(o.fleet, o.machine, o.project, src)
                )
            except NotFoundError:
                continue
            headers = last.headers or {}
            try:
                ino, end = int(headers.get("Cocoplus-Ino", "")), int(headers.get("Cocoplus-End", ""))
            except ValueError:
                continue
            cur = self.cursors.get(src.key)
            if cur is None:
                try:
                    same = os.stat(src.path).st_ino == ino
                except OSError:
                    same = False
                if same:
                    self.cursors[src.key] = {"ino": ino, "offset": end}
            elif cur.get("ino") == ino and end > int(cur.get("offset") or 0):
                self.log(
                    f"{src.key}: the server has up to byte {end}, the cursor said {cur.get('offset')}; "
                    f"going on from {end}"
                )
                self.cursors[src.key] = {"ino": ino, "offset": end}
        await asyncio.to_thread(outbox.save_cursors, self.layout, self.cursors)

    async def publish_events(self, conn: Connection) -> None:
        o = self.opts
        sessions: dict[str, dict[str, Any]] | None = None
        for src in await asyncio.to_thread(outbox.sources, self.layout):
            cur = self.cursors.get(src.key)
            ino, started, lines = await asyncio.to_thread(outbox.read_new, src.path, cur)
            if ino is None:
                continue
            if cur is not None and (cur.get("ino") != ino or started < int(cur.get("offset") or 0)):
                self.log(f"{self.layout.rel(src.path)} was replaced; publishing it from its start")
            new = {"ino": ino, "offset": started}
            try:
                for line in lines:
                    if line.record is None:
                        self.log(f"{self.layout.rel(src.path)}: the line at byte {line.start} is skipped: {line.error}")
                    else:
                        session = None
                        if src.kind == "signal":
                            if sessions is None:
                                listed = await asyncio.to_thread(snapshot.sessions, self.layout)
                                sessions = {s["id"]: s for s in listed}
                            session = sessions.get(str(line.record.get("session")))
                        await conn.js.publish(
                            outbox.subject(o.fleet, o.machine, o.project, src),
                            _dumps(outbox.body(o.machine, o.project, src, line, session)),
                            headers={
                                "Nats-Msg-Id": outbox.message_id(o.machine, o.project, src, ino, line.start),
                                "Cocoplus-Source": src.key,
                                "Cocoplus-Ino": str(ino),
                                "Cocoplus-End": str(line.end),
                            },
                            stream=naming.events_stream(o.fleet),
                        )
                        self.status["events_published"] += 1
                    new["offset"] = line.end
            finally:
                if new != cur:
                    self.cursors[src.key] = new
                    await asyncio.to_thread(outbox.save_cursors, self.layout, self.cursors)


def run(layout: Layout, opts: FleetOptions, polling: bool = False) -> int:
    return Relay(layout, opts, polling=polling).run()
