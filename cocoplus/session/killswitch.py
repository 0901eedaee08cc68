"""The kill switch: AGENT_STOP, its fallbacks, and the operator's stop and resume.

The *existence* of `.cocoplus/AGENT_STOP` stops the agent; its content
(operator, time, reason) is only for the message.  When its existence
cannot be known (the state directory cannot be searched), the answer is
"stopped" (`kill_switch_state`, `stop_present`).

`stop`, `resume` and the automatic stops (`auto_stop`, `create_stop`) hold
one lock, `Layout.kill_switch_lock`, while they change AGENT_STOP and the
run state (status.json, pod-state.json, which `status.set_state` also
writes under it), so the two agree whenever a command has returned.  A
stop never waits on that lock past its caller's budget: if the lock is
busy, AGENT_STOP is created anyway (only where none exists) and the state
write is reported as not done.  A stop whose JSON body cannot be written (a
full disk) is made as an empty file, or failing that a directory: either
costs no data blocks and stops the agent all the same.

Standard library only: the pre-tool hook imports it once something is
stopped (the one-shot steer is `session/steering.py`, which the hook loads
only when a steer waits).
"""

from __future__ import annotations

import os
import stat as _stat

from cocoplus.core import clock, fsio
from cocoplus.core.errors import CocoplusError
from cocoplus.core.lock import DEFAULT_TIMEOUT, Budget, Lock
from cocoplus.core.paths import Layout
from cocoplus.core.records import parse_stop, render_stop, stop_sentence

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any

    from cocoplus.core.shapes import AgentStop


def _events() -> ModuleType:
    """`cocoplus.session.events`, imported when a stop or a resume logs a step (not on every hook)."""
    from cocoplus.session import events  # deferred: most hook events log no step

    return events


def _status() -> ModuleType:
    """`cocoplus.session.status`, imported when a stop or a resume sets the run state (not on every hook)."""
    from cocoplus.session import status  # deferred: most hook events set no run state

    return status


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def kill_switch_state(state_dir: str) -> tuple[bool | None, str]:
    """Whether the agent is stopped: (True, why) / (False, why) / (None, why it cannot be known).

    Standard library calls only, one `lstat`.  None means the state
    directory exists but AGENT_STOP's existence cannot be checked (the
    directory is not searchable by this user, a path component is not a
    directory, ...): callers must treat it as stopped and say the reason,
    which names the directory and the error.
    """
    path = Layout(state_dir).agent_stop
    try:
        os.lstat(path)
    except FileNotFoundError:
        return False, f"{path} does not exist"
    except OSError as exc:
        import errno  # deferred: only on an error (its table costs every hook's start)

        code = errno.errorcode.get(exc.errno or 0, "error")
        return None, (f"cannot tell whether {path} exists: {exc.strerror or exc} ({code}) on {state_dir}")
    return True, f"{path} exists"


def unknown_sentence(why: str) -> str:
    """What a blocked tool is told when the kill switch cannot be read."""
    return (
        f"cocoplus: the kill switch cannot be read ({why}), so no tools may run: the agent may have been "
        "stopped. The operator must make the state directory searchable by the agent's user (or remove it)."
    )


def kill_switch_sentence(layout: Layout) -> str | None:
    """None if the agent may run; else the one sentence a blocked tool is told (stopped, or cannot tell)."""
    stopped, why = kill_switch_state(layout.root)
    if stopped is False:
        return None
    if stopped is None:
        return unknown_sentence(why)
    return stop_sentence(read_stop(layout) or {})


def anywhere(layouts: list[Layout], problem: str | None = None) -> str | None:
    """The sentence of the first place whose kill switch is on (or unknown), or of a place that cannot be trusted
    (`problem`, which comes first)."""
    if problem is not None:
        return f"cocoplus: {problem}."
    for layout in layouts:
        reason = kill_switch_sentence(layout)
        if reason is not None:
            return reason
    return None


def stop_present(layout: Layout) -> bool:
    """True if AGENT_STOP exists, or if that cannot be known (fail closed)."""
    stopped, _ = kill_switch_state(layout.root)
    return stopped is not False


def _token(st: os.stat_result) -> str:
    """Identifies one AGENT_STOP: a replaced or recreated one has another token."""
    return f"{st.st_ino}-{st.st_mtime_ns}-{st.st_size}-{_stat.S_IFMT(st.st_mode):o}"


