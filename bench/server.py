"""Request latency of `cocoplus serve` under concurrent loopback load.

Starts the real server (`cocoplus serve --port 0`) on a fresh project with
three agent sessions and a `command` backend that sleeps 1 s, then runs C
concurrent clients (threads, each with its own keep-alive `http.client`
connection: see `Conn`)
against 127.0.0.1 only:

* status: `GET /api/v1/session` (the `session status` report), and
* send: `POST /api/v1/projects/master-agent/messages` (returns at once;
  the reply is produced later by the background worker),

and prints, per endpoint, the median and p99 wall time of one request and
the requests per second.  Every loop is bounded (`--requests` per client);
the server and the chat worker are stopped at the end.

`--baseline PYTHON` also starts the server of another installation (the
interpreter of a virtual environment holding an earlier cocoplus, for
example the commit before a change) on a project of its own, and measures
both side by side in one run: the status load with `--clients` clients,
alternating between the two servers `--rounds` times, then prints each
one's p99 and requests per second and the ratio.  A checkout of an earlier
commit makes a baseline: `git worktree add /tmp/old <commit> && python -m
venv /tmp/old-venv && /tmp/old-venv/bin/pip install /tmp/old httpx`.

Measure cocoplus as a user installs it: a non-editable install in a venv of
its own (an editable install's `.pth` files and a test venv's extras change
what every start costs), and run the bench with that venv's interpreter,
which also runs the server:

    python -m venv /tmp/v && /tmp/v/bin/pip install . httpx
    /tmp/v/bin/python bench/server.py [--clients 8] [--requests 50] [--baseline PYTHON [--rounds 3]]

The default run sends 51 chat messages before the 8-client rows, so the
reply worker is busy (a 1 s backend, one reply at a time) while they are
measured.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import httpx


def start(project: str, env: dict[str, str], python: str = sys.executable) -> tuple[subprocess.Popen[str], str, str]:
    proc = subprocess.Popen(
        [python, "-m", "cocoplus", "serve", "--port", "0"],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        m = re.search(r"page:\s+(http://127\.0\.0\.1:\d+)/#token=(\S+)", line)
        if m:
            url, token = m.group(1), m.group(2)
            while time.monotonic() < deadline:
                try:
                    if httpx.get(url + "/api/v1/session-os/main-brain/autonomous", timeout=2).status_code == 200:
                        return proc, url, token
                except httpx.HTTPError:
                    time.sleep(0.05)
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise SystemExit("cocoplus serve did not start")


_dumps = json.dumps  # (`Conn.post` takes `json=` as httpx does)


class Conn:
    """One client's keep-alive connection, on the standard library's `http.client`.

    The clients share this process (and its interpreter lock) and the
    machine's cores with the server: a client library's own time per request
    is counted as the server's latency.  httpx's is several times
    http.client's (8 httpx clients: p99 24 ms against 7 ms for the same
    server), so the load is generated with the lighter one."""

    def __init__(self, url: str) -> None:
        host, port = url.split("//", 1)[1].rsplit(":", 1)
        self.conn = http.client.HTTPConnection(host, int(port), timeout=30)

    def get(self, path: str) -> Reply:
        return self._send("GET", path, None, {})

    def post(self, path: str, json: object, headers: dict[str, str]) -> Reply:
        return self._send("POST", path, _dumps(json).encode(), {"Content-Type": "application/json", **headers})

    def _send(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> Reply:
        self.conn.request(method, path, body=body, headers=headers)
        r = self.conn.getresponse()
        r.read()
        return Reply(r.status)

    def close(self) -> None:
        self.conn.close()


class Reply:
    def __init__(self, status_code: int) -> None:
        self.status_code = status_code


def load(url: str, clients: int, requests: int, make: object) -> tuple[list[float], int, float]:
    """`clients` threads each send `requests` requests; returns (latencies, errors, wall seconds)."""
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    barrier = threading.Barrier(clients)

    def worker(n: int) -> None:
        mine = []
        bad = 0
        c = Conn(url)
        try:
            barrier.wait()
            for i in range(requests):
                t = time.perf_counter()
                r = make(c, n, i)  # type: ignore[operator]
                mine.append(time.perf_counter() - t)
                if r.status_code != 200:
                    bad += 1
        finally:
            c.close()
        with lock:
            latencies.extend(mine)
            errors[0] += bad

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(clients)]
    t0 = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return latencies, errors[0], time.perf_counter() - t0


def p(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q * (len(s) - 1)))))]


def report(name: str, lat: list[float], errors: int, wall: float) -> None:
    print(
        f"  {name:<52} n={len(lat):<4} median {statistics.median(lat) * 1000:6.1f} ms   p99 {p(lat, 0.99) * 1000:6.1f} "
        f"ms   max {max(lat) * 1000:6.1f} ms   {len(lat) / wall:6.0f} req/s   errors {errors}"
    )


def setup(python: str) -> tuple[str, dict[str, str]]:
    """A fresh project for `python`'s cocoplus, with three agent sessions recorded by its own SessionStart hook."""
    project = tempfile.mkdtemp(prefix="cocoplus-bench-server-")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COCOPLUS_", "CLAUDE"))}
    env["HOME"] = tempfile.mkdtemp(prefix="cocoplus-bench-home-")
    env["XDG_CONFIG_HOME"] = os.path.join(env["HOME"], ".config")
    env["COCOPLUS_DIR"] = os.path.join(project, ".cocoplus")
    subprocess.run([python, "-m", "cocoplus", "init"], cwd=project, env=env, check=True, stdout=subprocess.DEVNULL)
    # The account goes in the user's own file, which needs no trust (a project file's command would).
    os.makedirs(os.path.join(env["XDG_CONFIG_HOME"], "cocoplus"))
    with open(os.path.join(env["XDG_CONFIG_HOME"], "cocoplus", "config.toml"), "w") as fh:
        fh.write(
            '[chat]\ncontroller = "slow"\n[accounts.slow]\nkind = "command"\n'
            'command = ["sh", "-c", "sleep 1; echo done"]\n'
        )
    for runtime, rid in (("claude", "bench-1"), ("codex", "bench-2"), ("gemini", "bench-3")):
        payload = json.dumps(
            {"session_id": rid, "hook_event_name": "SessionStart", "cwd": project, "source": "startup"}
        )
        subprocess.run(
            [python, "-m", "cocoplus", "hook", "SessionStart", "--runtime", runtime],
            input=payload,
            text=True,
            cwd=project,
            env=env,
            check=True,
            capture_output=True,
        )
    return project, env


