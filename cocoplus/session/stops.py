"""Per-session stops: `session stop --session ID` blocks one session's tools and no other's.

One file per stopped session, `.cocoplus/session-stops/<cs_id>.json`
(`{"session", "alias", "runtime", "runtime_session_id", "operator", "reason",
"created_at"}`), written and removed under the `session-stops` lock.  The
directory exists only while some session is stopped: the last resume removes
it, so the pre-tool hook's fast path needs one `lstat` to know that no
session is stopped, and reads no payload (see `cocoplus.hook.entry`).

The project-wide kill switch (AGENT_STOP, `killswitch`) is separate and wins:
a per-session resume never lifts it, and a project-wide resume never lifts
a per-session stop.  Like AGENT_STOP, a session stop whose existence cannot
be known (its directory cannot be searched) counts as a stop (`state`).
Standard library only: the hook reads it.
"""

from __future__ import annotations

import errno
import os

from cocoplus.core import clock, fsio
from cocoplus.core.errors import CocoplusError, StateCorrupt
from cocoplus.core.lock import DEFAULT_TIMEOUT, Budget, Lock
from cocoplus.core.paths import Layout
from cocoplus.core.records import SCHEMA_VERSION, new_stop_id

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Callable
    from typing import Any

    from cocoplus.core.shapes import SessionRecord, SessionStop


def any_present(layout: Layout) -> bool | None:
    """Whether some session is stopped: True, False, or None when that cannot be known."""
    try:
        os.lstat(layout.session_stops_dir)
    except FileNotFoundError:
        return False
    except OSError:
        return None
    return True


def state(layout: Layout, cs_id: str) -> tuple[bool | None, str]:
    """(True, why) if this session is stopped, (False, why) if not, (None, why) if that cannot be known."""
    path = layout.session_stop(cs_id)
    try:
        os.lstat(path)
    except FileNotFoundError:
        return False, f"{path} does not exist"
    except OSError as exc:
        code = errno.errorcode.get(exc.errno or 0, "error")
        return None, f"cannot tell whether {path} exists: {exc.strerror or exc} ({code})"
    return True, f"{path} exists"


def read(layout: Layout, cs_id: str) -> SessionStop | None:
    """The stop of this session, or None. A stop whose content cannot be read still stops it: `damaged` says why."""
    stopped, why = state(layout, cs_id)
    if stopped is False:
        return None
    if stopped is None:
        return {"session": cs_id, "present": None, "unknown": why}
    try:
        doc = _read(layout.session_stop(cs_id))
    except CocoplusError as exc:
        return {"session": cs_id, "present": True, "damaged": str(exc)}
    if doc is None:  # removed meanwhile
        return None
    return {**doc, "present": True}


def _read(path: str) -> SessionStop | None:
    """The stop in `path`, None if there is none; StateCorrupt if it cannot be read."""
    return fsio.read_json(path)  # type: ignore[return-value]  # a stop: `stop` wrote it


def sentence(layout: Layout, cs_id: str) -> str | None:
    """None if this session may use tools; else the one sentence its blocked tool is told."""
    info = read(layout, cs_id)
    if info is None:
        return None
    if info.get("present") is None:
        return (
            f"cocoplus: whether this session is stopped cannot be read ({info['unknown']}), so no tools may run. "
            "The operator must make .cocoplus/session-stops searchable by the agent's user (or remove it)."
        )
    who = info.get("alias") or cs_id
    by = info.get("operator") or "unknown"
    when = info.get("created_at") or "an unknown time"
    why = info.get("reason") or "no reason given"
    return (
        f"cocoplus: this session ({who}) was stopped by {by} at {when}: {why}. Its tools are blocked; other sessions "
        f"carry on. Stop here and wait: the operator resumes it with `cocoplus session resume --session {who}`."
    )


def stop(
    layout: Layout,
    rec: SessionRecord,
    operator: str,
    reason: str,
    *,
    principal: str = "operator",
    budget: Budget | None = None,
    stop_id: str | None = None,
    keep_existing: bool = False,
) -> dict[str, Any]:
    """Stop one session's tools (replacing an earlier stop of the same session, unless `keep_existing`: a fleet
    stop keeps it, as `killswitch.stop` does).  `stop_id`: the id its sender chose."""
    if not reason.strip():
        raise CocoplusError("stop: the reason is empty")
    cs = rec["id"]
    doc: SessionStop = {
        "schema_version": SCHEMA_VERSION,
        "id": stop_id or new_stop_id(),
        "principal": principal,
        "session": cs,
        "alias": rec.get("alias"),
        "runtime": rec.get("runtime"),
        "runtime_session_id": rec.get("runtime_session_id"),
        "operator": operator,
        "reason": reason,
        "created_at": clock.iso(),
    }
    problems: list[str] = []
    with Lock(layout.lock("session-stops"), DEFAULT_TIMEOUT, budget):
        previous = read(layout, cs)
        if keep_existing and previous is not None:
            return {
                "stopped": True,
                "session": cs,
                "alias": rec.get("alias"),
                "stop": previous,
                "replaced": None,
                "kept_existing": True,
                "project_stopped": os.path.lexists(layout.agent_stop),
                "problems": problems,
            }
        fsio.ensure_dir(layout.session_stops_dir)
        fsio.atomic_write_json(layout.session_stop(cs), doc)
    from cocoplus.session import events  # deferred: the hooks read stops, only a stop writes one

    try:
        events.log_step(
            layout, "session_stop", session=cs, alias=rec.get("alias"), operator=operator, principal=principal,
            reason=reason, stop_id=doc["id"], budget=budget,
        )  # fmt: skip
    except CocoplusError as exc:
        problems.append(str(exc))
    return {
        "stopped": True,
        "session": cs,
        "alias": rec.get("alias"),
        "stop": doc,
        "replaced": _shown(previous),
        "project_stopped": os.path.lexists(layout.agent_stop),
        "problems": problems,
    }


