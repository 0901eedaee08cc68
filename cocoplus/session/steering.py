"""The one-shot steer: STEER.md, a session's own steer, and the claim protocol that delivers each exactly once.

`steer()` writes STEER.md under the steer lock, adding to a pending one
rather than replacing it.  With `session=` (a cs_ id) it writes that
session's own steer instead (`Layout.session_steer`), which only that
session's hooks claim: at its next prompt, or at its turn end
(`claim_steer(session=...)`), exactly once like the project-wide one.  A
consumer claims it by renaming it to a unique name in `steer-claimed/`
(under the same lock), delivers it, logs a `steer_injected` event with the
claim's id, then deletes the claimed file.  A claimed file left by a
consumer that died before delivering is re-delivered by the next consumer;
one whose id is already logged is only removed.  A steer that cannot be
read is never delivered: it is kept as `STEER.md.corrupt-<time>`
(`damaged_steers`) and logged as `steer_damaged`.  See
reference/reliability.md section 4.1.

Standard library only.  The hook loads it only when a steer is pending or
left half-delivered (`hook/runner.py` looks first), and for the turn-end
hold.
"""

from __future__ import annotations

import os

from cocoplus.core import clock, fsio, jsonl
from cocoplus.core.errors import CocoplusError, StateCorrupt
from cocoplus.core.lock import DEFAULT_TIMEOUT, Budget, Lock
from cocoplus.core.paths import Layout
from cocoplus.session import events

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any

MAX_STEER_BYTES = 64 * 1024
STEER_SEPARATOR = "\n\n"


def _steer_paths(layout: Layout, session: str | None) -> tuple[str, str]:
    """(the pending steer, the directory its claims go to): the project's, or one session's."""
    if session is None:
        return layout.steer, layout.steer_claimed_dir
    return layout.session_steer(session), layout.session_steer_claimed_dir(session)


def pending_steer(layout: Layout, session: str | None = None) -> str | None:
    try:
        text = fsio.read_text(_steer_paths(layout, session)[0], limit=MAX_STEER_BYTES * 4)
    except CocoplusError:
        return None
    return text


def steer(
    layout: Layout,
    instruction: str,
    operator: str | None = None,
    *,
    budget: Budget | None = None,
    session: str | None = None,
    principal: str = "operator",
) -> dict[str, Any]:
    """Write STEER.md (or, with `session`, that session's own steer).

    A pending one is kept, the new one added after it."""
    text = instruction.strip("\n")
    if not text.strip():
        raise CocoplusError("steer: the instruction is empty")
    path, _claimed = _steer_paths(layout, session)
    problems: list[str] = []
    with Lock(layout.lock("steer"), DEFAULT_TIMEOUT, budget):
        try:
            existing = fsio.read_text(path, limit=MAX_STEER_BYTES * 4)
        except StateCorrupt as exc:
            # Nothing deliverable in it: keep it aside for the operator, and write the new steer.
            kept = fsio.quarantine(path)
            problems.append(str(StateCorrupt(exc.path, exc.cause, kept)))
            existing = None
        combined = text if not existing or not existing.strip() else existing.rstrip("\n") + STEER_SEPARATOR + text
        if len(combined.encode("utf-8")) > MAX_STEER_BYTES:
            raise CocoplusError(f"{path}: a pending steer plus this one would exceed {MAX_STEER_BYTES // 1024} KiB")
        if session is not None:
            fsio.ensure_dir(os.path.dirname(path))
        fsio.atomic_write_text(path, combined + "\n")
    appended = bool(existing and existing.strip())
    try:  # the steer is written: a steps.jsonl that cannot take the line is reported, not an error
        events.log_step(
            layout, "steer_queued", operator=operator, principal=principal, chars=len(text), appended=appended,
            target=session,
        )  # fmt: skip
    except CocoplusError as exc:
        problems.append(str(exc))
    return {"pending": combined + "\n", "appended": appended, "problems": problems}


class Claim:
    __slots__ = ("id", "path", "text", "redelivery", "source", "target")

    def __init__(
        self, claim_id: str, path: str, text: str, redelivery: bool, source: str = "", target: str | None = None
    ) -> None:
        self.id = claim_id
        self.path = path
        self.text = text
        self.redelivery = redelivery
        self.source = source  # the steer file it was claimed from (put back there by `release_steer`)
        self.target = target  # the cs_ id of a per-session steer; None for the project-wide one


def _claim_name(pid: int) -> str:
    return f"st_{clock.compact()}_{pid}_{os.urandom(4).hex()}.md"


def _claims(claimed_dir: str) -> list[str]:
    """The claims in `claimed_dir`, oldest first (none when it does not exist)."""
    try:
        return sorted(n for n in os.listdir(claimed_dir) if n.startswith("st_") and n.endswith(".md"))
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise CocoplusError(f"{claimed_dir}: cannot be listed ({exc.strerror or exc})") from None


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
    for r in jsonl.read_jsonl(layout.steps).records:
        if r.get("event") == "steer_injected" and isinstance(r.get("steer_id"), str):
            ids.add(r["steer_id"])
    return ids


