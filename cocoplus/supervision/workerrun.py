"""The runner of one managed worker: `python -m cocoplus.supervision.workerrun STATE_DIR WORKER_ID`.

Started detached by `workers.start_runner` (a launch, or a dispatch that
resumes a worker).  It waits for a slot (`workers.claim`, every
`POLL_S`), starts the worker's command in the project directory in a
process group of its own (so `workers kill` stops the runtime and what it
started, and not the runner), once its seal holds (`core.seal`: a command
cocoplus did not record for this user, worker and project is never run), copies its output to the worker's log,
rotating it at `[workers] log_max_bytes`, and records how the run ended
(`workers.finish`: a failed run's reason is the runtime's own, read from
its output, such as `Not logged in`).  It exits with the runtime's exit code.

The run ends when the runtime process exits, not when its output pipe
closes: a daemon it left behind may hold the pipe open for as long as it
runs.  The runner is a child subreaper (`leftovers`), so whatever the
runtime left behind, detached or not, is re-parented to it: it is recorded
in the worker's record (`left_behind`) and this log, the slot is given back,
and then it is ended (SIGTERM, SIGKILL after `workers.KILL_GRACE_S`).

SIGTERM to the runner (a queued worker killed, a shutdown) ends the wait,
or passes on to the runtime's process group.

The kill switch holds over a run even where its runtime's hooks do not run
(a launched `codex exec` runs a project's hooks only once someone reviewed
them in Codex): while the run has no session its hooks recorded, AGENT_STOP
(or a kill switch whose state cannot be known) ends it as `workers kill`
would (`stop_guard`, every STOP_POLL_S): at once for such a runtime (its
adapter's HOOKS_NEED_REVIEW), after STARTUP_GRACE_S for the others (their
SessionStart hook records the session as they start).  A run whose hooks did
record its session is left to them: they block its tools and it ends its turn.
A session its runner recorded from the run's output (`workers.session_from_output`:
a Codex thread limited before any hook ran, so that it can be resumed) is no
such sign: its runs stay under the guard.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from cocoplus.core import clock, fsio, seal, userfiles
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.runtimes import registry as runtimes
from cocoplus.runtimes import streams
from cocoplus.sandbox import bwrap, netproxy, network
from cocoplus.sandbox import channel as sandbox_channel
from cocoplus.sandbox import probe as sandbox_probe
from cocoplus.sandbox import profiles as sandbox_profiles
from cocoplus.sandbox import srt as sandbox_srt
from cocoplus.sandbox import writes as sandbox_writes
from cocoplus.session import agents, killswitch, procinfo
from cocoplus.supervision import leftovers, workers, worktrees

if TYPE_CHECKING:
    from cocoplus.core.shapes import WorkerRecord

POLL_S = 0.25
STOP_POLL_S = 0.5
STARTUP_GRACE_S = 15.0  # for a runtime whose hooks run, the most its SessionStart hook may take to record it
STOPPED_BY = "the kill switch (AGENT_STOP; its runtime's hooks were not running, so they could not block its tools)"
CHUNK = 64 * 1024
TAIL_BYTES = 64 * 1024
TAIL_WAIT_S = 2.0  # for the pipe to give the last of a failed run's output


def say(message: str) -> None:
    sys.stderr.write(f"{clock.iso()} worker runner: {message}\n")
    sys.stderr.flush()


class Output:
    """The worker's output log: appended, set aside as `NAME.1` once it would pass `max_bytes`."""

    def __init__(self, path: str, max_bytes: int) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.fd = fsio.open_log(path, max_bytes)
        self.size = os.fstat(self.fd).st_size
        self.lost = False
        self.lock = threading.Lock()  # the copy of the output and the runner's own lines

    def write(self, data: bytes) -> None:
        with self.lock:
            self._write(data)

    def _write(self, data: bytes) -> None:
        if self.size and self.size + len(data) > self.max_bytes:
            self.rotate()
        view = memoryview(data)
        while view:
            try:
                n = os.write(self.fd, view)
            except OSError as exc:
                if not self.lost:
                    self.lost = True
                    fsio.note_loss(self.path, exc)
                    say(f"output not kept ({exc.strerror}); later output is dropped")
                return
            view = view[n:]
            self.size += n

    def rotate(self) -> None:
        os.close(self.fd)
        try:
            os.replace(self.path, self.path + ".1")
        except OSError as exc:
            say(f"cannot rotate {self.path} ({exc.strerror})")
        self.fd = fsio.open_log(self.path, self.max_bytes)
        self.size = os.fstat(self.fd).st_size

    def close(self) -> None:
        os.close(self.fd)


