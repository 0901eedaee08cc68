"""The network proxy of one sandboxed worker, served in a thread of its runner (`start`), outside its sandbox.

Started by the worker's runner (supervision/workerrun.py) before the sandbox, when the worker's network is
limited (`[sandbox] network`: none, or an allow list; cocoplus/sandbox/network.py).  It serves the Unix socket
`Layout.worker_proxy`, which bubblewrap mounts into the sandbox, where the forwarder (forward.py) carries the
worker's connections to it.  It speaks HTTP proxy: `CONNECT host:port` (HTTPS, and anything else tunnelled) and
absolute-form requests (`GET http://host/...`).

Each host is judged here, never inside:

* the runtime's model endpoint (its adapter's `MODEL_ENDPOINTS`, from the environment the worker was launched
  with) always goes through;
* under `none`, nothing else does: the client gets 403 and a line saying why;
* under an allow list, a host on it goes through.  A host not on it is held: a permission request (tool `Network`,
  `permissions/requests/`) becomes a decision in the inbox, "allow HOST for w3?", with `[sandbox] network_wait_s`
  as its deadline and deny as its default.  Approved (`cocoplus decide ID approve`, `approve`, a tap, the page),
  the host joins this worker's list for this run only (this process's memory; the record and its seal are not
  changed) and the held connection goes through; denied or expired, it gets 403, and so does every later try of
  that host in this run, without a new decision.  The request, the answer and the deadline are in the audit log
  (`permissions/decisions.jsonl`), and so in the timeline.

It ends with its runner.  It runs in the runner's process, not a process of its own, so that a worker's start
waits for no interpreter to start (a listening socket and a thread).
"""

from __future__ import annotations

import asyncio
import os
import socket
import struct
import sys
import threading
import time
from typing import Any

from cocoplus import config as config_mod
from cocoplus.core import clock, fsio
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.rules import engine
from cocoplus.sandbox import network

HEAD_MAX = 64 * 1024
CONNECT_TIMEOUT_S = 30.0
READY_WAIT_S = 10.0
STOP_WAIT_S = 5.0
CHUNK = 64 * 1024
MAX_DEPTH = 64  # processes between the runner and a connecting one, at most
REASONS = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}
TOOL = engine.NETWORK  # the tool a held connection names, as a rule would: `Network(registry.npmjs.org)`


def say(message: str) -> None:
    sys.stderr.write(f"{clock.iso()} network proxy: {message}\n")
    sys.stderr.flush()


class Refused(Exception):
    """A request the proxy does not carry: its HTTP status and the line the client is told."""

    def __init__(self, status: int, why: str) -> None:
        super().__init__(why)
        self.status = status
        self.why = why


