"""The `srt` profile: a worker inside Anthropic's sandbox runtime (npm `@anthropic-ai/sandbox-runtime`, the
`srt` command), held to the same policy as `workspace` and with cocoplus's control channel kept open.

srt runs bubblewrap itself from a settings file. On Linux it binds the whole file system read-only, makes the
`allowWrite` paths writable and the `denyWrite` paths read-only again (a deny wins over an allow), hides the
`denyRead` paths (an empty directory, or /dev/null over a file), removes the network namespace (every connection
goes through its proxies, which allow only `network.allowedDomains`) and unshares the pids. What it does not do
is give the sandbox a private /tmp, so cocoplus puts a thin bubblewrap layer outside it:

1. outside srt (`arguments`): the host's file system as it is, with a private /tmp that holds the marker
   (`MARKER`, read-only: every `cocoplus` command inside is a worker), the control channel's socket (`CHANNEL`)
   and srt's settings (`SETTINGS`); what lies under /tmp (a home, the project, this interpreter) bound in again;
2. inside it, srt with `settings`: writable the worker's tree, the main repository's `.git/objects`, `refs`,
   `logs` and `.git/worktrees/<name>`, the runtime's state and the private /tmp; read-only over them the
   protected files (`.cocoplus/`, every runtime's settings and hooks, `.mcp.json`, `cocoplus.toml`,
   `.git/config`, `.git/hooks`), the runtime's own settings and credential files; hidden the secrets
   (bwrap.SECRETS, every other runtime's credential files, the server's token); the network: the runtime's model
   endpoint only (`model_hosts`).

srt blocks the creation of Unix sockets with seccomp by default; a hook reaches its channel through one, so the
settings allow them (`allowAllUnixSockets`: srt then gives bubblewrap `--disable-userns` instead, which keeps the
sandboxed command out of new user namespaces). Fail-closed: `probe` runs a throwaway srt sandbox, and a worker
whose srt is missing or fails does not start.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any
from urllib.parse import urlsplit

from cocoplus.rules import protected
from cocoplus.runtimes import registry as runtimes
from cocoplus.sandbox import bwrap, network
from cocoplus.sandbox import probe as bwrap_probe

PACKAGE = "@anthropic-ai/sandbox-runtime"
PINNED = "0.0.83"  # the version cocoplus is tested with (tests/e2e/runtimes/srt/package.json)
MARKER = bwrap.MARKER
CHANNEL = bwrap.CHANNEL
SETTINGS = "/tmp/.cocoplus-srt.json"  # inside the outer layer only: its private /tmp
PROBE_TIMEOUT_S = 60.0

FIX_INSTALL = (
    f"install Anthropic's sandbox runtime: `npm install -g {PACKAGE}@{PINNED}` (Node.js 20 or later), with "
    "`apt-get install bubblewrap socat ripgrep`"
)
FIX_TOOLS = "install what srt runs: `apt-get install bubblewrap socat ripgrep` (Debian, Ubuntu)"
FIX_OTHER = "run the command shown by `cocoplus sandbox doctor --json` (`srt.tried`) by hand to see srt's own error"

# The settings of the probe's throwaway srt sandbox (its directory writable).
THROWAWAY: dict[str, Any] = {
    "network": {"allowedDomains": [], "deniedDomains": [], "allowAllUnixSockets": True},
    "filesystem": {"denyRead": [], "allowRead": [], "allowWrite": [], "denyWrite": []},
}


def find_srt(environ: dict[str, str] | None = None) -> str | None:
    """`srt` on the PATH of `environ` (default: this process's), or None."""
    env = os.environ if environ is None else environ
    return shutil.which("srt", path=env.get("PATH", os.defpath))


def model_hosts(runtime: str, environ: dict[str, str]) -> list[str]:
    """The destinations srt lets a worker of `runtime` reach: its model addresses as the `workspace` profile's proxy
    reads them (`network.model_urls`), with their port where the URL names one (a model endpoint on loopback is
    allowed as that address and port only)."""
    if not runtimes.known(runtime):
        return []
    out = []
    for text in network.model_urls(runtime, environ):
        parts = urlsplit(text)
        if parts.hostname:
            host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
            out.append(f"{host}:{parts.port}" if parts.port else host)
    return list(dict.fromkeys(out))


def secrets(runtime: str, project: str, homes: list[str], environ: dict[str, str]) -> list[str]:
    """What no worker of `runtime` reads, where it exists: the secrets under each home (bwrap.SECRETS), every other
    runtime's credential files, the project's server token."""
    mine = bwrap._resolve(runtimes.get(runtime).SANDBOX_CREDENTIALS, homes[-1], environ)
    others = [
        p
        for name in runtimes.names()
        if name != runtime
        for h in homes
        for p in bwrap._resolve(runtimes.get(name).SANDBOX_CREDENTIALS, h, environ)
        if p not in mine
    ]
    found = [
        *(os.path.join(h, s) for h in homes for s in bwrap.SECRETS),
        *others,
        *(os.path.join(project, s) for s in protected.PROJECT_SECRETS),
    ]
    return [p for p in dict.fromkeys(found) if os.path.lexists(p)]


def settings(
    *,
    runtime: str,
    tree: str,
    project: str,
    home: str,
    environ: dict[str, str],
    hosts: tuple[str, ...] = (),
    granted: tuple[str, ...] = (),
) -> dict[str, Any]:
    """srt's settings for a worker of `runtime` in `tree`: the `workspace` policy (bwrap.py) in srt's terms;
    `hosts`: further destinations allowed besides the model endpoint; `granted`: paths the operator approved after
    an earlier sandbox of this worker refused a write (sandbox/writes.py)."""
    adapter = runtimes.get(runtime)
    homes = bwrap.homes_of(home, environ)
    state = bwrap._resolve(adapter.SANDBOX_STATE, homes[-1], environ)
    mine = [
        *bwrap._resolve(adapter.SANDBOX_READONLY, homes[-1], environ),
        *bwrap._resolve(adapter.SANDBOX_CREDENTIALS, homes[-1], environ),
    ]
    writable = [tree, *bwrap.git_writable(tree), *(p for p in state if os.path.exists(p)), "/tmp", *granted]
    readonly = [*bwrap.protected_paths(tree), *bwrap.protected_paths(project), *mine]
    # A worktree in the project's .cocoplus/worktrees stays writable: no deny covers the tree itself (the rest of
    # the project is not writable anyway, and srt's deny would win over the allow).
    # srt also blocks a path that does not exist yet, with /dev/null: kept for the protected files a worker could
    # create (.mcp.json, cocoplus.toml, .env), left out for a missing directory a runtime reads as one (Codex
    # refuses to start over a ~/.codex/rules that is not a directory).
    readonly = [
        p
        for p in dict.fromkeys(readonly)
        if not bwrap._under(tree, p) and (os.path.lexists(p) or os.path.basename(p) in NEW_FILES_DENIED)
    ]
    denied = secrets(runtime, project, homes, environ)
    return {
        "network": {
            "allowedDomains": list(dict.fromkeys([*model_hosts(runtime, environ), *hosts])),
            "deniedDomains": [],
            "allowAllUnixSockets": True,  # the hooks reach their control channel through a Unix socket
        },
        "filesystem": {
            # A hidden directory would be an empty tmpfs that srt leaves writable (a write to ~/.ssh/x would
            # succeed inside): the outer layer hides directories, read-only, and srt masks the files again.
            "denyRead": [p for p in denied if not os.path.isdir(p)],
            "allowRead": [],
            "allowWrite": list(dict.fromkeys(writable)),
            "denyWrite": readonly,
        },
        "enableWeakerNestedSandbox": False,
        "allowNestedUserNamespaces": False,
    }


def environment(runtime: str, environ: dict[str, str]) -> dict[str, str]:
    """`environ` for srt and the worker inside (bwrap.environment), with TMPDIR the private /tmp: srt puts its
    proxies' sockets there, and its own bubblewrap mounts a fresh /dev over one under /dev/shm."""
    return {**bwrap.environment(runtime, environ), "TMPDIR": "/tmp"}


NEW_FILES_DENIED = (".mcp.json", "cocoplus.toml", ".env", "config.worktree")
LOOPBACK = ("127.", "localhost", "[::1]")


def inner(runtime: str, environ: dict[str, str]) -> list[str]:
    """What the worker's command is prefixed with inside srt: where its model endpoint is on loopback (a local
    gateway, a stand-in), srt's NO_PROXY (which exempts loopback) is dropped, so that the runtime reaches it
    through srt's proxy; the sandbox's own loopback is not the host's."""
    if any(h.startswith(LOOPBACK) for h in model_hosts(runtime, environ)):
        return ["env", "-u", "NO_PROXY", "-u", "no_proxy"]
    return []


# Runtimes whose own sandbox is bubblewrap in new user namespaces, which srt forbids: their commands would all
# fail inside srt while the run still ended "successfully" (Codex's `-s workspace-write` and `read-only`: "bwrap:
# Creating new namespace failed", and `codex exec` exits 0). Refused under srt; `workspace` holds them.
OWN_SANDBOX_CANNOT_NEST = ("codex",)


def refused_runtime(runtime: str) -> str | None:
    """Why srt cannot hold a worker of `runtime`, in one line, or None."""
    if runtime in OWN_SANDBOX_CANNOT_NEST:
        return (
            f"{runtimes.get(runtime).TITLE}'s own sandbox (bubblewrap) cannot start inside srt, which forbids new user "
            "namespaces: its commands would fail while the run ends as a success (use the `workspace` profile)"
        )
    return None


def refused(tree: str, project: str, homes: list[str], runtime: str | None = None) -> str | None:
    """Why srt cannot hold a worker in `tree`, in one line, or None: a runtime whose own sandbox cannot nest in it
    (`refused_runtime`); srt's own bubblewrap mounts a fresh /dev, so a tree, project or home under /dev (such as
    /dev/shm) would vanish inside."""
    if runtime is not None and (why := refused_runtime(runtime)) is not None:
        return why
    for path in (tree, project, *homes):
        if path and bwrap._under(path, "/dev"):
            return f"{path} lies under /dev, which srt mounts afresh (use the `workspace` profile, or move it)"
    return None


def settings_text(found: dict[str, Any]) -> bytes:
    return json.dumps(found, indent=1).encode()


def _package_dir(srt: str) -> str:
    """The directory the `srt` program's package lies in (its node_modules), for binding it in again."""
    real = os.path.realpath(srt)  # <prefix>/node_modules/@anthropic-ai/sandbox-runtime/dist/cli.js
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(real))))


