"""The per-user registry: this user's projects, and the agent processes cocoplus recorded, outside every project.

Under `~/.local/state/cocoplus/` (`userfiles.state_directory()`: the home
the password database names, never `$HOME` or `$XDG_STATE_HOME`):

* `projects/<key>.json`, one per project cocoplus was set up in (`init`,
  `install`) or ran an agent in: `{"state_dir", "project", "at"}`.
  `projects()` lists them (the decisions of every project are found from
  it).
* `agents/<pid>-<start ticks>-<where>.json`, one per agent process: the
  runtime process of a session its SessionStart hook recorded (`session`),
  a managed worker's runner (`worker`, written by the runner itself), a
  session `dispatch` resumed headless (`resumed`); and a process cocoplus
  started for itself that acts as a principal of its own (`watcher`),
  sealed (`core.seal.agent_fields`).  `<where>` names the machine and the
  pid namespace, so a home shared by several machines or containers keeps
  their pids apart.

A lookup is one `open` per ancestor of the caller (`find`), no listing.  An
entry whose process has ended is removed when the next entry is written
(`prune`).

What an entry grants: an agent entry grants nothing.  It makes a `cocoplus`
command whose ancestry holds it act as a worker (less authority than the
operator's), in every project of this user (`ops/authority.caller`), and
it points the permission hook at the record that may vouch for a worker or
a headless session (`session/identity.py`), which is sealed and checked
there.  Only an entry of cocoplus's own kind (`watcher`) whose seal holds
makes its process, and what it starts, act as that principal; such an entry
is written for a child only by the process that started it (`vouch`, then
the child's `claim`).  The files are this user's and under a protected
path (`rules/protected.py`): a worker allowed to run arbitrary code as this
user can still write them, and read the seal key, until sandboxes exist.

Standard library only: the SessionStart and PermissionRequest hooks use it.
"""

from __future__ import annotations

import os

from cocoplus.core import clock, fsio, seal, userfiles
from cocoplus.core.errors import CocoplusError
from cocoplus.runtimes import registry as runtimes
from cocoplus.session import procinfo

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Mapping
    from typing import Any

AGENTS_DIR = "agents"
PROJECTS_DIR = "projects"
VOUCHED_DIR = "vouched"
# Kinds of agent process: a command below one of them acts as a worker.
SESSION = "session"
WORKER = "worker"
RESUMED = "resumed"
AGENT_KINDS = (SESSION, WORKER, RESUMED)
# Kinds of process cocoplus starts for itself that act as a principal of their own (ops/authority.py), sealed.
WATCHER = "watcher"
OWN_KINDS = (WATCHER,)
# The variable a child cocoplus vouched for finds its token in (taken out of its environment at once).
VOUCH_ENV = "COCOPLUS_VOUCHED"
VOUCH_MAX_AGE_S = 300.0


def agents_dir() -> str:
    return os.path.join(userfiles.state_directory(), AGENTS_DIR)


def projects_dir() -> str:
    return os.path.join(userfiles.state_directory(), PROJECTS_DIR)


def _where(proc: Mapping[str, Any] | None = None) -> str:
    """A short name for the machine and pid namespace of `proc` (default: this process's)."""
    at = proc if proc is not None else procinfo.here()
    return seal.digest(f"{at.get('host')}\0{at.get('pidns')}")[:12]


def entry_path(pid: int, ticks: int | None, where: str | None = None) -> str:
    return os.path.join(agents_dir(), f"{pid}-{ticks}-{where or _where()}.json")


def _key(state_dir: str) -> str:
    return seal.digest(os.path.realpath(state_dir))[:24]


def runs_runtime(argv: Any, runtime: Any) -> bool:
    """Whether a recorded command line runs that runtime's CLI (its command in the program or script path): what
    tells a runtime's process from whatever ran a hook by hand."""
    if not (isinstance(argv, list) and runtimes.known(runtime)):
        return False
    command = runtimes.get(runtime).COMMAND
    return any(isinstance(a, str) and (command in os.path.basename(a) or f"/{command}" in a) for a in argv[:4])


