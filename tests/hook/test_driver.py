"""The in-process hook driver (tests/support/hookdriver.py) answers as the installed command does, and leaves
this process as it found it.

Every payload fixture, with the kill switch on and off, goes through both the
real command (`run_hook`) and the driver (`run_hook_here`), each against a
project of its own: the exit code, what was written to stdout (the project's
path and the times aside) and the files the hook left under `.cocoplus/` must be the same.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from cocoplus.core import lock
from cocoplus.core.paths import Layout
from cocoplus.hook import runner
from cocoplus.session import killswitch
from cocoplus.session.workspace import init
from tests.conftest import passwd_env_for
from tests.hook.helpers import FIXTURES, HookRun, hook_env, run_hook
from tests.support.hookdriver import NeedsAProcess, run_hook_here

_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
CASES = sorted(
    (p.name, json.loads(p.read_text()).get("hook_event_name"), p.name.partition("-")[0])
    for p in FIXTURES.glob("*.json")
    if json.loads(p.read_text()).get("hook_event_name")
)


def _project(root: Path) -> Layout:
    root.mkdir()
    init(str(root / ".cocoplus"))
    return Layout(str(root / ".cocoplus"))


def _left(layout: Layout) -> list[str]:
    """The files under `.cocoplus/`, relative, with the session's id kept (both runs name the same session)."""
    return sorted(
        os.path.relpath(os.path.join(d, n), layout.root)
        for d, _dirs, names in os.walk(layout.root)
        for n in names
        if not n.endswith(".lock")
    )


def _said(r: HookRun, layout: Layout) -> tuple[int, str, bool]:
    """What the hook answered, with the project's path and the times (each run stops its own project) aside."""
    return r.code, _TIME.sub("<time>", r.out.replace(layout.project, "<project>")), "Traceback" in r.err


@pytest.mark.slow
@pytest.mark.parametrize("stopped", [False, True], ids=["running", "stopped"])
@pytest.mark.parametrize(("name", "event", "runtime"), CASES)
def test_the_driver_answers_as_the_command_does(
    tmp_path: Path, name: str, event: str, runtime: str, stopped: bool
) -> None:
    runs = {}
    for how, call in (("process", run_hook), ("here", run_hook_here)):
        layout = _project(tmp_path / how)
        if stopped:
            killswitch.stop(layout, "alice", "deploy in progress")
        payload = json.loads((FIXTURES / name).read_text())
        payload["cwd"] = layout.project
        r = call(layout, event, payload, runtime, cwd=layout.project)
        runs[how] = (_said(r, layout), _left(layout), r)
    (said_p, left_p, rp), (said_h, left_h, rh) = runs["process"], runs["here"]
    assert said_h == said_p, (rp, rh)
    assert left_h == left_p


def test_the_driver_puts_this_process_back(project: Layout, tmp_path: Path) -> None:
    before = (dict(os.environ), os.getcwd(), sys.stdin, sys.stdout, sys.stderr, os.getppid(), runner.STARTED)
    budget = lock.set_process_budget(None)
    lock.set_process_budget(budget)
    killswitch.stop(project, "alice", "deploy in progress")
    payload = json.loads((FIXTURES / "claude-pretooluse-bash.json").read_text())
    r = run_hook_here(project, "PreToolUse", payload, cwd=str(tmp_path), env=hook_env(project, EXTRA_FOR_THE_HOOK="1"))
    assert "deploy in progress" in r.out  # it ran, and was answered
    after = (dict(os.environ), os.getcwd(), sys.stdin, sys.stdout, sys.stderr, os.getppid(), runner.STARTED)
    assert after == before
    assert lock.set_process_budget(budget) is budget
    assert runner.ANSWERED is False


def test_the_driver_refuses_what_needs_a_real_process(project: Layout, tmp_path: Path) -> None:
    payload = json.loads((FIXTURES / "claude-pretooluse-bash.json").read_text())
    with pytest.raises(NeedsAProcess, match="below"):
        run_hook_here(project, "PreToolUse", payload, below=[sys.executable, "-c", "pass"])
    with pytest.raises(NeedsAProcess, match="NSS_WRAPPER_PASSWD"):
        run_hook_here(project, "PreToolUse", payload, env=hook_env(project, **passwd_env_for(tmp_path / "other")))
