"""The hook in this process: what `python -S <hook script> EVENT --runtime R` does, without starting a process.

`run_hook_here` takes the arguments of tests/hook/helpers.py's `run_hook` and
returns the same `HookRun`, so a test whose subject is what the hook decides
and writes (not the process around it) switches by importing it under that
name.  It calls `cocoplus.hook.entry.main`, the function the installed
command's `__main__.py` runs, with the command's words, the payload as the
bytes on stdin and the environment the child would get; for the call it also
makes that environment `os.environ`, enters `cwd`, catches what is written to
stdout and stderr, and makes this process the hook's parent (a runtime starts
the hook; here the test does, as it does for a real child).  Afterwards
everything is put back: the environment, the working directory, the streams,
the runner's start time and answered flag, and the process-wide lock budget.

What only a real process shows stays with `run_hook`: import costs and
`python -S`, timeouts and signals, a hook killed part way, hooks racing each
other, a password database of another home, a command run below a wrapper
(`below`).  This driver refuses the last two, so a test cannot pass here for
the wrong reason.
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
from typing import Any

from cocoplus.core import lock
from cocoplus.core.paths import Layout
from cocoplus.hook import entry, runner
from tests.hook.helpers import HookRun, hook_argv, hook_env

# The variables that give a process its password database (tests/conftest.py's PASSWD_ENV): in this process
# the database is the one the test's fixture set up, so an environment naming another cannot be honoured here.
_PASSWD_ENV = ("LD_PRELOAD", "NSS_WRAPPER_PASSWD", "NSS_WRAPPER_GROUP")


class NeedsAProcess(Exception):
    """The call asks for something only a real hook process gives (use tests/hook/helpers.py's `run_hook`)."""


def run_hook_here(
    layout: Layout | None,
    event: str,
    payload: dict[str, Any] | bytes | str,
    runtime: str | None = "claude",
    *extra: str,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 30,
    below: list[str] | None = None,
) -> HookRun:
    """`run_hook`'s call, answered by the hook's entry point in this process (see the module docstring)."""
    if below:
        raise NeedsAProcess(f"a hook run below {below[0]} needs a real process: use run_hook")
    if isinstance(payload, dict):
        data = json.dumps(payload).encode()
    elif isinstance(payload, str):
        data = payload.encode()
    else:
        data = payload
    child_env = dict(env if env is not None else hook_env(layout))
    for name in _PASSWD_ENV:
        if child_env.get(name) != os.environ.get(name):
            raise NeedsAProcess(
                f"{name} differs from this process's: a hook with another password database needs run_hook"
            )
    argv = hook_argv(event, runtime, *extra)[3:]  # the words after `python -S <script>`
    out, err = io.StringIO(), io.StringIO()
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_streams = (sys.stdin, sys.stdout, sys.stderr)
    saved_getppid = os.getppid
    saved_budget = lock.set_process_budget(None)
    saved_started = runner.STARTED
    began = time.monotonic()
    try:
        os.environ.clear()
        os.environ.update(child_env)
        if cwd is not None:
            os.chdir(cwd)
        sys.stdin = io.StringIO("")  # what was sent is handed over as bytes; nothing else may read stdin
        sys.stdout, sys.stderr = out, err
        os.getppid = os.getpid  # this process started the hook, as it is the parent of a hook child it starts
        runner.STARTED = began
        runner.ANSWERED = False
        try:
            code = entry.main(argv, stdin_bytes=data, environ=dict(child_env))
        except SystemExit as exc:  # as entry.script turns it into the exit status
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        os.getppid = saved_getppid
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        lock.set_process_budget(saved_budget)
        runner.STARTED = saved_started
        runner.ANSWERED = False
    elapsed = time.monotonic() - began
    if elapsed > timeout:  # what subprocess.run's timeout does to run_hook's call
        raise AssertionError(f"the hook took {elapsed:.1f}s, more than the call's {timeout:g}s")
    return HookRun(code, out.getvalue(), err.getvalue())
