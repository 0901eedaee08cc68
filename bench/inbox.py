"""The decision inbox on loopback: how soon a permission request reaches the phone, and a tap the tool.

A real `cocoplus inbox run` pushes to the ntfy stand-in (tests/support/ntfy_stub.py, the documented HTTP API on
127.0.0.1) and listens to its reply topic.  For each of N decisions, one after the other, the bench runs the
PermissionRequest hook exactly as `cocoplus install claude` writes it, through `sh -c` as Claude Code runs it,
for a launched worker (its record sealed with this user's key and bound to this process as its runner, as
bench/hooks.py does) asking to run a Bash command no rule covers, and measures:

* request -> push accepted: from starting the hook process to the stand-in storing the push (the moment before
  its 200 answer goes back to `inbox run`);
* tap -> allow: from posting the Approve button's body to the reply topic, as the ntfy app does, to the hook
  process returning `allow` (the moment the runtime would run the tool);

and then the CPU `inbox run` takes while nothing happens for `--idle` seconds (from /proc), as a share of one core:
the price of looking for new decisions ten times a second.

Each decision is followed up (the push replaced in place) before the next begins.  Prints p50, p99 and the
maximum of each; the goal for each p99 is 1 s.  Two decisions first warm up, uncounted.

The inbox keeps its files in this user's home (the password database's entry, never $HOME), and reads its
channels from this user's own config file: so the bench runs itself again below nss_wrapper with a password
database whose entry for this user names a throwaway home (as the test suite does; install it with
tests/e2e/runtimes/install-nss-wrapper.sh), and this user's real files are never touched.

`--cocoplus PATH` benches another installation (the `cocoplus` of a venv, pipx or uv tool install): it runs
`init`, `install claude` (so the hook command is that installation's) and `inbox run`.

    python bench/inbox.py [--decisions 50] [--idle 10] [--cocoplus PATH]
"""

from __future__ import annotations

import argparse
import grp
import json
import os
import pwd
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.support.ntfy_stub import NtfyStub  # noqa: E402

TOPIC = "cocoplus-bench-pushes"
REPLY = "cocoplus-bench-replies"
HOME_VAR = "COCOPLUS_BENCH_INBOX_HOME"  # set in the bench's second run: the throwaway home it runs in
WORKER_ENV = {"COCOPLUS_WORKER": "w1", "COCOPLUS_HEADLESS": "1"}
WARM_UP = 2


def nss_wrapper() -> str | None:
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"):
        path = os.path.join(d, "libnss_wrapper.so")
        if os.path.exists(path):
            return path
    return None


def again_in_own_home() -> int:
    """Run this bench again below nss_wrapper, with this user's home a throwaway directory; its exit status."""
    lib = nss_wrapper()
    if lib is None:
        print(
            "bench/inbox.py needs nss_wrapper (libnss_wrapper.so; tests/e2e/runtimes/install-nss-wrapper.sh) to run in "
            "a home of its own: the inbox writes this user's config and state files",
            file=sys.stderr,
        )
        return 2
    home = tempfile.mkdtemp(prefix="cocoplus-bench-inbox-home-")
    fields = list(pwd.getpwuid(os.getuid()))
    fields[5] = home
    with open(os.path.join(home, ".passwd"), "w") as fh:
        fh.write(":".join(str(f) for f in fields) + "\n")
    group = grp.getgrgid(os.getgid())
    with open(os.path.join(home, ".group"), "w") as fh:
        fh.write(f"{group.gr_name}:x:{group.gr_gid}:\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COCOPLUS_", "CLAUDE_"))}
    preload = env.get("LD_PRELOAD")
    env.update(
        LD_PRELOAD=lib + (f":{preload}" if preload else ""),
        NSS_WRAPPER_PASSWD=os.path.join(home, ".passwd"),
        NSS_WRAPPER_GROUP=os.path.join(home, ".group"),
        HOME=home,
        **{HOME_VAR: home},
    )
    try:
        return subprocess.run([sys.executable, *sys.argv], env=env).returncode
    finally:
        shutil.rmtree(home, ignore_errors=True)


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def p(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q * (len(s) - 1)))))]


