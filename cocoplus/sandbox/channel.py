"""The control channel of one sandboxed worker: `python -m cocoplus.sandbox.channel STATE_DIR WORKER_ID`.

Started by the worker's runner before the sandbox (supervision/workerrun.py), outside it, with cocoplus's hook
already imported.  It listens on the worker's Unix socket (`Layout.worker_channel`), which bubblewrap mounts into
the sandbox; each hook inside sends its call (hook/channel.py), and a process forked from this one runs it here,
where `.cocoplus/` is writable and this user's keys are: the kill switch, the steer claim, the counts, the
permission requests and the records are written, and sealed, by cocoplus outside.  The answer (exit code,
stdout, stderr) goes back to the hook inside.

What the worker sends is data, never identity: the channel serves this worker of this project only.  Whatever the
request names, the hook runs with `COCOPLUS_DIR` set to this project's `.cocoplus/` and `COCOPLUS_WORKER` to this
worker, without `--dir`, and for the first session it saw only: a request for another session (a forged payload
naming another worker's) is refused, and the refusal blocks.  It runs in the worker's own directory, without
the request's runtime variables that name a project (the hook looks for `.cocoplus/` there first).  It ends when
its runner does.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
from collections.abc import Callable
from typing import Any

from cocoplus.core import clock, fsio, seal, userfiles
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.hook import channel as wire
from cocoplus.hook import entry, mcprelay, runner
from cocoplus.runtimes import registry
from cocoplus.sandbox import bwrap, writes
from cocoplus.session import procinfo

PRELOADED = (runner,)  # what a hook imports, imported once here: every forked child starts with it
ACCEPT_POLL_S = 1.0  # how often it looks whether its runner is still there
READ_TIMEOUT_S = 30.0
MAX_RELAYS = 8  # MCP relays served at once: each has a process and a server here
# What the request's environment may not say: where the state is and which worker this is (the channel does).
IDENTITY = ("COCOPLUS_DIR", "COCOPLUS_WORKER", "COCOPLUS_WORKER_ALIAS", "COCOPLUS_MCP_TOKEN")


def read_request(conn: socket.socket) -> bytes:
    conn.settimeout(READ_TIMEOUT_S)
    chunks: list[bytes] = []
    while True:
        chunk = conn.recv(1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def session_of(stdin: bytes) -> str | None:
    try:
        doc = json.loads(stdin or b"{}")
    except ValueError:
        return None
    sid = doc.get("session_id") if isinstance(doc, dict) else None
    return sid if isinstance(sid, str) and sid else None


def project_variables() -> list[str]:
    """Every runtime's variables naming the project: the hook would look for `.cocoplus/` there first."""
    return [v for name in registry.names() for v in registry.get(name).PROJECT_ENV]


