"""Whether bubblewrap can sandbox a worker on this machine, and if not, the one fix that applies.

The probe finds `bwrap` on the PATH a worker would be started with, reads its version, reads the sysctls that
allow or forbid unprivileged user namespaces (`user.max_user_namespaces`, Debian's older
`kernel.unprivileged_userns_clone`, Ubuntu's `kernel.apparmor_restrict_unprivileged_userns`), says whether this
runs inside a container, and then starts a throwaway sandbox with the namespaces a worker's gets (network and
pids unshared): bubblewrap brings loopback up in it, and that is where the failures users meet show ("bwrap:
loopback: Failed RTM_NEWADDR: Operation not permitted" under AppArmor's restriction, "Failed to make / slave"
in a container).  The answer is one cause and one fix, never a fallback: a worker whose profile cannot be
applied does not start (`cocoplus launch` runs this same probe).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import Any

PROBE_TIMEOUT_S = 20.0
# What runs inside the throwaway sandbox: loopback must carry a connection (a worker's hooks and tools use it).
LOOPBACK_CHECK = (
    "import socket\n"
    "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(1)\n"
    "c = socket.create_connection(s.getsockname(), timeout=5); a, _ = s.accept()\n"
    "c.sendall(b'ok'); print(a.recv(2).decode())\n"
)

FIX_INSTALL = "install bubblewrap: `apt-get install bubblewrap` (Debian, Ubuntu) or `dnf install bubblewrap` (Fedora)"
FIX_APPARMOR = (
    "allow user namespaces for bwrap: `sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`, or give "
    "/usr/bin/bwrap an AppArmor profile with `userns,` (Ubuntu 24.04 and later)"
)
FIX_MAX_USERNS = "allow user namespaces: `sudo sysctl -w user.max_user_namespaces=15000`"
FIX_USERNS_CLONE = "allow unprivileged user namespaces: `sudo sysctl -w kernel.unprivileged_userns_clone=1`"
FIX_CONTAINER = (
    "this container forbids the namespaces bubblewrap needs: run it with `--security-opt seccomp=unconfined "
    "--security-opt apparmor=unconfined` (Docker, Podman) or as a privileged container, or choose the profile "
    "`none` for workers here"
)
FIX_OTHER = "run the command shown by `cocoplus sandbox doctor --json` (`tried`) by hand to see bubblewrap's own error"


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return None


def sysctls(proc: str = "/proc") -> dict[str, str | None]:
    """The sysctls that decide whether an unprivileged process may create user namespaces (None: not on this
    kernel)."""
    return {
        "user.max_user_namespaces": _read(f"{proc}/sys/user/max_user_namespaces"),
        "kernel.unprivileged_userns_clone": _read(f"{proc}/sys/kernel/unprivileged_userns_clone"),
        "kernel.apparmor_restrict_unprivileged_userns": _read(
            f"{proc}/sys/kernel/apparmor_restrict_unprivileged_userns"
        ),
    }


def container(proc: str = "/proc", root: str = "/") -> str | None:
    """The kind of container this runs in (docker, podman, kubernetes, lxc, ...), or None."""
    if os.path.exists(os.path.join(root, ".dockerenv")):
        return "docker"
    if os.path.exists(os.path.join(root, "run/.containerenv")):
        return "podman"
    named = _read(f"{proc}/1/environ")
    if named:
        for var in named.split("\0"):
            if var.startswith("container="):
                return var.split("=", 1)[1] or "container"
    cgroup = _read(f"{proc}/1/cgroup") or ""
    for word in ("kubepods", "docker", "lxc", "containerd"):
        if word in cgroup:
            return "kubernetes" if word == "kubepods" else word
    return None


def find_bwrap(environ: dict[str, str] | None = None) -> str | None:
    """`bwrap` on the PATH of `environ` (default: this process's), or None."""
    env = os.environ if environ is None else environ
    return shutil.which("bwrap", path=env.get("PATH", os.defpath))


HIDDEN_TOPS = ("/dev", "/tmp")  # what a sandbox mounts afresh: whatever lies under them is bound in again


def hidden(path: str) -> bool:
    """Whether `path` lies under a directory a sandbox mounts afresh (/dev, /tmp), which would hide it."""
    return any(path == top or path.startswith(top + "/") for top in HIDDEN_TOPS)


def interpreter_binds() -> list[str]:
    """The read-only binds that bring this interpreter, and the cocoplus it runs, back into a sandbox whose fresh
    /dev or /tmp would hide them (a virtual environment or a Python installed under /tmp; a checkout there, which an
    editable install points at)."""
    args: list[str] = []
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # above cocoplus/
    for path in dict.fromkeys((sys.prefix, sys.base_prefix, os.path.dirname(sys.executable), package)):
        if path and hidden(path) and os.path.exists(path):
            args += ["--ro-bind", path, path]
    return args


def throwaway(bwrap: str) -> list[str]:
    """The throwaway sandbox the probe starts: the namespaces a worker's sandbox unshares, loopback tried inside."""
    return [
        bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", *interpreter_binds(),
        "--unshare-net", "--unshare-pid", "--die-with-parent", "--new-session",
        "--", sys.executable, "-S", "-c", LOOPBACK_CHECK,
    ]  # fmt: skip


def _fix_for(error: str, ctl: dict[str, str | None], inside: str | None, privileged: bool) -> str:
    """The one fix for a throwaway sandbox that failed with `error` (bubblewrap's stderr)."""
    restricted = ctl.get("kernel.apparmor_restrict_unprivileged_userns") == "1"
    if "RTM_NEWADDR" in error or (restricted and not privileged):
        return FIX_APPARMOR if restricted or inside is None else FIX_CONTAINER
    if not privileged and ctl.get("user.max_user_namespaces") == "0":
        return FIX_MAX_USERNS
    if not privileged and ctl.get("kernel.unprivileged_userns_clone") == "0":
        return FIX_USERNS_CLONE
    if inside is not None or "slave" in error or "Operation not permitted" in error:
        return FIX_CONTAINER
    return FIX_OTHER


def probe(environ: dict[str, str] | None = None, proc: str = "/proc", root: str = "/") -> dict[str, Any]:
    """What `sandbox doctor` shows and `launch` checks: `ok`, and when not, `cause` (one line) and `fix` (one)."""
    ctl = sysctls(proc)
    inside = container(proc, root)
    privileged = os.geteuid() == 0
    found: dict[str, Any] = {
        "ok": False, "bwrap": None, "version": None, "sysctls": ctl, "container": inside, "root": privileged,
        "loopback": None, "cause": None, "fix": None, "tried": None,
    }  # fmt: skip
    bwrap = find_bwrap(environ)
    if bwrap is None:
        found.update(cause="bubblewrap (`bwrap`) is not on PATH", fix=FIX_INSTALL)
        return found
    found["bwrap"] = bwrap
    try:
        ver = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
        words = ver.stdout.split() if ver.returncode == 0 else []
        found["version"] = words[-1] if words else None
    except (OSError, subprocess.TimeoutExpired) as exc:
        found.update(cause=f"{bwrap} cannot be run: {exc}", fix=FIX_INSTALL)
        return found
    cmd = throwaway(bwrap)
    found["tried"] = cmd
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        found.update(cause=f"a throwaway sandbox did not run: {exc}", fix=FIX_OTHER)
        return found
    if r.returncode == 0 and r.stdout.strip() == "ok":
        found.update(ok=True, loopback="up")
        return found
    error = " ".join(r.stderr.strip().splitlines()[-1:]) or f"exit status {r.returncode}"
    found["loopback"] = "down" if "loopback" in error or "RTM_NEWADDR" in error else None
    found.update(cause=f"a throwaway sandbox failed: {error[:300]}", fix=_fix_for(error, ctl, inside, privileged))
    return found
