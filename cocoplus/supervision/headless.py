"""Resume an exited session headless, with its next instruction as the prompt (`cocoplus dispatch`'s `resume` route).

The command comes from the session's runtime adapter (`resume_argv`: `claude
-p INSTRUCTION --resume ID`, `codex exec resume ID INSTRUCTION`, `gemini
--resume ID -p INSTRUCTION`, as docs/runtimes.md records them), keeping the
settings of the command line the session was started with (recorded at
its SessionStart).  The program is the one that ran the session (recorded
as absolute paths at its SessionStart) while it is still there, else the
runtime's command on PATH (absolute directories only: never a program
from the project).

Only a command line cocoplus sealed is run (`core.seal`): the SessionStart
hook seals what it records under this user's key, for this record and this
project.  A session record that a repository brought along, one copied from
another project, one changed since, or one with no seal is never resumed
(`refused` says why; dispatch queues the instruction instead).

It runs in the project directory (a runtime resumed elsewhere skips the
project's hooks), with the environment of whoever dispatched (the same
user, HOME and credentials) minus the variables a runtime sets for its own
hooks and tools, detached from the caller (its own session, stdin closed),
its output in `.cocoplus/resumes/<cs_id>-<time>.log`.  The new process and
its command are recorded on the session record as `resumed`, sealed
(`core.seal.resumed_fields`) and named in this user's registry of agent
processes (`session/agents.py`): its hooks take the session for headless only
from that sealed record, with that process among their ancestors
(`session/identity.py`); `COCOPLUS_HEADLESS=1` in its environment alone
vouches for nothing.  A session
that a managed worker runs (`cocoplus launch`) is resumed as that worker's
next run instead (`workers.resume`: its runner, its log, its slot rule).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cocoplus.core import clock, fsio, seal
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.runtimes import registry as runtimes
from cocoplus.runtimes import streams
from cocoplus.session import agents, procinfo, registry
from cocoplus.supervision import children, workers

if TYPE_CHECKING:
    from cocoplus.core.shapes import SessionRecord

# A resume is answered once its runtime's model answers, it fails (an unknown session, `Not logged in`), or
# WAIT_S after it shows it is up (its first output, or its SessionStart hook): never left to a log to say it
# failed.  Claude Code says `Not logged in` within a second of its start; on a busy machine its start has
# taken 8 s (START_S bounds the wait for a runtime that shows no sign of starting), and 4 s more to say it.
WAIT_S = 8.0
START_S = 30.0
EXIT_WAIT_S = 2.0  # for a runtime that said it failed to exit
MAX_LISTED = 20  # records `init` and `doctor` name one by one
# cocoplus's own markers of an agent, and the brain's capability: a worker is never started with the brain's authority.
# Set for a runtime cocoplus runs headless (a launched worker, a resumed session): its hooks know no person
# watches it, so a permission prompt waits for an answer from whoever may give one (session/permissions.py).


def refused(layout: Layout, rec: SessionRecord) -> str | None:
    """Why the session's recorded command line may not be run (`core.seal`), in one phrase; None when it may."""
    problem = seal.session_problem(rec, layout.project)
    return None if problem is None else f"its recorded command line {problem}; cocoplus does not run it"


def ignored_records(layout: Layout) -> list[str]:
    """One line for each record under `.cocoplus/` whose command cocoplus will not run, and why (`init`, `doctor`).

    Session records whose command line `dispatch` would not resume, worker
    records whose command the runner would not start (`core.seal`).  At most
    MAX_LISTED lines, then one saying how many more.
    """
    lines: list[str] = []
    for rec in registry.list_sessions(layout)[0]:
        why = refused(layout, rec)
        if why is not None:
            lines.append(
                f"{layout.rel(layout.session_record(rec['id']))}: ignored: {why} (`cocoplus dispatch` queues the "
                "instruction for its next prompt instead)"
            )
    for wid in workers.ids(layout):
        try:
            wrec = workers.read(layout, wid)
        except CocoplusError:
            continue  # a damaged record is reported as such elsewhere; it is not run either
        if wrec is None or "command" not in wrec:
            continue
        problem = seal.worker_problem(wrec, layout.project, wid)
        if problem is not None:
            lines.append(
                f"{layout.rel(layout.worker_record(wid))}: ignored: its command {problem}; cocoplus does not run it, "
                "and it grants nothing (no rules, no worker identity)"
            )
    if len(lines) > MAX_LISTED:
        more = len(lines) - MAX_LISTED
        lines = lines[:MAX_LISTED] + [
            f"and {more} more record(s) under {layout.rel(layout.root)}/ whose commands are ignored likewise"
        ]
    return lines


