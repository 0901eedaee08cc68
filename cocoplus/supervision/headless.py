"""Resume an exited session headless, with its next instruction as the prompt (`cocoplus dispatch`'s `resume` route).

The command comes from the session's runtime adapter (`resume_argv`: `claude
-p INSTRUCTION --resume ID`, `codex exec resume ID INSTRUCTION`, `gemini
--resume ID -p INSTRUCTION`, as docs/runtimes.md records them), keeping the
settings of the command line the session was started with (recorded at
its SessionStart).  The program is the one that ran the session when its
path is known, else the runtime's command on PATH.

It runs in the project directory (a runtime resumed elsewhere skips the
project's hooks), with the environment of whoever dispatched (the same
user, HOME and credentials) minus the variables a runtime sets for its own
hooks and tools, detached from the caller (its own session, stdin closed),
its output in `.cocoplus/resumes/<cs_id>-<time>.log`.  The new process and
its command are recorded on the session record as `resumed`.  A session
that a managed worker runs (`cocoplus launch`) is resumed as that worker's
next run instead (`workers.resume`: its runner, its log, its slot rule).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from typing import Any

from cocoplus.core import clock, fsio
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.runtimes import argv as words
from cocoplus.runtimes import registry as runtimes
from cocoplus.session import procinfo, registry

SETTLE_S = 1.0  # a resume that fails at once (unknown session, missing binary) is reported, not left to a log
DROP_ENV = ("COCOPLUS_SESSION", "COCOPLUS_ROUND", "COCOPLUS_WORKER", "COCOPLUS_WORKER_ALIAS")


def plan(rec: dict[str, Any], instruction: str, environ: dict[str, str] | None = None) -> tuple[list[str] | None, str]:
    """(the command that resumes this session with `instruction`, "") or (None, why it cannot be resumed)."""
    env = os.environ if environ is None else environ
    runtime = rec.get("runtime")
    if not isinstance(runtime, str) or not runtimes.known(runtime):
        return None, f"unknown runtime {runtime!r}"
    adapter = runtimes.get(runtime)
    rid = rec.get("runtime_session_id")
    if not isinstance(rid, str) or not rid:
        return None, "its runtime session id is not known"
    transcript = rec.get("transcript_path")
    if not isinstance(transcript, str) or not os.path.isfile(transcript):
        shown = transcript if isinstance(transcript, str) else "not recorded"
        return None, f"its transcript is not there to resume from ({shown})"
    recorded = (rec.get("process") or {}).get("argv")
    argv = recorded if isinstance(recorded, list) and all(isinstance(a, str) for a in recorded) else None
    program = _program(argv, env) or _on_path(adapter.COMMAND, env)
    if not program:
        return None, f"no {adapter.TITLE} CLI found (`{adapter.COMMAND}` is not on PATH)"
    cmd = adapter.resume_argv(program, rid, instruction, argv)
    if cmd is None:
        return None, f"{adapter.TITLE} sessions cannot be resumed headless"
    return cmd, ""


def _program(argv: list[str] | None, env: Any) -> list[str]:
    """The recorded program, when every part of it can still be found."""
    out = []
    for part in words.program(argv):
        found = part if os.path.isabs(part) else shutil.which(part, path=env.get("PATH"))
        if not found or not os.path.isfile(found):
            return []
        out.append(found)
    return out


def _on_path(command: str, env: Any) -> list[str]:
    found = shutil.which(command, path=env.get("PATH"))
    return [found] if found else []


def child_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The dispatcher's environment without what a runtime set for its own hooks and tools."""
    env = dict(os.environ if environ is None else environ)
    for adapter in runtimes.ordered():
        for name in adapter.CHILD_ENV:
            env.pop(name, None)
    for name in DROP_ENV:
        env.pop(name, None)
    return env


def spawn(layout: Layout, rec: dict[str, Any], cmd: list[str], by: str, environ: dict[str, str] | None = None) -> dict[str, Any]:
    """Start `cmd` detached in the project directory; record it on the session. CocoplusError if it fails at once."""
    cs = rec["id"]
    if isinstance(rec.get("worker"), str):
        # A managed worker's session: the resume is the worker's next run (its log, its slot rule, `workers kill`).
        from cocoplus.supervision import workers  # deferred: workers imports this module

        child, info = workers.resume(layout, rec, cmd, by, environ)
        log = layout.worker_log(rec["worker"])
    else:
        child, info, log = _start(layout, rec, cmd, by, environ)
    registry.update(layout, cs, lambda r: r.update(resumed=info))
    deadline = time.monotonic() + SETTLE_S
    while time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.05)
    code = child.poll()
    if code not in (None, 0):
        raise CocoplusError(
            f"{rec.get('alias') or cs}: the resumed {cmd[0].rsplit('/', 1)[-1]} exited at once (code {code}): {_tail(log)}",
            hint=f"its output is in {layout.rel(log)}",
        )
    return {**info, "exited": code}


def _start(
    layout: Layout, rec: dict[str, Any], cmd: list[str], by: str, environ: dict[str, str] | None
) -> tuple[subprocess.Popen[bytes], dict[str, Any], str]:
    cs = rec["id"]
    log = layout.resume_log(cs, f"{clock.compact()}-{os.urandom(2).hex()}")
    fsio.ensure_dir(layout.resumes_dir)
    fd = fsio.open_log(log)
    try:
        try:
            child = subprocess.Popen(
                cmd,
                cwd=layout.project,
                env=child_env(environ),
                stdin=subprocess.DEVNULL,
                stdout=fd,
                stderr=fd,
                start_new_session=True,  # detached: the caller's end or its signals do not reach it
            )
        except OSError as exc:
            raise CocoplusError(f"{rec.get('alias') or cs}: cannot start {cmd[0]} ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    threading.Thread(target=child.wait, name=f"reap-{child.pid}", daemon=True).start()  # no zombie in a long-lived door
    info = {
        "pid": child.pid,
        "start_ticks": procinfo.start_ticks(child.pid),
        "command": cmd,
        "log": layout.rel(log),
        "started_at": clock.iso(),
        "by": by,
    }
    return child, info, log


def _tail(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 2000))
            lines = [ln for ln in fh.read().decode("utf-8", "replace").splitlines() if ln.strip()]
    except OSError:
        return "no output"
    return lines[-1][:300] if lines else "no output"
