"""A sandboxed worker's network, with real bubblewrap, the real proxy process and the real forwarder: under `none`
a loopback "registry" outside cannot be reached (directly: its own loopback; through the proxy: refused), while
the runtime's model endpoint can, at the same URL; under an allow list a host off it becomes an inbox decision,
which, approved through the inbox (`cocoplus decide`), lets the held try through, and which, unanswered, is
denied at its deadline; both steps are in the audit log.  A proxy that cannot start starts nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core import fsio, jsonl
from cocoplus.core.paths import Layout
from cocoplus.inbox import decisions
from cocoplus.sandbox import bwrap, network
from cocoplus.session import permissions
from cocoplus.supervision import workerrun
from tests.support.sandbox import require_sandbox
from tests.support.waiting import wait_until


class Server:
    """A small HTTP server on the loopback outside, answering every GET with `said`."""

    def __init__(self, said: str) -> None:
        body = said.encode()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keeps a connection for a next request

            def do_GET(self) -> None:
                server.hits += 1
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.hits = 0
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def servers() -> Iterator[tuple[Server, Server]]:
    registry, model = Server("registry-ok"), Server("model-ok")
    yield registry, model
    registry.close()
    model.close()


# What runs inside: GET a URL directly or through the proxy the environment names, and say what came back.
CLIENT = r"""
import os, sys, time, urllib.error, urllib.request
os.environ.pop("no_proxy", None); os.environ.pop("NO_PROXY", None)  # the loopback outside: through the proxy
def get(url, through, timeout):
    proxies = {"http": os.environ["HTTP_PROXY"]} if through else {}
    opener = urllib.request.build_opener(urllib.request.ProxyHandler(proxies))
    try:
        with opener.open(url, timeout=timeout) as r:
            return f"{r.status} {r.read().decode()}"
    except urllib.error.HTTPError as e:
        return f"{e.code} {e.read().decode().strip()}"
    except Exception as e:
        return f"ERR {type(e).__name__} {e}"
for word in sys.argv[1:]:
    how, url = word.split("=", 1)
    if how == "retry":  # until it goes through, a short timeout each time (a held try times out and is tried again)
        end = time.monotonic() + 90
        while time.monotonic() < end:
            got = get(url, True, 2)
            print("try", got, flush=True)
            if not got.startswith(("ERR", "5")) and not got.startswith("403"):
                break
            if got.startswith("403"):
                break
            time.sleep(0.2)
    else:
        print(how, get(url, how == "proxy", 30), flush=True)
"""


def worker(layout: Layout, setting: network.Setting, model: Server, wid: str = "w1") -> dict[str, Any]:
    rec = {"id": wid, "runtime": "claude", "alias": None, "state": "running", "sandbox": "workspace",
           "network": setting, "session": None}  # fmt: skip
    fsio.ensure_dir(layout.worker_dir(wid))
    fsio.atomic_write_json(layout.worker_record(wid), rec)
    return rec


def start_inside(
    layout: Layout, rec: dict[str, Any], model: Server, *words: str, host: str = "127.0.0.1"
) -> subprocess.Popen[str]:
    """CLIENT under the workspace profile with the worker's network, its proxy started as its runner starts it."""
    found = require_sandbox()
    environ = {**os.environ, "ANTHROPIC_BASE_URL": f"http://{host}:{model.port}"}
    os.environ["ANTHROPIC_BASE_URL"] = environ["ANTHROPIC_BASE_URL"]  # the runner's: what the proxy is started with
    sock = workerrun.spawn_proxy(layout, rec["id"])
    read_end, write_end = os.pipe()
    os.write(write_end, bwrap.marker_text(rec["id"], layout.project, "workspace"))
    os.close(write_end)
    args = bwrap.arguments(
        found["bwrap"], runtime="claude", tree=layout.project, cwd=layout.project, project=layout.project,
        home=os.environ["HOME"], environ=environ, marker_fd=read_end, proxy_socket=sock,
    )  # fmt: skip
    cmd = bwrap.network_command(rec["network"], "claude", environ, [sys.executable, "-S", "-c", CLIENT, *words])
    proc = subprocess.Popen(
        [*args, *cmd], env=bwrap.environment("claude", environ), pass_fds=(read_end,), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    os.close(read_end)
    return proc


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "")
    yield
    workerrun.end_channels()


