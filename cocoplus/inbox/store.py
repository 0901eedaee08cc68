"""The inbox's files, per user, outside every project (`~/.local/state/cocoplus/inbox/`, under the password
database's home): never inside a repository, never a live token.

* `handles/<handle>.json`: which decision (project state directory and id) a token's handle stands for;
* `used/<sha256>`: a token that was used, as its hash, kept until the token expires (single use across
  restarts: the first `spend` of a token creates its file, any later one finds it);
* `ledger.jsonl`: the delivery ledger (for each decision and channel: sent, accepted by the server, answered,
  refused, escalated, followed up);
* `devices.json`: paired devices (the hash of each device's token, its name, when paired, revoked or not);
* `pairing/<sha256>.json`: a pairing link's one-time code, as its hash, until it is used or expires
  (`inbox/devices.py`);
* `page.json`: the decision page's base URL while `cocoplus serve --public URL` runs (`page_url`);
* `presence`: touched by `top` and the page while the operator is at the machine (no push then);
* `run.lock`, `run.json`: the one `cocoplus inbox run` of this user; `run.log`, its output when started
  detached; `pushes.json`, what it pushed where (never a token);
* `topics.json`: the ntfy topics made for this user when none are configured (inbox/settings.py).

Standard library only.
"""

from __future__ import annotations

import os
import secrets
import time
from typing import Any

from cocoplus.core import clock, fsio, jsonl, userfiles
from cocoplus.core.errors import CocoplusError

NAME = "inbox"


def directory() -> str:
    return os.path.join(userfiles.state_directory(), NAME)


def _path(*parts: str) -> str:
    return os.path.join(directory(), *parts)


def ledger_file() -> str:
    return _path("ledger.jsonl")


def devices_file() -> str:
    return _path("devices.json")


def presence_file() -> str:
    return _path("presence")


def run_lock() -> str:
    return _path("run.lock")


def run_file() -> str:
    return _path("run.json")


def topics_file() -> str:
    return _path("topics.json")


def log_file() -> str:
    """What `cocoplus inbox run` says when it was started detached."""
    return _path("run.log")


def pushes_file() -> str:
    """What `cocoplus inbox run` pushed (decision, channel, message id; never a token) and where its reply
    streams stopped, so a restart neither pushes a decision twice nor loses a tap."""
    return _path("pushes.json")


def pairing_dir() -> str:
    return _path("pairing")


def page_file() -> str:
    return _path("page.json")


# -- handles ---------------------------------------------------------------------------------------------------


def handle_of(state_dir: str, decision: str) -> str:
    """The handle of a decision (made on first use): 8 random bytes, as 16 hex digits, mapped to the decision."""
    key = _key(state_dir, decision)
    index = _path("handles", "by-decision", key)
    try:
        with open(index, encoding="ascii") as fh:
            found = fh.read().strip()
        if len(found) == 16:
            return found
    except OSError:
        pass
    handle = secrets.token_hex(8)
    fsio.ensure_dir(_path("handles", "by-decision"))
    fsio.atomic_write_json(_path("handles", f"{handle}.json"), {"state_dir": state_dir, "decision": decision,
                                                               "created_at": clock.iso()})  # fmt: skip
    fsio.atomic_write_text(index, handle + "\n")
    return handle


def decision_of(handle: str) -> dict[str, Any] | None:
    """{"state_dir", "decision"} a handle stands for, or None."""
    if len(handle) != 16 or any(c not in "0123456789abcdef" for c in handle):
        return None
    try:
        doc = fsio.read_json(_path("handles", f"{handle}.json"))
    except CocoplusError:
        return None
    return doc if isinstance(doc, dict) else None


def _key(state_dir: str, decision: str) -> str:
    import hashlib  # deferred: only a handle's index is named by a hash

    return hashlib.sha256(f"{os.path.realpath(state_dir)}\0{decision}".encode()).hexdigest()[:32]


# -- used tokens -------------------------------------------------------------------------------------------------


