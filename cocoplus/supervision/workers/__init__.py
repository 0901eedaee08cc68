"""Managed workers: `cocoplus launch`, `cocoplus workers list|logs|kill` and the brain's `launch_worker` (SPEC 11).

A launch writes `workers/<id>/worker.json` (ids `w1`, `w2`, ...; state
`queued`) and starts a runner (`python -m cocoplus.supervision.workerrun`,
`workerrun.py`) detached from the caller: its own session, stdin closed,
the caller's environment minus what a runtime sets for its own hooks.  The
runner waits for a slot (`[workers] max_parallel` workers `running` at once;
the oldest queued worker goes first), starts the runtime headless (`claude
-p`, `codex exec`, `gemini -p`: each adapter's `launch_argv`) in the project
directory in a process group of its own, copies its output to
`workers/<id>/output.log` (rotated to `output.log.1` at `[workers]
log_max_bytes`), waits for it and records how it ended (`finish`).

The record is sealed when it is written (`core.seal`: this user's key,
over the worker's id, the project, the command, whose program is an
absolute path, and what the record grants: its own permission rules, its
headless flag, the runner process it is bound to); the runner starts only a
command whose seal holds, so a worker record a repository brought along, or
one changed since, is recorded `failed` and never run, and the permission
hook takes a session for the worker, with its rules, only from a record
whose seal holds and whose runner is an ancestor (`session/identity.py`).
Every change to a sealed field seals the record again, and only a record
whose seal held before (`store.update_sealed`): an edit by anyone else stays an
edit that grants nothing.  The runner binds the record to itself once it
takes its slot (`bind_runner`) and records itself in this user's registry
of agent processes (`session/agents.py`).

Who starts a queued worker when one finishes: its own runner, waiting in
the background from the moment of the launch, which takes the slot the
finishing worker's runner gives back.  No watcher is needed for the queue.

The worker <-> session link: the runtime's environment carries
`COCOPLUS_WORKER=<id>` (and `COCOPLUS_WORKER_ALIAS` for `--alias`), which
names the candidate its SessionStart hook, installed by `cocoplus install`,
checks (the record's seal and its runner among the hook's ancestors) before
it records `worker` on the session it registers; the worker record notes the
session when the run ends.
A turn end makes the session `pending` like any other; `cocoplus dispatch`
resumes an exited worker session by its usual headless route, which hands
the command back here (`resume`), so the resumed run is a run of the same
worker (same log, same slot rule, same `workers kill`).

How a run ends: exit code 0 is `exited`; a run `workers kill` stopped is
`exited` with `killed_by`; anything else (a crash, OOM, a signal) is
`failed` with its exit status, and an `exit` signal with value `failed`
wakes the main brain once.  If the runner died with its worker, the
watcher's `reconcile` (also run by every launch) finds the record `running`
with no live process and records `failed` the same way, exit status unknown.

The package, one concept a module:

* `store`: the record (read, written, found by id, alias or session) and how the doors show it (`describe`,
  `listing`, `logs`);
* `launching`: `launch`, the runner started detached, the slot rule (`claim`), and a worker's next run queued
  again (`resume`, `take_over`);
* `ending`: how a run ends: `decide_end` (pure: its state, reason, exit status and who is told), `finish` (once,
  as decided), `reconcile` (a worker whose runner died with it);
* `killing`: `workers kill`;
* `branches`: a worktree worker's branch brought back (`diff`, `merge`, `clean`).

The functions the rest of cocoplus calls are imported here: `workers.launch(...)`, `workers.read(...)`.
"""

from __future__ import annotations

from cocoplus.supervision.workers.branches import clean, diff, merge, note_commit
from cocoplus.supervision.workers.ending import (
    FROM_OUTPUT,
    End,
    decide_end,
    denied_calls,
    finish,
    left_behind_ended,
    reconcile,
    session_from_output,
    status_text,
)
from cocoplus.supervision.workers.killing import KILL_GRACE_S, kill, killpg
from cocoplus.supervision.workers.launching import (
    ALIAS_ENV,
    MAX_TASK,
    STARTED_WAIT_S,
    WORKER_ENV,
    bind_runner,
    claim,
    command,
    held_by,
    launch,
    resume,
    start_runner,
    started,
    take_over,
)
from cocoplus.supervision.workers.store import (
    LIVE,
    LOCK_TIMEOUT,
    alive,
    describe,
    ids,
    last_report,
    listing,
    logs,
    read,
    records,
    resolve,
    runtimes_text,
    session_of,
    settings,
    vouched_allow,
)

__all__ = [
    "ALIAS_ENV", "FROM_OUTPUT", "KILL_GRACE_S", "LIVE", "LOCK_TIMEOUT", "MAX_TASK", "STARTED_WAIT_S", "WORKER_ENV",
    "End", "alive", "bind_runner", "claim", "clean", "command", "decide_end", "denied_calls", "describe", "diff",
    "finish", "held_by", "ids", "kill", "killpg", "last_report", "launch", "left_behind_ended", "listing", "logs",
    "merge", "note_commit", "read", "reconcile", "records", "resolve", "resume", "runtimes_text",
    "session_from_output", "session_of", "settings", "start_runner", "started", "status_text", "take_over",
    "vouched_allow",
]  # fmt: skip