def finished(proc: subprocess.Popen[str]) -> str:
    out, _ = proc.communicate(timeout=120)
    return out


def audit(layout: Layout) -> list[dict[str, Any]]:
    return [r for r in jsonl.read_jsonl(layout.permission_log).records if r.get("tool") == "Network"]


def test_with_none_a_loopback_registry_is_unreachable_and_the_model_endpoint_is(
    project: Layout, servers: tuple[Server, Server], clean: None
) -> None:
    registry, model = servers
    rec = worker(project, network.NONE, model)
    reg = f"http://127.0.0.1:{registry.port}/pkg"
    proc = start_inside(project, rec, model, f"direct={reg}", f"proxy={reg}", f"direct=http://127.0.0.1:{model.port}/")
    out = finished(proc)
    lines = out.splitlines()
    assert lines[0].startswith("direct ERR"), out  # its loopback is its own: nothing listens there
    assert lines[1].startswith("proxy 403") and "network is none" in lines[1], out
    assert lines[2] == "direct 200 model-ok", out  # the model endpoint, at the URL the runtime was given
    assert "registry-ok" not in out
    assert permissions.requests(project, state=None) == []  # none means none: no decision is asked


def test_a_model_endpoint_named_localhost_is_reached_at_the_same_url(
    project: Layout, servers: tuple[Server, Server], clean: None
) -> None:
    _registry, model = servers
    rec = worker(project, network.NONE, model)
    proc = start_inside(project, rec, model, f"direct=http://localhost:{model.port}/", host="localhost")
    assert finished(proc).splitlines() == ["direct 200 model-ok"]


def test_an_allow_list_host_goes_through_and_a_host_off_it_waits_for_the_inbox(
    project: Layout, servers: tuple[Server, Server], clean: None, cli_subprocess: Any
) -> None:
    registry, model = servers
    rec = worker(project, ["pypi.org", f"127.0.0.1:{model.port}"], model)
    reg = f"http://127.0.0.1:{registry.port}/pkg"
    proc = start_inside(project, rec, model, f"retry={reg}", f"proxy={reg}")
    held = wait_until(lambda: permissions.requests(project), timeout=60)
    (req,) = held
    assert req["tool"] == "Network" and req["rule"] == "Network(127.0.0.1)" and req["worker"] == "w1"
    (d,) = [x for x in decisions.collect(project) if x["id"] == req["id"]]
    assert d["kind"] == "permission" and d["summary"] == "allow 127.0.0.1 for w1?", d
    assert d["default"] == "deny" and d["deadline"], d
    r = cli_subprocess("decide", req["id"], "approve", cwd=project.project)
    assert r.code == 0, r
    out = finished(proc)
    tries = [ln for ln in out.splitlines() if ln.startswith("try ")]
    assert tries[-1] == "try 200 registry-ok", out
    assert out.splitlines()[-1] == "proxy 200 registry-ok", out  # widened for the rest of the run
    assert len(permissions.requests(project, state=None)) == 1  # one decision, however many tries
    steps = [(r.get("state"), r.get("behavior")) for r in audit(project)]
    assert steps == [("held", None), (None, "allowed")], steps
    assert audit(project)[1]["principal"] == "operator"
    # The record and its allow list are not changed: the approval holds for this run only.
    assert json.loads(Path(project.worker_record("w1")).read_text())["network"] == rec["network"]


def test_unanswered_the_default_deny_applies_at_the_deadline(
    project: Layout, servers: tuple[Server, Server], clean: None
) -> None:
    registry, model = servers
    Path(project.project, "cocoplus.toml").write_text("[sandbox]\nnetwork_wait_s = 2\n")
    rec = worker(project, ["pypi.org"], model)
    reg = f"http://127.0.0.1:{registry.port}/pkg"
    proc = start_inside(project, rec, model, f"proxy={reg}", f"proxy={reg}")
    out = finished(proc)
    first, second = out.splitlines()
    assert first.startswith("proxy 403") and "no answer came by its deadline, so denied" in first, out
    assert second.startswith("proxy 403"), out  # refused in this run without a second decision
    (req,) = permissions.requests(project, state=None)
    assert req["state"] == "expired" and req["by"] == "deadline", req
    assert [r.get("behavior") for r in audit(project)] == [None, "expired"]
    assert "registry-ok" not in out


