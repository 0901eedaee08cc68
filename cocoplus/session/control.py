"""Operator controls: the AGENT_STOP kill switch and one-shot STEER.md.

Kill switch: the *existence* of `.cocoplus/AGENT_STOP` stops the agent;
its content (operator, time, reason) is only for the message.

Steering: `steer()` writes STEER.md under the steer lock, adding to a
pending one rather than replacing it.  A consumer claims it by renaming it
to a unique name in `steer-claimed/` (under the same lock), delivers it,
logs a `steer_injected` event with the claim's id, then deletes the claimed
file.  A claimed file left by a consumer that died before delivering is
re-delivered by the next consumer; one whose id is already logged is only
removed.  See reference/reliability.md section 4.1.
"""

from __future__ import annotations

import errno
import os

from cocoplus.core import clock, fsio
from cocoplus.core.errors import CocoplusError, StateCorrupt
from cocoplus.core.lock import Lock
from cocoplus.core.paths import Layout
from cocoplus.core.records import parse_stop, render_stop
from cocoplus.session import events, status

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any


MAX_STEER_BYTES = 64 * 1024
STEER_SEPARATOR = "\n\n"


# -- kill switch ----------------------------------------------------------------


def stop_present(layout: Layout) -> bool:
    return os.path.lexists(layout.agent_stop)


def read_stop(layout: Layout) -> dict[str, Any] | None:
    """What AGENT_STOP says, or None if there is none. Never raises for its content."""
    path = layout.agent_stop
    if not os.path.lexists(path):
        return None
    data: bytes | None = None
    created = None
    try:
        st = os.lstat(path)
        created = clock.iso(st.st_mtime)
        if os.path.isfile(path) and not os.path.islink(path):
            with open(path, "rb") as fh:
                data = fh.read(16384)
    except OSError:
        data = None
    info = parse_stop(data)
    info["present"] = True
    if info["created_at"] is None:
        info["created_at_fallback"] = created
    return info


def create_stop(
    layout: Layout,
    operator: str,
    reason: str,
    *,
    source: str = "operator",
    replace: bool = True,
) -> tuple[bool, dict[str, Any]]:
    """Create AGENT_STOP. Returns (created, content).

    With `replace=False` an existing AGENT_STOP is kept (an automatic stop
    never overwrites the operator's own); returns (False, existing info).
    """
    doc = render_stop(operator, reason, source=source)
    data = fsio.dumps(doc).encode("utf-8")
    if replace:
        fsio.atomic_write_bytes(layout.agent_stop, data)
        return True, doc
    # Write aside, then link into place: fails if one exists, and nobody
    # ever sees a half-written file.
    tmp = f"{layout.agent_stop}.tmp-{os.getpid()}-{os.urandom(4).hex()}"
    fsio.atomic_write_bytes(tmp, data)
    try:
        os.link(tmp, layout.agent_stop)
        created = True
    except FileExistsError:
        created = False
    except OSError as exc:  # pragma: no cover - filesystems without hard links
        if exc.errno not in (errno.EPERM, errno.ENOTSUP):
            raise
        created = not os.path.lexists(layout.agent_stop)
        if created:
            os.replace(tmp, layout.agent_stop)
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass
    if not created:
        return False, read_stop(layout) or {}
    fsio.fsync_dir(layout.root)
    return True, doc


