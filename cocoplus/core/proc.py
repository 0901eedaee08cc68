"""Child processes: run one with a deadline, or start a cocoplus command in the background.

Standard library only.  Every child runs without a shell, from an argv
list; nothing from state files is ever interpolated into a command line.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from cocoplus.core import fsio


class Timeout(Exception):
    """The child did not finish in time; it and everything it started were killed."""


def run(
    argv: list[str], *, input: str | None, timeout: float, cwd: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `argv` with text I/O and a deadline; on timeout kill its whole process group.

    OSError (cannot start it) and Timeout are left to the caller to phrase.
    """
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=env,
        start_new_session=True,  # its own group, so a timeout stops what it started too
    )
    try:
        out, err = proc.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.communicate()
        raise Timeout(argv[0]) from None
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


# `python -m` puts the working directory first on sys.path: in a project that holds a `cocoplus/`
# directory (a cloned repository can), `-m cocoplus` would run the repository's code.  `-P` (3.11+)
# leaves it out.  Every cocoplus process cocoplus starts goes through this.
SAFE_PATH = "-P"


def own_env(state_dir: str | None = None) -> dict[str, str]:
    """The environment of a process cocoplus starts for itself (a watcher, a notifier, a reply worker): this
    one's, without what marks an agent's (it acts as cocoplus, not as the session that asked for it, whoever
    that was) and without the brain's capability."""
    from cocoplus.core import userfiles  # deferred: only a process cocoplus starts for itself needs these
    from cocoplus.runtimes import registry as runtimes  # deferred: as userfiles

    drop = {*runtimes.agent_env(), userfiles.CAPABILITY_ENV, "COCOPLUS_VOUCHED"}  # a token is given, never inherited
    env = {k: v for k, v in os.environ.items() if k not in drop}
    if state_dir is not None:
        env["COCOPLUS_DIR"] = state_dir
    return env


def python_m(module: str, *args: str) -> list[str]:
    """`[this interpreter, -P, -m, MODULE, ARGS...]`: a cocoplus module run as a program, never the project's."""
    return [sys.executable, SAFE_PATH, "-m", module, *args]


def spawn_cocoplus(
    args: list[str], *, state_dir: str, cwd: str, log_path: str, env_extra: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start `python -m cocoplus ARGS` detached from this process, output appended to `log_path`; `env_extra`
    goes into its environment (a token that vouches for it: session/agents.py `vouch`).

    The log is opened by `fsio.open_log`: never through a symbolic link, 0600, rotated.
    """
    fd = fsio.open_log(log_path)
    try:
        return subprocess.Popen(
            python_m("cocoplus", *args),
            cwd=cwd,
            env={**own_env(state_dir), **(env_extra or {})},
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=fd,
            start_new_session=True,
        )
    finally:
        os.close(fd)
