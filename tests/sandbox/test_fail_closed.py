"""A worker whose sandbox cannot be applied does not start: one line says why, nothing is recorded as running and
no process of it runs (the runtime's PATH stand-in would record being run, and the suite fails a test that ran
one). Bubblewrap hidden from PATH, and a `bwrap` failing as it does under AppArmor's restriction."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cocoplus.core import userfiles
from cocoplus.core.paths import Layout
from cocoplus.sandbox import probe
from tests.sandbox.test_doctor import RTM, fake_bwrap
from tests.support import runtimes


def standins_dir() -> str:
    return next(p for p in os.environ["PATH"].split(os.pathsep) if (Path(p) / "claude").exists())


@pytest.fixture
def hooked(cli_subprocess, project: Layout) -> Layout:
    """A project whose Claude Code hooks are installed: a launch there is refused for its sandbox alone."""
    r = cli_subprocess("install", "claude", cwd=project.project)
    assert r.code == 0, r
    return project


def no_worker_ran(layout: Layout) -> None:
    assert not os.path.isdir(layout.workers_dir) or not any(
        (Path(layout.workers_dir) / d / "worker.json").exists() for d in os.listdir(layout.workers_dir)
    )
    assert runtimes.standin_calls(Path(standins_dir()) / "calls.log") == ""


@pytest.mark.parametrize("how", ["hidden", "apparmor"])
def test_a_worker_whose_sandbox_cannot_be_applied_does_not_start(cli_subprocess, hooked: Layout, tmp_path, how):
    project = hooked
    bindir = tmp_path / "fake"
    bindir.mkdir()
    if how == "apparmor":
        fake_bwrap(bindir, RTM)
    env = {"PATH": f"{standins_dir()}{os.pathsep}{bindir}"}
    r = cli_subprocess("launch", "claude", "Do the work.", "--sandbox", "workspace", cwd=project.project, env=env)
    assert r.code == 1, r
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and "the sandbox 'workspace' cannot be applied here" in lines[0], r.err
    cause = "bubblewrap (`bwrap`) is not on PATH" if how == "hidden" else "RTM_NEWADDR"
    assert cause in lines[0] and "fix: " in lines[0]
    assert (probe.FIX_INSTALL if how == "hidden" else "") in lines[0]
    no_worker_ran(project)


def test_a_project_file_cannot_weaken_the_users_profile(cli_subprocess, hooked: Layout, tmp_path):
    project = hooked
    """The user's configuration says workspace; the project's cocoplus.toml says none: workspace still applies
    (here: it cannot, so nothing starts)."""
    user = Path(userfiles.config_file())
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text('[workers]\nsandbox = "workspace"\n')
    Path(project.project, "cocoplus.toml").write_text('[workers]\nsandbox = "none"\n')
    env = {"PATH": standins_dir()}
    r = cli_subprocess("launch", "claude", "Do the work.", cwd=project.project, env=env)
    assert r.code == 1 and "the sandbox 'workspace' cannot be applied here" in r.err, r
    no_worker_ran(project)


def test_only_the_operator_chooses_a_sandbox_on_the_command_line(cli_subprocess, hooked: Layout, tmp_path):
    project = hooked
    env = {"PATH": standins_dir(), "CLAUDE_SESSION_ID": "inside-an-agent"}
    r = cli_subprocess("launch", "claude", "Do the work.", "--sandbox", "none", cwd=project.project, env=env)
    assert r.code != 0 and "refused" in r.err, r
    no_worker_ran(project)