def test_a_proxy_that_cannot_start_starts_nothing(project: Layout, tmp_path: Path, clean: None) -> None:
    """The runner's path (`_held`): a directory where the proxy's socket goes, then a configuration the proxy
    refuses; each time the run is recorded as not started, with one line, and the command never ran."""
    require_sandbox()
    ran = tmp_path / "ran"
    for fault in ("socket", "config"):
        rec = {"id": "w1", "runtime": "claude", "alias": None, "state": "running", "sandbox": "workspace",
               "network": network.NONE, "session": None, "runs": 0}  # fmt: skip
        fsio.ensure_dir(project.worker_dir("w1"))
        fsio.atomic_write_json(project.worker_record("w1"), rec)
        if fault == "socket":
            os.mkdir(project.worker_proxy("w1"))
        else:
            os.rmdir(project.worker_proxy("w1"))
            Path(project.project, "cocoplus.toml").write_text("[sandbox]\nnetwork_wait_s = 0\n")
        out = workerrun.Output(project.worker_log("w1"), 1 << 20)
        held = workerrun._held(project, "w1", rec, ["touch", str(ran)], project.project, out)  # type: ignore[arg-type]
        assert held is None
        log = Path(project.worker_log("w1")).read_text().splitlines()
        assert "not started: the sandbox 'workspace': its network proxy" in log[-1], log
        assert ("cannot listen" if fault == "socket" else "could not start") in log[-1], log
        assert workerrun.CHANNELS == []  # the control channel it had started is ended too
        assert not ran.exists()


# What runs inside for an attack: `RAW` sends its bytes on one connection (to the proxy the environment names, or to
# a Unix socket) and prints everything that comes back.
RAW = r"""
import os, socket, sys
where, payload = sys.argv[1], sys.stdin.buffer.read()
if where == "tcp":
    port = int(os.environ["HTTP_PROXY"].rsplit(":", 1)[1])
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
else:
    os.chdir(os.path.dirname(where))  # by its name from its directory: a socket's path is limited to ~100 bytes
    s = socket.socket(socket.AF_UNIX); s.settimeout(30); s.connect(os.path.basename(where))
got = b""
try:
    s.sendall(payload)
except OSError as e:  # refused before it read it all: what it said is still there to read
    got += f"SEND {e}\n".encode()
try:
    while chunk := s.recv(65536):
        got += chunk
except OSError as e:
    got += f"ERR {e}".encode()
print(got.decode("latin-1"))
"""


def raw_inside(layout: Layout, rec: dict[str, Any], model: Server, where: str, payload: bytes) -> str:
    found = require_sandbox()
    environ = {**os.environ, "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{model.port}"}
    os.environ["ANTHROPIC_BASE_URL"] = environ["ANTHROPIC_BASE_URL"]
    sock = workerrun.spawn_proxy(layout, rec["id"])
    read_end, write_end = os.pipe()
    os.write(write_end, bwrap.marker_text(rec["id"], layout.project, "workspace"))
    os.close(write_end)
    args = bwrap.arguments(
        found["bwrap"], runtime="claude", tree=layout.project, cwd=layout.project, project=layout.project,
        home=os.environ["HOME"], environ=environ, marker_fd=read_end, proxy_socket=sock,
    )  # fmt: skip
    cmd = bwrap.network_command(rec["network"], "claude", environ, [sys.executable, "-S", "-c", RAW, where])
    r = subprocess.run([*args, *cmd], env=bwrap.environment("claude", environ), pass_fds=(read_end,), input=payload,
                       capture_output=True, timeout=120)  # fmt: skip
    os.close(read_end)
    return (r.stdout + r.stderr).decode("latin-1")


def test_a_second_request_on_a_kept_connection_goes_to_the_first_host_only(
    project: Layout, servers: tuple[Server, Server], clean: None
) -> None:
    """Two requests on one connection, the first to a listed host, the second naming one off the list: the proxy
    judged the connection once and carries it to the first host, so the second host is never reached, and no
    decision is asked for it."""
    registry, model = servers
    allowed = Server("allowed-ok")
    try:
        rec = worker(project, [f"127.0.0.1:{allowed.port}"], model)
        payload = (
            f"GET http://127.0.0.1:{allowed.port}/a HTTP/1.1\r\nHost: 127.0.0.1:{allowed.port}\r\n\r\n"
            f"GET http://127.0.0.1:{registry.port}/b HTTP/1.1\r\nHost: 127.0.0.1:{registry.port}\r\n"
            "Connection: close\r\n\r\n"
        ).encode()
        out = raw_inside(project, rec, model, "tcp", payload)
    finally:
        allowed.close()
    assert out.count("allowed-ok") == 2 and registry.hits == 0, out
    assert permissions.requests(project, state=None) == []


