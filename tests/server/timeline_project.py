"""A project for the timeline's REST routes and its page: the run the hook recorded (tests/report/recorded.py: one
Claude Code session of 40 tool calls, calls 22 to 29 the same failing `pytest -x`, a secret in call 5), worker w1
whose run it was, under the `workspace` sandbox, failed over to Codex after it, and worker w2 (Gemini CLI, no
sandbox) that ran meanwhile.  The workers are records in the shape `launch` and `workers.take_over` write (a real
launch and failover are what the e2e tests drive; what is read here is the record they leave)."""

from __future__ import annotations

import os

from cocoplus.core import clock, fsio
from cocoplus.core.paths import Layout
from cocoplus.session import registry
from tests.report import recorded

UNGUARDED = "max_iterations = 1000\nloop_guard_repeats = 0\niteration_warn_at = 0\n"
CS = "cs_" + recorded.SID
GH_TOKEN = "ghp_abcdefghijklmnop0123"
# w2's task, as an agent could write it: markup, an escape sequence that paints and a bidi override.
HOSTILE_TASK = '<img src=x onerror="window.pwned=1">\x1b[31m red \u202egnp.exe'


def build(layout: Layout) -> None:
    recorded.record(layout, UNGUARDED)
    rec = registry.read_record(layout, CS)
    assert rec is not None
    registry.append_signal(layout, rec, "attention", "needs_decision", message=f"export GITHUB_TOKEN={GH_TOKEN}")
    start = clock.parse_iso(rec.get("started_at")) or 0.0
    end = os.lstat(layout.session_calls(CS)).st_mtime + 6  # after the last call's result
    write_worker(layout, "w1", {
        "runtime": "codex", "task": "make the tests pass", "state": "exited", "sandbox": "workspace",
        "created_at": clock.iso(start - 1), "started_at": clock.iso(start - 0.5), "ended_at": clock.iso(end + 4),
        "reason": "exit code 0", "session": None,
        "runtimes": [
            {"runtime": "claude", "since": clock.iso(start - 0.5), "session": CS, "session_alias": "cc1", "runs": 1},
            {"runtime": "codex", "since": clock.iso(end + 1), "reason": "usage limit", "until": None,
             "estimate": False, "by": "watcher", "from_session": CS, "session": None, "session_alias": None},
        ],
    })  # fmt: skip
    write_worker(layout, "w2", {
        "runtime": "gemini", "task": HOSTILE_TASK, "state": "exited", "sandbox": "none",
        "created_at": clock.iso(start + 2), "started_at": clock.iso(start + 2.5), "ended_at": clock.iso(end - 2),
        "reason": "exit code 0", "session": None,
        "runtimes": [{"runtime": "gemini", "since": clock.iso(start + 2.5), "session": None, "runs": 1}],
    })  # fmt: skip


def write_worker(layout: Layout, wid: str, fields: dict[str, object]) -> None:
    os.makedirs(layout.worker_dir(wid), exist_ok=True)
    fsio.atomic_write_json(layout.worker_record(wid), {"schema_version": 1, "id": wid, **fields})