def _secondary(problems: list[str], fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run a bookkeeping step (log, status) whose failure must not undo or hide the main action."""
    try:
        return fn(*args, **kwargs)
    except CocoplusError as exc:
        problems.append(str(exc))
        return None


def stop(layout: Layout, operator: str, reason: str) -> dict[str, Any]:
    """`session stop`: AGENT_STOP, a steps event, status `paused`.

    Once AGENT_STOP exists the agent is stopped, so a damaged steps.jsonl
    or status file is reported in `problems` rather than failing the stop;
    an AGENT_STOP that cannot be rewritten (a directory, say) is kept, as it
    stops the agent all the same.
    """
    previous = read_stop(layout)
    problems: list[str] = []
    kept_existing = False
    try:
        _, doc = create_stop(layout, operator, reason, source="operator", replace=True)
    except CocoplusError as exc:
        if not stop_present(layout):
            raise
        kept_existing = True
        doc = dict(previous or {})
        problems.append(f"{exc}; the AGENT_STOP already there was kept and still stops the agent")
    _secondary(problems, events.log_step, layout, "stop", operator=operator, reason=reason)
    _secondary(problems, status.set_state, layout, "paused", f"stopped by {operator}: {reason}")
    return {"stopped": True, "stop": doc, "replaced": previous, "kept_existing": kept_existing, "problems": problems}


def resume(layout: Layout, operator: str, *, reset_budget: bool = False) -> dict[str, Any]:
    """`session resume`: remove AGENT_STOP, log it, status `running`.

    With no AGENT_STOP there is nothing to resume: the status and the log
    stay as they are (`resumed` false); only an asked-for budget reset happens.
    """
    previous = read_stop(layout)
    if previous is not None:
        path = layout.agent_stop
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                os.rmdir(path)
            else:
                os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise CocoplusError(f"{path}: cannot remove ({exc.strerror})") from None
    reset = None
    if reset_budget:
        from cocoplus.session import iteration

        reset = iteration.reset(layout)
    problems: list[str] = []
    if previous is None:
        if reset is not None:
            _secondary(problems, events.log_step, layout, "budget_reset", operator=operator)
        return {"resumed": False, "previous": None, "budget_reset": reset, "problems": problems}
    _secondary(
        problems,
        events.log_step,
        layout,
        "resume",
        operator=operator,
        was_stopped=previous is not None,
        previous_reason=(previous or {}).get("reason"),
        budget_reset=bool(reset_budget),
    )
    _secondary(problems, status.set_state, layout, "running", f"resumed by {operator}")
    return {"resumed": previous is not None, "previous": previous, "budget_reset": reset, "problems": problems}


# -- steering -------------------------------------------------------------------------


def pending_steer(layout: Layout) -> str | None:
    try:
        text = fsio.read_text(layout.steer, limit=MAX_STEER_BYTES * 4)
    except CocoplusError:
        return None
    return text


def steer(layout: Layout, instruction: str, operator: str | None = None) -> dict[str, Any]:
    """Write STEER.md; a steer not yet consumed is kept and the new one added after it."""
    text = instruction.strip("\n")
    if not text.strip():
        raise CocoplusError("steer: the instruction is empty")
    problems: list[str] = []
    with Lock(layout.lock("steer")):
        try:
            existing = fsio.read_text(layout.steer, limit=MAX_STEER_BYTES * 4)
        except StateCorrupt as exc:
            # Nothing deliverable in it: keep it aside for the operator, and write the new steer.
            kept = fsio.quarantine(layout.steer)
            problems.append(str(StateCorrupt(exc.path, exc.cause, kept)))
            existing = None
        combined = text if not existing or not existing.strip() else existing.rstrip("\n") + STEER_SEPARATOR + text
        if len(combined.encode("utf-8")) > MAX_STEER_BYTES:
            raise CocoplusError(
                f"{layout.steer}: a pending steer plus this one would exceed {MAX_STEER_BYTES // 1024} KiB"
            )
        fsio.atomic_write_text(layout.steer, combined + "\n")
    appended = bool(existing and existing.strip())
    _secondary(problems, events.log_step, layout, "steer_queued", operator=operator, chars=len(text), appended=appended)
    return {"pending": combined + "\n", "appended": appended, "problems": problems}


class Claim:
    __slots__ = ("id", "path", "text", "redelivery")

    def __init__(self, claim_id: str, path: str, text: str, redelivery: bool) -> None:
        self.id = claim_id
        self.path = path
        self.text = text
        self.redelivery = redelivery


def _claim_name(pid: int) -> str:
    return f"st_{clock.compact()}_{pid}_{os.urandom(4).hex()}.md"


def _claim_pid(name: str) -> int | None:
    parts = name.split("_")
    try:
        return int(parts[2])
    except (IndexError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def delivered_ids(layout: Layout) -> set[str]:
    ids: set[str] = set()
    for r in fsio.read_jsonl(layout.steps).records:
        if r.get("event") == "steer_injected" and isinstance(r.get("steer_id"), str):
            ids.add(r["steer_id"])
    return ids


def claim_steer(layout: Layout, timeout: float = 5.0) -> Claim | None:
    """Take the pending steer for delivery, exactly one consumer wins.

    First re-delivers a claim abandoned by a consumer that died (its pid is
    gone and its id was never logged as injected).
    """
    claimed_dir = layout.steer_claimed_dir
    with Lock(layout.lock("steer"), timeout):
        orphan = _take_orphan(layout, claimed_dir)
        if orphan is not None:
            return orphan
        if not os.path.lexists(layout.steer):
            return None
        name = _claim_name(os.getpid())
        dest = os.path.join(claimed_dir, name)
        try:
            os.rename(layout.steer, dest)
        except FileNotFoundError:
            try:
                os.makedirs(claimed_dir, mode=0o700, exist_ok=True)
                os.rename(layout.steer, dest)
            except FileNotFoundError:
                return None
    try:
        text = fsio.read_text(dest, limit=MAX_STEER_BYTES * 4) or ""
    except CocoplusError as exc:
        # Keep it aside for the operator; there is nothing deliverable in it.
        kept = fsio.quarantine(dest)
        events.log_step(layout, "steer_unreadable", error=str(exc), kept_at=kept)
        return None
    if len(text.encode("utf-8")) > MAX_STEER_BYTES:
        text = text.encode("utf-8")[:MAX_STEER_BYTES].decode("utf-8", "ignore") + "\n[steer truncated at 64 KiB]"
    return Claim(name[:-3], dest, text, redelivery=False)


def _take_orphan(layout: Layout, claimed_dir: str) -> Claim | None:
    try:
        names = sorted(n for n in os.listdir(claimed_dir) if n.startswith("st_") and n.endswith(".md"))
    except FileNotFoundError:
        return None
    if not names:
        return None
    mine = os.getpid()
    delivered: set[str] | None = None
    for name in names:
        pid = _claim_pid(name)
        if pid is not None and (pid == mine or _alive(pid)):
            continue  # a live consumer (this process included) is still delivering it
        path = os.path.join(claimed_dir, name)
        if delivered is None:
            delivered = delivered_ids(layout)
        if name[:-3] in delivered:
            _unlink(path)
            continue
        # Re-claim under our pid so no one else takes it while we deliver.
        new_name = _claim_name(mine)
        new_path = os.path.join(claimed_dir, new_name)
        try:
            os.rename(path, new_path)
        except FileNotFoundError:
            continue
        try:
            text = fsio.read_text(new_path, limit=MAX_STEER_BYTES * 4) or ""
        except CocoplusError:
            fsio.quarantine(new_path)
            continue
        return Claim(name[:-3], new_path, text, redelivery=True)
    return None


def finish_steer(layout: Layout, claim: Claim, session: str | None = None, runtime: str | None = None) -> None:
    """After the text was handed to the runtime: log it once, then drop the claimed file."""
    events.log_step(
        layout,
        "steer_injected",
        steer_id=claim.id,
        session=session,
        runtime=runtime,
        chars=len(claim.text),
        redelivery=claim.redelivery or None,
    )
    _unlink(claim.path)


def release_steer(layout: Layout, claim: Claim) -> None:
    """Put a claimed steer back (the runtime cannot take added context)."""
    with Lock(layout.lock("steer")):
        if os.path.lexists(layout.steer):
            # A newer steer arrived meanwhile: keep both, older first.
            newer = fsio.read_text(layout.steer) or ""
            fsio.atomic_write_text(layout.steer, claim.text.rstrip("\n") + STEER_SEPARATOR + newer)
            _unlink(claim.path)
        else:
            os.rename(claim.path, layout.steer)


def in_flight(layout: Layout) -> int:
    try:
        return sum(1 for n in os.listdir(layout.steer_claimed_dir) if n.endswith(".md"))
    except OSError:
        return 0


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