def test_another_workers_sandbox_cannot_use_this_workers_proxy(
    project: Layout, servers: tuple[Server, Server], clean: None
) -> None:
    """w2's proxy allows the registry; w1 (network none) finds w2's socket under `.cocoplus/` (read-only, but a
    socket on a read-only mount can still be connected to) and asks it: refused, the registry not reached."""
    registry, model = servers
    worker(project, [f"127.0.0.1:{registry.port}"], model, wid="w2")
    other = subprocess.Popen(  # w2's runner, a process of its own
        [sys.executable, "-c", "import sys, time\n"
         "from cocoplus.core.paths import Layout\nfrom cocoplus.supervision import workerrun\n"
         "print(workerrun.spawn_proxy(Layout(sys.argv[1]), 'w2'), flush=True)\ntime.sleep(600)\n", project.root],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert other.stdout is not None
        theirs = other.stdout.readline().strip()
        assert theirs == project.worker_proxy("w2")
        rec = worker(project, network.NONE, model)
        get = f"GET http://127.0.0.1:{registry.port}/pkg HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        out = raw_inside(project, rec, model, theirs, get.encode())
    finally:
        other.kill()
        other.wait()
    assert "403" in out and "serves the sandbox of w2 only" in out, out
    assert registry.hits == 0


def test_an_endless_request_head_is_cut_off_and_the_proxy_serves_on(
    project: Layout, servers: tuple[Server, Server], clean: None
) -> None:
    registry, model = servers
    rec = worker(project, [f"127.0.0.1:{registry.port}"], model)
    flood = b"GET http://127.0.0.1:1/ HTTP/1.1\r\n" + b"X-A: " + b"a" * (256 * 1024) + b"\r\n\r\n"
    out = raw_inside(project, rec, model, "tcp", flood)
    assert "200" not in out, out[:300]
    workerrun.end_channels()
    get = f"GET http://127.0.0.1:{registry.port}/pkg HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    assert "registry-ok" in raw_inside(project, rec, model, "tcp", get.encode())


def test_a_host_a_resolver_would_read_otherwise_is_refused_before_it_is_matched(
    project: Layout, servers: tuple[Server, Server], clean: None
) -> None:
    """`*.pypi.org` is on the list; `evil.example@x.pypi.org` ends like it: refused as no host at all, no decision."""
    _registry, model = servers
    rec = worker(project, ["*.pypi.org"], model)
    out = raw_inside(project, rec, model, "tcp", b"CONNECT evil.example@x.pypi.org:443 HTTP/1.1\r\n\r\n")
    assert out.startswith("HTTP/1.1 400") and "not a host name or address" in out, out
    assert permissions.requests(project, state=None) == []


def test_a_decision_still_open_when_the_run_ends_is_denied_and_not_waited_for(
    project: Layout, servers: tuple[Server, Server], clean: None
) -> None:
    """The run ends (its runner ends the proxy) while a host waits for an answer: the request is closed at once,
    denied, by the run's end, so the runner does not wait out the deadline and nobody approves a connection that
    no longer exists."""
    registry, model = servers
    Path(project.project, "cocoplus.toml").write_text("[sandbox]\nnetwork_wait_s = 3600\n")
    rec = worker(project, ["pypi.org"], model)
    proc = start_inside(project, rec, model, f"proxy=http://127.0.0.1:{registry.port}/pkg")
    (req,) = wait_until(lambda: permissions.requests(project), timeout=60)
    proc.kill()
    proc.wait()
    workerrun.end_channels()
    done = wait_until(lambda: (r := permissions.read_request(project, req["id"])) and r["state"] != "pending" and r)
    assert done["state"] == "expired" and done["by"] == "run end", done
    assert "run ended before an answer came" in str(done["reason"])
    assert registry.hits == 0
