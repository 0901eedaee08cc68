"""End-to-end fixtures: real agent runtime CLIs in throwaway projects and homes.

The CLIs come from tests/e2e/runtimes (pinned in package.json; installed by
tests/e2e/runtimes/install.sh, which the test command runs); a test gets
one with `runtime_bin`, and only a test marked `e2e` may (see
tests/support/runtimes.py).  Each test gets a git-initialised project with `.cocoplus/` and the runtime's hooks
installed by `cocoplus install`, a fresh HOME, and a scripted model
stand-in on 127.0.0.1 (tests/support/model_stubs.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from tests.supervision.workers_support import stop_workers
from tests.support.runtimes import CODEX_HELPER, runtime_bin
from tests.support.sandbox import require_sandbox


def cocoplus(
    project: Path, *args: str, env: dict[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    full_env = dict(os.environ if env is None else env)
    r = subprocess.run(
        [sys.executable, "-m", "cocoplus", *args], cwd=project, env=full_env, capture_output=True, text=True, timeout=60
    )
    if check and r.returncode != 0:
        raise AssertionError(f"cocoplus {' '.join(args)} failed ({r.returncode}): {r.stderr}")
    return r


class Project:
    """A throwaway project: `project` is its directory, `root` its `.cocoplus/` (as in `Layout`)."""

    def __init__(self, project: Path, home: Path) -> None:
        self.project = project
        self.home = home
        self.root = project / ".cocoplus"

    def cocoplus(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return cocoplus(self.project, *args, env=self.env(), check=check)

    def env(self, **extra: str) -> dict[str, str]:
        keep = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("COCOPLUS_", "CLAUDE_", "ANTHROPIC_", "GEMINI_", "CODEX_", "OPENAI_"))
        }
        if CODEX_HELPER.is_dir():  # Codex's sandbox helper, run through PATH (tests/e2e/runtimes/install.sh)
            keep["PATH"] = f"{CODEX_HELPER}{os.pathsep}{keep.get('PATH', os.defpath)}"
        keep.update(
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_DATA_HOME=str(self.home / ".local/share"),
        )
        keep.update(extra)
        return keep

    def read_json(self, rel: str) -> Any:
        return json.loads((self.root / rel).read_text())

    def steps(self) -> list[dict[str, Any]]:
        path = self.root / "session" / "steps.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
def e2e_project(tmp_path: Path) -> Project:
    root = tmp_path / "project"
    home = tmp_path / "home"
    root.mkdir()
    home.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    proj = Project(root, home)
    proj.cocoplus("init")
    return proj


def run_claude(
    project: Project,
    stub: Any,
    prompt: str = "Work on the next item.",
    *,
    allowed: str = "Bash",
    resume: str | None = None,
    timeout: float = 120,
    **env: str,
) -> dict[str, Any]:
    """`claude -p PROMPT --output-format json` in the project against the stand-in; the parsed result."""
    argv = [runtime_bin("claude"), "-p", prompt, "--output-format", "json", "--allowedTools", allowed]
    if resume:
        argv += ["--resume", resume]
    r = subprocess.run(
        argv,
        cwd=project.project,
        env=project.env(
            ANTHROPIC_BASE_URL=stub.url,
            ANTHROPIC_API_KEY="sk-test-local",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_AUTOUPDATER="1",
            **env,
        ),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert r.stdout.strip(), f"claude printed nothing (rc {r.returncode}): {r.stderr[-2000:]}"
    result = json.loads(r.stdout)
    assert isinstance(result, dict)
    return result


def trust_everywhere(p: Project) -> None:
    """Trust the project's cocoplus.toml for the project's own HOME (the runtimes and `p.cocoplus`) and for
    the test's (a watcher or worker a test starts with its own environment)."""
    from cocoplus.core.paths import Layout
    from tests.support.trusting import trust_project

    p.cocoplus("trust", "--yes")
    trust_project(Layout(str(p.root)))


SECRET = "AKIA-planted-secret-value"  # planted in a sandboxed worker's home: it must never reach the model


def plant_secrets(home: Path) -> None:
    """What a sandbox must hide in `home`: an SSH key and cloud credentials holding SECRET."""
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text(f"aws_secret_access_key = {SECRET}\n")


def sandboxed(p: Project, runtime: str, secrets: bool = False) -> Iterator[Project]:
    """`p` with `runtime`'s hooks installed, for a worker under a sandbox (skipped with the doctor's reason where
    none can be applied; on CI it must run); `secrets`: its home has them planted.  Its workers are stopped after.
    A fixture's body: `yield from sandboxed(e2e_project, "claude")`."""
    require_sandbox()
    p.cocoplus("install", runtime)
    if secrets:
        plant_secrets(p.home)
    yield p
    stop_workers(Layout(str(p.root)))


@contextmanager
def outside_tmp(runtime: str, prefix: str) -> Iterator[Project]:
    """A git-initialised project with `runtime`'s hooks installed, and its home, under /var/tmp: a runtime's own
    sandbox (srt's, Codex's) mounts a fresh /dev and makes /tmp its own, so a project or a home under either (the
    suite's temporary directory) would not be there inside.  Removed after, its workers stopped."""
    base = Path(tempfile.mkdtemp(prefix=prefix, dir="/var/tmp"))
    p = Project(base / "project", base / "home")
    p.project.mkdir()
    p.home.mkdir()
    subprocess.run(["git", "init", "-q", str(p.project)], check=True)
    p.cocoplus("init")
    p.cocoplus("install", runtime)
    try:
        yield p
    finally:
        stop_workers(Layout(str(p.root)))
        shutil.rmtree(base, ignore_errors=True)
