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


def run(argv: list[str], *, input: str | None, timeout: float, cwd: str | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
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


def spawn_cocoplus(args: list[str], *, state_dir: str, cwd: str, log_path: str) -> subprocess.Popen[bytes]:
    """Start `python -m cocoplus ARGS` detached from this process, output appended to `log_path`.

    The log is opened by `fsio.open_log`: never through a symbolic link, 0600, rotated.
    """
    fd = fsio.open_log(log_path)
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "cocoplus", *args],
            cwd=cwd,
            env=dict(os.environ, COCOPLUS_DIR=state_dir),
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=fd,
            start_new_session=True,
        )
    finally:
        os.close(fd)