def arguments(
    bwrap_path: str,
    srt: str,
    *,
    runtime: str,
    tree: str,
    cwd: str,
    project: str,
    home: str,
    environ: dict[str, str],
    marker_fd: int,
    settings_fd: int,
    channel_socket: str | None = None,
    keep: tuple[str, ...] = (),
) -> list[str]:
    """The command line (ending in `--`) that runs a worker of `runtime` in `tree` under srt: the outer layer (a
    private /tmp with the marker, the channel and srt's settings, read from `marker_fd` and `settings_fd`; the
    secret directories hidden read-only), then srt."""
    homes = bwrap.homes_of(home, environ)
    # /tmp/claude: the temporary directory srt gives the command (TMPDIR), writable by default
    args = [bwrap_path, "--dev-bind", "/", "/", "--tmpfs", "/tmp", "--dir", "/tmp/claude"]
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    again = [
        *homes, project, tree, *bwrap.git_writable(tree), sys.prefix, sys.base_prefix, here,
        os.path.dirname(srt), _package_dir(srt), *keep,
    ]  # fmt: skip
    seen: set[str] = set()
    for path in again:
        if path and path not in seen and bwrap_probe.hidden(path) and os.path.exists(path):
            seen.add(path)
            args += ["--bind", path, path]  # the host's own rights: srt inside decides what is writable
    for path in secrets(runtime, project, homes, environ):
        if os.path.isdir(path) and not os.path.islink(path):
            args += ["--tmpfs", path, "--remount-ro", path]
        else:
            args += ["--ro-bind", "/dev/null", path]
    if channel_socket is not None:
        args += ["--bind", channel_socket, CHANNEL]
    args += ["--perms", "0400", "--ro-bind-data", str(settings_fd), SETTINGS]
    args += ["--perms", "0444", "--ro-bind-data", str(marker_fd), MARKER]
    args += ["--chdir", cwd, "--die-with-parent", "--new-session", "--"]
    return [*args, srt, "--settings", SETTINGS, "--"]


