"""The `workspace` profile as a bubblewrap command line: what a worker's runner starts its runtime under.

The mounts, in the order bubblewrap applies them (a later one covers an earlier one):

1. the whole file system read-only; a fresh /dev, a /proc of the worker's own pid namespace, a private /tmp;
2. what 1 covered again, read-only, where it lies under /dev or /tmp (a home or a project there);
3. writable: the worker's tree (its git worktree, or the project), the main repository's `.git/objects`, `refs`,
   `logs` and `.git/worktrees/<name>` (a worktree's commits write there), and the runtime's state
   (`SANDBOX_STATE` of its adapter: Claude Code's `~/.claude` and `~/.claude.json`, `CODEX_HOME`), and what the
   operator approved after an earlier sandbox of this worker refused a write (writes.py: sealed grants);
4. read-only over them, in this order: `.cocoplus/`, every runtime's settings and hook files, `.mcp.json`,
   `cocoplus.toml`, `.git/config` and `.git/hooks` (rules/protected.py: the files that decide what runs), in the
   project and in the tree; the runtime's own settings in its state (`SANDBOX_READONLY`) and its credential files
   (`SANDBOX_CREDENTIALS`);
5. hidden: the secrets (`SECRETS`: `~/.ssh`, `~/.aws`, `~/.config/gcloud`, this user's cocoplus keys, ...),
   every other runtime's credential files and the project's `.cocoplus/secrets/` (made before the sandbox: a
   directory stays hidden whatever is written in it later, while a file hidden by a mount over it shows again once
   it is renamed over outside);
6. the marker, read-only: `MARKER`, which makes every `cocoplus` command inside a worker (ops/authority.py);
7. where its network is limited (network.py), the proxy's socket at `PROXY`, in a network namespace of its own.

The worker gets a pid namespace of its own (`--unshare-pid`: it sees no host process), dies with its runner, and
gets an environment without other runtimes' keys, this user's capability or an SSH agent (`environment`).
A protected directory that does not exist yet is made (empty) before the sandbox starts, so that the worker
cannot create it; git ignores an empty directory.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

from cocoplus.core import fsio, userfiles
from cocoplus.hook import channel
from cocoplus.rules import protected
from cocoplus.runtimes import registry as runtimes
from cocoplus.sandbox import network

if TYPE_CHECKING:
    from collections.abc import Mapping

    from cocoplus.runtimes.protocol import Adapter

MARKER = channel.SANDBOX_MARKER  # inside the sandbox only: its private /tmp
CHANNEL = channel.CHANNEL  # the control channel's socket, inside
PROXY = "/tmp/.cocoplus-proxy"  # the network proxy's socket, inside, where the network is limited (network.py)
# Home-relative secrets no worker reads: keys, cloud credentials, tokens, and this user's cocoplus keys.
SECRETS = (
    ".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".kube", ".docker/config.json", ".netrc",
    ".git-credentials", ".npmrc", ".pypirc", ".config/gh", ".password-store", *protected.SECRETS,
)  # fmt: skip
# Variables that reach the keys or carry authority: never inside.
DROPPED_ENV = ("SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO", userfiles.CAPABILITY_ENV)
# Protected directories made before the sandbox starts where they are missing (a worker cannot create them then).
MADE_DIRS = (".claude", ".codex", ".gemini", ".cursor", ".cortex")


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def _resolve(entries: tuple[tuple[str | None, str, str], ...], home: str, environ: dict[str, str]) -> list[str]:
    """The paths a runtime's declared (variable, default directory, name) entries name, for this environment."""
    out = []
    for var, default, name in entries:
        base = environ.get(var) if var else None
        base = base or os.path.join(home, default)
        out.append(os.path.join(base, name) if name else base)
    return [os.path.normpath(p) for p in out]