def spend(digest: str, expires: float, what: dict[str, Any]) -> dict[str, Any] | None:
    """Record a token's use (its `digest`); None when this is its first use, else what its first use recorded."""
    folder = _path("used")
    fsio.ensure_dir(folder)
    path = os.path.join(folder, digest)
    doc = {"expires": expires, "at": clock.iso(), **what}
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        try:
            first = fsio.read_json(path)
        except CocoplusError:
            first = None
        return first if isinstance(first, dict) else {"at": None}
    try:
        os.write(fd, fsio.dumps(doc).encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    fsio.fsync_dir(folder)
    return None


def spent(digest: str) -> dict[str, Any] | None:
    """What the first use of a token recorded (its `digest`), or None when it was not used (or is forgotten)."""
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        return None
    try:
        doc = fsio.read_json(os.path.join(_path("used"), digest))
    except CocoplusError:
        return {"at": None}
    return doc


def prune_used(now: float | None = None) -> int:
    """Forget used tokens that have expired (a replay of one is refused as expired anyway); how many."""
    folder = _path("used")
    now = time.time() if now is None else now
    n = 0
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    for name in names:
        path = os.path.join(folder, name)
        try:
            doc = fsio.read_json(path)
        except CocoplusError:
            continue
        if isinstance(doc, dict) and float(doc.get("expires") or 0) < now:
            try:
                os.unlink(path)
                n += 1
            except OSError:
                pass
    return n


# -- the delivery ledger ------------------------------------------------------------------------------------------


def note(decision: str, state_dir: str, channel: str, event: str, **fields: Any) -> dict[str, Any]:
    """One line of the delivery ledger (sent, accepted, failed, answered, refused, escalated, followed up)."""
    entry = {"ts": clock.iso(), "decision": decision, "state_dir": state_dir, "channel": channel, "event": event,
             **{k: v for k, v in fields.items() if v is not None}}  # fmt: skip
    fsio.ensure_dir(directory())
    jsonl.append_jsonl(ledger_file(), entry, ledger_file() + ".lock")
    return entry


def ledger(limit: int | None = None) -> list[dict[str, Any]]:
    try:
        records = jsonl.read_jsonl(ledger_file()).records
    except CocoplusError:
        return []
    return records[-limit:] if limit else records


# -- presence ----------------------------------------------------------------------------------------------------


def present(since_s: float, extra_file: str | None = None, now: float | None = None) -> bool:
    """Whether the operator is at the machine: a key pressed in `top` or on the page (or the presence file named in
    the configuration touched) within the last `since_s` seconds."""
    now = time.time() if now is None else now
    for path in (presence_file(), extra_file):
        if not path:
            continue
        try:
            if now - os.stat(path).st_mtime <= since_s:
                return True
        except OSError:
            continue
    return False


def touch_presence() -> None:
    fsio.ensure_dir(directory())
    fd = os.open(presence_file(), os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    os.close(fd)
    os.utime(presence_file())


# -- the decision page's address --------------------------------------------------------------------------------


def write_page(url: str, insecure_http: bool, project: str) -> dict[str, Any]:
    """Record the decision page's base URL (`cocoplus serve --public URL`, this process) for the inbox's pushes."""
    from cocoplus.session import procinfo  # deferred: only a public server records itself

    doc = {"url": url, "insecure_http": insecure_http, "project": project, "started_at": clock.iso(),
           **procinfo.self_process()}  # fmt: skip
    fsio.ensure_dir(directory())
    fsio.atomic_write_json(page_file(), doc)
    return doc


def clear_page() -> None:
    """Forget the page's address at the server's exit, unless another server recorded its own since."""
    try:
        doc = fsio.read_json(page_file())
    except CocoplusError:
        return
    if isinstance(doc, dict) and doc.get("pid") == os.getpid():
        try:
            os.unlink(page_file())
        except OSError:
            pass


def page_url() -> str | None:
    """The decision page's base URL (no trailing slash) while a `cocoplus serve --public URL` of this user runs,
    else None.  Never a plain-http address of another machine unless that server was told so (`--insecure-http`):
    links built on it carry tokens.  A push's "Open" is `<base>/inbox/d/<id>`, a direct link `<base>/inbox/t/<token>`.
    """
    from cocoplus.inbox import site  # deferred: only a link's maker asks
    from cocoplus.session import procinfo  # deferred: as site

    try:
        doc = fsio.read_json(page_file())
    except CocoplusError:
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("url"), str):
        return None
    if procinfo.alive(doc.get("pid"), doc.get("start_ticks")) is not True:
        return None
    url = str(doc["url"])
    return url if site.link_safe(url, insecure_ok=doc.get("insecure_http") is True) else None