def report(name: str, values: list[float]) -> None:
    print(
        f"  {name:<34} n={len(values):<3} p50 {statistics.median(values) * 1000:7.1f} ms   "
        f"p99 {p(values, 0.99) * 1000:7.1f} ms   max {max(values) * 1000:7.1f} ms   "
        f"(goal p99 <= 1000 ms: {'met' if p(values, 0.99) <= 1.0 else 'MISSED'})"
    )


def sealed_worker(project: str) -> None:
    """Worker w1's record as `launch` writes it (its rule allows `echo` only), sealed with this user's key and bound
    to this process as its runner, so the hook takes the request for a launched worker's."""
    from cocoplus.core import seal
    from cocoplus.session import procinfo

    worker_dir = os.path.join(project, ".cocoplus", "workers", "w1")
    os.makedirs(worker_dir)
    worker = {
        "schema_version": 1, "id": "w1", "runtime": "claude", "state": "running", "allow": ["Bash(echo *)"],
        "command": [sys.executable, "-c", "pass"], "worktree": None, "headless": True,
        "runner": procinfo.self_process(),
    }  # fmt: skip
    worker["seal"] = seal.seal_worker(worker, project, "w1")
    with open(os.path.join(worker_dir, "worker.json"), "w") as fh:
        json.dump(worker, fh)