def grant_notes(layout: Layout) -> list[str]:
    """One line for each record that a live session's hooks may not take a grant from (`doctor`): a live worker
    whose record an earlier release sealed over its command alone (it gets no rules from it: its permission
    requests wait for an answer), and a live session `dispatch` resumed headless whose `resumed` has no seal
    that holds (its hooks do not take it for headless).  Records whose command is ignored altogether are in
    `ignored_records`."""
    lines: list[str] = []
    for wid in workers.ids(layout):
        try:
            wrec = workers.read(layout, wid)
        except CocoplusError:
            continue
        if wrec is None or wrec.get("state") not in workers.LIVE or not workers.alive(wrec):
            continue
        if seal.worker_grant_problem(wrec, layout.project, wid) == seal.LEGACY:
            rules = wrec.get("allow") or []
            lines.append(
                f"{layout.rel(layout.worker_record(wid))}: worker {wid} is running with a record sealed before worker "
                "seals covered their grants: it gets no rules from it"
                + (f" (its --allow {', '.join(map(str, rules))} is not applied)" if rules else "")
                + "; its permission requests wait for an answer (`cocoplus permissions list`); launch it again to "
                "grant rules"
            )
    for rec in registry.list_sessions(layout)[0]:
        res = rec.get("resumed")
        if not isinstance(res, dict) or rec.get("worker"):
            continue
        if procinfo.alive(res.get("pid"), res.get("start_ticks")) is not True:
            continue
        problem = seal.resumed_problem(rec, layout.project)
        if problem is not None:
            who = rec.get("alias") or rec["id"]
            lines.append(
                f"{layout.rel(layout.session_record(rec['id']))}: the headless resume of {who} "
                f"(pid {res.get('pid')}) {problem}: its hooks do not take it for headless (its runtime's own "
                "permission handling applies)"
            )
    return lines


def plan(
    layout: Layout, rec: SessionRecord, instruction: str, environ: dict[str, str] | None = None
) -> tuple[list[str] | None, str]:
    """(the command that resumes this session with `instruction`, "") or (None, why it cannot be resumed)."""
    env = os.environ if environ is None else environ
    runtime = rec.get("runtime")
    if not isinstance(runtime, str) or not runtimes.known(runtime):
        return None, f"unknown runtime {runtime!r}"
    adapter = runtimes.get(runtime)
    rid = rec.get("runtime_session_id")
    if not isinstance(rid, str) or not rid:
        return None, "its runtime session id is not known"
    why = refused(layout, rec)
    if why is not None:
        return None, why
    transcript = rec.get("transcript_path")
    if not isinstance(transcript, str) or not os.path.isfile(transcript):
        shown = transcript if isinstance(transcript, str) else "not recorded"
        return None, f"its transcript is not there to resume from ({shown})"
    proc = rec.get("process") or {}
    program = _still_there(proc.get("program")) or children.on_path(adapter.COMMAND, env)
    if not program:
        return None, f"no {adapter.TITLE} CLI found (`{adapter.COMMAND}` is not on PATH)"
    cmd = adapter.resume_argv(program, rid, instruction, proc.get("argv"))
    if cmd is None:
        return None, f"{adapter.TITLE} sessions cannot be resumed headless"
    return cmd, ""


def _still_there(program: Any) -> list[str]:
    """The recorded program (absolute paths, sealed), when every part of it is still there."""
    if not isinstance(program, list) or not program:
        return []
    if all(isinstance(p, str) and os.path.isabs(p) and os.path.isfile(p) for p in program):
        return list(program)
    return []


