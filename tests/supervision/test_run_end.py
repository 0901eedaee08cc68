"""How a worker's run ends, on a table: `workers.decide_end` (supervision/workers/ending.py).

Given what is known when a run ends (its exit status, what its runner says, a kill request, the limit its session
is paused by, a limit its output reported, whether it has a session, its denied calls), the state, the reason, the
exit status in words and signal, who killed it, the limit kept on the worker and who is told.  No file is read or
written: tests/supervision/test_workers.py drives `finish` with real runner processes.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from cocoplus.session import limits
from cocoplus.supervision import workerrun
from cocoplus.supervision.workers import decide_end

NOW = time.mktime((2030, 6, 1, 12, 0, 0, 0, 0, -1))
PAUSED = {"reason": "usage limit", "resets_at": "2030-06-01T15:00:00+00:00", "estimate": True, "resume": "watcher"}
SEEN = {"reason": "usage limit", "resets_at": None}
OP = {"by": "operator", "at": "2030-06-01T11:59:00+00:00"}
SWITCH = {"by": workerrun.STOPPED_BY, "at": "2030-06-01T11:59:00+00:00"}
DENIED = "; 2 tool call(s) were denied permission"

EXIT0 = {"code": 0, "signal": None, "status": "exit code 0"}
EXIT1 = {"code": 1, "signal": None, "status": "exit code 1"}
TERM = {"code": None, "signal": "SIGTERM", "status": "killed by SIGTERM"}
KILL = {"code": None, "signal": "SIGKILL", "status": "killed by SIGKILL"}
UNKNOWN = {"code": None, "signal": None, "status": "exit status unknown"}
ODD = {"code": None, "signal": "99", "status": "killed by signal 99"}

# (what is known, (state, reason, exit, killed_by, limit kept, who is told)); the reason told is the reason
# without DENIED.
TABLE: list[tuple[str, dict[str, Any], tuple[str, str, dict[str, Any], str | None, Any, str | None]]] = [
    ("exit code 0", {"code": 0}, ("exited", "ended (exit code 0)", EXIT0, None, None, "session")),
    ("exit code 0, its runner's words", {"code": 0, "why": "done"}, ("exited", "done", EXIT0, None, None, "session")),
    (
        "a crash",
        {"code": 1},
        ("failed", "died without a turn end (exit code 1)", EXIT1, None, None, "session"),
    ),
    (
        "a crash the runtime said why",
        {"code": 1, "why": "Invalid API key (exit code 1)"},
        ("failed", "Invalid API key (exit code 1)", EXIT1, None, None, "session"),
    ),
    (
        "a crash before any session",
        {"code": 1, "session": False},
        ("failed", "died without a turn end (exit code 1)", EXIT1, None, None, "worker"),
    ),
    (
        "exit code 0 before any session",
        {"code": 0, "session": False},
        ("exited", "ended (exit code 0)", EXIT0, None, None, None),
    ),
    (
        "a signal",
        {"code": -15},
        ("failed", "died without a turn end (killed by SIGTERM)", TERM, None, None, "session"),
    ),
    (
        "a signal with no name",
        {"code": -99},
        ("failed", "died without a turn end (killed by signal 99)", ODD, None, None, "session"),
    ),
    (
        "its runner and process gone (reconcile)",
        {"code": None, "why": "its process is gone and so is its runner (exit status unknown)"},
        ("failed", "its process is gone and so is its runner (exit status unknown)", UNKNOWN, None, None, "session"),
    ),
    (
        "exit status unknown",
        {"code": None, "session": False},
        ("failed", "died without a turn end (exit status unknown)", UNKNOWN, None, None, "worker"),
    ),
    (
        "workers kill",
        {"code": -15, "kill": OP},
        ("exited", "killed by operator (cocoplus workers kill; killed by SIGTERM)", TERM, "operator", None, "session"),
    ),
    (
        "workers kill, SIGKILL after the grace",
        {"code": -9, "kill": OP, "session": False},
        ("exited", "killed by operator (cocoplus workers kill; killed by SIGKILL)", KILL, "operator", None, None),
    ),
    (
        "the kill switch, its hooks not running",
        {"code": -15, "kill": SWITCH},
        (
            "exited",
            f"killed by {workerrun.STOPPED_BY} (cocoplus workers kill; killed by SIGTERM)",
            TERM,
            workerrun.STOPPED_BY,
            None,
            "session",
        ),
    ),
    (
        "a kill wins over a limit and a pause",
        {"code": 1, "kill": OP, "paused": PAUSED, "limit": SEEN},
        ("exited", "killed by operator (cocoplus workers kill; exit code 1)", EXIT1, "operator", None, "session"),
    ),
    (
        "a kill tells no denied calls",
        {"code": -15, "kill": OP, "denied": 2},
        ("exited", "killed by operator (cocoplus workers kill; killed by SIGTERM)", TERM, "operator", None, "session"),
    ),
    (
        "its session paused by a limit",
        {"code": 1, "paused": PAUSED, "limit": SEEN},
        ("exited", f"{limits.text(PAUSED, NOW)} (exit code 1)", EXIT1, None, PAUSED, "session"),
    ),
    (
        "its session paused by a limit, denied calls",
        {"code": 0, "paused": PAUSED, "denied": 2},
        ("exited", f"{limits.text(PAUSED, NOW)} (exit code 0){DENIED}", EXIT0, None, PAUSED, "session"),
    ),
    (
        "a limit and no session to resume",
        {"code": 1, "limit": SEEN, "session": False},
        (
            "failed",
            "stopped by its runtime's usage limit before a session was recorded, so it is not resumed (exit code 1)",
            EXIT1,
            None,
            SEEN,
            "worker",
        ),
    ),
    (
        "a limit with no reason and no session",
        {"code": 0, "limit": {"resets_at": None}, "session": False},
        (
            "failed",
            "stopped by its runtime's rate limit before a session was recorded, so it is not resumed (exit code 0)",
            EXIT0,
            None,
            {"resets_at": None},
            "worker",
        ),
    ),
    (
        "a limit its session is not paused by (it had ended)",
        {"code": 0, "limit": SEEN},
        ("exited", "ended (exit code 0)", EXIT0, None, None, "session"),
    ),
    (
        "denied calls on a run that exited",
        {"code": 0, "denied": 2},
        ("exited", f"ended (exit code 0){DENIED}", EXIT0, None, None, "session"),
    ),
    (
        "denied calls on a run that failed",
        {"code": 1, "denied": 2},
        ("failed", "died without a turn end (exit code 1)", EXIT1, None, None, "session"),
    ),
]


@pytest.mark.parametrize(("known", "expected"), [row[1:] for row in TABLE], ids=[row[0] for row in TABLE])
def test_how_a_run_ends(known: dict[str, Any], expected: tuple[Any, ...]) -> None:
    given = dict(known)
    end = decide_end(given.pop("code"), given.pop("why", None), now=NOW, **given)
    state, reason, status, killed_by, kept, wake = expected
    assert (end.state, end.reason, end.exit, end.killed_by, end.limit, end.wake) == (
        state, reason, status, killed_by, kept, wake,
    )  # fmt: skip
    assert end.told == reason.removesuffix(DENIED)


def test_the_limit_kept_is_a_copy_of_the_one_seen_and_the_pause_itself() -> None:
    seen = dict(SEEN)
    end = decide_end(1, limit=seen, session=False)
    assert end.limit == seen and end.limit is not seen
    assert decide_end(1, paused=PAUSED, limit=seen).limit is PAUSED
