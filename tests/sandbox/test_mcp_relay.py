"""The worker's MCP server from inside a cocoplus sandbox (hook/mcprelay.py inside, sandbox/mcpbridge.py outside).

`cocoplus mcp` runs inside a real bubblewrap sandbox (its marker there, `.cocoplus/` out of reach) with the worker's
control channel bound in, as a worker's runtime starts it from `.mcp.json`; its tools write outside.  Then the
channel is attacked as a worker's shell could, by connecting to the socket itself: another role, worker, project
or session asked for, a huge line, garbage, a forged id, an environment that would run code outside."""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core import seal
from cocoplus.core.paths import Layout
from cocoplus.hook import channel as wire
from cocoplus.hook import mcprelay
from cocoplus.inbox import decisions
from cocoplus.sandbox import channel, probe
from cocoplus.session import registry
from tests.support.sandbox import channel_call, channel_serving, require_sandbox
from tests.support.waiting import wait_until

WORKER_TOOLS = {"report_progress", "notify_blocked", "ask_human", "request_context"}
INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


@pytest.fixture
def served(project: Layout) -> Iterator[Layout]:
    """The channel of worker w1 of `project`, listening."""
    with channel_serving(project, stderr=subprocess.DEVNULL) as served:
        yield served


def session(layout: Layout, sid: str, worker: str | None, outside: bool = False) -> dict[str, Any]:
    """A Claude session started through the channel (SessionStart; `outside`: by the hook run outside it, as
    another worker's is), taken for `worker`.  (Here no sealed worker record and runner vouch for it, as `launch`
    makes them: the record is given its worker by hand.)"""
    payload = {"session_id": sid, "hook_event_name": "SessionStart", "source": "startup", "cwd": layout.project,
               "transcript_path": "/nonexistent"}  # fmt: skip
    argv = ["SessionStart", "--runtime", "claude", "--timeout", "10"]
    if outside:
        r = subprocess.run([sys.executable, "-m", "cocoplus", "hook", *argv], input=json.dumps(payload).encode(),
                           cwd=layout.project, capture_output=True, timeout=60)  # fmt: skip
        assert r.returncode == 0, r
    else:
        assert channel_call(layout, argv, payload)[0] == 0
    rec = wait_until(lambda: next((r for r in registry.list_sessions(layout)[0] if r.get("runtime_session_id") == sid),
                                  None), timeout=30)  # fmt: skip

    def mark(r: Any) -> None:
        r["worker"] = worker

    return dict(registry.update(layout, rec["id"], mark))


class Peer:
    """A JSON-RPC client on a line stream: requests by id, and what else comes."""

    def __init__(self, write: Any, read: Any) -> None:
        self._write = write
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.next_id = 1
        threading.Thread(target=self._read, args=(read,), daemon=True).start()

    def _read(self, read: Any) -> None:
        buf = b""
        while True:
            try:
                chunk = read(1 << 16)
            except OSError:  # reset, or closed here: the stream ends
                chunk = b""
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                self.lines.put(json.loads(line))
        self.lines.put(None)

    def send(self, doc: dict[str, Any] | bytes) -> None:
        self._write(doc if isinstance(doc, bytes) else (json.dumps(doc) + "\n").encode())

    def next(self, timeout: float = 60) -> dict[str, Any] | None:
        return self.lines.get(timeout=timeout)

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, **({"params": params} if params else {})})
        while True:
            got = self.next()
            assert got is not None, f"the stream closed before the response to {method}"
            if got.get("id") == rid:
                return got

    def start(self) -> dict[str, Any]:
        init = self.request("initialize", INIT)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return init

    def call(self, name: str, **arguments: Any) -> dict[str, Any]:
        return self.request("tools/call", {"name": name, "arguments": arguments})


def sandboxed(socket_path: str | None, env: dict[str, str] | None = None, *args: str) -> subprocess.Popen[bytes]:
    """`cocoplus mcp ARGS` inside a bubblewrap sandbox marked as cocoplus's, the channel bound in (if given)."""
    found = require_sandbox()
    read_end, write_end = os.pipe()
    os.write(write_end, b'{"worker": "w1"}')
    os.close(write_end)
    bind = ["--bind", socket_path, wire.CHANNEL] if socket_path else []
    proc = subprocess.Popen(
        [found["bwrap"], "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
         *probe.interpreter_binds(), *bind, "--ro-bind-data", str(read_end), wire.SANDBOX_MARKER, "--unshare-pid",
         "--die-with-parent", "--chdir", "/", "--", sys.executable, "-m", "cocoplus", "mcp", *args],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(read_end,),
        env=env if env is not None else dict(os.environ),
    )  # fmt: skip
    os.close(read_end)
    return proc