def read_stop(layout: Layout) -> AgentStop | None:
    """What AGENT_STOP says, or None if there is none. Never raises for its content.

    `token` identifies this very stop (pass it to `resume(expect=...)`).
    If the existence cannot be known, `present` is None and `unknown` says why.
    """
    path = layout.agent_stop
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError:
        _, why = kill_switch_state(layout.root)
        info = parse_stop(None)
        info.update({"present": None, "unknown": why, "token": None, "created_at_fallback": None})
        return info
    data: bytes | None = None
    if _stat.S_ISREG(st.st_mode):
        try:
            fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | _NONBLOCK)
            try:
                if _stat.S_ISREG(os.fstat(fd).st_mode):
                    data = os.read(fd, 16384)
            finally:
                os.close(fd)
        except OSError:
            data = None
    info = parse_stop(data)
    info["present"] = True
    info["token"] = _token(st)
    if info["created_at"] is None:
        info["created_at_fallback"] = clock.iso(st.st_mtime)
    return info


def _empty_stop(path: str) -> str:
    """Create AGENT_STOP with no content (a file, else a directory); say which. Needs no data block."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600)
    except FileExistsError:
        return "existing"
    except OSError as first:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            return "existing"
        except OSError as second:
            raise CocoplusError(
                f"{path}: cannot create even an empty kill switch ({first.strerror}; as a directory: {second.strerror})"
            ) from None
        return "directory"
    os.close(fd)
    return "file"


def _link_new(path: str, data: bytes) -> bool:
    """Create `path` with `data` only if nothing is there; readers never see a half-written file.

    Written aside as `.NAME.tmp-<pid>-<rand>`, then hard-linked into place
    (which fails if one exists).  False if one existed.
    """
    directory = os.path.dirname(path)
    fsio.refuse_linked_dirs(path)
    tmp = os.path.join(directory, f".{os.path.basename(path)}{fsio.TMP_MARK}{os.getpid()}-{os.urandom(4).hex()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
            return True
        except FileExistsError:
            return False
        except OSError as exc:  # pragma: no cover - filesystems without hard links
            import errno  # deferred: only on an error (its table costs every hook's start)

            if exc.errno not in (errno.EPERM, errno.ENOTSUP):
                raise
            if os.path.lexists(path):
                return False
            os.replace(tmp, path)
            return True
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _create(layout: Layout, doc: AgentStop, replace: bool, problems: list[str]) -> tuple[bool, AgentStop]:
    """AGENT_STOP with `doc` as its body; an empty one if the body cannot be written. (created, content)."""
    path = layout.agent_stop
    if not replace and os.path.lexists(path):
        return False, read_stop(layout) or {}
    data = fsio.dumps(doc).encode("utf-8")
    try:
        if replace:
            fsio.atomic_write_bytes(path, data)
            created = True
        else:
            created = _link_new(path, data)
    except (OSError, CocoplusError) as exc:
        cause = exc.strerror if isinstance(exc, OSError) else str(exc)
        if os.path.lexists(path):
            problems.append(f"{cause}; the AGENT_STOP already there was kept and still stops the agent")
            return False, read_stop(layout) or {}
        kind = _empty_stop(path)
        if kind == "existing":
            return False, read_stop(layout) or {}
        problems.append(
            f"{layout.rel(path)}: its content could not be written ({cause}); an empty AGENT_STOP "
            f"{'file' if kind == 'file' else 'directory'} was created instead: it stops the agent all the same, "
            "without saying who or why"
        )
        fsio.remove_stale_temps(path)
        return True, {**doc, "body_written": False}
    if not created:
        return False, read_stop(layout) or {}
    try:
        fsio.fsync_dir(layout.root)
    except OSError:
        pass
    fsio.remove_stale_temps(path)
    return True, doc


def create_stop(
    layout: Layout,
    operator: str,
    reason: str,
    *,
    source: str = "operator",
    principal: str | None = None,
    replace: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
    budget: Budget | None = None,
    problems: list[str] | None = None,
) -> tuple[bool, AgentStop]:
    """Create AGENT_STOP under the kill-switch lock. Returns (created, content).

    With `replace=False` an existing AGENT_STOP is kept (an automatic stop
    never overwrites the operator's own); returns (False, existing info).
    If the lock cannot be had within `timeout`/`budget`, AGENT_STOP is
    created all the same where none exists (never replacing one), and the
    busy lock is added to `problems`.  Does not touch the run state: use
    `stop` or `auto_stop` for both together.
    """
    probs = problems if problems is not None else []
    doc = render_stop(operator, reason, source=source, principal=principal)
    lock = Lock(layout.kill_switch_lock, timeout, budget)
    busy = _take(lock)
    if busy is not None:
        probs.append(f"{busy}; AGENT_STOP was created without it")
        return _create(layout, doc, False, probs)
    try:
        return _create(layout, doc, replace, probs)
    finally:
        lock.release()


def _take(lock: Lock) -> CocoplusError | None:
    """Acquire `lock`; the error instead if it is busy or cannot be made (a stop then goes ahead without it)."""
    try:
        lock.acquire()
    except CocoplusError as exc:  # LockTimeout, or no inode left for the lock file
        return exc
    return None


def _secondary(problems: list[str], fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run a bookkeeping step (log, status) whose failure must not undo or hide the main action."""
    try:
        return fn(*args, **kwargs)
    except CocoplusError as exc:
        problems.append(str(exc))
        return None


def stop(
    layout: Layout,
    operator: str,
    reason: str,
    *,
    principal: str = "operator",
    timeout: float = DEFAULT_TIMEOUT,
    budget: Budget | None = None,
    stop_id: str | None = None,
    keep_existing: bool = False,
) -> dict[str, Any]:
    """`session stop`: AGENT_STOP, a steps event, status `paused`, together under the kill-switch lock.

    `stop_id`: the stop's id, chosen by its sender (a fleet stop's, so that a resume the same machine sends can
    name it before it has heard that it arrived); `keep_existing`: an AGENT_STOP already there is kept, not
    replaced (a fleet stop never replaces a stop, so a resume of it never lifts someone else's).

    Once AGENT_STOP exists the agent is stopped, so a damaged steps.jsonl
    or status file is reported in `problems` rather than failing the stop;
    an AGENT_STOP that cannot be rewritten (a directory, say) is kept, as it
    stops the agent all the same.  On a full disk an empty AGENT_STOP is
    made (`problems` says so).  Raises only if no AGENT_STOP exists afterwards.
    `replaced` is the stop this one replaced (None if there was none).
    """
    problems: list[str] = []
    doc = render_stop(operator, reason, source="operator", principal=principal, stop_id=stop_id)
    lock = Lock(layout.kill_switch_lock, timeout, budget)
    busy = _take(lock)
    if busy is None:
        try:
            previous = read_stop(layout)
            created, content = _create(layout, doc, not keep_existing, problems)
            if created:
                _secondary(
                    problems, _events().log_step, layout, "stop", operator=operator, principal=principal,
                    reason=reason, stop_id=doc["id"], budget=budget,
                )  # fmt: skip
                _secondary(
                    problems, _status().set_state, layout, "paused", f"stopped by {operator}: {reason}", budget=budget
                )
        finally:
            lock.release()
    else:
        previous = read_stop(layout)
        created, content = _create(layout, doc, False, problems)
        problems.append(f"{busy}; AGENT_STOP was made without it and the run state was not updated")
    if not os.path.lexists(layout.agent_stop):  # pragma: no cover - _create raises first
        raise CocoplusError(f"{layout.rel(layout.agent_stop)}: could not be created")
    return {
        "stopped": True,
        "stop": content if created else (previous or content),
        "replaced": previous if created else None,
        "kept_existing": not created,
        "locked": busy is None,
        "problems": problems,
    }


def auto_stop(
    layout: Layout,
    reason: str,
    *,
    source: str,
    state: str = "exited",
    operator: str = "cocoplus",
    timeout: float = DEFAULT_TIMEOUT,
    budget: Budget | None = None,
) -> dict[str, Any]:
    """A stop cocoplus makes itself (iteration cap, loop guard, cost, damaged budget).

    Under the kill-switch lock: AGENT_STOP unless one exists (an operator's
    own is never replaced) and the run state `state`.  If the lock cannot
    be had within `timeout`/`budget`, AGENT_STOP is still created and the
    state write is tried once more without waiting; what was not done is
    in `problems`, for the caller's log.  Returns `created` (this call made
    AGENT_STOP), `stop` (its content), `state_written`, `problems`.
    """
    problems: list[str] = []
    doc = render_stop(operator, reason, source=source)
    state_written = False
    lock = Lock(layout.kill_switch_lock, timeout, budget)
    busy = _take(lock)
    if busy is None:
        try:
            created, content = _create(layout, doc, False, problems)
            state_written = _secondary(problems, _status().set_state, layout, state, reason, budget=budget) is not None
            if created:
                _secondary(
                    problems, _events().log_step, layout, "stop", operator=operator, principal=doc["principal"],
                    reason=reason, source=source, stop_id=doc["id"], budget=budget,
                )  # fmt: skip
        finally:
            lock.release()
    else:
        created, content = _create(layout, doc, False, problems)
        try:  # once more, without waiting: the holder may be done by now
            _status().set_state(layout, state, reason, timeout=0)
            state_written = True
        except CocoplusError as again:
            problems.append(
                f"{busy}; AGENT_STOP was made without it, and the run state could not be set to {state} ({again})"
            )
    return {"created": created, "stop": content, "state_written": state_written, "problems": problems}


def resume(
    layout: Layout,
    operator: str,
    *,
    reset_budget: Callable[..., dict[str, Any]] | None = None,
    expect: str | None = None,
    stop_id: str | None = None,
    lift: Callable[[AgentStop], None] | None = None,
    principal: str = "operator",
    timeout: float = DEFAULT_TIMEOUT,
    budget: Budget | None = None,
) -> dict[str, Any]:
    """`session resume`: remove AGENT_STOP, log it, status `running`, together under the kill-switch lock.

    Removes only the stop it read: with `expect` (the `token` of the stop
    the operator saw, from `read_stop`) or `stop_id` (the `id` a fleet
    resume names), a different AGENT_STOP found under the lock is left in
    place and returned as `kept`.  `lift(stop)` is called under the lock
    with the stop about to be removed and raises to refuse it (the
    authority check: who may lift a stop made by whom).  With nothing to
    remove, nothing changes (`resumed` False), except that `reset_budget`
    (`iteration.reset`, given by the caller) still starts the iteration
    count again, under the same lock.  `removed` (also `previous`)
    is exactly the stop that was removed; `message` says what happened in
    one sentence.  LockTimeout (nothing removed) if the lock stays busy.
    """
    problems: list[str] = []
    with Lock(layout.kill_switch_lock, timeout, budget):
        current = read_stop(layout)
        if current is not None and current.get("present") is None:
            raise CocoplusError(f"cannot resume: {current.get('unknown')}")
        if current is not None and (
            (expect is not None and current.get("token") != expect)
            or (stop_id is not None and current.get("id") != stop_id)
        ):
            return {
                "resumed": False,
                "removed": None,
                "previous": None,
                "kept": current,
                "budget_reset": None,
                "message": (
                    f"AGENT_STOP changed since it was read: the one there now ({_describe(current)}) "
                    "was left in place; nothing was resumed"
                ),
                "problems": problems,
            }
        if current is not None and lift is not None:
            lift(current)
        reset = None
        if reset_budget is not None:
            reset = reset_budget(layout, budget=budget)
        if current is None:
            named = expect is not None or stop_id is not None
            gone = "the AGENT_STOP that was read is gone already" if named else "no AGENT_STOP was present"
            but = "" if reset is None else " except the iteration count, started again from 0"
            message = f"{gone}; nothing changed{but}"
            return {
                "resumed": False,
                "removed": None,
                "previous": None,
                "kept": None,
                "budget_reset": reset,
                "message": message,
                "problems": problems,
            }
        _remove_stop(layout.agent_stop)
        _secondary(
            problems,
            _events().log_step,
            layout,
            "resume",
            operator=operator,
            principal=principal,
            stop_id=current.get("id"),
            was_stopped=True,
            previous_reason=current.get("reason"),
            previous_operator=current.get("operator"),
            budget_reset=reset_budget is not None,
            budget=budget,
        )
        _secondary(problems, _status().set_state, layout, "running", f"resumed by {operator}", budget=budget)
    return {
        "resumed": True,
        "removed": current,
        "previous": current,
        "kept": None,
        "budget_reset": reset,
        "message": f"AGENT_STOP removed ({_describe(current)}); status running",
        "problems": problems,
    }


def _describe(info: AgentStop) -> str:
    who = info.get("operator") or "unknown"
    when = info.get("created_at") or info.get("created_at_fallback") or "an unknown time"
    why = info.get("reason") or "no reason given"
    return f"by {who} at {when}: {why}"


def _remove_stop(path: str) -> None:
    try:
        st = os.lstat(path)
        if _stat.S_ISDIR(st.st_mode):
            os.rmdir(path)
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise CocoplusError(f"{path}: cannot remove ({exc.strerror})") from None
