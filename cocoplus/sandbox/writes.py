"""A write its sandbox refused, as a decision in the inbox; an approved one, writable in the worker's next sandbox.

A sandboxed worker's file system is read-only outside its tree (sandbox/bwrap.py).  When one of its tool calls
fails on that (the runtime's post-tool payload says "Read-only file system" and names a path), the control channel
(sandbox/channel.py), outside, after it has answered the hook, calls `follow`: the path is judged (`offer`), and a
path worth asking about becomes a decision, "allow writes to ~/.npm for w3's next run?", with `[sandbox]
write_wait_s` as its deadline and deny as its default.  Nothing has to wait for the answer, since what it grants is
for the next run: the request records no waiting process, so it outlives the run that asked; the process that
opened it records the deadline's denial while the run lasts, and past its deadline a request still open is expired
when it is next listed or answered (session/permissions.py `overdue`).

A running sandbox's mounts do not change: approved, the path is writable from the worker's **next** sandbox on (its
failover, its resume, the brain's next round for it), never in this run.  The grant is a record under the
worker's directory, sealed with this user's key (core/seal.py) outside the sandbox by the approval
(ops/permissions.py, whichever door it came through): `granted`, which the runner reads when it builds the sandbox,
takes only a grant whose seal holds for this project, this worker and this path, and judges the path again.  A
worker cannot write it (`.cocoplus/` is read-only inside), and a repository that carries one grants nothing (no
seal of this user's).

What is never offered, so never granted: a path inside the worker's tree (what is read-only there decides what
runs), outside this user's home, the home itself or a file directly in it (`~/.bashrc`), `~/.config` and
`~/.local` (what a desktop or a login starts), a path that holds the project, a protected path of any runtime or of
cocoplus (rules/protected.py) or a secret (bwrap.SECRETS), and a path through a symbolic link.  Each such refusal is
in the audit log, not in the inbox.  The request, the answer, the deadline and the grant are in the audit log
(`permissions/decisions.jsonl`), and so in the timeline.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from cocoplus.core import clock, fsio, seal
from cocoplus.core.errors import CocoplusError
from cocoplus.core.lock import Lock
from cocoplus.core.paths import Layout
from cocoplus.rules import engine, protected
from cocoplus.sandbox import bwrap
from cocoplus.session import permissions

TOOL = engine.SANDBOX_WRITE  # the tool such a decision names, as a rule would: `SandboxWrite(/home/u/.npm)`
KIND = "sandbox-write-grant"  # what a grant's seal says it is
MAX_PATHS = 4  # paths one failed call may ask about
MAX_OPEN = 8  # write decisions of one worker open at once: a worker that fails on ever new paths asks no more
READ_ONLY = re.compile(r"read-only file system", re.IGNORECASE)
# Where a message names the path: quoted (Node's `EROFS: ..., open '/x'`, Python's `[Errno 30] ...: '/x'`, GNU
# tools' `cannot touch '/x'`), the word before the error and its colon (bash's `bash: line 1: /x: Read-only file
# system`, dash's `dash: 1: cannot create /x: ...`: `_before`, read backwards from each mention, so that a line cannot
# make the reading slow), or the rest of the line after it (zsh's `zsh:1: read-only file system: /x`: `_after`).
QUOTED = re.compile(r"""['"`‘“](/[^'"`’”\n]+)['"`’”]""")
ERRNO = "[Errno 30]"  # Python's words between the path and the reason, in some of its messages
MAX_LINE = 4096  # characters of a line read: a path is shorter, and a line a worker made endless is cut
PATH_FIELDS = ("file_path", "path", "absolute_path", "filePath", "notebook_path")
# Under the home: where what a login, a shell or a desktop starts lives.
HOME_STARTS = (".config", ".local")


def _texts(value: Any, depth: int = 0) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping) and depth < 3:
        for v in value.values():
            yield from _texts(v, depth + 1)
    elif isinstance(value, list) and depth < 3:
        for v in value[:16]:
            yield from _texts(v, depth + 1)


def refused(payload: Mapping[str, Any]) -> list[str]:
    """The absolute paths a post-tool payload says were refused as read-only (its `error`, its `tool_response`),
    and the file the tool was given when its result says so; at most MAX_PATHS, in order."""
    found: list[str] = []
    said = False
    for text in (*_texts(payload.get("error")), *_texts(payload.get("tool_response"))):
        for line in text[:65536].splitlines():
            line = line[:MAX_LINE]
            mentions = list(READ_ONLY.finditer(line))
            if not mentions:
                continue
            said = True
            found += [p for m in mentions if (p := _before(line[: m.start()]) or _after(line[m.end() :])) is not None]
            found += [m.group(1) for m in QUOTED.finditer(line)]
    given = payload.get("tool_input")
    if said and isinstance(given, Mapping):
        found += [v for k in PATH_FIELDS if isinstance(v := given.get(k), str) and v.startswith("/")]
    out = [os.path.normpath(p) for p in found if os.path.isabs(p)]
    return list(dict.fromkeys(out))[:MAX_PATHS]


def _before(head: str) -> str | None:
    """The path in `... /x: ` (what precedes a mention of the error), or None."""
    head = head.rstrip()
    if head.endswith(ERRNO):
        head = head[: -len(ERRNO)].rstrip()
    if not head.endswith(":"):
        return None
    words = head[:-1].split()
    word = words[-1].strip("'\"`") if words else ""
    return word if word.startswith("/") else None


def _after(tail: str) -> str | None:
    """The path in `: /x` (what follows a mention of the error, as zsh says it), or None."""
    return tail[2:].rstrip() if tail.startswith(": /") else None


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def offer(path: str, tree: str, project: str, homes: list[str]) -> tuple[str | None, str]:
    """(what approving would make writable, why it is offered) or (None, why it is not): the file itself where it
    is one, else the nearest directory that exists."""
    path = os.path.normpath(path)
    for base in {tree, project}:
        if _under(path, base):
            return None, "it is in the worker's tree, where what is read-only decides what runs"
    target = path
    while not os.path.lexists(target) and target != "/":
        target = os.path.dirname(target)
    if os.path.islink(target) or os.path.realpath(target) != target:
        return None, "it goes through a symbolic link"
    if not (os.path.isdir(target) or os.path.isfile(target)):
        return None, "it is not a file or a directory"
    why = _not_in_home(target, tree, project, homes)
    return (None, why) if why is not None else (target, "ok")


def _not_in_home(target: str, tree: str, project: str, homes: list[str]) -> str | None:
    """Why `target` (a real path) is not offered in a home, or None: it may be."""
    home = next((h for h in homes if h and _under(target, h)), None)
    if home is None:
        return "it is outside your home"
    if target == home or (os.path.dirname(target) == home and not os.path.isdir(target)):
        return "it would make your home, or a file of its own, writable"
    rel = os.path.relpath(target, home)
    for start in HOME_STARTS:
        if _under(rel, start):
            return f"~/{start} holds what a login or a desktop starts"
    for base in {tree, project}:
        if _under(base, target):
            return "it holds the project"
    named = [os.path.join(h, s) for h in homes for s in (*protected.USER_RUNTIMES, *protected.USER_OWN, *bwrap.SECRETS)]
    for p in named:
        if _under(target, p) or _under(p, target):
            return f"{p} decides what runs or is a secret"
    return None


def _fields(project: str, wid: str, path: str, decision: str) -> list[Any]:
    return [KIND, os.path.realpath(project), wid, path, decision]


def grant(layout: Layout, wid: str, path: str, decision: str, by: str) -> None:
    """Record `path` as writable in worker `wid`'s next sandbox, sealed; CocoplusError when it cannot be."""
    try:
        sealed_with = seal.seal(_fields(layout.project, wid, path, decision))
    except (CocoplusError, ValueError, OSError) as exc:
        raise CocoplusError(f"the grant of {path} to {wid} cannot be sealed ({exc})") from None
    entry = {"path": path, "decision": decision, "by": by, "at": clock.iso(), "seal": sealed_with}

    def add(doc: dict[str, Any] | None) -> dict[str, Any]:
        doc = dict(doc) if isinstance(doc, dict) else {"schema_version": 1}
        doc["grants"] = [g for g in doc.get("grants") or [] if isinstance(g, dict) and g.get("path") != path]
        doc["grants"].append(entry)
        return doc

    fsio.locked_update(layout.worker_write_grants(wid), layout.lock(f"write-grants-{wid}"), add)


def granted(layout: Layout, wid: str, tree: str, homes: list[str], say: Callable[[str], None]) -> list[str]:
    """The paths worker `wid`'s sandbox makes writable: each grant whose seal holds, judged again (`offer`); each
    one left out is said to `say`."""
    try:
        doc = fsio.read_json(layout.worker_write_grants(wid))
    except CocoplusError as exc:
        say(f"its write grants are not used: {exc}")
        return []
    out: list[str] = []
    for g in (doc or {}).get("grants") or [] if isinstance(doc, dict) else []:
        path, decision = (g.get("path"), g.get("decision")) if isinstance(g, dict) else (None, None)
        if not isinstance(path, str) or not isinstance(decision, str):
            say("a write grant that names no path or decision is not used")
            continue
        problem = seal.check(_fields(layout.project, wid, path, decision), g.get("seal"))
        if problem is not None:
            say(f"the write grant of {path} is not used: {problem}")
            continue
        target, why = offer(path, tree, layout.project, homes)
        if target != path:
            say(f"the write grant of {path} is not used: {why}")
            continue
        out.append(path)
    return out


def follow(
    layout: Layout,
    wid: str,
    payload: Mapping[str, Any],
    *,
    tree: str,
    homes: list[str],
    session: Mapping[str, Any],
    runtime: str,
    since: str,
    ended: Callable[[], str | None],
) -> None:
    """After a post-tool hook of worker `wid`: each path its sandbox refused becomes a decision (one per path and
    run: `since` is when this run's channel started; `homes`: this user's, as the runner knows them, never as the
    worker's environment names them).  Nothing has to wait for the answer (an approval grants,
    where it is given: ops/permissions.py): here each is waited for only to record its deadline's denial while the
    run lasts; one still open when the run ends is expired when it is next listed or answered
    (session/permissions.py `overdue`)."""
    from cocoplus import config as config_mod  # deferred: only a refused write reads the configuration

    wait_s = float(config_mod.load_for(layout, environ={}).get("sandbox.write_wait_s"))
    deadline = time.monotonic() + wait_s
    asked = [
        req
        for path in refused(payload)
        for req in [_ask(layout, wid, path, tree, homes, session, runtime, since, wait_s)]
        if req is not None
    ]
    for req in asked:
        if permissions.wait(layout, req["id"], deadline, ended) is None and ended() is None:
            permissions.answer(
                layout, req["id"], "expire", principal=None, by="deadline",
                reason=f"no answer within {wait_s:g} s: denied (the default)",
            )  # fmt: skip


def _ask(
    layout: Layout,
    wid: str,
    path: str,
    tree: str,
    homes: list[str],
    session: Mapping[str, Any],
    runtime: str,
    since: str,
    wait_s: float,
) -> dict[str, Any] | None:
    """The decision opened about `path`, or None where none is: not offered, asked already in this run, or too many
    open (each said in the audit log but the second)."""
    target, why = offer(path, tree, layout.project, homes)
    if target is None:
        _not_asked(layout, wid, session, path, why)
        return None
    who = str(session.get("alias") or wid)
    text = (
        f"its sandbox refused a write to {path} (read-only file system); approve: {target} is writable in "
        f"{who}'s next sandbox (a failover, a resume, its next round), not in this run, whose mounts do not "
        "change; what it writes there runs with your rights if a program outside the sandbox runs it"
    )
    with Lock(layout.lock(f"write-asks-{wid}")):  # two failures at once ask once
        known = permissions.requests(layout, state=None)
        if _asked(known, wid, target, since):
            return None
        now = [r for r in known if r.get("tool") == TOOL and r.get("worker") == wid and r.get("state") == "pending"]
        if len(now) >= MAX_OPEN:
            _not_asked(layout, wid, session, target, f"{len(now)} decisions about its writes are open already")
            return None
        req = permissions.open_request(
            layout, dict(session), runtime=runtime, tool=TOOL, tool_input={"path": target, "refused": path},  # type: ignore[arg-type]
            wait_s=wait_s, worker=wid, decision=engine.Decision("ask", text), waited=False,
        )  # fmt: skip
    permissions.log(layout, req, state="held", how="sandbox write refused", by=f"{wid}'s channel")
    return dict(req)


def _not_asked(layout: Layout, wid: str, session: Mapping[str, Any], path: str, why: str) -> None:
    permissions.log(
        layout, {"tool": TOOL, "input": path, "worker": wid, "session": session.get("id")},
        behavior="not asked", how="sandbox write refused", by=f"{wid}'s channel", reason=why,
    )  # fmt: skip


def _asked(requests: Sequence[Mapping[str, Any]], wid: str, target: str, since: str) -> bool:
    """Whether this run already asked about `target` for `wid` (pending, or decided: one question per run)."""
    for r in requests:
        call = r.get("call")
        if r.get("tool") == TOOL and r.get("worker") == wid and isinstance(call, dict) and call.get("path") == target:
            if r.get("state") == "pending" or str(r.get("created_at") or "") >= since:
                return True
    return False