def _runtime_files(adapter: Adapter, home: str, environ: dict[str, str]) -> dict[str, list[str]]:
    return {
        "state": _resolve(adapter.SANDBOX_STATE, home, environ),
        "readonly": _resolve(adapter.SANDBOX_READONLY, home, environ),
        "credentials": _resolve(adapter.SANDBOX_CREDENTIALS, home, environ),
    }


def git_writable(tree: str) -> list[str]:
    """The main repository's directories a git worktree's commits write (objects, refs, logs, its own
    `.git/worktrees/<name>`), read from the worktree's `.git` file; [] when `tree` is not a linked worktree."""
    dot = os.path.join(tree, ".git")
    if not os.path.isfile(dot):
        return []
    try:
        with open(dot, encoding="utf-8") as f:
            line = f.read().strip()
    except OSError:
        return []
    if not line.startswith("gitdir:"):
        return []
    admin = os.path.normpath(os.path.join(tree, line.split(":", 1)[1].strip()))
    common = os.path.dirname(os.path.dirname(admin))  # <repo>/.git/worktrees/<name> -> <repo>/.git
    found = [admin]
    for name in ("objects", "refs", "logs", "packed-refs"):
        path = os.path.join(common, name)
        if os.path.exists(path):
            found.append(path)
    return found


def protected_paths(base: str) -> list[str]:
    """The project-relative protected paths (rules/protected.py) under `base`: cocoplus's own and git's first,
    then every runtime's."""
    return [os.path.join(base, name) for name in (*protected.PROJECT_OWN, *protected.RUNTIMES)]


def homes_of(home: str, environ: Mapping[str, str]) -> list[str]:
    """The home the password database names (`home`) and the one the runtime is given ($HOME), where they differ:
    the runtime's files are under the latter (the last), secrets under either."""
    return list(dict.fromkeys(h for h in (home, environ.get("HOME")) if h))


def prepare(
    tree: str, project: str, runtime: str | None = None, home: str = "", environ: dict[str, str] | None = None
) -> None:
    """Make the protected directories that do not exist yet in the project and the tree (empty), so that each is
    mounted read-only rather than left for the worker to create; the project's `.cocoplus/secrets/`, so that it is
    hidden whole from the start (a server started later writes its token there); and the runtime's state
    directories, so that they are mounted writable."""
    fsio.ensure_dir(os.path.join(project, protected.PROJECT_SECRETS[0]))
    if runtime is not None:
        entries = tuple(e for e in runtimes.get(runtime).SANDBOX_STATE if not e[2])
        env = dict(os.environ if environ is None else environ)
        for path in _resolve(entries, env.get("HOME") or home, env):
            os.makedirs(path, 0o700, exist_ok=True)
    for base in {project, tree}:
        for name in MADE_DIRS:
            path = os.path.join(base, name)
            if not os.path.lexists(path):
                os.mkdir(path, 0o755)


def environment(runtime: str, environ: dict[str, str]) -> dict[str, str]:
    """`environ` for a worker of `runtime` inside the sandbox: without the variables of every other runtime
    (their API keys), this user's capability or an SSH or GPG agent."""
    own = tuple(runtimes.get(runtime).SANDBOX_ENV)
    others = tuple(
        p for name in runtimes.names() for p in runtimes.get(name).SANDBOX_ENV if name != runtime and p not in own
    )
    return {
        k: v
        for k, v in environ.items()
        if k not in DROPPED_ENV and not (k.startswith(others) and not k.startswith(own))
    }


def marker_text(wid: str, project: str, profile: str) -> bytes:
    """What the marker file inside says: which worker of which project this sandbox holds."""
    return json.dumps({"worker": wid, "project": project, "profile": profile}).encode()


