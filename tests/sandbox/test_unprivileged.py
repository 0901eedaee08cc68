"""The `workspace` profile for a worker run by a created non-root user: bubblewrap then needs unprivileged user
namespaces (the path most machines take), and the same mounts hold."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from cocoplus.sandbox import bwrap
from tests.conftest import PASSWD_ENV
from tests.hardening.support import second_user
from tests.support.sandbox import require_sandbox


def others_reach(path: str) -> bool:
    """Whether another user can reach `path`: every directory above it lets others through."""
    parts = Path(path).parents
    return all(os.stat(p).st_mode & stat.S_IXOTH for p in parts)


def reachable(args: list[str]) -> list[str]:
    """`args` without the binds of this interpreter and package where the created user cannot reach them (a clone
    in a root-only directory under /tmp): a worker's runner is the user who installed cocoplus, who can; this
    test's shell needs neither."""
    own = (sys.prefix, os.path.dirname(os.path.dirname(os.path.abspath(bwrap.__file__))))
    out: list[str] = []
    i = 0
    while i < len(args):
        if args[i] == "--ro-bind" and args[i + 1] in own and not others_reach(args[i + 1]):
            i += 3
            continue
        out.append(args[i])
        i += 1
    return out


def run_as(user: Any, found: dict[str, Any], home: Path, project: Path, argv: list[str], **more: Any) -> str:
    """`argv` in worker w1's `workspace` sandbox working in `project`, run by the created `user` with `home`; what
    it printed.  `more`: further `bwrap.arguments` (a proxy's socket)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home)}
    read_end, write_end = os.pipe()
    os.write(write_end, bwrap.marker_text("w1", str(project), "workspace"))
    os.close(write_end)
    args = reachable(bwrap.arguments(
        found["bwrap"], runtime="claude", tree=str(project), cwd=str(project), project=str(project), home=str(home),
        environ=env, marker_fd=read_end, **more,
    ))  # fmt: skip
    outer = {k: v for k, v in os.environ.items() if k not in PASSWD_ENV}  # the system's password database
    try:
        r = subprocess.run(
            ["runuser", "-u", user.pw_name, "--", "env", "-i", *(f"{k}={v}" for k, v in env.items()), *args, *argv],
            env=outer, pass_fds=(read_end,), capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    finally:
        os.close(read_end)
    return r.stdout + r.stderr


def test_a_non_root_workers_sandbox_holds(tmp_path: Path) -> None:
    found = require_sandbox()
    with second_user() as user:
        base = Path(tempfile.mkdtemp(prefix="cocoplus-sbx-", dir="/var/tmp"))
        try:
            home, project = base / "home", base / "project"
            for d in (home / ".ssh", home / ".claude", project / ".cocoplus", project / ".claude"):
                d.mkdir(parents=True)
            (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
            (project / ".cocoplus" / "AGENT_STOP").write_text("stopped\n")
            for path in [base, *base.rglob("*")]:
                os.chown(path, user.pw_uid, user.pw_gid)
            script = (
                "id -u; echo ok > inside.txt && echo WROTE-INSIDE; rm -f .cocoplus/AGENT_STOP && echo DELETED-STOP; "
                f"cat {home}/.ssh/id_ed25519; echo x > {home}/outside.txt && echo WROTE-OUTSIDE; "
                f"echo x > {home}/.claude/state && echo WROTE-STATE"
            )
            out = run_as(user, found, home, project, ["sh", "-c", script])
            said = set(out.split())
            assert str(user.pw_uid) in said and {"WROTE-INSIDE", "WROTE-STATE"} <= said, out
            assert not {"DELETED-STOP", "WROTE-OUTSIDE"} & said and "PRIVATE KEY" not in out, out
            assert (project / ".cocoplus" / "AGENT_STOP").exists() and not (home / "outside.txt").exists()
            assert (project / "inside.txt").stat().st_uid == user.pw_uid
        finally:
            shutil.rmtree(base, ignore_errors=True)


# Inside: the loopback is up (a socket bound there answers), and the host's loopback (where a "registry" listens,
# outside) cannot be reached: the network namespace is the worker's own.
LOOPBACK = r"""
import socket, sys
own = socket.socket(); own.bind(("127.0.0.1", 0)); own.listen(1)
c = socket.create_connection(own.getsockname(), timeout=5); print("LOOPBACK-UP", flush=True); c.close()
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
    print("REACHED-HOST", flush=True)
except OSError as exc:
    print("HOST-UNREACHABLE", type(exc).__name__, flush=True)
"""


def test_a_non_root_workers_limited_network_has_its_own_loopback_and_not_the_hosts(tmp_path: Path) -> None:
    """`--unshare-net` as a non-root user (where bubblewrap fails with "loopback: Failed RTM_NEWADDR" on machines
    that refuse it): the sandbox's own loopback comes up, and a registry on the host's loopback is out of reach."""
    import socket

    found = require_sandbox()
    registry = socket.socket()
    registry.bind(("127.0.0.1", 0))
    registry.listen(8)
    with second_user() as user:
        base = Path(tempfile.mkdtemp(prefix="cocoplus-sbx-", dir="/var/tmp"))
        try:
            home, project = base / "home", base / "project"
            for d in (home, project / ".cocoplus"):
                d.mkdir(parents=True)
            proxy = socket.socket(socket.AF_UNIX)  # stands for the proxy's socket, which the sandbox mounts
            proxy.bind(str(base / "proxy.sock"))
            for path in [base, *base.rglob("*")]:
                os.chown(path, user.pw_uid, user.pw_gid)
            argv = ["/usr/bin/python3", "-S", "-c", LOOPBACK, str(registry.getsockname()[1])]
            out = run_as(user, found, home, project, argv, proxy_socket=str(base / "proxy.sock"))
            proxy.close()
            assert "LOOPBACK-UP" in out and "HOST-UNREACHABLE" in out and "REACHED-HOST" not in out, out
        finally:
            registry.close()
            shutil.rmtree(base, ignore_errors=True)
