"""Agent-runtime sessions seen by the hooks: `.cocoplus/sessions/<cs_id>.json`.

Each runtime session gets a cocoplus id `cs_...` (safe as a file name,
derived from the runtime's id so concurrent hooks agree on it without a
lookup) and a short alias by runtime (`cc1`, `cx1`, `gm1`, `cu1`, `ct1`: each
adapter's ALIAS_PREFIX).  Any of
the three names a session wherever one is asked for.

Attention changes and exits are also appended to
`supervision/signals.jsonl`, which the supervisor reads to decide whether
to wake the main brain.

Whether a session has ended is known from its runtime's SessionEnd hook,
or, for a runtime whose recorded process is the session's own
(`ENDS_WITH_PROCESS`), from that process being gone: a runtime killed by
SIGKILL or SIGTERM runs no hook at all.  `list_sessions`, which every
listing, the supervisor and the workers read through, records such a
session `exited` and appends its exit signal, once (`settle_exits`).
"""

from __future__ import annotations

import os
import time

from cocoplus.core import clock, fsio, jsonfast, vocab
from cocoplus.core.errors import CocoplusError, NotFound, StateCorrupt
from cocoplus.core.lock import DEFAULT_TIMEOUT, Budget, Lock
from cocoplus.core.paths import Layout, is_valid_id
from cocoplus.core.records import SCHEMA_VERSION, check_session
from cocoplus.runtimes import registry as runtimes

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Callable, Mapping
    from typing import Any, Unpack

    from cocoplus.core.shapes import SessionRecord, Signal, SignalExtra


def cs_id_for(runtime_session_id: str) -> str:
    """`cs_<runtime id>` when that id is safe as a file name, else a checksum form."""
    rid = runtime_session_id
    if is_valid_id(rid) and len(rid) <= 100:
        return "cs_" + rid
    raw = rid.encode("utf-8", "surrogatepass")
    import zlib  # deferred: a shared library to load, for the rare id that is not safe as a file name

    return f"cs_x{zlib.crc32(raw):08x}{zlib.adler32(raw):08x}{len(raw):x}"


def _lock(layout: Layout, timeout: float = DEFAULT_TIMEOUT, budget: Budget | None = None) -> Lock:
    return Lock(layout.lock("sessions"), timeout, budget)


# A line of `sessions/<cs>.calls`: the call's fingerprint (16 hex digits, its input's length in 8) and a newline.
CALL_WIDTH = 25
# A PostToolUse of a running session with nothing to change only appends its call; the record itself is
# written again at least this often, so what it says of the session (state, attention, last event) stays fresh.
RECORD_REFRESH_S = 60.0


def read_record(layout: Layout, cs_id: str) -> SessionRecord | None:
    """The session's record, with what its call log adds: `tool_calls` and the last event's time (`record_call`)."""
    path = layout.session_record(cs_id)
    obj = fsio.read_json(path)
    if obj is None:
        return None
    return _with_calls(layout, check_session(obj, path))


def attention_of(rec: Mapping[str, Any]) -> str | None:
    """The one definition of a session's attention, for every door and the brain's prompt: a session that has
    ended waits for nothing its runtime can do (`pending`, `awaiting_authorization` end with it); a question it
    left open (`awaiting_decision`) is still open."""
    attention = rec.get("attention")
    if attention is None or rec.get("state") in vocab.ACTIVE_STATES:
        return attention
    return attention if attention == "awaiting_decision" else None


def _with_calls(layout: Layout, rec: SessionRecord) -> SessionRecord:
    try:
        st = os.lstat(layout.session_calls(rec["id"]))
    except (OSError, ValueError, CocoplusError):
        return rec
    if "calls_base" in rec:  # counted from the log since the record learned of it
        rec["tool_calls"] = int(rec.get("calls_base") or 0) + st.st_size // CALL_WIDTH
    at = clock.iso(st.st_mtime)
    if at > str(rec.get("last_event_at") or ""):
        rec["last_event_at"] = at
        rec["last_event"] = rec.get("last_tool_event") or rec.get("last_event")
    return rec


def calls_log_id(layout: Layout, cs_id: str) -> int | None:
    """The session's call log's file (its inode), or None where it cannot be told."""
    try:
        return os.lstat(layout.session_calls(cs_id)).st_ino
    except (OSError, ValueError, CocoplusError):
        return None