def run(layout: Layout, wid: str) -> int:
    stopping: dict[str, Any] = {"child": None, "asked": False}

    def on_term(signum: int, _frame: Any) -> None:
        stopping["asked"] = True
        child = stopping["child"]
        if child is not None:
            try:
                os.killpg(child.pid, signum)
            except OSError:
                pass

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # detached: a closing terminal is none of its business
    reaper = leftovers.become_subreaper()
    if not reaper:
        say("no child subreaper on this system: only what the runtime leaves in its own process group is ended")
    max_parallel, log_max = workers.settings(layout)  # the launch checked them a moment ago
    said = ""
    while True:
        if stopping["asked"]:
            say("stopped while queued")
            workers.finish(layout, wid, -signal.SIGTERM, "its runner was stopped before it started")
            return 1
        try:
            max_parallel, log_max = workers.settings(layout)  # a changed limit applies to the queue at once
        except CocoplusError as exc:
            if str(exc) != said:  # an edit in progress must not drop the queue; said once, not every poll
                said = str(exc)
                say(f"keeping max_parallel {max_parallel}: {exc}")
        verdict = workers.claim(layout, wid, max_parallel)
        if verdict == "start":
            break
        if verdict == "gone":
            say("no longer queued (killed or ended meanwhile)")
            return 0
        time.sleep(POLL_S)
    rec = workers.bind_runner(layout, wid) or {}  # this process is the runner its record vouches for
    try:
        return _run(layout, wid, rec, stopping, reaper, log_max)
    finally:
        agents.remove(procinfo.self_process())  # its run is over: no agent process of this user's any more


