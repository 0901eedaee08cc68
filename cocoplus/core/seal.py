"""Seals: a command cocoplus records now to run later is bound to this user, this machine and this record.

Some records under `.cocoplus/` name a command cocoplus runs later: a
session's command line, recorded at its SessionStart, which `cocoplus
dispatch` resumes (`supervision.headless`), and a managed worker's
command, which its runner starts (`supervision.workerrun`).  Some grant
something: a worker's record carries its own permission rules (`launch
--allow`), says that no person watches it (headless) and names the runner
process it is bound to, and a session `dispatch` resumed headless records
that process (`resumed`): the permission hook takes a session for that
worker, or for a headless one, only from such a record whose process is
among its ancestors (`session.identity`).  A repository can carry such
records too (committed, or copied in), and an agent can edit the ones under
its own project, so cocoplus runs a command, or grants anything, only from
a record it sealed itself.  When cocoplus writes such a record it adds a
seal: HMAC-SHA256 under this user's key (`userfiles.seal_key_file()`: 32
random bytes, made on first use, 0600, never inside a project) over a
canonical encoding of exactly what will be run or granted and where: the
kind of record and its id (a session's runtime and runtime session id too),
the project directory it runs in (its real path), the program (absolute
paths) and the argv; for a worker also its rules, its headless flag and its
runner's process (pid, start ticks, machine, pid namespace); for a resumed
session the resumed process.  A record written by another user or on
another machine, copied from another project, hand-written or changed since
has no valid seal; `check` says why in a few words, its command is never
run and it grants nothing.  A worker record sealed by a release before its
grants were (`LEGACY`) still runs its command; it grants no rules.

A key file that is a symbolic link, not a regular file, not this user's,
or that anyone else may read or write is refused, never repaired.

Standard library only, and light: the SessionStart hook seals the command
line it records.  The HMAC is written out here (RFC 2104) over the
interpreter's own SHA-256 (`_sha256`, `_sha2` from Python 3.12), because
`import hmac` loads hashlib and OpenSSL, about ten times what the rest of
the seal costs (docs/guides/supervision.md, "Only what cocoplus recorded is
resumed", has the figures).  `check` compares in constant time with the
interpreter's own `_operator._compare_digest` (what `hmac.compare_digest`
is), since the permission hook checks a worker's seal.
"""

from __future__ import annotations

import os
import stat as _stat
from _operator import _compare_digest  # what hmac.compare_digest is, without loading hashlib and OpenSSL

from cocoplus.core import fsio, userfiles
from cocoplus.core.errors import CocoplusError

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Callable, Mapping
    from typing import Any

try:  # the interpreter's own SHA-256: no OpenSSL to load
    from _sha256 import sha256 as _sha  # type: ignore[import-not-found]  # Python 3.11 (no stub)
except ImportError:  # pragma: no cover - other Python versions and builds
    try:
        from _sha2 import sha256 as _sha  # type: ignore[import-not-found]  # Python 3.12+
    except ImportError:
        from hashlib import sha256 as _sha

KEY_BYTES = 32
DOMAIN = "cocoplus seal 1"  # what the MAC is of: changing the encoding changes this
_BLOCK = 64  # SHA-256's block size
# HMAC's pads as translation tables (each byte x to x ^ 0x36, x ^ 0x5C), made with one XOR of two 256-byte numbers
# rather than a loop over 256 bytes each time the module loads.
_ALL = int.from_bytes(bytes(range(256)), "big")
_IPAD = (_ALL ^ int.from_bytes(b"\x36" * 256, "big")).to_bytes(256, "big")
_OPAD = (_ALL ^ int.from_bytes(b"\x5c" * 256, "big")).to_bytes(256, "big")

# Kinds of sealed record.
SESSION = "session"
WORKER = "worker"
GRANTS = "grants 1"  # a worker seal that covers its grants (rules, headless, runner) too
RESUMED = "resumed"  # the process `dispatch` resumed a session in, headless
AGENT = "agent"  # an entry of the per-user registry that grants (session/agents.py: a process cocoplus started)

# Why a record's command is not run, said after "its command line" / "its command".
NO_SEAL = (
    "carries no seal: it was not recorded by cocoplus for this user on this machine (or by a cocoplus before seals)"
)
MISMATCH = (
    "has a seal that does not hold: it was recorded by another user or on another machine, "
    "or for another record or project, or changed since"
)
MALFORMED = "is not one cocoplus records (malformed)"
LEGACY = (
    "was sealed by a release of cocoplus before worker seals covered its grants: its command runs, but its rules, "
    "headless flag and runner are not vouched for, so it grants no rules (the worker asks)"
)


class KeyUnusable(CocoplusError):
    """This user's seal key cannot be used (or does not exist yet): the message names the file and why."""