def stop(proc: subprocess.Popen[str], project: str) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
    try:
        pid = json.load(open(os.path.join(project, ".cocoplus", "chat", "worker.json")))["pid"]
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError, KeyError):
        pass


def status_req(c: Conn, n: int, i: int) -> Reply:
    return c.get("/api/v1/session")


def versus(baseline: str, clients: int, requests: int, rounds: int) -> int:
    """The status load against this checkout's server and the baseline's, alternating, in one run."""
    servers = {}
    try:
        for name, python in (("baseline", baseline), ("this", sys.executable)):
            project, env = setup(python)
            proc, url, _token = start(project, env, python)
            servers[name] = (proc, url, project)
            with httpx.Client(base_url=url) as c:
                for _ in range(5):
                    c.get("/api/v1/session")
        lat: dict[str, list[float]] = {name: [] for name in servers}
        walls: dict[str, float] = {name: 0.0 for name in servers}
        errors = 0
        for r in range(rounds):
            for name in list(servers) if r % 2 == 0 else list(servers)[::-1]:
                got, bad, wall = load(servers[name][1], clients, requests, status_req)
                lat[name].extend(got)
                walls[name] += wall
                errors += bad
        print(
            f"GET /api/v1/session, {clients} concurrent clients x {requests} requests, {rounds} alternating rounds; "
            f"{os.cpu_count()} cores shared by both servers and the clients"
        )
        rps = {}
        for name in servers:
            rps[name] = len(lat[name]) / walls[name]
            report(
                f"{name:<9} ({'baseline ' + baseline if name == 'baseline' else sys.executable})"[:52],
                lat[name],
                0,
                walls[name],
            )
        print(
            f"requests per second: {rps['this'] / rps['baseline']:.2f}x the baseline's; "
            f"p99 {p(lat['this'], 0.99) * 1000:.1f} ms against {p(lat['baseline'], 0.99) * 1000:.1f} ms; "
            f"errors {errors}"
        )
        return 0 if errors == 0 else 1
    finally:
        for proc, _url, project in servers.values():
            stop(proc, project)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--requests", type=int, default=50, help="requests per client and endpoint")
    ap.add_argument("--baseline", metavar="PYTHON", help="another installation's interpreter, measured side by side")
    ap.add_argument("--rounds", type=int, default=3, help="with --baseline: alternating rounds")
    args = ap.parse_args()
    if args.baseline:
        return versus(args.baseline, args.clients, args.requests, args.rounds)

    project, env = setup(sys.executable)
    proc, url, token = start(project, env)
    auth = {"Authorization": f"Bearer {token}"}
    try:
        # warm-up: imports, the first worker start
        with httpx.Client(base_url=url) as c:
            for _ in range(5):
                c.get("/api/v1/session")
            c.post("/api/v1/projects/master-agent/messages", json={"text": "warm-up"}, headers=auth)

        def auto_req(c: Conn, n: int, i: int) -> Reply:
            return c.get("/api/v1/session-os/main-brain/autonomous")

        def send_req(c: Conn, n: int, i: int) -> Reply:
            return c.post(
                "/api/v1/projects/master-agent/messages", json={"text": f"client {n} message {i}"}, headers=auth
            )

        print(f"cocoplus serve on {url}, loopback, 1 s backend; {os.cpu_count()} cores shared by server and clients")
        print("one client, sequential (no queueing):")
        report("status  GET  /api/v1/session", *load(url, 1, args.requests, status_req))
        report("send    POST /api/v1/projects/master-agent/messages", *load(url, 1, args.requests, send_req))
        sent = 1 + args.requests
        print(f"{args.clients} concurrent clients x {args.requests} requests each:")
        status = load(url, args.clients, args.requests, status_req)
        report("status  GET  /api/v1/session", *status)
        report(
            "        GET  /api/v1/session-os/main-brain/autonomous", *load(url, args.clients, args.requests, auto_req)
        )
        send = load(url, args.clients, args.requests, send_req)
        report("send    POST /api/v1/projects/master-agent/messages", *send)
        sent += args.clients * args.requests
        ledger = httpx.get(url + "/api/v1/projects/master-agent").json()
        users = sum(1 for m in ledger["messages"] if m["role"] == "user")
        print(
            f"ledger: {users} user messages (expected {sent}), "
            f"{len(ledger['pending'])} replies still pending (1 s each, one at a time)"
        )
        ok = status[1] == 0 and send[1] == 0 and users == sent
    finally:
        stop(proc, project)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