def _run(layout: Layout, wid: str, rec: WorkerRecord, stopping: dict[str, Any], reaper: bool, log_max: int) -> int:
    """The worker's run, once it has its slot and its runner is bound: started if its command's seal holds."""
    cmd = rec.get("command")
    if not isinstance(cmd, list) or not cmd or not all(isinstance(a, str) for a in cmd):
        workers.finish(layout, wid, None, "its record holds no command")
        return 1
    refused = seal.worker_problem(rec, layout.project, wid)
    if refused is not None:  # not a command cocoplus recorded for this user, worker and project: never run
        say(f"not started: its command {refused}")
        workers.finish(layout, wid, None, f"not started: its command {refused}")
        return 1
    out = Output(layout.worker_log(wid), log_max)
    cwd = seal.worker_cwd(rec) or layout.project
    held = _held(layout, wid, rec, cmd, cwd, out)
    if held is None:
        return 1
    cmd, env, fds = held
    shown = " ".join(cmd)[:2000].replace("\r", " ").replace("\n", " ↵ ")  # one line: an instruction may have several
    out.write(f"[cocoplus] {clock.iso()} run {rec.get('runs')}: {shown}\n".encode())
    try:
        child = subprocess.Popen(
            cmd,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            # its own process group: `workers kill` stops it and what it started, not this runner
            start_new_session=True,
            pass_fds=fds,
        )
    except OSError as exc:
        out.write(f"[cocoplus] cannot start {cmd[0]}: {exc.strerror or exc}\n".encode())
        out.close()
        workers.finish(layout, wid, 127, f"could not start {cmd[0]} ({exc.strerror or exc})")
        return 127
    for fd in fds:
        os.close(fd)
    stopping["child"] = child
    workers.started(layout, wid, child.pid)
    say(f"started pid {child.pid}")
    assert child.stdout is not None
    last_words = Tail()
    copier = threading.Thread(target=copy, args=(child.stdout.fileno(), out, last_words), name="output", daemon=True)
    copier.start()
    ended = threading.Event()
    guard = threading.Thread(
        target=stop_guard, args=(layout, wid, ended, rec.get("runtime")), name="stop-guard", daemon=True
    )
    guard.start()
    code = child.returncode = os.waitstatus_to_exitcode(leftovers.wait_for(child.pid))
    ended.set()
    end_channels()  # the run is over: nothing inside is left to call its hooks
    left = ours_ended(leftovers.find() if reaper else [], (rec.get("sandbox") or "none") != "none")
    if left:
        say(
            f"the runtime left {len(left)} process(es) behind: "
            + "; ".join(f"pid {p['pid']} ({p['command']})" for p in left)
        )
    if not reaper:
        workers.killpg(child.pid, signal.SIGTERM)  # what it left in its own group, at least
    tail = f"; it left {len(left)} process(es) behind, ended now" if left else ""
    out.write(f"[cocoplus] {clock.iso()} run {rec.get('runs')} ended: {workers.status_text(code)}{tail}\n".encode())
    recorded = True
    why: str | None = None
    limit: dict[str, Any] | None = None
    if code >= 0:  # a signal is its own reason
        copier.join(TAIL_WAIT_S)  # the runtime's last words (why it failed) are read before the end is recorded
        limit = output_limit(rec.get("runtime"), last_words.text())
    # A run its hooks never saw (unreviewed Codex hooks) names its session in its output: resumable at the reset.
    native = output_session(rec.get("runtime"), last_words.head(), os.environ) if limit is not None else None
    if code > 0:
        reason = streams.failure(streams.transcript(rec.get("runtime"), last_words.text()))
        why = f"{reason} ({workers.status_text(code)})" if reason else None
    keep_work(layout, wid, out)
    try:
        done = workers.finish(
            layout, wid, code, why, left_behind=left, limit=limit, native=native
        )  # the slot is free from here
    except CocoplusError as exc:
        say(f"the end of the run not recorded: {exc}")
        recorded, done = False, None
    if left:
        still = leftovers.end(left, workers.KILL_GRACE_S, below=os.getpid())
        workers.left_behind_ended(layout, wid, still)
        say(
            "what it left behind is ended"
            if not still
            else "still running after SIGKILL: " + ", ".join(str(p["pid"]) for p in still)
        )
    copier.join(workers.KILL_GRACE_S)  # the pipe closes once the last holder is gone
    if not copier.is_alive():
        out.close()  # else something unkillable holds the pipe: the log stays open until this runner exits
    if not recorded:
        return 1
    if (done or {}).get("limit") and (done or {}).get("session"):
        resume_at_reset(layout, done or {})
    say(f"ended: {(done or {}).get('state')} ({workers.status_text(code)})")
    night_summary(layout, wid)
    return code if code >= 0 else 128 - code


def _held(
    layout: Layout, wid: str, rec: WorkerRecord, cmd: list[str], cwd: str, out: Output
) -> tuple[list[str], dict[str, str], tuple[int, ...]] | None:
    """The command, environment and descriptors the run starts with: under its sandbox profile where it has one;
    None (recorded as the run's end, fail-closed: no process of the worker starts) when the profile cannot be
    applied."""
    profile = rec.get("sandbox") or "none"
    with_helpers(layout, wid, rec, cmd)
    try:
        if profile == "none":
            if network.limited(rec.get("network")):
                raise CocoplusError(f"its network ({network.shown(rec.get('network'))}) is limited only in a sandbox")
            return cmd, dict(os.environ), ()
        return sandboxed(layout, wid, rec, cmd, cwd, profile)
    except CocoplusError as exc:
        out.write(f"[cocoplus] {clock.iso()} not started: {exc}\n".encode())
        out.close()
        say(f"not started: {exc}")
        workers.finish(layout, wid, None, f"not started: {exc}")
        return None