def auto_stop(
    layout: Layout,
    rec: SessionRecord,
    reason: str,
    *,
    principal: str,
    source: str,
    timeout: float = DEFAULT_TIMEOUT,
    budget: Budget | None = None,
) -> SessionStop | None:
    """A stop cocoplus makes itself for this session alone (`principal` `loop-guard` or `budget`): made unless the
    session is stopped already (an operator's own stop is never replaced); the stop made, or None."""
    cs = rec["id"]
    doc: SessionStop = {
        "schema_version": SCHEMA_VERSION, "id": new_stop_id(), "principal": principal, "session": cs,
        "alias": rec.get("alias"), "runtime": rec.get("runtime"), "runtime_session_id": rec.get("runtime_session_id"),
        "operator": "cocoplus", "reason": reason, "created_at": clock.iso(), "source": source,
    }  # fmt: skip
    with Lock(layout.lock("session-stops"), timeout, budget):
        if read(layout, cs) is not None:
            return None
        fsio.ensure_dir(layout.session_stops_dir)
        fsio.atomic_write_json(layout.session_stop(cs), doc)
    return doc


def resume(
    layout: Layout,
    rec: SessionRecord,
    operator: str,
    *,
    principal: str = "operator",
    stop_id: str | None = None,
    lift: Callable[[SessionStop], None] | None = None,
    budget: Budget | None = None,
) -> dict[str, Any]:
    """Lift one session's stop (AGENT_STOP, if present, still stops every session).

    `stop_id`: lift only that stop (a newer one is kept, `kept`); `lift(stop)` is called under the lock
    and raises to refuse (the authority check).
    """
    cs = rec["id"]
    problems: list[str] = []
    with Lock(layout.lock("session-stops"), DEFAULT_TIMEOUT, budget):
        current = read(layout, cs)
        if current is not None and current.get("present") is None:
            raise CocoplusError(f"cannot resume {rec.get('alias') or cs}: {current['unknown']}")
        if current is not None and stop_id is not None and current.get("id") != stop_id:
            who = rec.get("alias") or cs
            return {
                "resumed": False, "session": cs, "alias": rec.get("alias"), "removed": None, "kept": _shown(current),
                "project_stopped": os.path.lexists(layout.agent_stop),
                "message": f"{who}'s stop changed since it was named ({stop_id}): the one there now was kept",
                "problems": problems,
            }  # fmt: skip
        if current is not None and lift is not None:
            lift(current)
        if current is not None:
            _remove(layout.session_stop(cs))
            try:
                os.rmdir(layout.session_stops_dir)  # only when it is empty: the fast path sees no stop at all
            except OSError:
                pass
    if current is not None:
        from cocoplus.session import events  # deferred, as in `stop`

        try:
            events.log_step(
                layout, "session_resume", session=cs, alias=rec.get("alias"), operator=operator, principal=principal,
                stop_id=current.get("id"), previous_reason=current.get("reason"),
                previous_operator=current.get("operator"), budget=budget,
            )  # fmt: skip
        except CocoplusError as exc:
            problems.append(str(exc))
    project = os.path.lexists(layout.agent_stop)
    who = rec.get("alias") or cs
    if current is None:
        message = f"{who} was not stopped; nothing changed"
    else:
        message = f"{who} may use tools again"
    if project:
        message += "; AGENT_STOP still stops every session (`cocoplus session resume` lifts it)"
    return {
        "resumed": current is not None,
        "session": cs,
        "alias": rec.get("alias"),
        "removed": _shown(current),
        "kept": None,
        "project_stopped": project,
        "message": message,
        "problems": problems,
    }


def list_stops(layout: Layout) -> tuple[list[SessionStop], list[str]]:
    """Every session stop (oldest first) and one line per file that cannot be read."""
    try:
        names = sorted(os.listdir(layout.session_stops_dir))
    except FileNotFoundError:
        return [], []
    except OSError as exc:
        return [], [f"{layout.session_stops_dir}: cannot list ({exc.strerror})"]
    out: list[SessionStop] = []
    problems: list[str] = []
    for name in names:
        if not (name.startswith("cs_") and name.endswith(".json")):
            continue
        try:
            doc = _read(os.path.join(layout.session_stops_dir, name))
        except (StateCorrupt, CocoplusError) as exc:
            problems.append(str(exc))
            out.append({"session": name[:-5], "present": True, "damaged": str(exc)})
            continue
        if doc is not None:
            out.append({**doc, "present": True})
    out.sort(key=lambda d: d.get("created_at") or "")
    return out, problems


def _shown(info: SessionStop | None) -> dict[str, Any] | None:
    return None if info is None else {k: v for k, v in info.items() if k not in ("present", "schema_version")}


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise CocoplusError(f"{path}: cannot remove ({exc.strerror})") from None
