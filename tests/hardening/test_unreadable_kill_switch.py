"""Fail closed when the kill switch cannot be read: a second, real user (made with useradd) whose
tools are guarded by a `.cocoplus/` it cannot search."""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
import tempfile

import pytest

from cocoplus.core.paths import Layout
from cocoplus.session import killswitch
from cocoplus.session.workspace import init
from tests.hardening.support import run_as, second_user
from tests.hook.helpers import fixture
from tests.support.typed import present


@pytest.fixture(scope="module")
def agent_user():
    with second_user() as user:
        yield user


@pytest.fixture
def shared_project():
    """A project any user can reach (0755 all the way down to `.cocoplus/`, which is root's, 0700)."""
    base = tempfile.mkdtemp(prefix="cocoplus-shared-", dir="/tmp")
    os.chmod(base, 0o755)
    proj = os.path.join(base, "proj")
    os.mkdir(proj, 0o755)
    init(os.path.join(proj, ".cocoplus"))
    layout = Layout(os.path.join(proj, ".cocoplus"))
    assert os.stat(layout.root).st_mode & 0o777 == 0o700
    yield layout
    shutil.rmtree(base, ignore_errors=True)


def _state(state_dir: str):
    return killswitch.kill_switch_state(state_dir)


def _present(state_dir: str) -> bool:
    return killswitch.stop_present(Layout(state_dir))


def _sentence(state_dir: str):
    return killswitch.kill_switch_sentence(Layout(state_dir))


@pytest.mark.parametrize("mode", [0o700, 0o000, 0o600])
def test_an_unsearchable_state_directory_means_stopped_with_a_reason(shared_project, mode, agent_user):
    os.chmod(shared_project.root, mode)
    stopped, why = run_as(agent_user, _state, shared_project.root)
    assert stopped is None
    assert shared_project.root in why and "Permission denied" in why and "EACCES" in why
    assert run_as(agent_user, _present, shared_project.root) is True  # fail closed
    sentence = run_as(agent_user, _sentence, shared_project.root)
    assert "cannot be read" in sentence and shared_project.root in sentence


def test_a_searchable_state_directory_is_read_as_it_is(shared_project, agent_user):
    os.chmod(shared_project.root, 0o711)  # searchable by others, not listable
    assert run_as(agent_user, _state, shared_project.root)[0] is False
    assert run_as(agent_user, _present, shared_project.root) is False
    killswitch.stop(shared_project, "ann", "hold")
    assert run_as(agent_user, _state, shared_project.root)[0] is True
    # AGENT_STOP is 0600: the agent's user cannot read who or why, only that it is stopped.
    assert "the agent was stopped" in run_as(agent_user, _sentence, shared_project.root)


def test_kill_switch_state_for_every_shape_of_agent_stop(project):
    import socket

    def unreadable_file(p: str) -> None:
        open(p, "wb").close()
        os.chmod(p, 0)

    shapes = {
        "empty file": lambda p: open(p, "wb").close(),
        "directory": lambda p: os.mkdir(p),
        "dangling symlink": lambda p: os.symlink("/nonexistent/target", p),
        "fifo": lambda p: os.mkfifo(p),
        "unreadable file": unreadable_file,
        "socket": lambda p: socket.socket(socket.AF_UNIX).bind(p),
        "garbage": lambda p: open(p, "wb").write(b"\xff\xfe\x00" * 1000),
    }
    for shape, make in shapes.items():
        make(project.agent_stop)
        assert killswitch.kill_switch_state(project.root)[0] is True, shape
        assert killswitch.stop_present(project), shape
        info = present(killswitch.read_stop(project))  # never hangs on a FIFO, never raises
        assert info["present"] is True, shape
        assert killswitch.resume(project, "ann")["resumed"] is True, shape
        assert killswitch.kill_switch_state(project.root)[0] is False, shape


def _hook(state_dir: str, event: str, payload: dict) -> tuple[int, str]:
    from cocoplus.hook import entry as hook_main

    out = io.StringIO()
    sys.stdout = out
    try:
        code = hook_main.main(
            [event, "--runtime", "claude"],
            stdin_bytes=json.dumps(payload).encode(),
            environ={"COCOPLUS_DIR": state_dir},
        )
    finally:
        sys.stdout = sys.__stdout__
    return code, out.getvalue()


def test_the_pre_tool_hook_denies_when_the_kill_switch_cannot_be_read(shared_project, agent_user):
    import cocoplus.hook.runner  # noqa: F401 - loaded before the fork: the second user cannot read this interpreter's files

    code, out = run_as(agent_user, _hook, shared_project.root, "PreToolUse", fixture("claude-pretooluse-bash.json"))
    answer = json.loads(out) if out.strip() else {}
    decision = answer.get("hookSpecificOutput", {})
    assert decision.get("permissionDecision") == "deny" or code == 2, (code, out)
    assert shared_project.root in json.dumps(answer)
