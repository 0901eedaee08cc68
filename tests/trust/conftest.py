"""A repository made in the test, cloned with `git clone`, whose cocoplus.toml names programs in the repo.

`tools/cortex` (the `[ctx] command`) and `tools/brain` (the command of the
`[accounts.x]` master agent) each leave a canary file beside the repo's
root when they run, so a test sees exactly whether cocoplus ran them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from cocoplus.core.paths import Layout
from tests.conftest import Result, run_cli_subprocess
from tests.support.waiting import wait_until

CONFIG = """\
[session]
max_iterations = 42

[ctx]
command = "tools/cortex"

[chat]
controller = "x"

[accounts.x]
kind = "command"
command = ["tools/brain"]
"""

CORTEX = """\
#!/bin/sh
# Leaves a canary, then answers like `cortex ctx show all`.
here=$(cd "$(dirname "$0")/.." && pwd)
echo "$*" >> "$here/CTX_RAN"
echo '{"tasks": [{"id": "t9", "title": "exfiltrate", "status": "in_progress"}], "steps": [], "discoveries": []}'
"""

BRAIN = """\
#!/bin/sh
# Leaves a canary, then answers as the master agent.
here=$(cd "$(dirname "$0")/.." && pwd)
cat > /dev/null
echo ran >> "$here/BRAIN_RAN"
echo "brain reply"
"""


def git(*args: str, cwd: Path) -> None:
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.invalid",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.invalid",
        GIT_CONFIG_NOSYSTEM="1",
    )
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, timeout=60)


class Clone:
    """A clone of a repo that ships cocoplus.toml, tools/cortex and tools/brain."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.layout = Layout(str(root / ".cocoplus"))

    def cli(self, *argv: str, env: dict[str, str] | None = None, input: str | None = None) -> Result:
        return run_cli_subprocess(*argv, cwd=self.root, env=env, input=input)

    def ctx_ran(self) -> bool:
        return (self.root / "CTX_RAN").exists()

    def brain_ran(self) -> bool:
        return (self.root / "BRAIN_RAN").exists()

    def forget_canaries(self) -> None:
        for name in ("CTX_RAN", "BRAIN_RAN"):
            (self.root / name).unlink(missing_ok=True)

    @property
    def config(self) -> Path:
        return self.root / "cocoplus.toml"

    def stop_background(self) -> None:
        """Stop the watcher and the chat worker this clone started, if any (by their pid files)."""
        for pid_file in (self.layout.supervisor_pid, self.layout.chat_worker_pid):
            try:
                pid = int(json.loads(Path(pid_file).read_text())["pid"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            wait_until(lambda p=pid: not _alive(p), timeout=20)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie of an exited child still answers kill(0)
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def make_origin(path: Path, config: str = CONFIG) -> Path:
    path.mkdir()
    (path / "tools").mkdir()
    for name, text in (("cortex", CORTEX), ("brain", BRAIN)):
        script = path / "tools" / name
        script.write_text(text)
        script.chmod(0o755)
    (path / "cocoplus.toml").write_text(config)
    git("init", "-q", "-b", "main", cwd=path)
    git("add", "-A", cwd=path)
    git("commit", "-q", "-m", "a project with cocoplus configuration", cwd=path)
    return path


@pytest.fixture
def clone(tmp_path: Path) -> Iterator[Clone]:
    origin = make_origin(tmp_path / "origin")
    git("clone", "-q", str(origin), str(tmp_path / "clone"), cwd=tmp_path)
    c = Clone(tmp_path / "clone")
    r = c.cli("init")
    assert r.code == 0, r.err
    try:
        yield c
    finally:
        c.stop_background()
