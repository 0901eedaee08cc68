"""One time-ordered record of a project's runs, read from the logs cocoplus already writes (an index over them).

Nothing here is written on the hook path: the events are built, when asked for, from the session steps
(`session/steps.jsonl`), the worker signals and the rounds (`supervision/`), the permission decisions and the
authority log (the audit logs), the spend log, each session's call log and edits, and each worker's record (its
runs and the runtimes it ran in: a failover or a hand-back is a switch from one to the other).

Each event is typed (`kind`) and has an id derived from its record (the file it comes from, its time, its key,
and which of equal records it is), so reading the logs again, or after older lines are gone, gives the same id.

What the logs do not hold, the timeline does not invent: a session's call log keeps one fingerprint per tool call
and no time, tool name, tool-use id, outcome or duration.  A Claude Code session's calls are matched to its
transcript's `tool_use` blocks by that fingerprint, which give them; other calls are placed between the session's
start and the log's last change (`ts_estimated`).  Every string of every event is redacted (`redact`).
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Iterator
from typing import Any

from cocoplus.core import clock, fsio, jsonfast, jsonl
from cocoplus.core.errors import CocoplusError, NotFound
from cocoplus.core.paths import Layout, is_valid_id
from cocoplus.session import registry

KINDS = (
    "tool", "edit", "permission", "refusal", "stop", "steer", "verdict", "cost", "limit", "failover", "worker",
    "round", "signal", "step", "merge",
)  # fmt: skip

# -- secrets ------------------------------------------------------------------------------------------------------

REDACTED = "[redacted]"
_SECRET_NAME = r"[A-Za-z_][A-Za-z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD)[A-Za-z0-9_]*"
_PATTERNS = (
    # NAME=value (a shell assignment, an env file line), NAME: value, "NAME": "value"
    (re.compile(rf"(\b{_SECRET_NAME}\b\s*=\s*)(\"[^\"]*\"|'[^']*'|[^\s\"';&|]+)", re.I), rf"\g<1>{REDACTED}"),
    (re.compile(rf"(\"{_SECRET_NAME}\"\s*:\s*)\"(?:[^\"\\]|\\.)*\"", re.I), rf'\g<1>"{REDACTED}"'),
    (re.compile(r"(\bAuthorization\s*:\s*)[^\"'\r\n]+", re.I), rf"\g<1>{REDACTED}"),
    (re.compile(r"\b(?:sk-|ghp_|gho_|ghs_|github_pat_|xox[abposr]-|tk_)[A-Za-z0-9_\-]{4,}"), REDACTED),
)


# What every one of _PATTERNS needs somewhere in the text (case aside): a text with none of these is left as it is
# without running them (most of a timeline's strings: times, ids, kinds, counts).
_MAYBE = re.compile(r"key|token|secret|password|authorization|sk-|gh[pos]_|github_pat_|xox|tk_", re.I)


def redact(text: str) -> str:
    """`text` with the values of secret-named assignments (a name holding KEY, TOKEN, SECRET or PASSWORD),
    `Authorization:` values and known token prefixes (sk-, ghp_, xox., tk_, ...) replaced by `[redacted]`."""
    if _MAYBE.search(text) is None:
        return text
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    return text


def clean(value: Any) -> Any:
    """`value` with `redact` applied to every string in it (a report's JSON, whole)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean(v) for v in value]
    return value


# -- events -------------------------------------------------------------------------------------------------------


def _event(
    source: str, ts: str | None, kind: str, key: str, text: str, detail: dict[str, Any], **who: Any
) -> dict[str, Any]:
    return {
        "id": "",
        "ts": ts,
        "kind": kind,
        "source": source,
        "session": who.get("session"),
        "alias": who.get("alias"),
        "worker": who.get("worker"),
        "runtime": who.get("runtime"),
        "text": text,
        "detail": detail,
        "_key": key,
    }


def _ids(events: list[dict[str, Any]]) -> None:
    """Each event's id: a hash of its source, time and key, and of how many equal ones came just before it (in a
    log's order: equal records, to the millisecond, are written one after the other)."""
    prev, n = "", 0
    for e in events:
        base = f"{e['source']}\0{e['ts']}\0{e.pop('_key')}"
        n = n + 1 if base == prev else 0
        prev = base
        e["id"] = hashlib.blake2b(f"{base}\0{n}".encode(), digest_size=8).hexdigest()


_STOP_STEPS = {"iteration_cap", "loop_guard_stop", "session_stop", "worker_stop", "agent_stop", "stop", "kill_switch"}
_STEER_STEPS = {"steer", "steer_delivered", "steer_claimed", "steer_session"}


def _step_kind(name: str) -> str:
    if name in _STOP_STEPS or name.endswith("_stop") or name.startswith("stop"):
        return "stop"
    if name.startswith("resume") or name.endswith("_resume") or name.endswith("_lifted"):
        return "stop"
    if name in _STEER_STEPS or name.startswith("steer"):
        return "steer"
    if name == "checkpoint_requested" or name.startswith("stall"):
        return "verdict"
    if "merge" in name or "commit" in name:
        return "merge"
    return "step"


_SHOWN = ("reason", "tool", "repeats", "consumed", "cap", "principal", "operator", "message", "text", "scope")


def _said(rec: dict[str, Any], keys: tuple[str, ...] = _SHOWN) -> str:
    return ", ".join(f"{k} {rec[k]}" for k in keys if rec.get(k) not in (None, "", [], {}))


class Reading:
    """What one reading of the logs keeps: problems met, and with `tail` (the newest that many records of each log
    are read, for a screen of the newest events) how many records were left unread (`skipped`); and which worker
    each session ran for (`owners`, from the workers' records), and each worker's runtime, alias, state, sandbox
    profile and sessions (`workers`)."""

    __slots__ = ("problems", "tail", "skipped", "owners", "workers")

    def __init__(self, tail: int = 0) -> None:
        self.problems: list[str] = []
        self.tail = tail
        self.skipped = 0
        self.owners: dict[str, str] = {}
        self.workers: dict[str, dict[str, Any]] = {}


def records(path: str, problems: list[str]) -> list[dict[str, Any]]:
    """Every record of the JSONL log `path` (none if it is missing); what could not be read, in `problems`."""
    rd = Reading()
    out = _records(path, rd)
    problems.extend(rd.problems)
    return out


def _records(path: str, rd: Reading) -> list[dict[str, Any]]:
    try:
        data = fsio.read_bytes(path, jsonl.MAX_JSONL_BYTES)
    except (OSError, CocoplusError) as exc:
        rd.problems.append(f"{path}: {exc}")
        return []
    if not data:
        return []
    start, first = 0, 1
    if rd.tail > 0:
        cut = len(data) - (0 if data.endswith(b"\n") else 1)
        for _ in range(rd.tail + 1):
            cut = data.rfind(b"\n", 0, cut)
            if cut < 0:
                break
        if cut >= 0:  # (the newest `tail` lines begin after this newline)
            start = cut + 1
            first = data.count(b"\n", 0, start) + 1
            rd.skipped += first - 1
    read = jsonl.parse_jsonl(data[start:], path, first)
    rd.problems.extend(read.problems)
    return read.records


def _cs(sid: Any) -> str | None:
    """A step's session (the runtime's id, as the hook logs it) as its cs_ id."""
    if not isinstance(sid, str) or not sid:
        return None
    return sid if sid.startswith("cs_") else registry.cs_id_for(sid)


def _steps(layout: Layout, rd: Reading) -> Iterator[dict[str, Any]]:
    for r in _records(layout.steps, rd):
        name = str(r.get("event") or "step")
        text = name.replace("_", " ") + (f": {s}" if (s := _said(r)) else "")
        yield _event(
            "steps", r.get("ts"), _step_kind(name), name, text, r,
            session=_cs(r.get("session")) or r.get("stopped"), alias=r.get("alias"), worker=r.get("worker"),
            runtime=r.get("runtime"),
        )  # fmt: skip


def _signals(layout: Layout, rd: Reading) -> Iterator[dict[str, Any]]:
    for r in _records(layout.signals, rd):
        kind, value = str(r.get("kind") or "signal"), str(r.get("value") or "")
        typed = "limit" if kind in ("limited", "limit") or value == "limited" else "signal"
        if kind in ("stall", "stalled") or value == "stalled":
            typed = "verdict"
        text = f"signal {kind}" + (f" {value}" if value and value != kind else "")
        if r.get("message") or r.get("detail"):
            text += f": {r.get('message') or r.get('detail')}"
        yield _event(
            "signals", r.get("ts"), typed, f"{kind}:{value}:{r.get('session')}", text, r,
            session=r.get("session"), alias=r.get("alias"), worker=r.get("worker"), runtime=r.get("runtime"),
        )  # fmt: skip


def _rounds(layout: Layout, rd: Reading) -> Iterator[dict[str, Any]]:
    for r in _records(layout.rounds, rd):
        name = str(r.get("event") or "round")
        if name == "action":
            text = f"action {r.get('action')} by {r.get('principal') or r.get('by')}"
            if r.get("error"):
                text += f": {r['error']}"
            kind = "stop" if "stop" in str(r.get("action")) or "resume" in str(r.get("action")) else "round"
        else:
            text = name.replace("_", " ") + (f": {s}" if (s := _said(r, ("round", "reason", "trigger"))) else "")
            kind = "round"
        yield _event(
            "rounds", r.get("ts"), kind, f"{name}:{r.get('round')}:{r.get('action')}", text, r,
            session=r.get("session"), alias=r.get("alias"),
        )  # fmt: skip


def _decisions(layout: Layout, rd: Reading) -> Iterator[dict[str, Any]]:
    for r in _records(layout.permission_log, rd):
        what = r.get("call") or r.get("input") or r.get("tool") or "a tool call"
        # The hook's own decisions say `decision`; an answer, a grant or a write not asked about (sandbox/writes.py)
        # `behavior`; a held request `state`.
        outcome = r.get("decision") or r.get("behavior") or r.get("state")
        text = f"permission {outcome or 'decided'}: {what}"
        if r.get("principal"):
            text += f" (by {r['principal']})"
        if r.get("reason") and outcome in ("not asked", "granted", "not granted"):
            text += f": {r['reason']}"
        yield _event(
            "decisions", r.get("ts"), "permission", f"{r.get('request') or r.get('ts')}:{outcome}:{what}",
            text, r, session=r.get("session"), alias=r.get("alias"), worker=r.get("worker"),
        )  # fmt: skip


def _authority(layout: Layout, rd: Reading) -> Iterator[dict[str, Any]]:
    for r in _records(layout.authority_log, rd):
        text = f"{r.get('outcome') or 'refused'}: {r.get('action')} by {r.get('principal')} {r.get('name') or ''}"
        yield _event(
            "authority", r.get("ts"), "refusal", f"{r.get('action')}:{r.get('principal')}", text.rstrip(), r,
            session=r.get("session"),
        )  # fmt: skip


def _spend(layout: Layout, rd: Reading) -> Iterator[dict[str, Any]]:
    for r in _records(layout.spend_log, rd):
        usd = r.get("usd")
        counts = r.get("tokens")
        tokens = sum(v for v in counts.values() if isinstance(v, int)) if isinstance(counts, dict) else 0
        money = f"${usd:.4f}" if isinstance(usd, (int, float)) else "unpriced"
        text = f"cost {money}" + (f" {r['model']}" if r.get("model") else "") + (f", {tokens} tokens" if tokens else "")
        yield _event(
            "spend", r.get("ts"), "cost", str(r.get("key") or f"{r.get('session')}:{usd}"), text, r,
            session=r.get("session"), runtime=r.get("runtime"),
        )  # fmt: skip


def _mtime(path: str) -> float | None:
    try:
        return os.lstat(path).st_mtime
    except OSError:
        return None


def _calls(path: str) -> list[str]:
    try:
        data = fsio.read_bytes(path) or b""
    except (OSError, CocoplusError):
        return []
    w = registry.CALL_WIDTH
    return [data[i : i + w - 1].decode("ascii", "replace") for i in range(0, len(data) - w + 1, w)]


def _sessions(layout: Layout, rd: Reading) -> Iterator[dict[str, Any]]:
    records, trouble = registry.list_sessions(layout, settle=False)
    rd.problems.extend(trouble)
    for rec in records:
        cs = rec["id"]
        who = {"session": cs, "alias": rec.get("alias"), "worker": rec.get("worker"), "runtime": rec.get("runtime")}
        calls = _calls(layout.session_calls(cs))
        start = clock.parse_iso(rec.get("started_at"))
        end = _mtime(layout.session_calls(cs))
        base = int(rec.get("calls_base") or 0)
        run, shown = 0, len(calls) - rd.tail if rd.tail > 0 else 0
        rd.skipped += max(0, shown)
        known = _matched(calls, _transcript_calls(rec)) if calls else {}
        for i, fp in enumerate(calls):
            run = run + 1 if i and calls[i - 1] == fp else 1
            if i < shown:
                continue
            at = None
            if start is not None and end is not None:
                at = clock.iso(start + (end - start) * (i + 1) / len(calls))
            n = base + i + 1
            text = f"tool call {n}"
            detail: dict[str, Any] = {"call": n, "fingerprint": fp, "run": run, "ts_estimated": True}
            use = known.get(i)
            if use is not None:
                at = use["ts"]
                detail.update(use, ts_estimated=False)
                outcome = {True: " failed", False: ""}.get(use["error"], " (no result)")
                text = f"tool call {n}: {use['tool']} {use['subject']}".rstrip() + outcome
                if use["duration_s"] is not None:
                    text += f" in {use['duration_s']:.1f}s"
            if run > 1:
                text += f" (the same call, {run} in a row)"
            yield _event("calls", at, "tool", f"{cs}:{n}:{fp}", text, detail, **who)
        edits = layout.session_edits(cs)
        when = _mtime(edits)
        if when is not None:
            paths = [str(p) for p in _records_of_strings(edits)]
            text = f"edited {len(paths)} file(s): {', '.join(paths[:5])}" + (" ..." if len(paths) > 5 else "")
            yield _event("edits", clock.iso(when), "edit", f"{cs}:{len(paths)}", text, {"files": paths}, **who)


SUBJECT_MAX = 80  # a tool call's subject as a line shows it


def _subject(body: Any) -> str:
    """A tool call's input in a few words: its command, path, pattern or URL, else its first value."""
    if isinstance(body, dict):
        for key in ("command", "file_path", "path", "pattern", "url", "query", "description"):
            if isinstance(body.get(key), str):
                body = body[key]
                break
        else:
            body = next((v for v in body.values() if isinstance(v, str)), "")
    text = " ".join(str(body or "").split())
    return text if len(text) <= SUBJECT_MAX else text[: SUBJECT_MAX - 3] + "..."


def _transcript_calls(rec: Any) -> list[dict[str, Any]]:
    """A session's tool calls as its runtime's own record keeps them, in order (Claude Code's transcript, Codex's
    rollout): the runtime's tool-use id, the tool, its input's fingerprint (as the call log has it) and subject,
    when it was asked for, and from its result whether it failed and how long it took.  None for another runtime's
    session, or a record not read."""
    path = rec.get("transcript_path")
    reader = _USES.get(str(rec.get("runtime")))
    if reader is None or not isinstance(path, str) or not os.path.isabs(path):
        return []
    uses: list[dict[str, Any]] = []
    results: dict[str, tuple[bool | None, str | None]] = {}
    for r in _records(path, Reading()):
        reader(r, uses, results)
    for u in uses:
        error, done = results.get(u["tool_use_id"], (None, None))
        began, ended = clock.parse_iso(u["ts"]), clock.parse_iso(done)
        u["error"] = error
        u["duration_s"] = round(ended - began, 3) if began is not None and ended is not None else None
    return uses


def _use(tool_use_id: str, tool: str, tool_input: Any, ts: Any) -> dict[str, Any]:
    """One tool call, fingerprinted as the hook fingerprints the payload its runtime gives it."""
    fp = registry.fingerprint({"tool_name": tool, "tool_input": tool_input})
    return {"tool_use_id": tool_use_id, "tool": tool, "fp": fp[:24], "subject": _subject(tool_input), "ts": ts}


def _claude_uses(r: dict[str, Any], uses: list[dict[str, Any]], results: dict[str, Any]) -> None:
    """A line of Claude Code's transcript: `tool_use` and `tool_result` blocks of its messages."""
    msg = r.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    for b in content if isinstance(content, list) else []:
        if not isinstance(b, dict):
            continue
        if b.get("type") == "tool_use" and isinstance(b.get("id"), str):
            uses.append(_use(b["id"], str(b.get("name") or "tool"), b.get("input"), r.get("timestamp")))
        elif b.get("type") == "tool_result" and isinstance(b.get("tool_use_id"), str):
            results[b["tool_use_id"]] = (bool(b.get("is_error")), r.get("timestamp"))


# Codex's shell tools, which its hooks name `Bash` with the command as `command`.
_CODEX_SHELL = ("exec_command", "shell", "local_shell")
_EXITED = re.compile(r"(?:Process exited with code|Exit code:) (-?\d+)")


def _codex_uses(r: dict[str, Any], uses: list[dict[str, Any]], results: dict[str, Any]) -> None:
    """A line of Codex's rollout: `function_call` and `function_call_output` response items."""
    item = r.get("payload") if r.get("type") == "response_item" else None
    if not isinstance(item, dict) or not isinstance(item.get("call_id"), str):
        return
    if item.get("type") in ("function_call", "custom_tool_call"):
        name = str(item.get("name") or "tool")
        args: Any = item.get("arguments") if item.get("type") == "function_call" else item.get("input")
        if isinstance(args, str) and item.get("type") == "function_call":
            try:
                args = jsonfast.loads(args)
            except ValueError:
                pass
        if name in _CODEX_SHELL and isinstance(args, dict):
            command = args.get("cmd", args.get("command"))
            if isinstance(command, list):
                command = " ".join(str(x) for x in command)
            name, args = "Bash", {"command": command}
        uses.append(_use(item["call_id"], name, args, r.get("timestamp")))
    elif item.get("type") in ("function_call_output", "custom_tool_call_output"):
        out = item.get("output")
        code = _EXITED.search(out) if isinstance(out, str) else None
        results[item["call_id"]] = (int(code.group(1)) != 0 if code else None, r.get("timestamp"))


_USES = {"claude": _claude_uses, "codex": _codex_uses}


def _matched(calls: list[str], uses: list[dict[str, Any]], window: int = 64) -> dict[int, dict[str, Any]]:
    """The call log's calls (by index) matched, in order, to the transcript's by fingerprint."""
    out: dict[int, dict[str, Any]] = {}
    if not uses:  # another runtime's session, or no transcript: nothing to match (a long call log is not walked)
        return out
    j = 0
    for i, fp in enumerate(calls):
        for k in range(j, min(len(uses), j + window)):
            if uses[k]["fp"] == fp:
                out[i] = {key: v for key, v in uses[k].items() if key != "fp"}
                j = k + 1
                break
    return out


def _records_of_strings(path: str) -> list[str]:
    try:
        data = fsio.read_bytes(path)
    except (OSError, CocoplusError):
        return []
    out: list[str] = []
    for line in (data or b"").decode("utf-8", "replace").splitlines():
        line = line.strip()
        if line.startswith('"') and line.endswith('"') and len(line) >= 2:
            out.append(line[1:-1])
        elif line:
            out.append(line)
    return out


def worker_records(layout: Layout, problems: list[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each worker's id and record, by id (one that cannot be read is named in `problems`)."""
    try:
        names = sorted(os.listdir(layout.workers_dir))
    except OSError:
        return
    for wid in names:
        if not is_valid_id(wid):
            continue
        try:
            rec = fsio.read_json(layout.worker_record(wid))
        except CocoplusError as exc:
            problems.append(str(exc))
            continue
        if isinstance(rec, dict):
            yield wid, rec


def _workers(layout: Layout, rd: Reading) -> Iterator[dict[str, Any]]:
    for wid, rec in worker_records(layout, rd.problems):
        who = {"worker": wid, "runtime": rec.get("runtime"), "session": rec.get("session"), "alias": rec.get("alias")}
        task = str(rec.get("task") or "")
        task = task if len(task) <= 80 else task[:77] + "..."
        history = [h for h in rec.get("runtimes") or [] if isinstance(h, dict)]
        for cs in [rec.get("session"), *(h.get("session") for h in history)]:
            if isinstance(cs, str):
                rd.owners[cs] = wid
        sandbox = str(rec.get("sandbox") or "none")  # its sandbox profile (a record from before profiles: none)
        sessions = [rec.get("session")] + [cs for h in history for cs in (h.get("from_session"), h.get("session"))]
        rd.workers[wid] = {
            "runtime": rec.get("runtime"), "alias": rec.get("alias"), "state": rec.get("state"), "sandbox": sandbox,
            "runtimes": [h.get("runtime") for h in history] or [rec.get("runtime")],
            "sessions": sorted({cs for cs in sessions if isinstance(cs, str) and cs}),
        }  # fmt: skip
        first = history[0] if history else {}  # launched in the runtime of its first run, not the one it ended in
        launched = {**who, "runtime": first.get("runtime") or who["runtime"],
                    "session": first.get("session") if history else who["session"]}  # fmt: skip
        text = f"launched (sandbox {sandbox}): {task}"
        yield _event(
            "workers", rec.get("created_at"), "worker", f"{wid}:created", text, {"sandbox": sandbox}, **launched
        )
        for prev, h in zip(history, history[1:]):
            back = h.get("reason") == "handed back"
            why = "" if back else f" ({h.get('reason')})" if h.get("reason") else ""
            text = f"{'hand-back' if back else 'failover'}: {prev.get('runtime')} -> {h.get('runtime')}{why}"
            detail = {"from": prev.get("runtime"), "to": h.get("runtime"), **h}
            yield _event(
                "workers", h.get("since"), "failover", f"{wid}:{h.get('runtime')}:{h.get('since')}", text, detail,
                worker=wid, runtime=h.get("runtime"), session=h.get("session"), alias=h.get("session_alias"),
            )  # fmt: skip
        if rec.get("started_at"):
            text = f"run started (sandbox {sandbox})"
            yield _event("workers", rec["started_at"], "worker", f"{wid}:started", text, {"sandbox": sandbox}, **who)
        yield from _tree_events(wid, rec.get("worktree"), who)
        if rec.get("ended_at"):
            text = f"run ended: {rec.get('reason') or 'ended'}"
            detail = {"exit": rec.get("exit"), "stopped_by": rec.get("stopped_by"), "sandbox": sandbox}
            yield _event("workers", rec["ended_at"], "worker", f"{wid}:ended", text, detail, **who)


def _tree_events(wid: str, tree: Any, who: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A worktree worker's commit of what its run left, and its branch's merge: hash and diff stat."""
    if not isinstance(tree, dict):
        return
    done = tree.get("committed")
    if isinstance(done, dict) and isinstance(done.get("commit"), str):
        text = f"commit {done['commit'][:12]} on {tree.get('branch')}: what the run left uncommitted"
        yield _event("workers", done.get("at"), "merge", f"{wid}:commit:{done['commit']}", text,
                     {"commit": done["commit"], "branch": tree.get("branch")}, **who)  # fmt: skip
    merged = tree.get("merged")
    if isinstance(merged, dict) and isinstance(merged.get("commit"), str):
        stat = f" ({merged['stat']})" if merged.get("stat") else ""
        text = f"merged {tree.get('branch')} into {merged.get('into')}: {merged['commit'][:12]}{stat}"
        if merged.get("by"):
            text += f" by {merged['by']}"
        detail = {k: merged.get(k) for k in ("commit", "into", "by", "stat", "protected") if merged.get(k)}
        yield _event("workers", merged.get("at"), "merge", f"{wid}:merge:{merged['commit']}", text,
                     {**detail, "branch": tree.get("branch")}, **who)  # fmt: skip


_READERS = (_steps, _signals, _rounds, _decisions, _authority, _spend, _sessions, _workers)


def timeline(
    layout: Layout,
    target: str | None = None,
    since_s: float | None = None,
    now: float | None = None,
    limit: int = 0,
) -> dict[str, Any]:
    """Every event of the project (or of worker/session `target`) in time order, oldest first (`limit`: the
    newest that many): `events`, `total` (how many there were before the limit), `workers` (each worker shown: its
    runtime, the runtimes it ran in, alias, state, sandbox profile and sessions) and `problems` (lines or files that
    could not be read)."""
    # For the newest events of the whole project, each log is read from its end (each is in time order).
    rd = Reading(limit if limit > 0 and not target and since_s is None else 0)
    events: list[dict[str, Any]] = []
    for reader in _READERS:
        events.extend(reader(layout, rd))
    for e in events:  # a session's events are its worker's (a hook's record names the session only)
        if e["worker"] is None and e["session"] in rd.owners:
            e["worker"] = rd.owners[e["session"]]
    _ids(events)
    # Equal times of one log stay in the log's order (a sort is stable): two tool calls asked for in the same
    # millisecond keep their numbers' order.
    events.sort(key=lambda e: (e["ts"] or "", e["source"]))
    if target:
        events = _only(layout, events, target)
    if since_s is not None:
        start = clock.iso((time.time() if now is None else now) - since_s)
        events = [e for e in events if (e["ts"] or "") >= start]
    total = len(events) + rd.skipped
    if limit > 0:
        events = events[-limit:]
    shown = {str(e["worker"]) for e in events if e["worker"]} | ({target} if target in rd.workers else set())
    workers = {wid: clean(w) for wid, w in sorted(rd.workers.items()) if wid in shown}
    return {
        "target": target, "total": total, "events": [clean(e) for e in events], "workers": workers,
        "problems": rd.problems,
    }  # fmt: skip


def _only(layout: Layout, events: list[dict[str, Any]], target: str) -> list[dict[str, Any]]:
    """The events of worker `target` (and of its sessions), or of session `target` (a cs_ id or an alias)."""
    try:
        wrec = fsio.read_json(layout.worker_record(target)) if is_valid_id(target) else None
    except CocoplusError:
        wrec = None
    if isinstance(wrec, dict):
        mine = {wrec.get("session")} | {h.get("session") for h in wrec.get("runtimes") or [] if isinstance(h, dict)}
        mine |= {h.get("from_session") for h in wrec.get("runtimes") or [] if isinstance(h, dict)}
        mine.discard(None)
        return [e for e in events if e["worker"] == target or e["session"] in mine]
    try:
        cs = registry.resolve(layout, target)["id"]
    except NotFound:
        shown = target if len(target) <= 60 else target[:57] + "..."
        raise NotFound(
            f"no worker or session {shown!r} (give a worker's id, a session's cs_ id or its alias)"
        ) from None
    return [e for e in events if e["session"] == cs]
