"""A real Claude Code worker under the `srt` profile (Anthropic's sandbox runtime, pinned), against the scripted
model stand-in: the same file-system checks as under `workspace` (tests/e2e/test_sandbox_claude.py), its hooks
still stopping it through the control channel, and the model reached through srt's proxy (the stand-in is on
loopback, which srt allows as that address and port only). Skipped with the doctor's reason where srt cannot be
applied (tests/support/sandbox.py); on CI it must run.

The project and home lie under /var/tmp: srt's own bubblewrap mounts a fresh /dev, and the tests' temporary
directories may be under /dev/shm (a worker there is refused: `srt.refused`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.conftest import passwd_env_for
from tests.e2e.conftest import SECRET, Project, cocoplus, outside_tmp, plant_secrets
from tests.e2e.test_sandbox_claude import attempts, tool_results, worker_state
from tests.e2e.test_workers_claude import HeldStub, env_for
from tests.support.model_stubs import AnthropicStub, text, tool
from tests.support.runtimes import SRT_BIN
from tests.support.sandbox import require_srt
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e


@contextmanager
def srt_project(runtime: str) -> Iterator[Project]:
    """A project with `runtime`'s hooks installed and a home with planted secrets, under /var/tmp."""
    require_srt()
    with outside_tmp(runtime, "cocoplus-srt-e2e-") as p:
        plant_secrets(p.home)
        yield p


def with_srt(p: Project, env: dict[str, str]) -> dict[str, str]:
    """`env` with the pinned srt first on PATH and the project's home as this user's (the password database)."""
    return {**env, "PATH": f"{SRT_BIN}{os.pathsep}{env['PATH']}", **passwd_env_for(p.home)}


@pytest.fixture
def proj() -> Iterator[Project]:
    with srt_project("claude") as p:
        yield p


def srt_env(p: Project, stub: AnthropicStub) -> dict[str, str]:
    return with_srt(p, env_for(p, stub))


def test_a_claude_worker_under_srt_writes_its_tree_and_nothing_else(proj: Project) -> None:
    p = proj
    with AnthropicStub([tool("Bash", command=attempts(p)), text("done")]) as stub:
        env = srt_env(p, stub)
        settings = (p.project / ".claude" / "settings.local.json").read_text()
        out = cocoplus(p.project, "launch", "claude", "Try the files.", "--sandbox", "srt", "--allow", "Bash",
                       "--json", env=env)  # fmt: skip
        assert json.loads(out.stdout)["sandbox"] == "srt"
        w = wait_until(lambda: (x := worker_state(p, env))["state"] in ("exited", "failed") and x, timeout=120)
        log = (p.root / "workers" / "w1" / "output.log").read_text()
        assert w["state"] == "exited", log
        results = tool_results(stub)
    assert w["sandbox"] == "srt"
    assert "WROTE-INSIDE" in results, (results[-3000:], log[-3000:])
    assert (p.project / "inside.txt").read_text() == "inside\n"
    for refused in ("WROTE-SSH", "WROTE-OUTSIDE", "WROTE-SETTINGS", "WROTE-COCOPLUS"):
        assert refused not in results, results
    assert SECRET not in results and "PRIVATE KEY" not in results
    assert "Read-only file system" in results  # the model is told why
    assert not (p.home / ".ssh" / "x").exists() and not (p.home / "outside.txt").exists()
    assert (p.project / ".claude" / "settings.local.json").read_text() == settings
    assert not (p.root / "AGENT_STOP").exists()


def test_its_hooks_still_stop_it_through_the_channel(proj: Project) -> None:
    p = proj
    script = [tool("Bash", command="echo first > first.txt"), tool("Bash", command="echo second > second.txt"),
              text("done")]  # fmt: skip
    with HeldStub(script, hold=(2,)) as stub:
        env = srt_env(p, stub)
        cocoplus(p.project, "launch", "claude", "Work.", "--sandbox", "srt", "--allow", "Bash", env=env)
        assert stub.arrived[2].wait(120), "the first tool call's result never reached the model"
        cocoplus(p.project, "session", "stop", "--reason", "enough", env=env)
        stub.release(2)
        w = wait_until(lambda: (x := worker_state(p, env))["state"] != "running" and x, timeout=120)
    log = (p.root / "workers" / "w1" / "output.log").read_text()
    assert (p.project / "first.txt").exists() and not (p.project / "second.txt").exists(), log
    result = json.loads(next(ln for ln in log.splitlines() if '"type":"result"' in ln and ln.startswith("{")))
    assert result.get("terminal_reason") == "hook_stopped", result
    assert w["state"] == "exited"