def relay_peer(proc: subprocess.Popen[bytes]) -> Peer:
    assert proc.stdin is not None and proc.stdout is not None
    stdin = proc.stdin

    def write(data: bytes) -> None:
        stdin.write(data)
        stdin.flush()

    fd = proc.stdout.fileno()
    return Peer(write, lambda n: os.read(fd, n))


def ended(proc: subprocess.Popen[bytes]) -> None:
    if proc.stdin is not None:
        proc.stdin.close()
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def text_of(answer: dict[str, Any]) -> str:
    return str(answer["result"]["content"][0]["text"])


def signals(layout: Layout) -> list[dict[str, Any]]:
    path = Path(layout.signals)
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def test_the_workers_mcp_server_inside_the_sandbox_writes_outside_through_the_channel(served: Layout) -> None:
    rec = session(served, "s-relay", "w1")
    env = dict(os.environ, CLAUDE_CODE_SESSION_ID="s-relay")
    proc = sandboxed(served.worker_channel("w1"), env)
    try:
        peer = relay_peer(proc)
        init = peer.start()
        assert init["result"]["serverInfo"]["name"] == "cocoplus", init
        assert {t["name"] for t in peer.request("tools/list")["result"]["tools"]} == WORKER_TOOLS
        done = peer.call("report_progress", status="completed", message="MILESTONE-7a1 parser done")
        assert not done["result"].get("isError"), done
        (sig,) = [s for s in signals(served) if s.get("message") == "MILESTONE-7a1 parser done"]
        assert sig["session"] == rec["id"]
        # A hook goes through the same channel while the MCP connection stays open: it is not held up.
        pre = {"session_id": "s-relay", "hook_event_name": "PreToolUse", "tool_name": "Bash",
               "tool_input": {"command": "ls"}, "cwd": served.project, "transcript_path": "/nonexistent"}  # fmt: skip
        assert channel_call(served, ["PreToolUse", "--runtime", "claude", "--timeout", "10"], pre)[0] == 0
        asked = peer.call("ask_human", question="QUESTION-51c: keep the old API?")
        assert not asked["result"].get("isError"), asked
        (d,) = decisions.collect(served)
        assert d["kind"] == "question" and "QUESTION-51c" in json.dumps(d), d
    finally:
        ended(proc)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""


def test_an_answer_given_outside_reaches_the_worker_through_its_hook(served: Layout, cli_subprocess: Any) -> None:
    session(served, "s-ask", "w1")
    proc = sandboxed(served.worker_channel("w1"), dict(os.environ, CLAUDE_CODE_SESSION_ID="s-ask"))
    try:
        peer = relay_peer(proc)
        peer.start()
        assert not peer.call("ask_human", question="QUESTION-9e2: which parser?")["result"].get("isError")
    finally:
        ended(proc)
    (d,) = decisions.collect(served)
    out = cli_subprocess("decide", d["id"], "answer", "--text", "ANSWER-3f0: the new one", "--json",
                         cwd=served.project, env={"COCOPLUS_OPERATOR": "tester"})  # fmt: skip
    assert decisions.collect(served) == [], out
    stop = {"session_id": "s-ask", "hook_event_name": "Stop", "cwd": served.project,
            "transcript_path": "/nonexistent", "stop_hook_active": False}  # fmt: skip
    prompt = {"session_id": "s-ask", "hook_event_name": "UserPromptSubmit", "prompt": "go on",
              "cwd": served.project, "transcript_path": "/nonexistent"}  # fmt: skip
    told = b"".join(
        channel_call(served, [event, "--runtime", "claude", "--timeout", "10"], payload)[1]
        for event, payload in (("Stop", stop), ("UserPromptSubmit", prompt))
    )
    assert b"ANSWER-3f0: the new one" in told, told


def test_a_relay_that_cannot_reach_its_channel_answers_every_request_with_an_error(served: Layout) -> None:
    """Fail closed: no channel bound in, so every request is answered with an error saying so, a notification
    with nothing, and nothing is written anywhere."""
    before = sorted(p.name for p in Path(served.root).rglob("*"))
    proc = sandboxed(None)
    try:
        peer = relay_peer(proc)
        init = peer.request("initialize", INIT)
        assert init["error"]["code"] == mcprelay.UNREACHABLE
        assert "cannot reach its control channel" in init["error"]["message"], init
        peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        called = peer.call("report_progress", status="completed", message="x")
        assert called["id"] == 2 and "cannot reach its control channel" in called["error"]["message"]
    finally:
        ended(proc)
    assert peer.next() is None  # the notification got nothing
    assert sorted(p.name for p in Path(served.root).rglob("*")) == before