def with_helpers(layout: Layout, wid: str, rec: WorkerRecord, cmd: list[str]) -> None:
    """Put the programs the runtime runs through PATH by a name of their own (its adapter's `helper_programs`) first
    on this runner's PATH, which its run inherits, as links in the worker's directory."""
    runtime = rec.get("runtime")
    if not runtimes.known(runtime):
        return
    helpers = runtimes.get(str(runtime)).helper_programs(cmd[0])
    if not helpers:
        return
    where = layout.worker_helpers(wid)
    try:
        fsio.ensure_dir(where)
        for name, target in helpers.items():
            link = os.path.join(where, name)
            if os.path.lexists(link):
                os.unlink(link)
            os.symlink(target, link)
    except (OSError, CocoplusError) as exc:
        say(f"its runtime's helper programs are not on its PATH: {exc}")
        return
    os.environ["PATH"] = f"{where}{os.pathsep}{os.environ.get('PATH', os.defpath)}"


def sandboxed(
    layout: Layout, wid: str, rec: WorkerRecord, cmd: list[str], cwd: str, profile: str
) -> tuple[list[str], dict[str, str], tuple[int, ...]]:
    """`cmd` under the sandbox `profile`: the command line, its environment and the descriptor bubblewrap reads the
    marker from.  CocoplusError (one line) when the profile cannot be applied: the probe first, every run (while
    the control channel starts)."""
    sock = spawn_channel(layout, wid, rec)
    found = probed(rec)
    if found["ok"] and profile == sandbox_profiles.SRT:
        held = probed_srt(rec)
        found = {**held, "bwrap": found["bwrap"]} if held["ok"] else held
    if not found["ok"]:
        end_channels()
        raise CocoplusError(f"the sandbox {profile!r} cannot be applied here: {found['cause']}; fix: {found['fix']}")
    tree = seal.worker_tree(rec) or layout.project
    runtime = str(rec.get("runtime"))
    try:
        bwrap.prepare(tree, layout.project, runtime, userfiles.home(), dict(os.environ))
    except OSError as exc:
        end_channels()
        raise CocoplusError(f"the sandbox {profile!r}: cannot make its read-only directories ({exc})") from None
    except CocoplusError as exc:
        end_channels()
        raise CocoplusError(f"the sandbox {profile!r}: {exc}") from None
    keep = program_dirs(cmd[0])
    homes = bwrap.homes_of(userfiles.home(), os.environ)
    granted = tuple(sandbox_writes.granted(layout, wid, tree, homes, say))
    for path in granted:
        say(f"writable in its sandbox, as approved after an earlier one refused a write: {path}")
    cmd = [*cmd, *runtimes.get(runtime).granted_argv(list(granted))]  # its own sandbox, inside, lets it too
    if profile == sandbox_profiles.SRT:  # srt holds the network itself: the allow list's hosts are given to it
        hosts = tuple(rec["network"]) if isinstance(rec.get("network"), list) else ()
        return srt_held(layout, wid, found, runtime, tree, cwd, cmd, sock, keep, hosts, granted)
    proxy = None
    if network.limited(rec.get("network")):
        try:
            proxy = spawn_proxy(layout, wid)
        except CocoplusError as exc:
            end_channels()
            raise CocoplusError(f"the sandbox {profile!r}: {exc}") from None
    read_end = _pipe_with(bwrap.marker_text(wid, layout.project, profile))
    args = bwrap.arguments(
        found["bwrap"], runtime=runtime, tree=tree, cwd=cwd, project=layout.project, home=userfiles.home(),
        environ=dict(os.environ), marker_fd=read_end, channel_socket=sock, keep=keep, proxy_socket=proxy,
        granted=granted,
    )  # fmt: skip
    inside = bwrap.network_command(rec.get("network"), runtime, dict(os.environ), cmd)
    return [*args, *inside], bwrap.environment(runtime, dict(os.environ)), (read_end,)


NPM_TREE = "node_modules"  # the directory npm installs a package tree in


def program_dirs(program: str) -> tuple[str, ...]:
    """The directories the runtime's program needs inside a sandbox, for binding them again where a fresh /tmp would
    hide them: the one it is named from, the one it resolves into, and the npm package tree (`node_modules`) either
    lies in (its code and the node it runs on)."""
    found = [os.path.dirname(os.path.abspath(program)), os.path.dirname(os.path.realpath(program))]
    for path in list(found):
        parts = path.split(os.sep)
        if NPM_TREE in parts:
            found.append(os.sep.join(parts[: parts.index(NPM_TREE) + 1]))
    return tuple(dict.fromkeys(found))