# -- the key ----------------------------------------------------------------------------


def _read_key(path: str, what: str = "the seal key") -> bytes:
    """The secret in `path` (`what` names it in messages); FileNotFoundError when there is none; KeyUnusable
    when it may not be used."""
    shown = f"{what} {userfiles.shown(path)}"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if os.path.islink(path):
            raise KeyUnusable(f"{shown} is a symbolic link; it is not used") from None
        raise KeyUnusable(f"{shown} cannot be read ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not _stat.S_ISREG(st.st_mode):
            raise KeyUnusable(f"{shown} is not a regular file; it is not used")
        if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
            raise KeyUnusable(f"{shown} is owned by uid {st.st_uid}, not by you; it is not used")
        if st.st_mode & 0o077:
            raise KeyUnusable(f"{shown} can be read or written by others (mode {st.st_mode & 0o777:o}); it is not used")
        raw = os.read(fd, 4 * KEY_BYTES)
    finally:
        os.close(fd)
    if len(raw) != KEY_BYTES:
        raise KeyUnusable(f"{shown} is damaged ({len(raw)} bytes, expected {KEY_BYTES}); it is not used")
    return raw


def _make_key(path: str, what: str = "the seal key") -> bytes:
    """Create the secret: written 0600 under a temporary name, then linked into place, so no one ever reads half of
    one and of two first uses at once both end up with the one that got there first."""
    shown = f"{what} {userfiles.shown(path)}"
    directory = os.path.dirname(path)
    fsio.ensure_dir(directory)
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}-{os.urandom(4).hex()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise KeyUnusable(f"{shown} cannot be created ({exc.strerror})") from None
    try:
        try:
            os.write(fd, os.urandom(KEY_BYTES))  # 32 bytes to a new file: one write
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process made it first: that one is the key
    except OSError as exc:
        raise KeyUnusable(f"{shown} cannot be created ({exc.strerror})") from None
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass
    fsio.fsync_dir(directory)
    return _read_key(path, what)


def secret(path: str, what: str, create: bool = False) -> bytes:
    """One of this user's secrets (32 random bytes, 0600, never inside a project) kept like the seal key: refused
    when it is a link, not this user's, or readable by others; made now if `create` and there is none."""
    try:
        return _read_key(path, what)
    except FileNotFoundError:
        if not create:
            raise KeyUnusable(f"this user has no {what} ({userfiles.shown(path)})") from None
    return _make_key(path, what)


def key(create: bool = False) -> bytes:
    """This user's seal key (made now if `create` and there is none); KeyUnusable says why it cannot be had."""
    path = userfiles.seal_key_file()
    try:
        return _read_key(path)
    except FileNotFoundError:
        if not create:
            raise KeyUnusable(
                f"this user has no seal key ({userfiles.shown(path)}), so nothing here was sealed by this user"
            ) from None
    return _make_key(path)


def capability(create: bool = True) -> str | None:
    """This user's capability (docs/authority.md), as the text COCOPLUS_MCP_TOKEN carries: a secret kept like the
    seal key (`userfiles.capability_file()`), which makes `cocoplus mcp` serve the brain's tools and a `cocoplus`
    command act as the main brain; cocoplus gives it only to the controller it starts.  None when there is none
    and `create` is false."""
    path = userfiles.capability_file()
    what = "the capability"
    try:
        return _read_key(path, what).hex()
    except FileNotFoundError:
        if not create:
            return None
    return _make_key(path, what).hex()


# -- the MAC ------------------------------------------------------------------------------


def _put(out: list[bytes], value: Any) -> None:
    """Append `value` (None, a string, or a list of these) unambiguously: a tag, a length, the bytes."""
    if value is None:
        out.append(b"n")
    elif isinstance(value, str):
        raw = value.encode("utf-8", "surrogatepass")
        out.append(b"s%d:" % len(raw))
        out.append(raw)
    elif isinstance(value, (list, tuple)):
        out.append(b"l%d:" % len(value))
        for item in value:
            _put(out, item)
    else:
        raise ValueError(f"cannot seal a {type(value).__name__}")


def encode(fields: list[Any]) -> bytes:
    """The canonical bytes of `fields` (ValueError for anything but None, strings and lists of them)."""
    out: list[bytes] = []
    _put(out, [DOMAIN, *fields])
    return b"".join(out)


def hmac_sha256(secret: bytes, message: bytes) -> str:
    """HMAC-SHA256 (RFC 2104) of `message`, in hex: the same as `hmac.new(secret, message, "sha256").hexdigest()`."""
    if len(secret) > _BLOCK:
        secret = _sha(secret).digest()
    secret = secret.ljust(_BLOCK, b"\0")
    inner = _sha(secret.translate(_IPAD))
    inner.update(message)
    outer = _sha(secret.translate(_OPAD))
    outer.update(inner.digest())
    return str(outer.hexdigest())


def digest(text: str) -> str:
    """SHA-256 of `text` (UTF-8), in hex: how the per-user registry names a project or a token in its files."""
    return str(_sha(text.encode("utf-8", "surrogatepass")).hexdigest())


def seal(fields: list[Any]) -> str:
    """The seal over `fields` under this user's key (made on first use); KeyUnusable, ValueError."""
    return hmac_sha256(key(create=True), encode(fields))


def check(fields: list[Any], found: Any) -> str | None:
    """None when `found` is the seal over `fields` under this user's key; otherwise why not, in a few words."""
    if not isinstance(found, str) or not found:
        if os.path.lexists(userfiles.seal_key_file()):
            try:
                key()
            except KeyUnusable as exc:  # which is why cocoplus sealed nothing: say so
                return f"{NO_SEAL}; {exc.message}"
        return NO_SEAL
    try:
        data = encode(fields)
    except ValueError:
        return MALFORMED
    try:
        secret = key()
    except KeyUnusable as exc:
        return f"cannot be checked: {exc.message}"
    if not _compare_digest(hmac_sha256(secret, data), found):
        return MISMATCH
    return None


# -- what is sealed, for each kind of record ---------------------------------------------------------


def project_path(project: str) -> str:
    """How a seal names the directory a command runs in: its real path (a record copied elsewhere does not hold)."""
    return os.path.realpath(project)


def session_fields(
    rec_id: Any, runtime: Any, runtime_session_id: Any, project: str, program: Any, argv: Any
) -> list[Any]:
    """What a session's seal covers: the record, its runtime and runtime session, where it runs,
    and its command line."""
    return [SESSION, rec_id, runtime, runtime_session_id, project_path(project), program, argv]


def legacy_worker_fields(worker_id: Any, project: str, command: Any, cwd: str | None = None) -> list[Any]:
    """What a managed worker's seal covered before it covered the worker's grants: the worker, its project, the
    command its runner starts, and the directory it runs in when that is not the project (its git worktree)."""
    fields = [WORKER, worker_id, project_path(project), command]
    return [*fields, project_path(cwd)] if cwd else fields


def worker_fields(
    worker_id: Any,
    project: str,
    command: Any,
    cwd: str | None = None,
    *,
    allow: Any = (),
    headless: bool = True,
    runner: Any = None,
    sandbox: Any = None,
    network: Any = None,
) -> list[Any]:
    """What a managed worker's seal covers: the worker, its project, the command its runner starts, the directory
    it runs in (its git worktree, or None: the project), and what it grants: its own permission rules (`launch
    --allow`), whether no person watches it (headless), and the runner process it is bound to (pid, start ticks,
    machine, pid namespace; None before its runner recorded itself), and its sandbox profile where it has one (a
    record without one is sealed as before), and its network where it is limited (likewise)."""
    proc = runner if isinstance(runner, dict) else {}
    bound = [_text(proc.get(k)) for k in ("pid", "start_ticks", "host", "pidns")] if runner is not None else None
    rules = list(allow) if isinstance(allow, (list, tuple)) else allow
    fields = [
        WORKER, worker_id, project_path(project), command, project_path(cwd) if cwd else None,
        GRANTS, rules, "headless" if headless is True else "watched", bound,
    ]  # fmt: skip
    if sandbox not in (None, "none"):
        fields += ["sandbox", sandbox]
    if network not in (None, "all"):
        fields += ["network", network]
    return fields


def worker_fields_of(rec: Mapping[str, Any], project: str, worker_id: str) -> list[Any]:
    """`worker_fields` of worker `worker_id`'s record as it stands."""
    return worker_fields(
        worker_id, project, rec.get("command"), worker_cwd(rec), allow=rec.get("allow") or [],
        headless=rec.get("headless") is True, runner=rec.get("runner"), sandbox=rec.get("sandbox"),
        network=rec.get("network"),
    )  # fmt: skip


def _text(value: Any) -> Any:
    """How a number of a process is sealed: as its decimal text (a seal covers strings); None and strings as they
    are; anything else is not what cocoplus records (ValueError at the seal)."""
    if isinstance(value, bool):
        return value  # not sealable: the record is malformed
    return str(value) if isinstance(value, int) else value


def resumed_fields(cs_id: Any, project: str, proc: dict[str, Any]) -> list[Any]:
    """What the seal on a session's `resumed` covers: the session, its project, and the process `dispatch` started
    for it, headless (pid, start ticks, machine, pid namespace)."""
    bound = [_text(proc.get(k)) for k in ("pid", "start_ticks", "host", "pidns")]
    return [RESUMED, cs_id, project_path(project), bound, "headless"]


def resumed_problem(rec: Mapping[str, Any], project: str) -> str | None:
    """Why the session record's `resumed` process may not be taken for a headless session cocoplus resumed (None:
    it is sealed for this user, project and session)."""
    proc = rec.get("resumed")
    if not isinstance(proc, dict):
        return NO_SEAL
    return check(resumed_fields(rec.get("id"), project, proc), proc.get("seal"))


def agent_fields(kind: Any, state_dir: str, ident: Any, proc: dict[str, Any]) -> list[Any]:
    """What the seal on an entry of the per-user registry covers (session/agents.py): its kind, the project's
    state directory, the id it names there, and the process (pid, start ticks, machine, pid namespace)."""
    bound = [_text(proc.get(k)) for k in ("pid", "start_ticks", "host", "pidns")]
    return [AGENT, kind, project_path(state_dir), ident, bound]


def worker_cwd(rec: Mapping[str, Any]) -> str | None:
    """The worker's own directory (its git worktree's, `launch --worktree`), or None: it runs in the project."""
    tree = rec.get("worktree")
    cwd = tree.get("cwd") if isinstance(tree, dict) else None
    return cwd if isinstance(cwd, str) and cwd else None


def worker_tree(rec: Mapping[str, Any]) -> str | None:
    """The worker's git worktree (`launch --worktree`), or None: its tree is the project."""
    tree = rec.get("worktree")
    path = tree.get("path") if isinstance(tree, dict) else None
    return path if isinstance(path, str) and path else None


def session_problem(rec: Mapping[str, Any], project: str) -> str | None:
    """Why the session record's recorded command line may not be
    run (None: it is sealed for this user, project and record)."""
    proc = rec.get("process")
    if not isinstance(proc, dict):
        return NO_SEAL
    program, argv = proc.get("program"), proc.get("argv")
    if not _argv_or_none(program) or not _argv_or_none(argv):
        return MALFORMED
    if program is not None and not all(os.path.isabs(p) for p in program):
        return MALFORMED
    fields = session_fields(rec.get("id"), rec.get("runtime"), rec.get("runtime_session_id"), project, program, argv)
    return check(fields, proc.get("seal"))


def worker_problem(rec: Mapping[str, Any], project: str, worker_id: str) -> str | None:
    """Why worker `worker_id`'s record's command may not be run.

    None: it is sealed for this user, project and worker, with its grants
    (`worker_grant_problem`) or by an earlier release over its command alone
    (`LEGACY`: the command runs, the record grants nothing)."""
    problem = worker_grant_problem(rec, project, worker_id)
    return None if problem in (None, LEGACY) else problem


def worker_grant_problem(rec: Mapping[str, Any], project: str, worker_id: str) -> str | None:
    """Why worker `worker_id`'s record may not grant anything: its rules, its headless flag, its runner.

    None: its seal covers all of them, for this user, project and worker.
    `LEGACY`: an earlier release sealed its command alone.  Otherwise why the
    record is not one cocoplus sealed (NO_SEAL, MISMATCH, MALFORMED, ...)."""
    cmd = rec.get("command")
    if not _argv_or_none(cmd) or not cmd or not os.path.isabs(cmd[0]):
        return MALFORMED
    tree = rec.get("worktree")
    if tree is not None and (worker_cwd(rec) is None or not os.path.isabs(worker_cwd(rec) or "")):
        return MALFORMED
    allow = rec.get("allow")
    if allow is not None and not (isinstance(allow, list) and all(isinstance(r, str) for r in allow)):
        return MALFORMED
    runner = rec.get("runner")
    if runner is not None and not isinstance(runner, dict):
        return MALFORMED
    problem = check(worker_fields_of(rec, project, worker_id), rec.get("seal"))
    if problem == MISMATCH:
        old = legacy_worker_fields(worker_id, project, cmd, worker_cwd(rec))
        if check(old, rec["seal"]) is None:
            return LEGACY
    return problem


def seal_worker(rec: Mapping[str, Any], project: str, worker_id: str) -> str:
    """The seal over worker `worker_id`'s record as it stands (its command and its grants); KeyUnusable,
    ValueError."""
    return seal(worker_fields_of(rec, project, worker_id))


def _argv_or_none(value: Any) -> bool:
    return value is None or (isinstance(value, list) and all(isinstance(a, str) for a in value))


def sealed(fields: list[Any], log: Callable[[str], None] | None = None) -> str | None:
    """The seal over `fields`, or None (said to `log`) when this user's key cannot be used.

    A record without its seal is then not run."""
    try:
        return seal(fields)
    except (CocoplusError, ValueError, OSError) as exc:  # the record is written all the same, unsealed
        if log is not None:
            log(f"not sealed: {exc}")
        return None