class Proxy:
    """One worker's proxy: its setting, its model endpoints, and what this run's answers added or refused."""

    def __init__(self, layout: Layout, wid: str, rec: dict[str, Any], environ: dict[str, str], runner: int) -> None:
        self.layout = layout
        self.wid = wid
        self.rec = rec
        self.who = str(rec.get("alias") or wid)
        self.setting = rec.get("network") or network.ALL
        runtime = str(rec.get("runtime"))
        self.models = network.endpoints(runtime, environ)
        self.granted: list[str] = []  # hosts approved in this run
        self.refused: dict[str, str] = {}  # host -> why, answered in this run
        self.pending: dict[str, asyncio.Future[str | None]] = {}
        self.carried: set[asyncio.Task[Any]] = set()  # the connections being carried
        self.closing = threading.Event()  # its run is over: a decision still open is not waited for
        self.wait_s = float(config_mod.load_for(layout, environ={}).get("sandbox.network_wait_s"))
        self.runner = runner  # the worker's runner: its sandbox is started below it

    def ended(self) -> str | None:
        """Why no answer is waited for any more (the worker's run ended), or None."""
        return "the worker's run ended before an answer came: denied" if self.closing.is_set() else None

    def listed(self, host: str, port: int) -> bool:
        if (host, port) in self.models:
            return True
        if isinstance(self.setting, list) and network.allows([*self.setting, *self.granted], host, port):
            return True
        return False

    async def judge(self, host: str, port: int) -> None:
        """Return when `host:port` may be reached; Refused when not."""
        if self.listed(host, port):
            return
        if not isinstance(self.setting, list):
            raise Refused(403, f"{self.who}'s network is none: only its model endpoint is reached")
        if host in self.refused:
            raise Refused(403, f"{host} is not on {self.who}'s network allow list ({self.refused[host]})")
        held = self.pending.get(host)
        if held is None:
            held = asyncio.get_running_loop().create_future()
            self.pending[host] = held
            asking = asyncio.get_running_loop().create_task(self.ask(host, port, held))
            self.carried.add(asking)
            asking.add_done_callback(self.carried.discard)
        why = await asyncio.shield(held)
        if why is not None:
            raise Refused(403, f"{host} is not on {self.who}'s network allow list ({why})")

    async def ask(self, host: str, port: int, held: asyncio.Future[str | None]) -> None:
        """The decision for a host not on the list: None (approved) or why not, into `held`."""
        try:
            why = await asyncio.to_thread(self.decide, host, port)
        except Exception as exc:  # noqa: BLE001  # whatever failed, the host is refused (the default), and said
            why = f"no decision could be asked ({type(exc).__name__}: {exc}): refused"
        if why is None:
            self.granted.append(host)
        else:
            self.refused[host] = why
        self.pending.pop(host, None)
        held.set_result(why)

    def decide(self, host: str, port: int) -> str | None:
        """Open the decision, wait for its answer or its deadline, and say what it came to (None: approved)."""
        from cocoplus.rules import engine  # deferred: only a host off the list asks the inbox
        from cocoplus.session import permissions  # deferred: as engine

        now = read_worker(self.layout, self.wid) or {}
        session = {"id": now.get("session"), "alias": self.who}
        why = (
            f"its sandbox's proxy held a connection to {host}:{port}, which is not on its network allow list "
            f"({network.shown(self.setting)}); approve: {host} is allowed for this run only"
        )
        if network.loopback(host):
            why += "; this is this machine itself, where cocoplus's own server and other local services listen"
        req = permissions.open_request(
            self.layout, session, runtime=str(self.rec.get("runtime")), tool=TOOL,  # type: ignore[arg-type]
            tool_input={"host": host, "port": port}, wait_s=self.wait_s, worker=self.wid,
            decision=engine.Decision("ask", why),
        )  # fmt: skip
        permissions.log(self.layout, req, state="held", how="network proxy", by=f"{self.wid}'s proxy")
        say(f"{host}:{port} is not on the allow list: held for decision {req['id']} ({self.wait_s:g} s)")
        waited = permissions.wait(self.layout, req["id"], time.monotonic() + self.wait_s, self.ended)
        got: dict[str, Any] = dict(waited) if waited is not None else {}
        if waited is None:
            ended = self.ended()
            reason = f"no answer within {self.wait_s:g} s: denied (the default)" if ended is None else ended
            got = dict(
                permissions.answer(
                    self.layout, req["id"], "expire", principal=None, by="deadline" if ended is None else "run end",
                    reason=reason,
                )
            )  # fmt: skip
        state = got.get("state")
        say(f"decision {req['id']} for {host}: {state}")
        if state == "allowed":
            return None
        if state == "expired":
            return f"decision {req['id']}: no answer came by its deadline, so denied (the default)"
        return f"decision {req['id']}: {state} by {got.get('by') or 'nobody'}"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        me = asyncio.current_task()
        if me is not None:
            self.carried.add(me)  # the loop keeps only a weak reference to a task
            me.add_done_callback(self.carried.discard)
        try:
            if not ours(writer.get_extra_info("socket"), self.runner):
                raise Refused(403, f"this proxy serves the sandbox of {self.who} only")
            await self.carry(reader, writer)
        except Refused as exc:
            body = f"cocoplus: {exc.why}\n".encode()
            head = (
                f"HTTP/1.1 {exc.status} {REASONS.get(exc.status, 'Error')}\r\n"
                f"Content-Type: text/plain; charset=utf-8\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            )
            try:
                writer.write(head.encode() + body)
                await writer.drain()
            except OSError:
                pass
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            writer.close()

    async def carry(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        line, _, rest = head.partition(b"\r\n")
        parts = line.decode("latin-1").split()
        if len(parts) != 3:
            raise Refused(400, "not an HTTP proxy request")
        method, target, version = parts
        if method.upper() == "CONNECT":
            host, port = network.split(target, 443)
            first = b""
        else:
            host, port, path = absolute(target)
            kept = [h for h in rest.split(b"\r\n") if not h.lower().startswith((b"proxy-connection:", b"proxy-auth"))]
            first = f"{method} {path} {version}\r\n".encode() + b"\r\n".join(kept)
        if not network.well_formed(host):
            raise Refused(400, f"not a host name or address: {host[:80]!r}")
        await self.judge(host, port)
        try:
            up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(host, port), CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError) as exc:
            raise Refused(502, f"{host}:{port} cannot be reached ({exc})") from None
        if method.upper() == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
        else:
            up_writer.write(first)
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


def read_worker(layout: Layout, wid: str) -> dict[str, Any] | None:
    """The worker's record as it stands (its runner wrote it), None when there is none."""
    doc = fsio.read_json(layout.worker_record(wid))
    return doc if isinstance(doc, dict) else None


def parent_of(pid: int) -> int:
    """The parent of process `pid` (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return 0
    fields = stat[stat.rfind(b")") + 2 :].split()
    return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else 0


def ours(sock: Any, runner: int) -> bool:
    """Whether the process at the other end of `sock` was started below `runner` (its sandbox, which the runner
    started): a Unix socket on a read-only mount can still be connected to, so another
    worker's sandbox could reach this socket; it is refused."""
    try:
        pid, _uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    except (OSError, AttributeError, struct.error):
        return False
    for _ in range(MAX_DEPTH):
        if pid <= 1 or pid == runner:
            return False
        up = parent_of(pid)
        if up == runner:
            return True
        pid = up
    return False


def absolute(target: str) -> tuple[str, int, str]:
    """An absolute-form target's host, port and path; Refused for anything but http:// (https goes by CONNECT)."""
    if not target.lower().startswith("http://"):
        raise Refused(400, f"only CONNECT or http:// requests are carried, not {target[:80]!r}")
    rest = target[len("http://") :]
    authority, slash, path = rest.partition("/")
    host, port = network.split(authority.rpartition("@")[2], 80)
    if not host:
        raise Refused(400, "a request without a host")
    return host, port, slash + path if slash else "/"


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(CHUNK):
            writer.write(chunk)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (OSError, RuntimeError):
        writer.close()


class Running:
    """A proxy serving in a thread of the worker's runner; `stop` ends it."""

    def __init__(
        self, proxy: Proxy, loop: asyncio.AbstractEventLoop, thread: threading.Thread, done: asyncio.Event
    ) -> None:
        self.proxy = proxy
        self.loop = loop
        self.thread = thread
        self.done = done

    def stop(self) -> None:
        self.proxy.closing.set()  # a decision still open ends now, denied: nothing waits for it
        if self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.done.set)
            self.thread.join(STOP_WAIT_S)


