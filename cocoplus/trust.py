"""Trust for a project's cocoplus.toml, in the spirit of git's `safe.directory` and direnv's `allow`.

A value that names a program to run or a place data is sent to
(`keytypes.Key.needs_trust`) comes into effect from a project's
cocoplus.toml only once the user has trusted that file, as it is now:
`cocoplus trust` records the project's real path and the SHA-256 of the
file's bytes in `~/.config/cocoplus/trusted.json` (`core.userfiles`),
never inside the repository.  Any change to the file changes the hash, so
the file must be trusted again.  The programs the file names by a path in
the project (`[ctx] command = "./tools/ctx.sh"`, `[accounts.x] command =
["scripts/brain.py"]`, the script of `["python3", "tools/brain.py"]`:
`programs_named`) are pinned too, by the SHA-256 of their content beside
the file's (`programs`); a change to one of them (or one going missing, or
appearing) means the file is no longer trusted either.  A program found on
PATH or named by an absolute path outside the project is not hashed.  The
user's own configuration file and the environment need no trust.

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
CHANGED_SINCE = "changed since it was trusted"
CHANGED = f"has {CHANGED_SINCE}"
BEFORE_PINS = "was trusted before cocoplus pinned the programs it names"


def project_key(project_dir: str) -> str:
    """How the record names a project: its real path (a symlinked path is the same project)."""
    return os.path.realpath(project_dir)


def digest(raw: bytes) -> str:
    import hashlib  # deferred: loads OpenSSL; only a project file that holds keys needing trust is hashed

    return hashlib.sha256(raw).hexdigest()


def file_digest(path: str) -> str | None:
    """The SHA-256 of the content at `path` (through a symbolic link: what would run), None if there is none to read."""
    import hashlib  # deferred: as above

    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            if not _stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return None
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return None
    return h.hexdigest()


# -- the programs a file names in the project ---------------------------------------------


def _interpreter(word: str) -> bool:
    from cocoplus.core.vocab import SCRIPT_INTERPRETERS  # deferred: only a value naming a program asks

    return os.path.basename(word).rstrip("0123456789.") in SCRIPT_INTERPRETERS


def _in_project(project: str, word: str, bare_is_relative: bool) -> tuple[str, str] | None:
    """(how it is shown, its path) when `word` names a file in the project.

    None for a name on PATH or a path elsewhere."""
    if os.path.isabs(word):
        real, root = os.path.realpath(word), os.path.realpath(project)
        if real == root or not real.startswith(root.rstrip("/") + "/"):
            return None
        return os.path.relpath(real, root), word
    if "/" not in word and not bare_is_relative:
        return None  # looked up on PATH
    tail = word
    while tail.startswith("./"):
        tail = tail[2:].lstrip("/")
    return os.path.normpath(word), os.path.join(project, tail)


def programs_named(project_dir: str, flagged: list[dict[str, Any]]) -> dict[str, str]:
    """The programs the values needing trust (`settings.needing_trust`) name in the project: {shown path: path}.

    A value that runs a program names it by its first word; a path there
    (relative: the project's, where cocoplus runs it; or absolute, under the
    project) is pinned.  When that word is an interpreter
    (`vocab.SCRIPT_INTERPRETERS`), the script it runs (its first word that
    is not an option) is pinned the same way, a bare name included (the
    interpreter reads it from the project).
    """
    from cocoplus.core import settings  # deferred: the key table, only for a file holding keys that need trust

    found: dict[str, str] = {}
    for item in flagged:
        if not settings.names_program(item["key"]):
            continue
        value = item["value"]
        words = (
            [value]
            if isinstance(value, str)
            else [w for w in value if isinstance(w, str)]
            if isinstance(value, list)
            else []
        )
        if not words or not words[0]:
            continue
        named = [_in_project(project_dir, words[0], False)]
        if _interpreter(words[0]):
            script = next((w for w in words[1:] if not w.startswith("-")), None)
            if script:
                named.append(_in_project(project_dir, script, True))
        for hit in named:
            if hit is not None:
                found.setdefault(hit[0], hit[1])
    return found


def pin(programs: dict[str, str]) -> dict[str, str | None]:
    """{shown path: SHA-256 of its content now, or None where there is none}."""
    return {shown: file_digest(path) for shown, path in programs.items()}


def program_changes(rec: dict[str, Any], programs: dict[str, str]) -> list[str] | None:
    """The pinned programs whose content is not what was trusted, by shown path.

    None if the entry pinned none at all."""
    pinned = rec.get("programs")
    if not isinstance(pinned, dict):
        return None if programs else []
    now = pin(programs)
    return [shown for shown, sha in now.items() if shown not in pinned or pinned[shown] != sha]


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


def verdict(project_dir: str, raw: bytes, programs: dict[str, str] | None = None) -> str | None:
    """None when the project's file, with these bytes, and the `programs` it names (`programs_named`) are trusted;
    otherwise why not, in a few words."""
    try:
        rec = entry(project_dir)
    except CocoplusError as exc:
        return (
            f"is not trusted (the trust record {userfiles.shown(userfiles.trust_file())} cannot be used: {_cause(exc)})"
        )
    if rec is None:
        return NOT_TRUSTED
    if rec.get("sha256") != digest(raw):
        return CHANGED
    changed = program_changes(rec, programs or {})
    if changed is None:
        return f"{BEFORE_PINS} ({', '.join(programs or {})})"
    if changed:
        return f"names {', '.join(changed)}, which {'has' if len(changed) == 1 else 'have'} {CHANGED_SINCE}"
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


def record(
    project_dir: str, file: str, raw: bytes, keys: list[str], programs: dict[str, str | None] | None = None
) -> dict[str, Any]:
    """Trust the project's file as these bytes, and the programs it names as these hashes (`pin`);
    returns the entry written (replacing any earlier one)."""
    rec = {
        "file": os.path.realpath(file), "sha256": digest(raw), "trusted_at": clock.iso(), "keys": list(keys),
        "programs": dict(programs or {}),
    }  # fmt: skip

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
    again = "" if reason.startswith(NOT_TRUSTED) else " again"
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