def srt_held(
    layout: Layout,
    wid: str,
    found: dict[str, Any],
    runtime: str,
    tree: str,
    cwd: str,
    cmd: list[str],
    sock: str,
    keep: tuple[str, ...],
    hosts: tuple[str, ...] = (),
    granted: tuple[str, ...] = (),
) -> tuple[list[str], dict[str, str], tuple[int, ...]]:
    """`cmd` under the `srt` profile (cocoplus/sandbox/srt.py): the outer layer and srt, their environment, and
    the descriptors the marker and srt's settings are read from; `hosts`: the worker's network allow list."""
    home, env = userfiles.home(), dict(os.environ)
    why = sandbox_srt.refused(tree, layout.project, [home, env.get("HOME") or home], runtime)
    if why is not None:
        end_channels()
        raise CocoplusError(f"the sandbox 'srt' cannot be applied here: {why}")
    policy = sandbox_srt.settings(
        runtime=runtime, tree=tree, project=layout.project, home=home, environ=env, hosts=hosts, granted=granted
    )
    read_end = _pipe_with(bwrap.marker_text(wid, layout.project, sandbox_profiles.SRT))
    settings_end = _pipe_with(sandbox_srt.settings_text(policy))
    args = sandbox_srt.arguments(
        found["bwrap"], found["srt"], runtime=runtime, tree=tree, cwd=cwd, project=layout.project, home=home,
        environ=env, marker_fd=read_end, settings_fd=settings_end, channel_socket=sock, keep=keep,
    )  # fmt: skip
    prefix = sandbox_srt.inner(runtime, env)
    return [*args, *prefix, *cmd], sandbox_srt.environment(runtime, env), (read_end, settings_end)