def user_config(stub: NtfyStub, page: str) -> None:
    """This user's own [inbox]: ntfy on the stand-in, pushed at once (no presence)."""
    from cocoplus.core import userfiles

    body = {
        "channels": ["ntfy"], "ntfy_server": stub.url, "ntfy_topic": TOPIC, "ntfy_reply_topic": REPLY,
        "presence_s": 0.0, "page_url": page,
    }  # fmt: skip
    os.makedirs(userfiles.directory(), exist_ok=True)
    with open(userfiles.config_file(), "w") as fh:
        fh.write("[inbox]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in body.items()))


def start_service(cocoplus: list[str], env: dict[str, str], log: str) -> subprocess.Popen[bytes]:
    with open(log, "wb") as fh:
        proc = subprocess.Popen(
            [*cocoplus, "inbox", "run"],
            stdin=subprocess.DEVNULL,
            stdout=fh,
            stderr=fh,
            env=env,
            cwd=os.path.dirname(log),
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with open(log, errors="replace") as fh:
            if "pushing to" in fh.read():
                return proc
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    with open(log, errors="replace") as fh:
        raise SystemExit(f"cocoplus inbox run did not start: {fh.read()[-2000:]}")


def one(
    stub: NtfyStub, hook: str, env: dict[str, str], project: str, i: int
) -> tuple[float, float]:  # fmt: skip
    """One decision: the hook asks, the push arrives, Approve is tapped, the hook allows; the two times."""
    payload = {
        "session_id": "bench-session", "hook_event_name": "PermissionRequest", "cwd": project,
        "permission_mode": "default", "tool_name": "Bash", "tool_input": {"command": f"make deploy-{i}"},
    }  # fmt: skip
    before = len(stub.messages(TOPIC))
    t0 = time.perf_counter()
    child = subprocess.Popen(
        ["sh", "-c", hook], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=project, env=env
    )
    assert child.stdin is not None
    child.stdin.write(json.dumps(payload).encode())
    child.stdin.close()
    push = stub.wait_for_messages(TOPIC, before + 1, timeout=60)[before]
    pushed = time.perf_counter() - t0
    if f"make deploy-{i}" not in push["message"]:
        raise SystemExit(f"the push is not this request's: {push['message']!r}")
    t1 = time.perf_counter()
    status, _ = stub.tap(push, "Approve")
    assert child.stdout is not None and child.stderr is not None
    out = child.stdout.read()  # the hook's answer, when it exits
    tapped = time.perf_counter() - t1
    child.wait(timeout=60)
    err = child.stderr.read()
    got = json.loads(out or b"{}").get("hookSpecificOutput", {}).get("decision", {}).get("behavior")
    if status != 200 or got != "allow":
        raise SystemExit(f"decision {i}: the tap answered {status}, the hook {got!r}: {err.decode()[-500:]}")
    follow = stub.wait_for_messages(TOPIC, before + 2, timeout=60)[before + 1]
    if follow.get("sequence_id") != push["id"]:
        raise SystemExit(f"decision {i}: the next message is not the push's follow-up: {follow!r}")
    return pushed, tapped


def bench(args: argparse.Namespace) -> int:
    cocoplus = [args.cocoplus] if args.cocoplus else [sys.executable, "-m", "cocoplus"]
    project = tempfile.mkdtemp(prefix="cocoplus-bench-inbox-")
    env = {k: v for k, v in os.environ.items() if k != HOME_VAR}
    subprocess.run(["git", "init", "-q", project], check=True)
    with open(os.path.join(project, "cocoplus.toml"), "w") as fh:
        fh.write("[permissions]\nwait_s = 120\n")
    subprocess.run(cocoplus + ["init"], cwd=project, env=env, check=True, stdout=subprocess.DEVNULL)
    subprocess.run(cocoplus + ["install", "claude"], cwd=project, env=env, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(project, ".claude", "settings.local.json")) as fh:
        hook = json.load(fh)["hooks"]["PermissionRequest"][0]["hooks"][0]["command"]
    hook_env = {**env, **WORKER_ENV, "CLAUDE_PROJECT_DIR": project}
    with NtfyStub() as stub:
        user_config(stub, "http://127.0.0.1:9/")
        # Started before this process becomes the worker's runner: a process below a worker's runner acts as the
        # worker, and `inbox run` is the operator's.
        service = start_service(cocoplus, env, os.path.join(project, "inbox-run.log"))
        sealed_worker(project)
        try:
            print(
                f"cocoplus inbox run ({' '.join(cocoplus)}) and the ntfy stand-in on 127.0.0.1; the hook as installed: "
                f"{hook}; {os.cpu_count()} cores shared by all"
            )
            for i in range(WARM_UP):
                one(stub, hook, hook_env, project, -1 - i)
            pushed: list[float] = []
            tapped: list[float] = []
            for i in range(args.decisions):
                a, b = one(stub, hook, hook_env, project, i)
                pushed.append(a)
                tapped.append(b)
            print(f"{args.decisions} decisions, one after the other:")
            report("request -> push accepted", pushed)
            report("tap posted -> hook returns allow", tapped)
            before, t = cpu_seconds(service.pid), time.perf_counter()
            time.sleep(args.idle)  # nothing happens: what does looking for decisions cost?
            used = (cpu_seconds(service.pid) - before) / (time.perf_counter() - t)
            print(f"  inbox run idle, {args.idle:g} s with one project: {used * 100:.2f}% of one core")
        finally:
            service.send_signal(signal.SIGTERM)
            try:
                service.wait(timeout=30)
            except subprocess.TimeoutExpired:
                service.kill()
    shutil.rmtree(project, ignore_errors=True)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--decisions", type=int, default=50)
    ap.add_argument("--idle", type=float, default=10.0, help="seconds of idle CPU measured after the decisions")
    ap.add_argument("--cocoplus", default=None, help="the cocoplus executable to bench (default: this interpreter's)")
    args = ap.parse_args()
    if os.environ.get(HOME_VAR) != os.path.expanduser("~") or pwd.getpwuid(os.getuid()).pw_dir != os.environ[HOME_VAR]:
        return again_in_own_home()
    return bench(args)


if __name__ == "__main__":
    sys.exit(main())
