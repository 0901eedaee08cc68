"""Real adversities for the hardening tests: locks held by stopped processes, a full disk, a second user."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

HOLD = (
    "import sys; from cocoplus.core.lock import Lock\n"
    "locks = [Lock(p, 5) for p in sys.argv[1:]]\n"
    "for l in locks: l.acquire()\n"
    "print('held', flush=True)\n"
    "sys.stdin.read()\n"
)


@contextlib.contextmanager
def held_by_stopped_process(*lock_paths: str) -> Iterator[subprocess.Popen[str]]:
    """Take every lock in `lock_paths` in a child process, then SIGSTOP it: the locks stay held, nobody answers."""
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD, *lock_paths], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "held"
        os.kill(child.pid, signal.SIGSTOP)
        yield child
    finally:
        child.kill()  # SIGKILL ends a stopped process too; the OS drops its locks
        child.wait(timeout=30)


def fill_disk(directory: str) -> str:
    """Write one file in `directory` until the filesystem has no data blocks left; return its path."""
    path = os.path.join(directory, "filler")
    chunk = b"\0" * 65536
    with open(path, "wb", buffering=0) as fh:
        while True:
            try:
                fh.write(chunk)
            except OSError:
                break
        while True:  # the last partial blocks
            try:
                fh.write(b"\0" * 512)
            except OSError:
                break
    return path


@contextlib.contextmanager
def mounted_tmpfs(where: str, size: str = "2m", nr_inodes: int | None = None) -> Iterator[str]:
    """A real small tmpfs mounted at `where` (skips the test where mounting is not possible)."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    os.makedirs(where, exist_ok=True)
    opts = f"size={size},mode=0700" + (f",nr_inodes={nr_inodes}" if nr_inodes else "")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", where], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", where], capture_output=True)


@contextlib.contextmanager
def second_user() -> Iterator[pwd.struct_passwd]:
    """A real, unprivileged user made with useradd for this test, removed afterwards."""
    if os.geteuid() != 0 or shutil.which("useradd") is None:
        pytest.skip("creating a second user needs root and useradd(8)")
    name = f"ccp{os.getpid() % 100000}{os.urandom(2).hex()}"
    r = subprocess.run(
        ["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], capture_output=True, text=True
    )
    if r.returncode != 0:
        pytest.skip(f"useradd failed: {r.stderr.strip()}")
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], capture_output=True)


def run_as(user: pwd.struct_passwd, fn, *args):
    """Call `fn(*args)` in a forked child that has become `user`; return what it returned (picklable)."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)

    def target() -> None:
        os.setgroups([])
        os.setgid(user.pw_gid)
        os.setuid(user.pw_uid)
        try:
            child.send(("ok", fn(*args)))
        except BaseException as exc:  # noqa: BLE001 - reported to the parent as a value
            child.send(("error", f"{type(exc).__name__}: {exc}"))

    p = ctx.Process(target=target)
    p.start()
    if not parent.poll(60):
        p.kill()
        raise AssertionError("the child running as the second user did not answer")
    status, value = parent.recv()
    p.join(30)
    assert status == "ok", value
    return value