def _pipe_with(data: bytes) -> int:
    """The read end of a pipe holding `data` (bubblewrap reads a file it mounts inside from it)."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, data)
    finally:
        os.close(write_end)
    return read_end


CHANNEL_MODULE = "-m cocoplus.sandbox.channel"  # how a channel's command line, and its children's, names it
RELAY_SERVER = "-m cocoplus mcp --role worker"  # what the channel starts for a sandboxed worker's MCP relay
CHANNELS: list[subprocess.Popen[bytes]] = []  # this runner's control channel, ended with its run


PROBE_FRESH_S = 30.0  # a launch's probe this recent stands for its first run's


def probed(rec: WorkerRecord) -> dict[str, Any]:
    """The probe's findings for this run: the launch's, when it probed moments ago (its first run: bubblewrap is
    found again, and a sandbox that fails now still starts nothing), else a fresh probe (a later run, a resume)."""
    at = rec.get("sandbox_probed_at")
    if isinstance(at, (int, float)) and 0 <= time.time() - at < PROBE_FRESH_S and not rec.get("started_at"):
        found = sandbox_probe.find_bwrap()
        if found is not None:
            return {"ok": True, "bwrap": found}
    return sandbox_probe.probe(dict(os.environ))


def probed_srt(rec: WorkerRecord) -> dict[str, Any]:
    """srt's probe for this run (`probed`: the launch's when moments ago, else a fresh one)."""
    at = rec.get("sandbox_probed_at")
    if isinstance(at, (int, float)) and 0 <= time.time() - at < PROBE_FRESH_S and not rec.get("started_at"):
        found = sandbox_srt.find_srt()
        if found is not None:
            return {"ok": True, "srt": found}
    return sandbox_srt.probe(dict(os.environ))


def spawn_channel(layout: Layout, wid: str, rec: WorkerRecord) -> str:
    """Start the worker's control channel (cocoplus/sandbox/channel.py) outside its sandbox, on a socket bound here
    first (a hook's connection waits in its backlog until the channel, still starting, accepts it); the socket's
    path.  CocoplusError when it cannot start: the worker does not start without it."""
    sock = layout.worker_channel(wid)
    try:
        server = sandbox_channel.listen(sock)
    except OSError as exc:
        raise CocoplusError(
            f"its control channel cannot listen on {layout.rel(sock)} ({exc.strerror or exc})"
        ) from None
    fd = server.fileno()
    argv = [sys.executable, *CHANNEL_MODULE.split(), "--fd", str(fd), layout.root, wid,
            seal.worker_cwd(rec) or layout.project]  # fmt: skip
    if rec.get("alias"):
        argv.append(str(rec.get("alias")))
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=sys.stderr,
                                pass_fds=(fd,))  # fmt: skip
    except OSError as exc:
        raise CocoplusError(f"its control channel could not start ({exc.strerror or exc})") from None
    finally:
        server.close()  # the channel holds it now
    CHANNELS.append(proc)
    return sock


PROXIES: list[netproxy.Running] = []  # this runner's network proxy, ended with its run


def spawn_proxy(layout: Layout, wid: str) -> str:
    """Serve the worker's network proxy (cocoplus/sandbox/netproxy.py) in a thread of this runner, outside its
    sandbox, on a socket bound here; the socket's path.  CocoplusError (one line) when it cannot: the worker does not
    start without it (fail-closed)."""
    sock = layout.worker_proxy(wid)
    try:
        server = sandbox_channel.listen(sock)
    except OSError as exc:
        raise CocoplusError(f"its network proxy cannot listen on {layout.rel(sock)} ({exc.strerror or exc})") from None
    try:
        PROXIES.append(netproxy.start(layout, wid, server, dict(os.environ)))
    except CocoplusError:
        server.close()
        raise
    return sock


def ours_ended(left: list[dict[str, Any]], sandboxed: bool) -> list[dict[str, Any]]:
    """What the runtime left behind, once what this runner's control channel left is ended without a word: its
    forked processes (a hook call still running, a refused write's deadline kept; they carry its command line) and
    the MCP servers it started for the worker's relay, and a process already gone (no command line)."""
    ours = [
        p for p in left
        if not p.get("command") or CHANNEL_MODULE in str(p["command"])
        or (sandboxed and RELAY_SERVER in str(p["command"]))
    ]  # fmt: skip
    if ours:
        leftovers.end(ours, workers.KILL_GRACE_S, below=os.getpid())
    return [p for p in left if p not in ours]


def end_channels() -> None:
    while PROXIES:
        PROXIES.pop().stop()
    while CHANNELS:
        proc = CHANNELS.pop()
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(workers.KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()


def stop_guard(layout: Layout, wid: str, ended: threading.Event, runtime: Any) -> None:
    """End the run if the kill switch is on while its runtime's hooks have recorded no session for it: at once
    for a runtime that may skip the project's hooks (`HOOKS_NEED_REVIEW`) or a worker launched `--unsupervised`,
    else once STARTUP_GRACE_S have passed (its SessionStart hook records the session while it starts; then its
    hooks block its tools)."""
    unhooked = runtimes.known(runtime) and runtimes.get(runtime).HOOKS_NEED_REVIEW
    unhooked = unhooked or bool((workers.read(layout, wid) or {}).get("unsupervised"))  # `launch --unsupervised`
    started = time.monotonic()
    while not ended.wait(STOP_POLL_S):
        if not killswitch.stop_present(layout):
            continue
        rec = workers.read(layout, wid)
        if rec is None or rec.get("state") not in workers.LIVE:
            return
        sess = workers.session_of(layout, rec)
        if sess is not None and sess.get("last_event") != workers.FROM_OUTPUT:
            continue  # its hooks run: they block its tools, and it ends its turn
        if not unhooked and time.monotonic() - started < STARTUP_GRACE_S:
            continue  # its hooks may not have recorded its session yet
        say("AGENT_STOP is on and this run's hooks recorded no session (they are not running): ending it")
        try:
            workers.kill(layout, wid, STOPPED_BY)
        except CocoplusError as exc:
            say(f"could not end it: {exc}")
        return


def output_limit(runtime: Any, text: str) -> dict[str, Any] | None:
    """The rate or usage limit the run's last output reports (its adapter's `output_limit`), or None."""
    if not isinstance(runtime, str) or not runtimes.known(runtime):
        return None
    return _first(text, runtimes.get(runtime).output_limit, reverse=True)


def output_session(runtime: Any, text: str, environ: Any) -> dict[str, Any] | None:
    """The session the run's first output names, where its hooks may not have recorded it (its adapter's
    `output_session`: a thread of `codex exec`), or None."""
    if not isinstance(runtime, str) or not runtimes.known(runtime):
        return None
    return _first(text, lambda event: runtimes.get(runtime).output_session(event, environ))


def _first(text: str, read: Any, reverse: bool = False) -> dict[str, Any] | None:
    """What `read` finds in the first (or, `reverse`, the last) JSON line of `text` it finds anything in."""
    lines = text.splitlines()
    for line in reversed(lines) if reverse else lines:
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        found = read(event) if isinstance(event, dict) else None
        if found is not None:
            return dict(found)
    return None


def resume_at_reset(layout: Layout, done: WorkerRecord) -> None:
    """A worker paused by a limit is resumed at the reset by the watcher: make sure one runs."""
    from cocoplus.supervision import watcher  # deferred: only a run ended by a limit needs the watcher

    if watcher.running_pid(layout) is not None:
        return
    try:
        pid = watcher.start_detached(layout, vouched=True)  # it acts as the watcher, not as this worker
    except CocoplusError as exc:
        say(f"paused by a limit, but the watcher that resumes it could not start: {exc}")
        return
    say(f"paused by a limit: the watcher (pid {pid}) resumes it at the reset")


def night_summary(layout: Layout, wid: str) -> None:
    """The last running worker ended with supervision off: the morning's summary, as a notification."""
    from cocoplus.supervision import autonomy, summary  # deferred: only the end of a run asks

    try:
        if summary.after_worker_end(layout, wid, supervised=autonomy.is_enabled(layout)):
            say("the last running worker: the summary is logged for the notifier")
    except CocoplusError as exc:
        say(f"the summary not logged: {exc}")


def keep_work(layout: Layout, wid: str, out: Output) -> None:
    """A worker in a worktree: commit what its run left uncommitted on its branch, before its end is recorded."""
    rec = workers.read(layout, wid) or {}
    if not rec.get("worktree"):
        return
    try:
        commit = worktrees.commit_leftovers(rec)
    except CocoplusError as exc:
        say(str(exc))
        out.write(f"[cocoplus] {clock.iso()} {exc}\n".encode())
        return
    if commit:
        workers.note_commit(layout, wid, commit)
        out.write(f"[cocoplus] {clock.iso()} committed what it left uncommitted: {commit[:12]}\n".encode())


class Tail:
    """The last TAIL_BYTES of the run's output, from which a failed run's reason is read, and its first TAIL_BYTES
    (`head`), where a runtime names its session."""

    def __init__(self) -> None:
        self.data = b""
        self.first = b""
        self.lock = threading.Lock()

    def add(self, chunk: bytes) -> None:
        with self.lock:
            self.data = (self.data + chunk)[-TAIL_BYTES:]
            if len(self.first) < TAIL_BYTES:
                self.first = (self.first + chunk)[:TAIL_BYTES]

    def text(self) -> str:
        with self.lock:
            data = self.data
        return data.decode("utf-8", "replace")

    def head(self) -> str:
        with self.lock:
            data = self.first
        return data.decode("utf-8", "replace")


def copy(src: int, out: Output, tail: Tail | None = None) -> None:
    """The runtime's output (and that of whatever holds its pipe) into the log, until the pipe closes."""
    while True:
        try:
            chunk = os.read(src, CHUNK)
        except OSError as exc:
            if exc.errno == errno.EINTR:
                continue
            return
        if not chunk:
            return
        out.write(chunk)
        if tail is not None:
            tail.add(chunk)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write("usage: python -m cocoplus.supervision.workerrun STATE_DIR WORKER_ID\n")
        return 2
    try:
        return run(Layout(argv[0]), argv[1])
    except CocoplusError as exc:
        say(f"error: {exc}")
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