def test_a_role_capability_worker_and_project_asked_from_inside_are_not_believed(
    served: Layout, tmp_path: Path
) -> None:
    """`--role all` with this user's real capability in the environment (as if it had leaked in), another
    project's `COCOPLUS_DIR` and another worker's `COCOPLUS_WORKER`: the worker tools of this worker of this
    project, all the same."""
    session(served, "s-mine", "w1")
    other = tmp_path / "other" / ".cocoplus"
    other.mkdir(parents=True)
    env = dict(os.environ, CLAUDE_CODE_SESSION_ID="s-mine", COCOPLUS_MCP_TOKEN=seal.capability() or "x",
               COCOPLUS_DIR=str(other), COCOPLUS_WORKER="w7")  # fmt: skip
    proc = sandboxed(served.worker_channel("w1"), env, "--role", "all")
    try:
        peer = relay_peer(proc)
        peer.start()
        assert {t["name"] for t in peer.request("tools/list")["result"]["tools"]} == WORKER_TOOLS
        stop = peer.call("stop_session", ids=["cc1"])
        assert stop["error"]["code"] == -32602 and "Unknown tool" in stop["error"]["message"], stop
        assert not peer.call("report_progress", status="working", message="HEARTBEAT-2b")["result"].get("isError")
    finally:
        ended(proc)
    assert b"only the worker tools" in (proc.stderr.read() if proc.stderr else b"")
    assert [s for s in signals(served) if s.get("message") == "HEARTBEAT-2b"]
    assert list(other.iterdir()) == []
    assert not (Path(served.root) / "STOP").exists() and not (Path(served.root) / "AGENT_STOP").exists()


# -- the channel attacked from the socket itself (a worker's shell need not use the relay) ---------------------


def raw(layout: Layout, env: dict[str, str] | None = None, header: bytes | None = None) -> tuple[socket.socket, Peer]:
    """A connection to the channel as a worker's own program could make it: the relay's header, or any bytes."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    here = os.getcwd()
    os.chdir(layout.worker_dir("w1"))
    try:
        conn.connect(os.path.basename(layout.worker_channel("w1")))
    finally:
        os.chdir(here)
    if header is None:
        envb = b"\0".join(f"{k}={v}".encode() for k, v in (env if env is not None else dict(os.environ)).items())
        header = mcprelay.MAGIC + wire.field(envb)
    conn.sendall(header)
    return conn, Peer(conn.sendall, conn.recv)  # a closed socket's recv fails: never another's descriptor


def test_a_call_for_another_workers_session_is_refused(served: Layout) -> None:
    session(served, "s-mine2", "w1")
    theirs = session(served, "s-theirs", "w2", outside=True)
    conn, peer = raw(served, dict(os.environ, CLAUDE_CODE_SESSION_ID="s-mine2"))
    with conn:
        peer.start()
        named = peer.call("report_progress", status="completed", message="FORGED-1", session=theirs["alias"])
        assert named["error"]["code"] == -32602 and "not worker w1's" in named["error"]["message"], named
        assert not peer.call("report_progress", status="working", message="MINE-1")["result"].get("isError")
    conn2, peer2 = raw(served, dict(os.environ, CLAUDE_CODE_SESSION_ID="s-theirs"))
    with conn2:
        peer2.start()
        by_env = peer2.call("ask_human", question="FORGED-2")
        assert by_env["error"]["code"] == -32602 and "this channel serves w1 only" in by_env["error"]["message"]
    messages = [s.get("message") for s in signals(served)]
    assert "MINE-1" in messages and "FORGED-1" not in messages and "FORGED-2" not in messages
    assert decisions.collect(served) == []


def test_an_environment_that_would_run_code_outside_is_not_passed_on(served: Layout, tmp_path: Path) -> None:
    """PYTHONPATH with a sitecustomize, LD_PRELOAD: the server outside runs in the channel's environment, not the
    sandbox's."""
    planted = tmp_path / "planted"
    planted.mkdir()
    ran = tmp_path / "RAN-OUTSIDE"
    (planted / "sitecustomize.py").write_text(f"open({str(ran)!r}, 'w').write('x')\n")
    env = dict(os.environ, PYTHONPATH=f"{planted}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
               LD_PRELOAD=str(planted / "evil.so"))  # fmt: skip
    conn, peer = raw(served, env)
    with conn:
        assert peer.start()["result"]["serverInfo"]["name"] == "cocoplus"
    assert not ran.exists()