# -- writing ----------------------------------------------------------------------------------------


def register(
    kind: str,
    state_dir: str,
    ident: str | None,
    proc: Mapping[str, Any],
    *,
    runtime: str | None = None,
    keep: bool = False,
    sealed: bool = False,
) -> str | None:
    """Record `proc` (`{"pid", "start_ticks", "host", "pidns"}`, as procinfo gives it) as an agent process of
    `kind` for `ident` (a session's cs_ id, a worker's id) in the project whose state directory is `state_dir`;
    the entry's path.  `keep`: an entry already there for the same process stays (a resumed session's own
    SessionStart keeps what the resume recorded).  `sealed`: the entry carries a seal (cocoplus's own kinds).
    Ended processes' entries are removed first.  None when the process cannot be named (no start ticks);
    CocoplusError when the entry cannot be written."""
    pid, ticks = proc.get("pid"), proc.get("start_ticks")
    if not isinstance(pid, int) or not isinstance(ticks, int):
        return None
    where = {"host": proc.get("host"), "pidns": proc.get("pidns")}
    path = entry_path(pid, ticks, _where(where))
    if keep and os.path.lexists(path):
        return path
    prune()
    real = os.path.realpath(state_dir)
    doc: dict[str, Any] = {
        "kind": kind, "state_dir": real, "project": os.path.dirname(real), "id": ident, "runtime": runtime,
        "pid": pid, "start_ticks": ticks, **where, "at": clock.iso(),
    }  # fmt: skip
    if sealed:
        doc["seal"] = seal.seal(seal.agent_fields(kind, real, ident, doc))
    fsio.ensure_dir(agents_dir())
    fsio.atomic_write_json(path, doc)
    register_project(real, only_new=True)
    return path


def remove(proc: Mapping[str, Any]) -> None:
    """Forget `proc`'s entry (its process is ending); never raises."""
    pid, ticks = proc.get("pid"), proc.get("start_ticks")
    if isinstance(pid, int) and isinstance(ticks, int):
        try:
            os.unlink(entry_path(pid, ticks))
        except OSError:
            pass


def prune() -> list[str]:
    """Remove the entries, of this machine and pid namespace, whose process has ended; their names."""
    mine = "-" + _where() + ".json"
    try:
        names = os.listdir(agents_dir())
    except OSError:
        return []
    gone: list[str] = []
    for name in names:
        if not name.endswith(mine):
            continue
        pid_text, _, rest = name.partition("-")
        ticks_text = rest.partition("-")[0]
        if not (pid_text.isdigit() and ticks_text.isdigit()):
            continue
        if procinfo.alive(int(pid_text), int(ticks_text)) is False:
            try:
                os.unlink(os.path.join(agents_dir(), name))
                gone.append(name)
            except OSError:
                pass
    return gone


def register_project(state_dir: str, only_new: bool = False) -> str:
    """Record the project whose state directory is `state_dir` (`init`, `install`, an agent run there); the
    entry's path.  `only_new`: leave an entry already there as it is (one `stat`).  CocoplusError when it cannot
    be written."""
    real = os.path.realpath(state_dir)
    path = os.path.join(projects_dir(), _key(real) + ".json")
    if only_new and os.path.lexists(path):
        return path
    fsio.ensure_dir(projects_dir())
    fsio.atomic_write_json(path, {"state_dir": real, "project": os.path.dirname(real), "at": clock.iso()})
    return path


# -- reading ----------------------------------------------------------------------------------------


def read_entry(path: str) -> dict[str, Any] | None:
    try:
        return fsio.read_json(path)
    except CocoplusError:
        return None


def find(chain: list[tuple[int, int]]) -> list[tuple[int, dict[str, Any]]]:
    """The entries of the processes in `chain` (`procinfo.ancestors`: (pid, start ticks), nearest first), as
    (their place in the chain, the entry), nearest first: one `open` per process."""
    where = _where()
    out: list[tuple[int, dict[str, Any]]] = []
    for i, (pid, ticks) in enumerate(chain):
        doc = read_entry(entry_path(pid, ticks, where))
        if doc is not None and doc.get("pid") == pid and doc.get("start_ticks") == ticks:
            out.append((i, doc))
    return out