def without_dir(argv: list[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for a in argv:
        if skip:
            skip = False
        elif a == "--dir":
            skip = True
        elif not a.startswith("--dir="):
            out.append(a)
    return out


class Channel:
    """One worker's channel: its project, its worker, and the session it serves once it has seen one."""

    def __init__(self, layout: Layout, wid: str, cwd: str, alias: str | None) -> None:
        self.layout = layout
        self.wid = wid
        self.cwd = cwd
        self.alias = alias
        self.session: str | None = None
        self.listener: socket.socket | None = None
        self.relays: set[int] = set()  # the processes serving MCP relays
        self.started = clock.iso()  # this run's channel: a refused write is asked about once in it (writes.py)
        # This user's homes as the runner gave them, before a forked child takes a hook call's environment.
        self.homes = bwrap.homes_of(userfiles.home(), os.environ)

    def prepare(self, frame: bytes) -> tuple[list[str], dict[str, str], str, bytes] | str:
        """The hook call a request asks for, made this worker's; or why it is refused."""
        try:
            argv_b, env_b, cwd_b, stdin = wire.fields(frame)
        except ValueError as exc:
            return f"a malformed request ({exc})"
        argv = without_dir([a.decode("utf-8", "replace") for a in argv_b.split(b"\0") if a])
        env: dict[str, str] = {}
        for item in env_b.split(b"\0"):
            key, sep, value = item.partition(b"=")
            if sep:
                env[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
        for name in (*IDENTITY, *project_variables()):
            env.pop(name, None)
        env["COCOPLUS_DIR"] = self.layout.root
        env["COCOPLUS_WORKER"] = self.wid
        if self.alias:
            env["COCOPLUS_WORKER_ALIAS"] = self.alias
        sid = session_of(stdin)
        if sid is not None:
            if self.session is None:
                self.session = sid
            elif sid != self.session:
                return f"this channel serves session {self.session} of worker {self.wid} only, not {sid}"
        return argv, env, self.cwd, stdin

    def run(self, conn: socket.socket) -> None:
        """One request: read here (the session is bound in this process), run in a forked child, answered there.
        A connection from the MCP relay (its first byte is `mcprelay.MAGIC`'s) is served by a process of its own."""
        try:
            conn.settimeout(READ_TIMEOUT_S)
            first = conn.recv(1, socket.MSG_PEEK)
            if not first:  # closed at once: a hook inside asking whether the channel is there (hook/channel.py)
                return
            if first == mcprelay.MAGIC[:1]:
                self.relay(conn)
                return
            prepared = self.prepare(read_request(conn))
        except OSError:
            return
        if isinstance(prepared, str):
            reply(conn, wire.BLOCKED, b"", f"cocoplus: refused: {prepared}\n".encode())
            return

        def serve() -> int:
            rec = self.record()
            procinfo.RUNTIME = runtime_of(rec)  # not among this process's ancestors: its record says what it is
            code = child(conn, *prepared, self.layout.project)
            self.after(prepared[0], prepared[3], rec)
            return code

        forked(serve)

    def record(self) -> dict[str, Any]:
        """The worker's record as it stands ({} where it is missing or cannot be read)."""
        try:
            rec = fsio.read_json(self.layout.worker_record(self.wid))
        except CocoplusError:
            rec = None
        return rec if isinstance(rec, dict) else {}

    def after(self, argv: list[str], stdin: bytes, rec: dict[str, Any]) -> None:
        """In the forked child, once the hook is answered: a post-tool call whose result says its sandbox refused a
        write becomes a decision, waited for here until its answer, its deadline or the run's end (writes.py)."""
        event, runtime, *_ = entry.parse_argv(argv)
        if not event or runtime is None or not registry.known(runtime):
            return
        if registry.kind(registry.get(runtime), event) not in ("post_tool", "post_tool_failure"):
            return
        if not writes.READ_ONLY.search(stdin.decode("utf-8", "replace")):
            return
        try:
            payload = json.loads(stdin)
        except ValueError:
            return
        if not isinstance(payload, dict):
            return
        if self.listener is not None:
            self.listener.close()  # a hook finds the channel gone when it is, not this process
        channel_pid = os.getppid()

        def ended() -> str | None:
            return None if os.getppid() == channel_pid else f"worker {self.wid}'s run ended"

        try:
            writes.follow(
                self.layout, self.wid, payload, tree=seal.worker_tree(rec) or self.layout.project, homes=self.homes,
                runtime=runtime, session={"id": rec.get("session"), "alias": self.alias or rec.get("alias")},
                since=self.started, ended=ended,
            )  # fmt: skip
        except CocoplusError as exc:
            sys.stderr.write(f"cocoplus: a refused write of worker {self.wid} could not be asked about: {exc}\n")

    def relay(self, conn: socket.socket) -> None:
        """Fork a process for one MCP relay's connection (sandbox/mcpbridge.py), at most MAX_RELAYS at once."""
        self.relays = {pid for pid in self.relays if alive(pid)}
        if len(self.relays) >= MAX_RELAYS:
            why = f"cocoplus: refused: worker {self.wid} already has {MAX_RELAYS} MCP relays"
            try:
                conn.sendall(mcprelay.error_line(None, mcprelay.UNREACHABLE, why))
            except OSError:
                pass
            return
        from cocoplus.sandbox import mcpbridge  # deferred: only a worker's MCP server needs it

        def serve() -> int:
            if self.listener is not None:
                self.listener.close()  # a hook finds the channel gone when it is, not this process
            return mcpbridge.serve(conn, self.layout, self.wid, self.cwd, self.alias)

        self.relays.add(forked(serve))


def forked(serve: Callable[[], int]) -> int:
    """Run `serve` in a forked child, which leaves with what it returns (1 if it raises); the child's pid."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = serve()
        finally:
            os._exit(code)
    return pid


def runtime_of(rec: dict[str, Any]) -> dict[str, Any]:
    """The worker's runtime process as its record gives it: the sandbox's process on this machine (the runner
    records it when it starts the run) and the command the sandbox runs (what a resume runs again)."""
    cmd = rec.get("command")
    argv = list(cmd) if isinstance(cmd, list) and cmd and all(isinstance(a, str) for a in cmd) else None
    pid, ticks = rec.get("pid"), rec.get("start_ticks")
    return {"pid": pid if isinstance(pid, int) else None, "start_ticks": ticks if isinstance(ticks, int) else None,
            "argv": argv}  # fmt: skip


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def reply(conn: socket.socket, code: int, out: bytes, err: bytes) -> None:
    try:
        conn.sendall(wire.field(str(code).encode()) + wire.field(out) + wire.field(err))
    except OSError:
        pass


def child(conn: socket.socket, argv: list[str], env: dict[str, str], cwd: str, stdin: bytes, project: str) -> int:
    """Run the hook call in this forked process, its stdout and stderr caught, and answer."""
    out_fd = os.memfd_create("hook-stdout")
    err_fd = os.memfd_create("hook-stderr")
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    try:
        os.chdir(cwd if os.path.isdir(cwd) else project)
    except OSError:
        os.chdir(project)
    os.environ.clear()
    os.environ.update(env)
    try:
        code = entry.main(argv, stdin_bytes=stdin, environ=env)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Exception as exc:  # noqa: BLE001  # the hook's own last resort did not hold: block, and say so
        sys.stderr.write(f"cocoplus: the hook failed outside the sandbox ({type(exc).__name__}): blocked\n")
        code = wire.BLOCKED
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    caught = []
    for fd in (out_fd, err_fd):
        os.lseek(fd, 0, os.SEEK_SET)
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        caught.append(b"".join(chunks))
    reply(conn, code, caught[0], caught[1])
    conn.close()
    return 0


def listen(path: str) -> socket.socket:
    """The channel's listening socket at `path` (bound by its name from its directory: a socket's path is limited to
    about 100 bytes), for this user alone.  Made by the runner before the sandbox starts, so that it is there to be
    mounted and a hook's connection waits in its backlog until the channel accepts it."""
    here, name = os.path.split(path)
    back = os.getcwd()
    os.chdir(here)
    try:
        try:
            os.unlink(name)
        except FileNotFoundError:
            pass
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o077)
        try:
            server.bind(name)
        finally:
            os.umask(old)
    finally:
        os.chdir(back)
    server.listen(64)
    return server


def serve(layout: Layout, wid: str, cwd: str, alias: str | None, server: socket.socket) -> int:
    """Serve on `server` until this process's parent (the worker's runner) is gone."""
    parent = os.getppid()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped as they end
    server.settimeout(ACCEPT_POLL_S)
    os.chdir(layout.project)
    served = Channel(layout, wid, cwd, alias)
    served.listener = server
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while os.getppid() == parent:
        try:
            conn, _ = server.accept()
        except TimeoutError:
            continue
        except OSError:
            continue
        try:
            served.run(conn)
        finally:
            conn.close()
    return 0


def main(argv: list[str]) -> int:
    fd = None
    if argv[:1] == ["--fd"] and len(argv) > 1:
        fd, argv = int(argv[1]), argv[2:]
    if len(argv) not in (3, 4):
        sys.stderr.write("usage: python -m cocoplus.sandbox.channel [--fd FD] STATE_DIR WORKER_ID WORKER_CWD [ALIAS]\n")
        return 2
    layout = Layout(argv[0])
    server = socket.socket(fileno=fd) if fd is not None else listen(layout.worker_channel(argv[1]))
    return serve(layout, argv[1], argv[2], argv[3] if len(argv) == 4 else None, server)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
