"""Who a hook is for: the managed worker (and whether no person watches it) that cocoplus vouches for.

`of_hook(layout, environ)` is the one answer the permission and session-start
hooks use (PreToolUse never asks).  A session is taken for managed worker W
only from W's record when

* its runner process (pid and start ticks, on this machine and in this pid
  namespace) is among the hook's ancestors (`procinfo.ancestors`: the hook,
  its shell, the runtime, the runner), and
* its seal holds (`core.seal.worker_grant_problem`): the seal covers the
  command, the worktree, the worker's own rules (`launch --allow`), its
  headless flag and that runner, so a record a repository brought along, or
  one the worker edited (an added `"Bash"`), grants nothing.

A session no managed worker runs is taken for headless (no person watches
it: its permission requests wait for an answer instead of the runtime's
dialog) only from a session record whose `resumed` process, the one
`cocoplus dispatch` started, is among the ancestors and whose seal holds.

The environment only names candidates: `COCOPLUS_WORKER` is the first one
checked; then the per-user registry (`session/agents.py`) names the agent
processes among the ancestors, one `open` each.  Neither decides: a
variable a cloned repository sets (`.claude/settings.json` `env`) vouches
for nothing.  A worker record an earlier release sealed over its command
alone (`seal.LEGACY`) is taken for its worker, headless, with no rules of
its own: its requests wait for an answer.  `problem` says, for the hook's
log, what was claimed and not vouched for.  Standard library only.
"""

from __future__ import annotations

import os

from cocoplus.core import fsio, seal
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import is_valid_id
from cocoplus.session import procinfo, registry

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Mapping
    from typing import Any

    from cocoplus.core.paths import Layout

WORKER_ENV = "COCOPLUS_WORKER"
HEADLESS_ENV = "COCOPLUS_HEADLESS"


class Identity:
    """What cocoplus vouches for about the session a hook runs for."""

    __slots__ = ("worker", "headless", "allow", "tree", "record", "problem")

    def __init__(
        self,
        worker: str | None = None,
        headless: bool = False,
        allow: list[str] | None = None,
        tree: str | None = None,
        record: Mapping[str, Any] | None = None,
        problem: str | None = None,
    ) -> None:
        self.worker = worker  # the managed worker's id, or None
        self.headless = headless  # no person watches this session (a launched worker, a headless resume)
        self.allow = allow or []  # the worker's own rules (`launch --allow`), only from a record whose seal holds
        self.tree = tree  # the worker's git worktree, where its path rules are meant for
        self.record = record  # the worker's record, or the resumed session's
        self.problem = problem  # what the environment or a record claimed and cocoplus did not vouch for (logged)


class _Here:
    """The hook's ancestry, read from /proc only as far as asked (a worker's runner is a few processes up), and this
    machine and pid namespace."""

    def __init__(self) -> None:
        self._up = procinfo.walk_up()
        self._seen: list[tuple[int, int]] = []
        self._done = False
        self.where = procinfo.here()

    def _more(self) -> bool:
        if self._done:
            return False
        step = next(self._up, None)
        if step is None:
            self._done = True
            return False
        self._seen.append(step)
        return True

    @property
    def chain(self) -> list[tuple[int, int]]:
        """Every ancestor, nearest first."""
        while self._more():
            pass
        return self._seen

    def has(self, proc: Any) -> bool:
        """Whether `proc` (a recorded `{"pid", "start_ticks", "host", "pidns"}`) is one of the ancestors."""
        if not isinstance(proc, dict):
            return False
        pid, ticks = proc.get("pid"), proc.get("start_ticks")
        if not isinstance(pid, int) or isinstance(pid, bool) or not isinstance(ticks, int):
            return False
        if not all(proc.get(k) is None or proc.get(k) == self.where[k] for k in ("host", "pidns")):
            return False
        while (pid, ticks) not in self._seen:
            if not self._more():
                return False
        return True


def of_hook(layout: Layout, environ: Mapping[str, str]) -> Identity:
    """The worker, or headless session, that cocoplus vouches this hook runs for; an Identity with no worker and
    not headless when it vouches for none (then `problem` says what was claimed, if anything)."""
    here = _Here()
    problems: list[str] = []
    tried: set[str] = set()
    named = environ.get(WORKER_ENV)
    if named:
        if is_valid_id(named):
            tried.add(named)
            who, why = _worker(layout, named, here)
            if who is not None:
                return who
            problems.append(f"{WORKER_ENV}={named}: {why}")
        else:
            problems.append(f"{WORKER_ENV} names no valid worker id")
    from cocoplus.session import agents  # deferred: only a hook the environment names no vouched worker for scans

    state_dir = os.path.realpath(layout.root)
    for _i, doc in agents.find(here.chain):
        if doc.get("state_dir") != state_dir:
            continue  # an agent of another project: its records are not here
        kind, ident = doc.get("kind"), doc.get("id")
        if not is_valid_id(ident):
            continue
        if kind == agents.WORKER and ident not in tried:
            tried.add(str(ident))
            who, why = _worker(layout, str(ident), here)
            if who is not None:
                who.problem = "; ".join([*problems, *([who.problem] if who.problem else [])]) or None
                return who
            problems.append(f"worker {ident}: {why}")
        elif kind in (agents.RESUMED, agents.SESSION):
            who = _resumed(layout, str(ident), here)
            if who is not None:
                return who
    if environ.get(HEADLESS_ENV) and not problems:
        problems.append(
            f"{HEADLESS_ENV} is set, but no sealed record of a worker or of a session cocoplus resumed headless "
            "names a process among this hook's ancestors"
        )
    return Identity(problem="; ".join(problems) or None)


def _worker(layout: Layout, wid: str, here: _Here) -> tuple[Identity | None, str]:
    """(the Identity of worker `wid`, "") when its record vouches for this hook; else (None, why not)."""
    try:
        rec = fsio.read_json(layout.worker_record(wid))
    except CocoplusError as exc:
        return None, f"its record cannot be read ({exc})"
    if rec is None:
        return None, "there is no such worker record"
    if not here.has(rec.get("runner")):
        return None, "its record's runner is not among this hook's processes"
    problem = seal.worker_grant_problem(rec, layout.project, wid)
    tree = seal.worker_cwd(rec)
    if problem is None:
        allow = [r for r in rec.get("allow") or [] if isinstance(r, str)]
        return Identity(wid, rec.get("headless") is True, allow, tree, rec), ""
    if problem == seal.LEGACY:
        return Identity(wid, True, [], tree, rec, problem=f"worker {wid}: its record {problem}"), ""
    return None, f"its record {problem}; it grants nothing"


def _resumed(layout: Layout, cs_id: str, here: _Here) -> Identity | None:
    """The Identity of a session `dispatch` resumed headless, when its record's `resumed` process is an ancestor
    and sealed; else None."""
    try:
        rec = registry.read_record(layout, cs_id)
    except CocoplusError:
        return None
    if rec is None or not here.has(rec.get("resumed")):
        return None
    if seal.resumed_problem(rec, layout.project) is not None:
        return None
    return Identity(None, True, [], None, rec)