def own_principal(doc: Mapping[str, Any]) -> str | None:
    """The principal an entry of cocoplus's own kind makes its process (`watcher`), when its seal holds; else
    None."""
    kind = doc.get("kind")
    if kind not in OWN_KINDS or not isinstance(doc.get("state_dir"), str):
        return None
    fields = seal.agent_fields(kind, str(doc["state_dir"]), doc.get("id"), dict(doc))
    return str(kind) if seal.check(fields, doc.get("seal")) is None else None


def projects(prune_gone: bool = True) -> list[dict[str, Any]]:
    """This user's projects, oldest first: `{"state_dir", "project", "at"}` of each registered one whose state
    directory is still there (`prune_gone`: the others' entries are removed)."""
    try:
        names = sorted(os.listdir(projects_dir()))
    except OSError:
        return []
    out: list[dict[str, Any]] = []
    for name in names:
        if not name.endswith(".json"):
            continue
        path = os.path.join(projects_dir(), name)
        doc = read_entry(path)
        if doc is None or not isinstance(doc.get("state_dir"), str):
            continue
        if not os.path.isdir(doc["state_dir"]):
            if prune_gone:
                try:
                    os.unlink(path)
                except OSError:
                    pass
            continue
        out.append(doc)
    out.sort(key=lambda d: str(d.get("at") or ""))
    return out


# -- a child cocoplus starts for itself: `vouch` in the parent, `claim` in the child ------------------------


def vouch(kind: str, state_dir: str) -> dict[str, str]:
    """What the environment of a child cocoplus is about to start for itself carries so that the child can prove
    it acts as `kind` (`watcher`): a one-time token, whose sealed record this writes now.  The child's `claim`
    binds the record to its own process and takes the token out of its environment, so nothing it starts
    inherits it.  KeyUnusable or CocoplusError when it cannot be written."""
    if kind not in OWN_KINDS:
        raise ValueError(f"not a kind cocoplus vouches for: {kind!r}")
    token = os.urandom(16).hex()
    real = os.path.realpath(state_dir)
    doc: dict[str, Any] = {"kind": kind, "state_dir": real, "at": clock.iso()}
    doc["seal"] = seal.seal([seal.AGENT, "vouched", kind, real, seal.digest(token)])
    directory = os.path.join(userfiles.state_directory(), VOUCHED_DIR)
    fsio.ensure_dir(directory)
    fsio.atomic_write_json(os.path.join(directory, seal.digest(token)[:32] + ".json"), doc)
    return {VOUCH_ENV: token}


def claim(environ: dict[str, str] | None = None) -> str | None:
    """In a child cocoplus started with `vouch`: take the token out of `environ` (default `os.environ`), use up
    its record (once: the first to claim it) and record this process as the kind it names, sealed; that kind
    (`watcher`), or None when there is no token or it does not hold (never raises)."""
    env = os.environ if environ is None else environ
    token = env.pop(VOUCH_ENV, None)
    if not token:
        return None
    path = os.path.join(userfiles.state_directory(), VOUCHED_DIR, seal.digest(token)[:32] + ".json")
    doc = read_entry(path)
    try:
        os.unlink(path)  # used up: whoever removes it claims it
    except OSError:
        return None
    if doc is None:
        return None
    kind, real = doc.get("kind"), doc.get("state_dir")
    if kind not in OWN_KINDS or not isinstance(real, str):
        return None
    if seal.check([seal.AGENT, "vouched", kind, real, seal.digest(token)], doc.get("seal")) is not None:
        return None
    at = clock.parse_iso(doc.get("at"))
    if at is None or clock.parse_iso(clock.iso()) - at > VOUCH_MAX_AGE_S:  # type: ignore[operator]
        return None
    try:
        register(str(kind), real, None, procinfo.self_process(), sealed=True)
    except (CocoplusError, ValueError, OSError):
        return None
    return str(kind)