def arguments(
    bwrap: str,
    *,
    runtime: str,
    tree: str,
    cwd: str,
    project: str,
    home: str,
    environ: dict[str, str],
    marker_fd: int,
    channel_socket: str | None = None,
    keep: tuple[str, ...] = (),
    proxy_socket: str | None = None,
    granted: tuple[str, ...] = (),
) -> list[str]:
    """The bubblewrap command line (ending in `--`) that holds a worker of `runtime` working in `tree` (its
    worktree or the project) to the `workspace` profile; `keep`: further paths (the runtime's program, this
    interpreter) to mount read-only again where /dev or /tmp would hide them; `proxy_socket`: its network is
    limited (a network namespace of its own, that socket, mounted at PROXY, its only way out: `network_command`);
    `granted`: paths the operator approved after an earlier sandbox of this worker refused a write (writes.py),
    writable before the protected paths and the secrets are mounted over everything."""
    adapter = runtimes.get(runtime)
    homes = homes_of(home, environ)
    mine = _runtime_files(adapter, homes[-1], environ)
    args = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    hidden_tops = ("/dev", "/tmp")
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    again = [*homes, project, tree, sys.prefix, here, *keep]
    seen: set[str] = set()
    for path in again:
        if path and path not in seen and any(_under(path, t) for t in hidden_tops) and os.path.exists(path):
            seen.add(path)
            args += ["--ro-bind", path, path]
    writable = [tree, *git_writable(tree), *mine["state"], *granted]
    for path in writable:
        if os.path.exists(path):
            args += ["--bind", path, path]
    readonly = protected_paths(project)
    if tree != project:
        if _under(tree, project):  # a worktree under the project (in .cocoplus/worktrees): writable again
            readonly.append(tree)
        readonly += protected_paths(tree)
    readonly += [*mine["readonly"], *mine["credentials"]]
    done: set[str] = set()
    for path in readonly:
        if path in done or not os.path.lexists(path):
            continue
        done.add(path)
        if path == tree:
            args += ["--bind", path, path]
        else:
            args += ["--ro-bind", path, path]
    others = [
        p
        for name in runtimes.names()
        if name != runtime
        for h in homes
        for p in _resolve(runtimes.get(name).SANDBOX_CREDENTIALS, h, environ)
        if p not in mine["credentials"]
    ]
    # The project's own secrets too (the page's and the REST API's token: the operator's authority): its
    # `.cocoplus/secrets/` (`prepare` made it) and an earlier version's token file, where it is.
    project_secrets = [os.path.join(project, s) for s in protected.PROJECT_SECRETS]
    for path in [*(os.path.join(h, s) for h in homes for s in SECRETS), *others, *project_secrets]:
        if os.path.isdir(path) and not os.path.islink(path):
            args += ["--tmpfs", path, "--remount-ro", path]
        elif os.path.lexists(path):
            args += ["--ro-bind", "/dev/null", path]
    if channel_socket is not None:
        args += ["--bind", channel_socket, CHANNEL]
    if proxy_socket is not None:
        args += ["--unshare-net", "--bind", proxy_socket, PROXY]
    args += ["--perms", "0444", "--ro-bind-data", str(marker_fd), MARKER]
    args += ["--chdir", cwd, "--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session", "--"]
    return args


def network_command(setting: Any, runtime: str, environ: dict[str, str], cmd: list[str]) -> list[str]:
    """`cmd` as a sandbox with a limited network (`setting`) starts it: through the forwarder (forward.py), which
    carries its connections to the proxy at PROXY, and maps each model endpoint on the loopback outside, and each
    loopback `host:port` on the allow list, to the same port inside; `cmd` itself where the network is not
    limited."""
    if not network.limited(setting):
        return cmd
    listed = [network.split(e, 0) for e in setting] if isinstance(setting, list) else []
    local = [(host, p) for host, p in [*network.endpoints(runtime, environ), *listed] if p and network.loopback(host)]
    by_port: dict[int, str] = {}
    for host, p in local:
        by_port.setdefault(p, host)  # one host per port: the first named
    mapped = [a for p, host in by_port.items() for a in ("--map", f"{p}={host}")]
    return [sys.executable, "-S", network.FORWARD, PROXY, *mapped, "--", *cmd]