def start(layout: Layout, wid: str, server_sock: socket.socket, environ: dict[str, str]) -> Running:
    """Serve worker `wid`'s proxy on `server_sock` (bound and listening) in a thread of this process, its runner;
    return once it serves.  CocoplusError (one line) when it cannot: the worker does not start without it."""
    rec = read_worker(layout, wid)
    if rec is None:
        raise CocoplusError(f"no record of worker {wid}")
    try:
        proxy = Proxy(layout, wid, rec, environ, runner=os.getpid())
    except CocoplusError as exc:
        raise CocoplusError(f"its network proxy could not start ({exc})") from None
    loop = asyncio.new_event_loop()
    done = asyncio.Event()
    ready = threading.Event()
    failed: list[BaseException] = []

    async def serve() -> None:
        server = await asyncio.start_unix_server(proxy.handle, sock=server_sock, limit=HEAD_MAX)
        ready.set()
        async with server:
            await done.wait()

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(serve())
        except BaseException as exc:  # noqa: BLE001  # said to the runner, which then starts nothing
            failed.append(exc)
        finally:
            ready.set()
            left = asyncio.all_tasks(loop)  # connections still carried when it stops: ended with it
            for task in left:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            loop.close()

    thread = threading.Thread(target=run, name=f"network proxy of {wid}", daemon=True)
    thread.start()
    if not ready.wait(READY_WAIT_S) or failed or not thread.is_alive():
        why = f"{type(failed[0]).__name__}: {failed[0]}" if failed else f"not serving after {READY_WAIT_S:g} s"
        raise CocoplusError(f"its network proxy could not start ({why})")
    return Running(proxy, loop, thread, done)
