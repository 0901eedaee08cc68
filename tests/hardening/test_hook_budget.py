"""Every hook event finishes inside the timeout `install` writes, with every lock held by a stopped
process, and no count is lost or doubled (real hook processes, as a runtime runs them)."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from cocoplus.core.lock import HOOK_MARGIN_S
from cocoplus.session import iteration
from tests.hardening.support import held_by_stopped_process
from tests.hook.helpers import fixture, hook_argv, hook_env
from tests.support.typed import present

INSTALLED_TIMEOUT_S = 10  # `[hooks] timeout_s`, the default `cocoplus install` writes
HOOK_LOCKS = (
    "iteration-budget",
    "progress",
    "steps",
    "sessions",
    "signals",
    "steer",
    "kill-switch",
    "cost",
    "spend",
    "budget-state",
    "stage",
    "task-queue",
)
EVENTS = {
    "PostToolUse": "claude-posttooluse-bash.json",
    "UserPromptSubmit": "claude-userpromptsubmit.json",
    "SessionStart": "claude-sessionstart-startup.json",
    "Stop": "claude-stop.json",
    "Notification": "claude-notification-idle.json",
}


@pytest.mark.slow
def test_every_event_answers_inside_the_installed_timeout_with_every_lock_held(project):
    env = hook_env(project, COCOPLUS_HOOKS_LOCK_TIMEOUT_S="60")  # whatever lock_timeout_s says
    with held_by_stopped_process(*(project.lock(n) for n in HOOK_LOCKS)):
        procs = {}
        for event, name in EVENTS.items():
            procs[event] = (
                time.monotonic(),
                subprocess.Popen(hook_argv(event), stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env),
            )
            stdin = present(procs[event][1].stdin)
            stdin.write(json.dumps(fixture(name)).encode())
            stdin.close()
        took = {}
        for event, (start, p) in procs.items():
            try:
                p.wait(timeout=INSTALLED_TIMEOUT_S * 4)
            finally:
                p.kill()
            took[event] = time.monotonic() - start
            assert p.returncode == 0, event
    assert all(t < INSTALLED_TIMEOUT_S - 2 for t in took.values()), took
    assert HOOK_MARGIN_S >= 2
    out = iteration.count(project, cap=100, warn_at=80)
    assert present(out.budget)["consumed"] == 2  # the PostToolUse made while the lock was held, and this one
