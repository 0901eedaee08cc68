"""No file-system events is not an error: with this user's inotify instances really used up, the watcher polls.

`cocoplus supervision watcher run` used to exit with "internal error: OSError: [Errno
24] inotify instance limit reached".  Here it runs in a user namespace whose
inotify instances a holder process has all taken (tests/support/no_inotify.py:
nothing outside that namespace changes), says once in its log that it polls
and why, `supervision status --json` and `doctor` say so, and a worker's
signal still gets a round.
"""

from __future__ import annotations

import errno
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cocoplus.core.paths import Layout
from cocoplus.session import registry
from cocoplus.supervision import autonomy
from tests.supervision.conftest import Brain, rounds_finished, rounds_started, stop_chat_worker, triggers_of, wait_until
from tests.support import no_inotify

WHY = "the inotify instance limit is reached (fs.inotify.max_user_instances)"


@pytest.mark.slow
def test_the_watcher_polls_when_the_users_inotify_instances_are_used_up(project: Layout, tmp_path: Path) -> None:
    no_inotify.skip_unless_possible()
    system_limit = no_inotify.system_limit()
    Brain(project, quiet=0.2)
    rec, _ = registry.ensure(project, "claude", "s-one", event="SessionStart")
    autonomy.enable(project, task_hint="keep going without inotify")
    cocoplus = [sys.executable, "-m", "cocoplus"]
    env = no_inotify.env_for(project.root)
    sup = no_inotify.Exhausted(
        tmp_path, [*cocoplus, "supervisor", "run"], log=tmp_path / "supervisor.log", cwd=project.project, env=env
    )
    try:
        held = sup.held()
        assert held["held"] == no_inotify.LIMIT and held["errno"] == errno.EMFILE, held  # really used up
        wait_until(lambda: "watching" in sup.text() or sup.proc.poll() is not None, timeout=30)
        assert sup.proc.poll() is None, sup.text()
        assert f"no file-system events: {WHY}; polling {project.root} every 1s instead" in sup.text()
        assert "(polling)" in sup.text() and "internal error" not in sup.text()

        status = subprocess.run(
            [*cocoplus, "supervision", "status", "--json"],
            cwd=project.project,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert status.returncode == 0, status.stderr
        supervisor = json.loads(status.stdout)["supervisor"]
        assert supervisor == {"running": True, "pid": held["pid"], "watching": {"kind": "polling", "why": WHY}}
        text = subprocess.run(
            [*cocoplus, "supervision", "status"],
            cwd=project.project,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
        assert f"watcher: running, pid {held['pid']}; file events: polling because {WHY}" in text, text

        # doctor, run where the instances are used up, says inotify is not available now and the supervisor polls.
        doctor = sup.run_inside([*cocoplus, "doctor", "--json"], cwd=project.project, env=env)
        assert doctor.returncode == 0, doctor.stderr
        events = json.loads(doctor.stdout)["file_events"]
        assert events == {
            "probe": {"inotify": False, "why": WHY},
            "supervisor": {"kind": "polling", "why": WHY},
            "relay": None,
        }
        text = sup.run_inside([*cocoplus, "doctor"], cwd=project.project, env=env).stdout
        assert f"file events: not available now: {WHY}; the supervisor, the relay and the server poll instead" in text
        assert f"supervisor: file events: polling because {WHY}" in text

        # A worker's signal still wakes the brain, through polling.
        registry.append_signal(project, rec, "attention", "pending", event="Stop")
        started = wait_until(lambda: rounds_started(project), timeout=60)
        assert triggers_of(started[0]) == [("cc1", "attention", "pending")]
        wait_until(lambda: rounds_finished(project), timeout=60)
        assert sup.proc.poll() is None
        assert sup.text().count("no file-system events") == 1, sup.text()  # said once, not on every tick
    finally:
        code = sup.stop()
        stop_chat_worker(project)
    assert code == 0, sup.text()
    assert no_inotify.system_limit() == system_limit  # the system-wide limit was never touched
