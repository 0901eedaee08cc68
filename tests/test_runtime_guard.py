"""The guard that keeps the real runtime CLIs in `e2e` tests (tests/support/runtimes.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support import runtimes


def test_a_test_not_marked_e2e_cannot_get_a_runtime_cli() -> None:
    for name in runtimes.NAMES:
        with pytest.raises(pytest.fail.Exception, match=f"runs the real {name} CLI but is not marked e2e"):
            runtimes.runtime_bin(name)


@pytest.mark.e2e
def test_an_e2e_test_gets_the_pinned_cli() -> None:
    path = runtimes.runtime_bin("claude")
    assert os.access(path, os.X_OK) and Path(path).parent == runtimes.BIN


@pytest.mark.parametrize("name", runtimes.NAMES)
def test_a_runtime_cli_on_path_is_a_recording_standin(name: str) -> None:
    found = shutil.which(name)
    assert found is not None
    record = Path(found).parent / "calls.log"
    r = subprocess.run([name, "--version"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 127 and "stand-in" in r.stderr
    assert runtimes.standin_calls(record) == f"{name} --version"
    record.unlink()  # or this test's teardown fails it, as it fails any test that runs one


def test_only_the_guard_names_where_the_clis_are_installed(tmp_path: Path) -> None:
    assert runtimes.sources_naming_the_cli_dir() == []
    dirname = "node_" + "modules"  # spelled in two parts, or this file would be one of them
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "test_x.py").write_text("def test_x():\n    pass\n")
    (tmp_path / "sub" / "test_y.py").write_text(f'BIN = "tests/e2e/runtimes/{dirname}/.bin"\n')
    assert runtimes.sources_naming_the_cli_dir(tmp_path) == ["sub/test_y.py"]
