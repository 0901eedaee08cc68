"""Two installations of cocoplus for one user (a pipx one and a checkout, say), each wiring its own project: each
project's committed hooks run the cocoplus that wired it, and installing the other never switches them.  `doctor`
exits 1 where a project's hooks run another cocoplus than the one that wired it.

The two installations are two copies of the package beside each other, each run by this interpreter as its
`cocoplus` command runs it; each copy's hook script notes which copy ran before it hands over.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from cocoplus.install import doctor, launcher
from cocoplus.session.workspace import init
from tests.conftest import passwd_env
from tests.packaging.test_team_install import pre_payload

NOTE = "import os as _o\nopen(_o.path.join(_o.environ['COCOPLUS_TEST_RAN'], {name!r}), 'a').close()\n"


def installation(tmp_path: Path, name: str) -> Path:
    """A copy of the package under tmp_path/name whose hook script notes that it ran (in $COCOPLUS_TEST_RAN)."""
    root = tmp_path / name
    shutil.copytree(
        Path(launcher.__file__).resolve().parents[1], root / "cocoplus", ignore=shutil.ignore_patterns("__pycache__")
    )
    script = root / "cocoplus" / "hook" / "__main__.py"
    text = script.read_text()
    script.write_text(text.replace('if __name__ == "__main__":', NOTE.format(name=name) + 'if __name__ == "__main__":'))
    return root


def cocoplus(root: Path, project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`cocoplus ARGS` of the installation at `root`, in `project`."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [sys.executable, "-m", "cocoplus", *args], cwd=project, env=env, capture_output=True, text=True, timeout=60
    )


def ran(project: Path, ran_dir: Path) -> list[str]:
    """Which installation the project's committed Codex PreToolUse hook runs."""
    for f in ran_dir.iterdir():
        f.unlink()
    command = json.loads((project / ".codex" / "hooks.json").read_text())["hooks"]["PreToolUse"][0]["hooks"][0]
    r = run_hook_with(command["command"], str(project), ran_dir)
    assert r.returncode == 0, r.stderr
    return sorted(f.name for f in ran_dir.iterdir())


def run_hook_with(command: str, project: str, ran_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {"HOME": os.environ["HOME"], "PATH": "/usr/bin:/bin", "COCOPLUS_TEST_RAN": str(ran_dir), **passwd_env()}
    return subprocess.run(
        ["sh", "-c", command], cwd=project, env=env, input=json.dumps(pre_payload(project, "codex")),
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip


def test_two_installations_each_run_the_hooks_of_the_project_they_wired(tmp_path: Path) -> None:
    one, two = installation(tmp_path, "one"), installation(tmp_path, "two")
    a, b = tmp_path / "a", tmp_path / "b"
    ran_dir = tmp_path / "ran"
    ran_dir.mkdir()
    for project, inst in ((a, one), (b, two)):
        project.mkdir()
        init(str(project / ".cocoplus"))
        r = cocoplus(inst, project, "install", "codex")
        assert r.returncode == 0, r.stderr
    assert ran(a, ran_dir) == ["one"] and ran(b, ran_dir) == ["two"]
    # The other installation installed again, for this user (the fallback pointer): neither project switches.
    assert cocoplus(two, a, "install").returncode == 0
    assert launcher.read_pointer()["hook"] == str(two / "cocoplus" / "hook" / "__main__.py")
    assert ran(a, ran_dir) == ["one"] and ran(b, ran_dir) == ["two"]
    assert cocoplus(one, a, "doctor").returncode == 0
    # A pointer that is gone (a project wired by an older cocoplus): its hooks run this user's, switched to two;
    # doctor says so, and exits 1.
    os.unlink(launcher.project_pointer_path(str(a)))
    assert ran(a, ran_dir) == ["two"]
    r = cocoplus(one, a, "doctor")
    assert r.returncode == 1 and "run whichever cocoplus this user's pointer names" in r.stdout + r.stderr, r
    # Claude Code's hooks of one installation beside Codex's of the other, in one project: doctor exits 1.
    assert cocoplus(one, a, "install", "codex").returncode == 0
    assert cocoplus(two, a, "install", "claude").returncode == 0  # pins the project to two: Codex's follow
    assert ran(a, ran_dir) == ["two"]
    problems = [p["problem"] for p in doctor.hook_problems(str(a))]
    assert "two installations" not in problems  # one installation for both runtimes now
    settings = a / ".claude" / "settings.local.json"
    settings.write_text(settings.read_text().replace(str(two / "cocoplus"), str(one / "cocoplus")))
    r = cocoplus(one, a, "doctor", "--json")
    assert r.returncode == 1 and "two installations" in [p["problem"] for p in json.loads(r.stdout)["hook_problems"]]


def test_a_project_variable_with_dots_never_leads_the_look_up_out_of_this_users_directory(tmp_path: Path) -> None:
    """A repository can set the runtime's project variable for its hooks: `..` in it is not followed."""
    one = installation(tmp_path, "one")
    a = tmp_path / "a"
    a.mkdir()
    init(str(a / ".cocoplus"))
    assert cocoplus(one, a, "install", "codex").returncode == 0
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "hook.sh").write_text(f"cocoplus_python=/bin/sh\ncocoplus_hook={planted / 'evil.sh'}\n")
    (planted / "evil.sh").write_text(f"touch {tmp_path / 'owned'}\n")
    up = "/.." * 40 + str(planted)
    src = launcher._source(("CODEX_PROJECT_DIR",)) + 'echo "$cocoplus_p"'
    env = {"HOME": os.environ["HOME"], "PATH": "/usr/bin:/bin", "CODEX_PROJECT_DIR": up, **passwd_env()}
    r = subprocess.run(["sh", "-c", src], cwd=a, env=env, capture_output=True, text=True, timeout=30)
    assert r.stdout.strip() == launcher.project_pointer_path(str(a)), r
    assert not (tmp_path / "owned").exists()
