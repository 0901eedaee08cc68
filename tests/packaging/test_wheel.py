"""The release package: a wheel and an sdist that pass `twine check`, and a wheel that installs with `pipx` and
with `uv tool` (dependencies from the package registry) into a clean environment whose `cocoplus install claude`
writes hooks that run and whose shared hooks reach it through the launcher."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from cocoplus import __version__
from cocoplus.install import bundles

ROOT = Path(__file__).resolve().parent.parent.parent
pytestmark = pytest.mark.slow


def tool(name: str) -> str:
    found = shutil.which(name, path=os.path.dirname(sys.executable)) or shutil.which(name)
    if not found:
        pytest.skip(f"{name} is not installed (it is in the test extra)")
    return found


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel and an sdist built from this checkout with no network (no build isolation)."""
    out = tmp_path_factory.mktemp("dist")
    src = tmp_path_factory.mktemp("src") / "cocoplus"
    # Build from a clean copy of the tracked tree: no venv, caches or build directories of this checkout.
    files = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard"], check=True, capture_output=True, text=True
    ).stdout.split("\n")
    for rel in filter(None, files):
        if (ROOT / rel).is_file() and not (ROOT / rel).is_symlink() and not rel.startswith(".venv"):
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, src / rel)
    r = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(src)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return out


def test_wheel_and_sdist_pass_twine_check_and_carry_the_plugins(dist: Path) -> None:
    wheel = dist / f"cocoplus-{__version__}-py3-none-any.whl"
    sdist = dist / f"cocoplus-{__version__}.tar.gz"
    r = subprocess.run([tool("twine"), "check", "--strict", str(wheel), str(sdist)], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.count("PASSED") == 2, r.stdout + r.stderr
    names = set(zipfile.ZipFile(wheel).namelist())
    for rel in bundles.trees():
        assert f"cocoplus/plugins/{rel}" in names, rel
    meta = zipfile.ZipFile(wheel).read(f"cocoplus-{__version__}.dist-info/METADATA").decode()
    assert "License-Expression: MIT" in meta and "Project-URL: Changelog" in meta and "Classifier: " in meta
    assert any(n.endswith("licenses/LICENSE") for n in names) and "cocoplus/py.typed" in names


def installed(kind: str, wheel: Path, base: Path) -> tuple[str, dict[str, str]]:
    """Install the wheel with pipx or uv tool into directories under `base`; (its cocoplus, the environment)."""
    home = base / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COCOPLUS_", "VIRTUAL_ENV", "PIPX_", "UV_TOOL"))}
    env.update(HOME=str(home), PATH="/usr/local/bin:/usr/bin:/bin")
    if kind == "pipx":
        env.update(PIPX_HOME=str(base / "pipx"), PIPX_BIN_DIR=str(base / "bin"))
        argv = [tool("pipx"), "install", str(wheel)]
    else:
        env.update(UV_TOOL_DIR=str(base / "uv"), UV_TOOL_BIN_DIR=str(base / "bin"))
        argv = [tool("uv"), "tool", "install", str(wheel)]
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0 and (
        "Could not find a version" in r.stderr + r.stdout or "network" in (r.stderr + r.stdout).lower()
    ):
        pytest.skip(f"{kind}: the package registry is not reachable: {r.stderr[-500:]}")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    env["PATH"] = f"{base / 'bin'}:{env['PATH']}"
    return str(base / "bin" / "cocoplus"), env


@pytest.mark.parametrize("kind", ["pipx", "uv"])
def test_the_wheel_installs_as_a_tool_whose_hooks_run(dist: Path, tmp_path: Path, kind: str) -> None:
    exe, env = installed(kind, dist / f"cocoplus-{__version__}-py3-none-any.whl", tmp_path)
    r = subprocess.run([exe, "--version"], env=env, capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == f"cocoplus {__version__}", r.stdout + r.stderr
    project = tmp_path / "proj"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    for args in (["init"], ["install", "claude"], ["install", "codex"]):
        r = subprocess.run([exe, *args], cwd=project, env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
    local = json.loads((project / ".claude" / "settings.local.json").read_text())
    direct = local["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    assert shlex.split(direct)[0].startswith(str(tmp_path)), "the hook runs the tool's own interpreter"
    shared = json.loads((project / ".codex" / "hooks.json").read_text())["hooks"]["PreToolUse"][0]["hooks"][0][
        "command"
    ]
    payload = json.dumps(
        {
            "hook_event_name": "PreToolUse",
            "session_id": "w1",
            "cwd": str(project),
            "tool_name": "Bash",
            "tool_input": {"command": "ls"},
        }
    )
    for command in (direct, shared):
        r = subprocess.run(["sh", "-c", command], cwd=project, env=env, input=payload, capture_output=True, text=True)
        assert r.returncode == 0 and "deny" not in r.stdout, r.stdout + r.stderr
    subprocess.run([exe, "session", "stop", "--reason", "wheel"], cwd=project, env=env, check=True, capture_output=True)
    for command in (direct, shared):
        r = subprocess.run(["sh", "-c", command], cwd=project, env=env, input=payload, capture_output=True, text=True)
        assert '"deny"' in r.stdout and "wheel" in r.stdout, r.stdout + r.stderr
    r = subprocess.run([exe, "doctor"], cwd=project, env=env, capture_output=True, text=True)
    assert r.returncode == 0 and "this project's hooks run this cocoplus" in r.stdout, r.stdout + r.stderr
