"""Running a hook (or any command) below a process cocoplus vouches for, as a worker's runner or a headless resume.

A hook takes its session for a managed worker, or for headless, only from a
sealed record whose process is among its ancestors (cocoplus/session/identity.py).
A test that runs a hook as a launched worker's runtime would therefore runs
it below this script, which does what cocoplus does for the real thing:

    python tests/support/vouched.py worker STATE_DIR WID -- ARGV...

binds worker WID's record to this process (`workers.bind_runner`, as the
runner does when it takes its slot; the record must exist and be sealed:
`sealed_worker` makes one as `launch` does), and

    python tests/support/vouched.py resumed STATE_DIR CS_ID -- ARGV...

records this process as the one `dispatch` resumed session CS_ID in
(`headless.vouch_resumed`: sealed, and named in this user's registry).  Then
ARGV runs as its child, with stdin, stdout and stderr passed through; the
script exits with its code.  Nothing here is used by cocoplus itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any, cast

from cocoplus.core import clock, fsio, seal
from cocoplus.core.paths import Layout
from cocoplus.core.shapes import WorkerRecord
from cocoplus.session import procinfo, registry
from cocoplus.supervision import headless, workers

SCRIPT = os.path.abspath(__file__)


def prefix(kind: str, state_dir: str, ident: str) -> list[str]:
    """The argv that runs the rest below a process vouched for as `kind` (`worker`, `resumed`) for `ident`."""
    return [sys.executable, SCRIPT, kind, state_dir, ident, "--"]


def sealed_worker(layout: Layout, wid: str, allow: list[str] | None = None, **fields: Any) -> WorkerRecord:
    """A running worker's record as `launch` writes it (its command a real program, its rules `allow`), sealed
    with this user's key; not yet bound to a runner."""
    rec = cast(WorkerRecord, {
        "schema_version": 1, "id": wid, "runtime": "claude", "task": "a task", "alias": None, "by": "tester",
        "principal": "operator", "allow": list(allow or []), "created_at": clock.iso(), "state": "running",
        "command": ["/bin/true", "-p", "a task"], "runs": 1, "started_at": clock.iso(), "ended_at": None,
        "pid": None, "start_ticks": None, "exit": None, "reason": None, "killed_by": None, "session": None,
        "session_alias": None, "worktree": None, "headless": True, "runner": None, **fields,
    })  # fmt: skip
    rec["seal"] = seal.seal_worker(rec, layout.project, wid)
    fsio.ensure_dir(layout.worker_dir(wid))
    fsio.atomic_write_json(layout.worker_record(wid), rec)
    return rec


def main(argv: list[str]) -> int:
    kind, state_dir, ident, sep, *rest = argv
    assert sep == "--" and rest, argv
    layout = Layout(state_dir)
    if kind == "worker":
        assert workers.bind_runner(layout, ident) is not None, f"no worker record {ident}"
    elif kind == "resumed":
        rec = registry.read_record(layout, ident)
        assert rec is not None, f"no session record {ident}"
        info = {**procinfo.self_process(), "command": rest, "by": "tester"}
        vouched = headless.vouch_resumed(layout, ident, info, rec.get("runtime"))
        registry.update(layout, ident, lambda r: r.update({"resumed": vouched}))
    else:
        raise SystemExit(f"unknown kind {kind!r}")
    return subprocess.run(rest).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
