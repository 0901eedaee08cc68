"""This user's files are found from the password database's home, never from HOME or XDG_* (which a repository can
set for a hook); files an earlier release kept under `$XDG_CONFIG_HOME/cocoplus` are named by `doctor` with how to
move them."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from pathlib import Path

from cocoplus.core import seal, userfiles
from cocoplus.core.paths import Layout
from tests.conftest import run_cli_subprocess


def test_the_files_are_under_the_password_databases_home_whatever_the_environment_says(
    tmp_path: Path, monkeypatch
) -> None:
    home = pwd.getpwuid(os.getuid()).pw_dir
    monkeypatch.setenv("HOME", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    assert userfiles.directory() == os.path.join(home, ".config", "cocoplus")
    assert userfiles.state_directory() == os.path.join(home, ".local", "state", "cocoplus")
    assert userfiles.seal_key_file().startswith(home + "/")
    assert userfiles.shown(userfiles.trust_file()) == "~/.config/cocoplus/trusted.json"


def test_a_subprocess_with_home_and_xdg_elsewhere_makes_its_key_in_the_one_place(tmp_path: Path) -> None:
    elsewhere = {"HOME": str(tmp_path / "h"), "XDG_CONFIG_HOME": str(tmp_path / "x")}
    r = run_cli_subprocess("init", cwd=tmp_path, env=elsewhere)
    assert r.code == 0, r.err
    code = "from cocoplus.core import seal, userfiles; seal.key(create=True); print(userfiles.seal_key_file())"
    out = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, **elsewhere}, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == userfiles.seal_key_file() and not (tmp_path / "x" / "cocoplus").exists()
    assert seal.key() == Path(out).read_bytes()  # this process (another environment) reads the same key


def test_doctor_names_files_left_at_the_old_place_and_how_to_move_them(project: Layout, tmp_path: Path) -> None:
    old = Path(os.environ["XDG_CONFIG_HOME"]) / "cocoplus"
    old.mkdir()
    (old / "config.toml").write_text("[session]\nmax_iterations = 7\n")
    (old / "permissions.json").write_text(json.dumps({"projects": {}}))
    (old / "trusted.json.lock").write_text("")
    Path(userfiles.directory()).mkdir(parents=True, exist_ok=True)
    Path(userfiles.directory(), "permissions.json").write_text(json.dumps({"projects": {}}))
    r = run_cli_subprocess("doctor", cwd=project.project)
    assert r.code == 0, r.err
    notes = [x for x in r.err.splitlines() if str(old) in x]
    assert len(notes) == 2, r.err  # the lock file is not named
    moved = next(x for x in notes if "config.toml" in x)
    assert moved.startswith(f"cocoplus: note: {old}/config.toml: not read") and "mv " in moved, moved
    assert f"{userfiles.directory()}/config.toml" in moved
    both = next(x for x in notes if "permissions.json" in x)
    assert "exists already" in both and "mv " not in both, both
    data = json.loads(run_cli_subprocess("doctor", "--json", cwd=project.project).out)
    assert len(data["user_files"]) == 2