def test_a_huge_line_garbage_and_a_forged_id_are_answered_and_contained(served: Layout) -> None:
    conn, peer = raw(served)
    with conn:
        peer.start()
        peer.send(b"x" * (mcprelay.MAX_LINE + 1024) + b"\n")
        huge = peer.next()
        assert huge is not None and huge["id"] is None and huge["error"]["code"] == -32600, huge
        peer.send(b"}{ not json\n")
        garbage = peer.next()
        assert garbage is not None and garbage["error"]["code"] == -32700, garbage
        # A response to a request the server never sent: refused, with id null (never the forged id).
        peer.send({"jsonrpc": "2.0", "id": 1, "result": {}})
        forged = peer.next()
        assert forged is not None and forged["id"] is None and forged["error"]["code"] == -32600, forged
        assert {t["name"] for t in peer.request("tools/list")["result"]["tools"]} == WORKER_TOOLS


def test_a_forged_id_on_one_connection_never_answers_anothers_request(served: Layout) -> None:
    """Each relay has its own server: a second connection sending a response with the first's pending id gets an
    error; the first connection's request is answered by its own server, once."""
    first, a = raw(served)
    second, b = raw(served)
    with first, second:
        a.start()
        b.start()
        a.send({"jsonrpc": "2.0", "id": 77, "method": "tools/list"})
        b.send({"jsonrpc": "2.0", "id": 77, "result": {"tools": []}})
        refused = b.next()
        assert refused is not None and refused["id"] is None and refused["error"]["code"] == -32600, refused
        listed = a.next()
        assert listed is not None and listed["id"] == 77 and len(listed["result"]["tools"]) == len(WORKER_TOOLS)


def test_a_malformed_header_is_refused(served: Layout) -> None:
    conn, peer = raw(served, header=mcprelay.MAGIC + b"99999999999999")
    with conn:
        got = peer.next()
        assert got is not None and "refused" in got["error"]["message"], got
        assert peer.next() is None
    # and the channel still serves hooks
    pre = {"session_id": "s-h", "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"},
           "cwd": served.project, "transcript_path": "/nonexistent"}  # fmt: skip
    assert channel_call(served, ["PreToolUse", "--runtime", "claude", "--timeout", "10"], pre)[0] == 0


def test_a_relay_that_loses_its_channel_answers_what_waits_and_what_follows() -> None:
    """The relay (hook/mcprelay.py) on a real socket pair whose far end closes with a request unanswered: that
    request, and every later one, gets an error; a notification gets nothing."""
    near, far = socket.socketpair()
    out_read, out_write = os.pipe()
    relay = mcprelay.Relay(near, None, out_write)
    reader = threading.Thread(target=relay.down, daemon=True)
    reader.start()
    relay.up(b'{"jsonrpc": "2.0", "id": "a-1", "method": "tools/call", "params": {"name": "ask_human"}}')
    assert json.loads(far.recv(1 << 16))["id"] == "a-1"  # it went through, and waits
    far.close()
    reader.join(60)
    relay.up(b'{"jsonrpc": "2.0", "method": "notifications/cancelled"}')
    relay.up(b'{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}')
    os.close(out_write)
    lines = [json.loads(x) for x in os.read(out_read, 1 << 16).splitlines()]
    os.close(out_read)
    near.close()
    assert [x["id"] for x in lines] == ["a-1", 2], lines
    assert all(x["error"]["code"] == mcprelay.UNREACHABLE for x in lines)
    assert all("cannot reach its control channel" in x["error"]["message"] for x in lines)


def test_a_worker_cannot_start_more_than_max_relays_servers_outside(served: Layout) -> None:
    """Each relay costs a process outside: the channel serves MAX_RELAYS at once and refuses the next, saying so;
    hooks still go through."""
    held = [raw(served, header=mcprelay.MAGIC) for _ in range(channel.MAX_RELAYS)]  # each waits on its header
    try:
        conn, peer = raw(served)
        with conn:
            got = peer.next()
            assert got is not None and f"already has {channel.MAX_RELAYS} MCP relays" in got["error"]["message"]
            assert peer.next() is None
        pre = {"session_id": "s-h", "hook_event_name": "PreToolUse", "tool_name": "Bash",
               "tool_input": {"command": "ls"}, "cwd": served.project, "transcript_path": "/nonexistent"}  # fmt: skip
        assert channel_call(served, ["PreToolUse", "--runtime", "claude", "--timeout", "10"], pre)[0] == 0
    finally:
        for c, _ in held:
            c.close()
