"""Trust for a project's cocoplus.toml, in the spirit of git's `safe.directory` and direnv's `allow`.

A value that names a program to run or a place data is sent to
(`settings.Key.needs_trust`) comes into effect from a project's
cocoplus.toml only once the user has trusted that file, as it is now:
`cocoplus trust` records the project's real path and the SHA-256 of the
file's bytes in `~/.config/cocoplus/trusted.json` (`core.userfiles`),
never inside the repository.  Any change to the file changes the hash, so
the file must be trusted again.  The user's own configuration file and the
environment need no trust.

Until then every command works as if those keys were absent and says so
once, on stderr (`notice`), in one line naming what was ignored and
`cocoplus trust`.  Standard library only: a hook that recompiles its copy of
the configuration checks trust too (so no untrusted value reaches it), and
prints nothing.
"""

from __future__ import annotations

import os
import stat as _stat

from cocoplus.core import clock, fsio, userfiles
from cocoplus.core.errors import CocoplusError, StateCorrupt

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Callable
    from typing import Any

SCHEMA_VERSION = 1
MAX_RECORD_BYTES = 4 * 1024 * 1024
HOW = "`cocoplus trust`"

# Why a file's values were ignored, said after the file's name.
NOT_TRUSTED = "is not trusted"
CHANGED = "has changed since it was trusted"


def project_key(project_dir: str) -> str:
    """How the record names a project: its real path (a symlinked path is the same project)."""
    return os.path.realpath(project_dir)


def digest(raw: bytes) -> str:
    import hashlib  # deferred: loads OpenSSL; only a project file that holds keys needing trust is hashed

    return hashlib.sha256(raw).hexdigest()


# -- the record ------------------------------------------------------------------


def _check_owner(path: str) -> None:
    """StateCorrupt unless the record is a file of ours that nobody else can write (else anyone could trust for us)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StateCorrupt(path, f"cannot examine ({exc.strerror})") from None
    if _stat.S_ISREG(st.st_mode):
        if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
            raise StateCorrupt(path, f"is owned by uid {st.st_uid}, not by you; it is not used")
        if st.st_mode & 0o022:
            raise StateCorrupt(path, f"is writable by others (mode {st.st_mode & 0o777:o}); it is not used")


def _validate(doc: dict[str, Any], path: str) -> dict[str, Any]:
    projects = doc.get("projects")
    if not isinstance(projects, dict):
        raise StateCorrupt(path, 'expected {"projects": {...}}')
    for name, rec in projects.items():
        if not isinstance(rec, dict) or not isinstance(rec.get("sha256"), str):
            raise StateCorrupt(path, f"the entry for {name!r} has no sha256")
    return doc


def read_record() -> dict[str, Any]:
    """Every trusted project: `{project path: {"file", "sha256", "trusted_at", "keys"}}`.

    StateCorrupt (naming the file) when the record is damaged, not ours, or
    writable by others; a missing record trusts nothing.
    """
    path = userfiles.trust_file()
    _check_owner(path)
    doc = fsio.read_json(path, MAX_RECORD_BYTES)
    if doc is None:
        return {}
    return dict(_validate(doc, path)["projects"])


def entry(project_dir: str) -> dict[str, Any] | None:
    """The project's trust entry, None if it has none (StateCorrupt if the record cannot be used)."""
    return read_record().get(project_key(project_dir))


def verdict(project_dir: str, raw: bytes) -> str | None:
    """None when the project's file, with these bytes, is trusted; otherwise why not, in a few words."""
    try:
        rec = entry(project_dir)
    except CocoplusError as exc:
        return f"is not trusted (the trust record {userfiles.shown(userfiles.trust_file())} cannot be used: {_cause(exc)})"
    if rec is None:
        return NOT_TRUSTED
    if rec.get("sha256") != digest(raw):
        return CHANGED
    return None


def _cause(exc: CocoplusError) -> str:
    return str(getattr(exc, "cause", None) or exc)


def _update(change: Callable[[dict[str, Any]], Any]) -> Any:
    """Change the record under its lock, written atomically; returns what `change` returns."""
    path = userfiles.trust_file()
    fsio.ensure_dir(userfiles.directory())
    _check_owner(path)
    out: dict[str, Any] = {}

    def apply(doc: dict[str, Any] | None) -> dict[str, Any]:
        doc = doc or {"schema_version": SCHEMA_VERSION, "projects": {}}
        out["result"] = change(doc["projects"])
        doc["schema_version"] = SCHEMA_VERSION
        return doc

    fsio.locked_update(path, userfiles.trust_lock(), apply, validate=_validate)
    return out.get("result")


def record(project_dir: str, file: str, raw: bytes, keys: list[str]) -> dict[str, Any]:
    """Trust the project's file as these bytes; returns the entry written (replacing any earlier one)."""
    rec = {"file": os.path.realpath(file), "sha256": digest(raw), "trusted_at": clock.iso(), "keys": list(keys)}

    def put(projects: dict[str, Any]) -> dict[str, Any]:
        projects[project_key(project_dir)] = rec
        return rec

    result: dict[str, Any] = _update(put)
    return result


def revoke(project_dir: str) -> dict[str, Any] | None:
    """Forget the project's trust; returns the entry removed, None if there was none."""
    if not os.path.exists(userfiles.trust_file()):
        return None

    def drop(projects: dict[str, Any]) -> dict[str, Any] | None:
        return projects.pop(project_key(project_dir), None)

    removed: dict[str, Any] | None = _update(drop)
    return removed


# -- saying what was ignored, once per command -------------------------------------------

_notice: dict[str, Any] = {"sink": None, "said": False}


def speak_to(sink: Callable[[str], None] | None) -> None:
    """Where `notice` writes (the CLI: one line on stderr), for the command about to run; None: nowhere (hooks)."""
    _notice["sink"] = sink
    _notice["said"] = False


def quiet() -> None:
    """Say nothing more in this command (`cocoplus trust` shows the keys itself)."""
    _notice["said"] = True


def notice_text(file_shown: str, reason: str, labels: list[str]) -> str:
    """The one line: which file, why, what was ignored, and how to trust it."""
    again = " again" if reason == CHANGED else ""
    return (
        f"cocoplus: note: {file_shown} {reason}, so these were ignored: {', '.join(labels)}; "
        f"review the file and run {HOW}{again} to use them"
    ).replace("\n", " ")


def notice(text: str) -> None:
    """Say `text` once in this command, if anyone listens."""
    sink = _notice["sink"]
    if sink is None or _notice["said"]:
        return
    _notice["said"] = True
    sink(text)