class ResumeFailed(CocoplusError):
    """The resumed runtime failed before it got going: `reason` in its own words, its exit `code`, its output `log`."""

    def __init__(self, message: str, reason: str, code: int | None, log: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.reason = reason
        self.code = code
        self.log = log


def spawn(
    layout: Layout, rec: SessionRecord, cmd: list[str], by: str, environ: dict[str, str] | None = None
) -> dict[str, Any]:
    """Start `cmd` detached in the project directory; record it on the session.

    Then wait for the resumed runtime to get going (`watch`): ResumeFailed if
    it failed meanwhile (it exited with an error, or said it failed: `Not
    logged in`), with its own reason; CocoplusError if it could not start.
    `answered` in the result says whether its model had answered when this
    returned (False: still starting, or a worker waiting for a slot).
    """
    cs = rec["id"]
    queued: Callable[[], bool] | None = None
    if isinstance(rec.get("worker"), str):
        # A managed worker's session: the resume is the worker's next run (its log, its slot rule, `workers kill`).
        wid = rec["worker"]
        log = layout.worker_log(wid)
        start = _size(log)
        child, info = workers.resume(layout, rec, cmd, by, environ)
        where = f"`cocoplus workers logs {wid}`"

        def waiting() -> bool:  # for a slot (`[workers] max_parallel`): nothing to wait for here
            return bool((workers.read(layout, wid) or {}).get("waiting_since"))

        queued = waiting
    else:
        child, info, log = _start(layout, rec, cmd, by, environ)
        start = 0
        where = layout.rel(log)
    registry.update(layout, cs, lambda r: r.update({"resumed": info}))
    since = clock.parse_iso(info["started_at"]) or 0.0

    def hooked() -> bool:  # its SessionStart hook (or any other) has run since: the runtime is up
        try:
            now = registry.read_record(layout, cs) or {}
        except CocoplusError:
            return False
        return (clock.parse_iso(now.get("last_event_at")) or 0.0) >= since

    state, why, code = watch(rec.get("runtime"), child, log, start, up=hooked, queued=queued)
    if state == "failed" or code not in (None, 0):
        program = cmd[0].rsplit("/", 1)[-1]
        reason = why or f"exit code {code}"
        ended = f"{program} exited with code {code}" if code is not None else f"{program} is ending"
        raise ResumeFailed(
            f"{rec.get('alias') or cs}: the resume failed: {reason} ({ended})", reason, code, layout.rel(log),
            hint=f"its output: {where}",
        )  # fmt: skip
    return {**info, "exited": code, "answered": state == "started"}


def watch(
    runtime: str | None,
    child: subprocess.Popen[bytes],
    log: str,
    start: int,
    *,
    up: Callable[[], bool] | None = None,
    queued: Callable[[], bool] | None = None,
) -> tuple[str | None, str | None, int | None]:
    """(`started`, `failed` or None; why it failed; its exit code or None) of the run writing `log` from `start`.

    Whichever comes first: its model's first answer, its saying it failed,
    its exit, `queued()`, or WAIT_S after it shows it is up (its first line
    of output, or `up()`: one of its hooks ran), or START_S with no sign of it.
    """
    begun = time.monotonic()
    shown_up: float | None = None
    while True:
        code = child.poll()
        try:
            data, _at, _size_now = fsio.read_log(log, start, 1024 * 1024)
        except CocoplusError:
            data = b""
        text = data.decode("utf-8", "replace")
        entries = streams.transcript(runtime, text if code is not None else text[: text.rfind("\n") + 1])
        state, why = streams.outcome(entries)
        now = time.monotonic()
        if shown_up is None and (any(e["kind"] != "cocoplus" for e in entries) or (up is not None and up())):
            shown_up = now
        limit = begun + START_S if shown_up is None else min(begun + START_S, shown_up + WAIT_S)
        if state is not None or code is not None or now >= limit or (queued is not None and queued()):
            if code is not None and code != 0 and state != "failed":
                state, why = "failed", streams.failure(entries)
            if state == "failed" and code is None:
                try:
                    code = child.wait(EXIT_WAIT_S)  # it said it failed: its exit code follows at once
                except subprocess.TimeoutExpired:
                    pass
            return state, why, code
        time.sleep(0.05)


def _size(path: str) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0


def _start(
    layout: Layout, rec: SessionRecord, cmd: list[str], by: str, environ: dict[str, str] | None
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
                env={**children.child_env(environ), children.HEADLESS_ENV: "1"},
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
    info: dict[str, Any] = {
        "pid": child.pid,
        "start_ticks": procinfo.start_ticks(child.pid),
        **procinfo.here(),
        "command": cmd,
        "log": layout.rel(log),
        "started_at": clock.iso(),
        "by": by,
    }
    return child, vouch_resumed(layout, cs, info, rec.get("runtime")), log


def vouch_resumed(layout: Layout, cs: str, info: dict[str, Any], runtime: Any = None) -> dict[str, Any]:
    """`info` (the `resumed` of session `cs`: the process started for it, `{"pid", "start_ticks", "host",
    "pidns", ...}`) with the seal that makes its hooks take the session for headless (session/identity.py), the
    process named in this user's registry of agent processes.  A seal or an entry that cannot be made is left
    out: its hooks then do not take it for headless (its runtime's own permission handling applies)."""
    out = dict(info)
    out["seal"] = seal.sealed(seal.resumed_fields(cs, layout.project, out))
    try:
        agents.register(agents.RESUMED, layout.root, cs, out, runtime=runtime if isinstance(runtime, str) else None)
    except CocoplusError:
        pass
    return out