def probe(environ: dict[str, str] | None = None) -> dict[str, Any]:
    """Whether srt can sandbox a worker here: `ok`, `srt` (its path), `version`, and when not, `cause` (one line)
    and `fix` (one); a throwaway srt sandbox runs `true` with a settings file like a worker's."""
    env = dict(os.environ if environ is None else environ)
    found: dict[str, Any] = {"ok": False, "srt": None, "version": None, "pinned": PINNED, "cause": None,
                             "fix": None, "tried": None}  # fmt: skip
    srt = find_srt(env)
    if srt is None:
        found.update(cause="Anthropic's sandbox runtime (`srt`) is not on PATH", fix=FIX_INSTALL)
        return found
    found["srt"] = srt
    try:
        ver = subprocess.run([srt, "--version"], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, env=env,
                             stdin=subprocess.DEVNULL)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        found.update(cause=f"{srt} cannot be run: {exc}", fix=FIX_INSTALL)
        return found
    words = ver.stdout.split()
    if ver.returncode != 0 or not words:
        error = " ".join(ver.stderr.strip().splitlines()[-1:]) or f"exit status {ver.returncode}"
        found.update(cause=f"{srt} --version failed: {error[:300]}", fix=FIX_INSTALL)
        return found
    found["version"] = words[-1]
    with tempfile.TemporaryDirectory(prefix="cocoplus-srt-") as where:
        path = os.path.join(where, "srt-settings.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(THROWAWAY | {"filesystem": {**THROWAWAY["filesystem"], "allowWrite": [where]}}, f)
        cmd = [srt, "--settings", path, "--", "true"]
        found["tried"] = cmd
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, env=env, cwd=where,
                               stdin=subprocess.DEVNULL)  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as exc:
            found.update(cause=f"a throwaway srt sandbox did not run: {exc}", fix=FIX_OTHER)
            return found
    if r.returncode == 0:
        found["ok"] = True
        return found
    error = " ".join(ln.strip() for ln in r.stderr.strip().splitlines()[-2:]) or f"exit status {r.returncode}"
    tools = any(word in error for word in ("bubblewrap", "bwrap", "socat", "ripgrep", "rg "))
    found.update(cause=f"a throwaway srt sandbox failed: {error[:300]}", fix=FIX_TOOLS if tools else FIX_OTHER)
    return found
