"""What a sandbox's fresh /dev and private /tmp would hide, bound in again: this interpreter in the probe's
throwaway sandbox (a virtual environment under /tmp), and a runtime's program with its npm package tree. Run for
real from a clone under /tmp, the sandbox tests pass under `CI=true` (none skipped); these hold the pieces."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from cocoplus.sandbox import probe
from cocoplus.supervision.workerrun import NPM_TREE, program_dirs


def test_the_probe_binds_an_interpreter_under_tmp_again(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    venv = Path("/tmp") / f"cocoplus-venv-{os.getpid()}"
    (venv / "bin").mkdir(parents=True, exist_ok=True)
    try:
        monkeypatch.setattr(sys, "prefix", str(venv))
        monkeypatch.setattr(sys, "executable", str(venv / "bin" / "python"))
        args = probe.throwaway("/usr/bin/bwrap")
        assert args[args.index("--tmpfs") + 2 : args.index("--tmpfs") + 5] == ["--ro-bind", str(venv), str(venv)]
        assert args.index(str(venv)) > args.index("/tmp")  # after the private /tmp, which it would hide
    finally:
        for d in (venv / "bin", venv):
            d.rmdir()


def test_an_interpreter_elsewhere_is_not_bound_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "prefix", "/opt/venv")
    monkeypatch.setattr(sys, "base_prefix", "/usr")
    monkeypatch.setattr(sys, "executable", "/opt/venv/bin/python")
    # The cocoplus that runs (a checkout an editable install points at) is bound again only where it is hidden.
    package = str(Path(probe.__file__).resolve().parents[2])
    assert probe.interpreter_binds() == (["--ro-bind", package, package] if probe.hidden(package) else [])
    assert probe.hidden("/tmp/x") and probe.hidden("/dev/shm/x") and not probe.hidden("/tmpfoo")


def test_a_runtime_program_brings_its_package_tree(tmp_path: Path) -> None:
    modules = tmp_path / "runtimes" / NPM_TREE
    (modules / ".bin").mkdir(parents=True)
    (modules / "@scope" / "cli" / "bin").mkdir(parents=True)
    (modules / "@scope" / "cli" / "bin" / "cli.js").write_text("")
    (modules / ".bin" / "cli").symlink_to("../@scope/cli/bin/cli.js")
    found = program_dirs(str(modules / ".bin" / "cli"))
    assert found == (str(modules / ".bin"), str(modules / "@scope" / "cli" / "bin"), str(modules))
    assert program_dirs("/usr/bin/true") == ("/usr/bin",)