def claim_steer(
    layout: Layout, timeout: float = 5.0, *, budget: Budget | None = None, session: str | None = None
) -> Claim | None:
    """Take the pending steer (with `session`: that session's own) for delivery, exactly one consumer wins.

    First re-delivers a claim abandoned by a consumer that died (its pid is
    gone and its id was never logged as injected).  A steer that cannot be
    read (not UTF-8, too large, not a file) is not delivered: it is kept as
    `STEER.md.corrupt-<time>`, logged as `steer_damaged`, and None is
    returned, so the agent is told nothing it did not get.
    """
    source, claimed_dir = _steer_paths(layout, session)
    if not os.path.lexists(source) and not _claims(claimed_dir):
        # Nothing pending and nothing left half-delivered (the common prompt): no lock.  A steer
        # written after this look is delivered at the next prompt, as if it had come a moment later.
        return None
    with Lock(layout.lock("steer"), timeout, budget):
        orphan = _take_orphan(layout, claimed_dir, budget, source, session)
        if orphan is not None:
            return orphan
        if not os.path.lexists(source):
            return None
        name = _claim_name(os.getpid())
        dest = os.path.join(claimed_dir, name)
        fsio.refuse_linked_dirs(dest)
        try:
            os.rename(source, dest)
        except FileNotFoundError:
            try:
                fsio.ensure_dir(claimed_dir)
                os.rename(source, dest)
            except FileNotFoundError:
                return None
        text = _read_claimed(layout, dest, budget, source)
    if text is None:
        return None
    if len(text.encode("utf-8")) > MAX_STEER_BYTES:
        text = text.encode("utf-8")[:MAX_STEER_BYTES].decode("utf-8", "ignore") + "\n[steer truncated at 64 KiB]"
    return Claim(name[:-3], dest, text, redelivery=False, source=source, target=session)


def _read_claimed(layout: Layout, path: str, budget: Budget | None, source: str | None = None) -> str | None:
    """The claimed steer's text; None (and the file kept aside as a damaged copy) if it cannot be read."""
    try:
        return fsio.read_text(path, limit=MAX_STEER_BYTES * 4) or ""
    except CocoplusError as exc:
        cause = exc.cause if isinstance(exc, StateCorrupt) else str(exc)
        try:
            kept = fsio.quarantine(path, to=source or layout.steer)
        except CocoplusError as again:
            kept = None
            cause += f"; {again}"
        try:
            events.log_step(
                layout, "steer_damaged", cause=cause, kept_at=layout.rel(kept) if kept else None, budget=budget
            )
        except CocoplusError:
            pass  # the damaged copy itself is what `session status` reports
        return None


def damaged_steers(layout: Layout) -> list[str]:
    """Steers that could not be delivered, kept aside as `STEER.md.corrupt-<time>` (absolute paths, oldest first)."""
    return fsio.quarantined_copies(layout.steer)


def _take_orphan(
    layout: Layout,
    claimed_dir: str,
    budget: Budget | None = None,
    source: str | None = None,
    session: str | None = None,
) -> Claim | None:
    names = _claims(claimed_dir)
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
        text = _read_claimed(layout, new_path, budget, source)
        if text is None:
            continue
        return Claim(name[:-3], new_path, text, redelivery=True, source=source or layout.steer, target=session)
    return None


def finish_steer(
    layout: Layout,
    claim: Claim,
    session: str | None = None,
    runtime: str | None = None,
    *,
    budget: Budget | None = None,
) -> None:
    """After the text was handed to the runtime: log it once, then drop the claimed file."""
    events.log_step(
        layout,
        "steer_injected",
        steer_id=claim.id,
        session=session,
        runtime=runtime,
        chars=len(claim.text),
        redelivery=claim.redelivery or None,
        target=claim.target,
        budget=budget,
    )
    _unlink(claim.path)


def release_steer(layout: Layout, claim: Claim, *, budget: Budget | None = None) -> None:
    """Put a claimed steer back where it was claimed from (the runtime cannot take it now)."""
    source = claim.source or layout.steer
    with Lock(layout.lock("steer"), DEFAULT_TIMEOUT, budget):
        if os.path.lexists(source):
            # A newer steer arrived meanwhile: keep both, older first.
            newer = fsio.read_text(source) or ""
            fsio.atomic_write_text(source, claim.text.rstrip("\n") + STEER_SEPARATOR + newer)
            _unlink(claim.path)
        else:
            os.rename(claim.path, source)


def in_flight(layout: Layout, session: str | None = None) -> int:
    try:
        return sum(1 for n in os.listdir(_steer_paths(layout, session)[1]) if n.endswith(".md"))
    except OSError:
        return 0


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