def record_call(layout: Layout, cs_id: str, fingerprint: str, tail: int = 0) -> tuple[int, list[str]]:
    """Append this tool call to the session's call log: (how many lines it holds now, the last `tail` fingerprints).

    One append of a fixed-width line, no lock and no rewrite: the loop guard's streak and the count come from
    the log (`read_record` adds them to the record).  Not synced (one fsync less on every tool call): a power
    loss may cost its last lines, so the loop guard counts a streak anew and the count shows a few calls fewer;
    what stops work is kept durably elsewhere (the iteration budget, session/iteration.py; stops).
    """
    return append_call(layout.session_calls(cs_id), fingerprint, tail)


def append_call(path: str, fingerprint: str, tail: int = 0) -> tuple[int, list[str]]:
    """`record_call` into the call log `path` (a session's, or a worker's whose runtime names no session)."""
    line = (fingerprint[:24].ljust(24, "0") + "\n").encode("ascii")
    count, last = fsio.append_fixed(path, line, tail, durable=False)
    return count, [
        last[i : i + 24].decode("ascii", "replace") for i in range(0, len(last) - CALL_WIDTH + 1, CALL_WIDTH)
    ]


def _sorted(value: Any) -> Any:
    """`value` with dict keys in order, so equal inputs give equal fingerprints."""
    if isinstance(value, dict):
        return {str(k): _sorted(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, (list, tuple)):
        return [_sorted(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)


_M61 = (1 << 61) - 1  # a Mersenne prime


def fingerprint(payload: dict[str, Any]) -> str:
    """Tool and input, reduced to a short text that is equal for equal calls (the runaway-loop guard).

    The payload as sorted JSON, read as one integer modulo a 61-bit prime, plus
    its length: 24 hex digits (the width of the session's call log), built-in
    arithmetic, stable across processes (unlike `hash`), and no extension
    module to load on every tool call.
    """
    tool = payload.get("tool_name") or payload.get("command") or ""
    body = payload.get("tool_input")
    if body is None:
        body = payload.get("command")
    try:
        text = jsonfast.dumps([tool, _sorted(body)])
    except (TypeError, ValueError):
        text = repr((tool, body))
    raw = text.encode("utf-8", "surrogatepass")
    return f"{int.from_bytes(raw, 'little') % _M61:016x}{min(len(raw), 0xFFFFFFFF):08x}"


def run_length(fp: str, last: list[str]) -> int:
    """The run of calls equal to `fp` at the end of `last` (the call log's last fingerprints, this call's
    included): the loop guard's count.  Pure: the hook and `cocoplus replay` both count with it."""
    run = 0
    for prior in reversed(last):
        if prior != fp:
            break
        run += 1
    return run


def stall_due(since: float | None, wall: float, threshold: float, last_fired: float | None, cooldown: float) -> bool:
    """Whether a worker in an attention state since `since` (epoch seconds) is a stall at `wall`: there `threshold`
    seconds or more, and not told of for the same state within `cooldown` (`last_fired`).  The watcher's stall
    watchdog decides with it live, and `cocoplus replay` over a recorded run."""
    if since is None or wall - since < threshold:
        return False
    return last_fired is None or wall - last_fired >= cooldown


def loop_verdict(count: int, repeats: int) -> str | None:
    """What the loop guard says of a call that ends a run of `count` equal calls, with `[session]
    loop_guard_repeats` = `repeats`: `ask` (a checkpoint) at `repeats`, `stop` at twice that or more, else None.
    Pure: the hook (`hook/tools.py`, `hook/tripped.py`) and `cocoplus replay` both decide with it."""
    if repeats <= 0 or count < repeats:
        return None
    if count >= 2 * repeats:
        return "stop"
    return "ask" if count == repeats else None


def count_call(
    rec: SessionRecord, fp: str, logged: tuple[int, int] | None, event: str, tool: str, log_id: int | None = None
) -> int:
    """What one tool call changes in the session's record; the run of equal calls it ends (the loop guard's count).

    `logged` is (the call log's length after this call, the run of equal calls at its end), from `record_call`;
    None when the call could not be appended: the record then counts the call itself, and its streak the run.
    `log_id` names the call log's file (`calls_log_id`): another file than the record knows is a log begun again.
    Hooks racing take the record's lock in any order, so the count only grows with the longest log seen."""
    calls = None if logged is None else logged[0]
    set_attention(rec, None)
    if rec.get("state") not in ("running",):
        rec["state"] = "running"
    if calls is None:
        rec["tool_calls"] = int(rec.get("tool_calls") or 0) + 1
    else:
        known = rec.get("calls_log")
        if "calls_base" not in rec:  # the record counted the calls before the log began
            rec["calls_base"] = int(rec.get("tool_calls") or 0)
            rec["tool_calls"] = int(rec["calls_base"]) + calls
        elif log_id is not None and known is not None and known != log_id:  # the log was begun again (another file)
            rec["calls_base"] = int(rec.get("tool_calls") or 0)
            rec["tool_calls"] = int(rec["calls_base"]) + calls
        else:  # (a call that appended earlier may take the lock after one that appended later)
            rec["tool_calls"] = max(int(rec.get("tool_calls") or 0), int(rec["calls_base"]) + calls)
        if log_id is not None:
            rec["calls_log"] = log_id
    rec["last_tool_event"] = event
    if rec.get("continuations"):
        rec["continuations"] = 0  # a tool call ends a run of turn-end continuations (as Claude Code counts them)
    streak: dict[str, Any] = rec["streak"] if isinstance(rec.get("streak"), dict) else {}
    if logged is None:
        count = int(streak.get("count") or 0) + 1 if streak.get("fingerprint") == fp else 1
    else:
        count = logged[1]
    rec["streak"] = {"fingerprint": fp, "count": count, "tool": tool[:80]}
    return count


def record_due(rec: SessionRecord) -> bool:
    """Whether a tool call must rewrite the session's record: it says something the call changes, or is old."""
    if rec.get("state") != "running" or rec.get("attention") is not None or rec.get("continuations"):
        return True
    if "calls_base" not in rec:
        return True
    at = clock.parse_iso(rec.get("updated_at"))
    return at is None or time.time() - at >= RECORD_REFRESH_S


def _read_index(layout: Layout) -> dict[str, Any]:
    try:
        obj = fsio.read_json(layout.sessions_index)
    except StateCorrupt:
        kept = fsio.quarantine(layout.sessions_index)
        obj = _rebuild_index(layout)
        obj["rebuilt_from_records"] = True
        obj["damaged_copy"] = kept
        return obj
    if obj is None or not isinstance(obj.get("counters"), dict) or not isinstance(obj.get("aliases"), dict):
        return _rebuild_index(layout)
    return obj


def _rebuild_index(layout: Layout) -> dict[str, Any]:
    """Recreate alias counters from the session records themselves."""
    index: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "counters": {}, "aliases": {}}
    for rec in _iter_records(layout):
        alias = rec.get("alias")
        if not isinstance(alias, str):
            continue
        index["aliases"][alias] = rec["id"]
        prefix = alias.rstrip("0123456789")
        try:
            n = int(alias[len(prefix) :])
        except ValueError:
            continue
        index["counters"][prefix] = max(index["counters"].get(prefix, 0), n)
    return index


def _iter_records(layout: Layout) -> list[SessionRecord]:
    out: list[SessionRecord] = []
    try:
        names = sorted(os.listdir(layout.sessions_dir))
    except FileNotFoundError:
        return out
    for name in names:
        if not (name.startswith("cs_") and name.endswith(".json")):
            continue
        try:
            rec = read_record(layout, name[:-5])
        except CocoplusError:
            continue
        if rec is not None:
            out.append(rec)
    return out


def ensure(
    layout: Layout,
    runtime: str,
    runtime_session_id: str,
    *,
    event: str,
    change: Callable[[SessionRecord], object] | None = None,
    info: Mapping[str, Any] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    budget: Budget | None = None,
    alias: str | None = None,
) -> tuple[SessionRecord, SessionRecord | None]:
    """Register the session if new, apply `change`, record `event`. Returns (record, before).

    `info`: what the hook learned of the session (its keys SessionRecord's), each recorded unless None.

    `alias`: the alias a new session gets if it is a valid id and free (a
    worker launched with `--alias`); otherwise the runtime's next one.
    `timeout` and `budget` bound the wait for the sessions lock (LockTimeout).
    """
    if not runtimes.known(runtime):
        raise CocoplusError(f"unknown runtime {runtime!r}")
    cs_id = cs_id_for(runtime_session_id)
    path = layout.session_record(cs_id)
    now = clock.iso()
    with _lock(layout, timeout, budget):
        try:
            before = read_record(layout, cs_id)
        except StateCorrupt:
            fsio.quarantine(path)
            before = None
        if before is None:
            rec = _new_record(layout, cs_id, runtime, runtime_session_id, now, alias)
        else:
            rec = before.copy()
        for k, v in (info or {}).items():
            if v is not None:
                rec[k] = v  # type: ignore[literal-required]  # one of SessionRecord's (the docstring)
        if change is not None:
            change(rec)
        rec["last_event"] = event
        rec["last_event_at"] = now
        rec["updated_at"] = now
        fsio.atomic_write_json(path, rec)
    return rec, before


def _new_record(
    layout: Layout, cs_id: str, runtime: str, rid: str, now: str, wanted: str | None = None
) -> SessionRecord:
    index = _read_index(layout)
    if wanted is not None and is_valid_id(wanted) and wanted not in index["aliases"] and not wanted.startswith("cs_"):
        alias = wanted
    else:
        prefix = runtimes.get(runtime).ALIAS_PREFIX
        n = int(index["counters"].get(prefix, 0)) + 1
        alias = f"{prefix}{n}"
        while alias in index["aliases"]:
            n += 1
            alias = f"{prefix}{n}"
        index["counters"][prefix] = n
    index["aliases"][alias] = cs_id
    index["schema_version"] = SCHEMA_VERSION
    fsio.atomic_write_json(layout.sessions_index, index)
    return {
        "schema_version": SCHEMA_VERSION,
        "id": cs_id,
        "runtime": runtime,
        "runtime_session_id": rid,
        "alias": alias,
        "state": "running",
        "attention": None,
        "attention_since": None,
        "started_at": now,
        "last_signal": None,
        "tool_calls": 0,
    }


def update(
    layout: Layout,
    cs_id: str,
    change: Callable[[SessionRecord], object],  # what it returns is not used
    *,
    timeout: float = DEFAULT_TIMEOUT,
    budget: Budget | None = None,
) -> SessionRecord:
    path = layout.session_record(cs_id)
    with _lock(layout, timeout, budget):
        rec = read_record(layout, cs_id)
        if rec is None:
            raise NotFound(f"no session {cs_id}")
        change(rec)
        rec["updated_at"] = clock.iso()
        fsio.atomic_write_json(path, rec)
    return rec


def set_attention(rec: SessionRecord, attention: str | None) -> bool:
    """Change a record's attention; True if it changed."""
    if rec.get("attention") == attention:
        return False
    rec["attention"] = attention
    rec["attention_since"] = clock.iso() if attention else None
    return True


def attend(rec: SessionRecord, attention: str | None, detail: str | None) -> bool:
    """Set the session's attention; True when it changed to one, which the record's `last_signal` then says (and a
    signal is due)."""
    if set_attention(rec, attention) and attention is not None:
        rec["last_signal"] = {"kind": "attention", "value": attention, "message": detail, "ts": clock.iso()}
        return True
    return False


def list_sessions(layout: Layout, *, settle: bool = True) -> tuple[list[SessionRecord], list[str]]:
    """All session records (oldest alias first) and one line per damaged record.

    Sessions whose runtime died unannounced are recorded exited first (`settle_exits`), unless
    `settle` is False (the caller settles them itself).
    """
    records: list[SessionRecord] = []
    problems: list[str] = []
    try:
        names = sorted(os.listdir(layout.sessions_dir))
    except FileNotFoundError:
        return records, problems
    for name in names:
        if not (name.startswith("cs_") and name.endswith(".json")):
            continue
        try:
            rec = read_record(layout, name[:-5])
        except CocoplusError as exc:
            problems.append(str(exc))
            continue
        if rec is not None:
            rec["attention"] = attention_of(rec)  # as every door shows it (the file keeps what the hooks wrote)
            records.append(rec)
    records.sort(key=lambda r: (r.get("started_at") or "", r.get("alias") or ""))
    if settle:
        settle_exits(layout, records)
    return records, problems


def ended_unannounced(rec: Mapping[str, Any]) -> str | None:
    """Why a `running` session has ended although no hook said so (its runtime's process is gone), or None.

    Only for a runtime whose recorded process is the session's (`ENDS_WITH_PROCESS`), and never for
    a launched worker's session: its worker's runner records how the run ended, exit status and all.
    A resume cocoplus started that still runs keeps the session alive.
    """
    if rec.get("state") != "running" or isinstance(rec.get("worker"), str):
        return None
    runtime = rec.get("runtime")
    if not isinstance(runtime, str) or not runtimes.known(runtime) or not runtimes.get(runtime).ENDS_WITH_PROCESS:
        return None
    proc, resumed = rec.get("process"), rec.get("resumed")
    if not isinstance(proc, dict):
        return None
    from cocoplus.session import procinfo  # deferred: only a listing looks at the runtimes' processes

    if not procinfo.gone(proc) or (isinstance(resumed, dict) and not procinfo.gone(resumed)):
        return None
    return (
        f"its {runtimes.get(runtime).TITLE} process (pid {proc.get('pid')}) is gone and no hook said the session ended"
    )


def settle_exits(layout: Layout, records: list[SessionRecord], *, budget: Budget | None = None) -> list[str]:
    """Record `exited`, with one exit signal, each of `records` whose runtime died unannounced; their ids.

    `records` is updated in place.  Decided again under the sessions lock, so
    a SessionEnd hook or another reader doing the same at that moment leaves
    one exit signal, not two.
    """
    settled: list[str] = []
    for i, rec in enumerate(records):
        if ended_unannounced(rec) is None:
            continue
        path = layout.session_record(rec["id"])
        try:
            with _lock(layout, budget=budget):
                cur = read_record(layout, rec["id"])
                why = ended_unannounced(cur) if cur is not None else None
                if cur is None or why is None:
                    if cur is not None:
                        records[i] = cur
                    continue
                cur["state"] = "exited"
                cur["exit_reason"] = why  # attention is kept: a session that ended waiting for dispatch still needs it
                cur["updated_at"] = clock.iso()
                fsio.atomic_write_json(path, cur)
                records[i] = cur
                append_signal(layout, cur, "exit", "exited", budget=budget, detail=why)
            settled.append(rec["id"])
        except CocoplusError:
            continue  # the next reader settles it
    return settled


def resolve(layout: Layout, ref: str) -> SessionRecord:
    """A session by cs_ id, alias (`cc1`) or the runtime's own id."""
    if not isinstance(ref, str) or not ref:
        raise NotFound("no session named ''")
    if is_valid_id(ref) and ref.startswith("cs_"):
        rec = read_record(layout, ref)
        if rec is not None:
            return rec
    records, _ = list_sessions(layout)
    for rec in records:
        if ref in (rec.get("alias"), rec.get("runtime_session_id")):
            return rec
    cs = cs_id_for(ref)
    rec = read_record(layout, cs) if is_valid_id(cs) else None
    if rec is not None:
        return rec
    shown = ref if len(ref) <= 60 else ref[:57] + "..."
    raise NotFound(f"no session {shown!r} (use a cs_ id, an alias such as cc1, or the runtime's session id)")


def append_signal(
    layout: Layout,
    rec: Mapping[str, Any],
    kind: str,
    value: str | None = None,
    *,
    budget: Budget | None = None,
    **extra: Unpack[SignalExtra],
) -> Signal:
    """Append a signal about session `rec` (`kind`, `value`, and what `extra` says that is not None)."""
    signal: Signal = {
        "schema_version": SCHEMA_VERSION,
        "ts": clock.iso(),
        "session": rec["id"],
        "alias": rec.get("alias"),
        "runtime": rec.get("runtime"),
        "kind": kind,
    }
    if value is not None:
        signal["value"] = value
    for k, v in extra.items():
        if v is not None:
            signal[k] = v  # type: ignore[literal-required]  # a key of SignalExtra, which Signal extends
    from cocoplus.core import jsonl  # deferred: a tool call appends no signal; the events around it load no journal

    jsonl.append_jsonl(layout.signals, dict(signal), layout.lock("signals"), budget=budget)
    return signal


def heal_stale(
    layout: Layout, max_age_s: float, now: float | None = None, skip: str | None = None, *, budget: Budget | None = None
) -> list[str]:
    """Sessions still `running` with no event for `max_age_s` become `exited`. Returns their ids."""
    if now is None:
        now = time.time()
    healed: list[str] = []
    records, _ = list_sessions(layout)
    for rec in records:
        if rec["id"] == skip or rec.get("state") != "running":
            continue
        last = clock.parse_iso(rec.get("last_event_at") or rec.get("updated_at"))
        if last is None or now - last < max_age_s:
            continue

        def change(r: SessionRecord) -> None:
            r["state"] = "exited"
            r["exit_reason"] = f"no event for over {max_age_s / 3600:g} h; marked exited"

        try:
            update(layout, rec["id"], change, budget=budget)
            healed.append(rec["id"])
        except CocoplusError:
            continue
    return healed
