"""Shell completion from Typer: `cocoplus --install-completion bash` writes a script that bash sources from
~/.bashrc, and it completes commands and subcommands."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def test_bash_completion_installs_and_completes(tmp_path: Path) -> None:
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    bindir = os.path.dirname(sys.executable)
    assert os.path.exists(os.path.join(bindir, "cocoplus")), "the cocoplus console script beside this interpreter"
    env = {"HOME": str(tmp_path), "PATH": f"{bindir}:/usr/bin:/bin", "SHELL": "/bin/bash"}
    # Typer asks which shell runs it (its parent process): bash, whatever shell started the suite. The second
    # command keeps bash from replacing itself with cocoplus.
    r = subprocess.run(
        ["bash", "--norc", "-c", "cocoplus --install-completion bash; exit $?"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0 and "bash completion installed" in r.stdout, r.stdout + r.stderr
    assert ".bash_completions/cocoplus.sh" in (tmp_path / ".bashrc").read_text()
    script = (
        "source ~/.bashrc\n"
        'COMP_WORDS=(cocoplus sess); COMP_CWORD=1; _cocoplus_completion cocoplus; echo "${COMPREPLY[*]}"\n'
        'COMP_WORDS=(cocoplus session st); COMP_CWORD=2; _cocoplus_completion cocoplus; echo "${COMPREPLY[*]}"\n'
    )
    r = subprocess.run(["bash", "--norc", "-c", script], env=env, capture_output=True, text=True, timeout=60)
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and len(lines) == 2, r.stdout + r.stderr
    assert set(lines[0].split()) == {"session"}  # `sessions`, an older name kept working, is hidden
    assert set(lines[1].split()) == {"status", "steer", "stop"}
