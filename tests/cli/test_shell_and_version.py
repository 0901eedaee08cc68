"""`--version`, `shell-init`, and the `session` / `/supervise` shell functions in a real bash."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

import cocoplus
from tests.conftest import assert_no_traceback, run_cli_subprocess
from tests.support.typed import present

CONSOLE_SCRIPT = os.path.join(os.path.dirname(sys.executable), "cocoplus")
BASH = shutil.which("bash")
needs_bash = pytest.mark.skipif(BASH is None, reason="bash is not installed")


def test_version(cli, tmp_path):
    code, out, err = cli("--version", cwd=tmp_path)
    assert code == 0
    assert out == f"cocoplus {cocoplus.__version__}\n"


def test_version_in_a_real_process(tmp_path):
    r = run_cli_subprocess("--version", cwd=tmp_path)
    assert r.code == 0 and r.out.strip() == f"cocoplus {cocoplus.__version__}"


def test_no_arguments_prints_help(cli, tmp_path):
    code, out, err = cli(cwd=tmp_path)
    assert code in (0, 2)
    assert "session" in out + err and "init" in out + err
    assert_no_traceback(out, err)


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_shell_init_defines_the_functions(cli, tmp_path, shell):
    code, out, err = cli("shell-init", shell, cwd=tmp_path)
    assert code == 0, err
    assert "session()" in out
    assert "/supervise" in out
    assert shell in out.splitlines()[0]


# Each shell's way of loading the functions, then the calls a user types.
LOADERS = {
    "sh": '. "{file}"\n',
    "dash": '. "{file}"\n',
    "bash": '. "{file}"\n',
    "zsh": '. "{file}"\n',
    "fish": "source {file}\n",
}
CALLS = "session status --json\nsession steer 'two words; $(echo not-run)'\nsupervise fix the flaky test\n"
EXPECTED = [
    "<session>",
    "<status>",
    "<--json>",
    "<session>",
    "<steer>",
    "<two words; $(echo not-run)>",
    "<supervise>",
    "<fix the flaky test>",
]


def shell_exe(shell: str) -> str:
    exe = shutil.which(shell)
    if exe is None:
        pytest.skip(f"{shell} is not installed here (tests/e2e/runtimes/install-shells.sh installs it)")
    return exe


def run_shell(shell: str, script: str, cwd, path_prefix: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if path_prefix:
        env["PATH"] = path_prefix + os.pathsep + env.get("PATH", "")
    argv = {"bash": ["--norc", "--noprofile"], "zsh": ["-f"], "fish": ["--no-config"]}.get(shell, [])
    return subprocess.run(
        [shell_exe(shell), *argv, "-c", script], cwd=str(cwd), env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("shell", ["sh", "dash", "bash", "zsh", "fish"])
def test_shell_init_works_in_each_shell(cli, tmp_path, shell):
    shell_exe(shell)
    code, init_script, err = cli("shell-init", shell, cwd=tmp_path)
    assert code == 0, err
    script_file = tmp_path / "init.sh"
    script_file.write_text(init_script)
    bindir = fake_cocoplus(tmp_path / "bin")
    calls = CALLS + ("/supervise keep CI green\n" if shell in ("bash", "zsh") else "")
    r = run_shell(shell, LOADERS[shell].format(file=script_file) + calls, tmp_path, bindir)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    expected = EXPECTED + (["<supervise>", "<keep CI green>"] if shell in ("bash", "zsh") else [])
    assert r.stdout.splitlines() == expected


def test_the_default_script_is_posix_sh():
    # `eval "$(cocoplus shell-init)"` must parse in dash (POSIX sh), where /supervise is not a valid name.
    from cocoplus.cli.commands.shell_cmd import script

    dash = shell_exe("dash")
    r = subprocess.run([dash, "-n", "-c", script("sh", "cocoplus")], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert "/supervise" in script("sh", "cocoplus")  # defined through eval, for bash and zsh only


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(CONSOLE_SCRIPT), reason="console script not installed")
@pytest.mark.parametrize("shell", ["dash", "zsh", "fish"])
def test_shell_init_from_the_console_script_works(project, shell):
    load = (
        f"{CONSOLE_SCRIPT} shell-init fish | source\n"
        if shell == "fish"
        else f'eval "$({CONSOLE_SCRIPT} shell-init {shell})"\n'
    )
    r = run_shell(shell, load + 'session steer "from the shell"\nsession status --json\n', project.project)
    assert r.returncode == 0, r.stderr
    assert_no_traceback(r.stdout, r.stderr)
    report = json.loads(r.stdout[r.stdout.index("{") :])
    assert report["steer"]["text"].strip() == "from the shell"


def fake_cocoplus(bindir) -> str:
    """A `cocoplus` that prints each argument it gets on its own line."""
    bindir.mkdir()
    exe = bindir / "cocoplus"
    exe.write_text('#!/bin/sh\nfor a in "$@"; do printf "<%s>\\n" "$a"; done\n')
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(bindir)


def bash(script: str, cwd, path_prefix: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if path_prefix:
        env["PATH"] = path_prefix + os.pathsep + env.get("PATH", "")
    return subprocess.run(
        [present(BASH), "--norc", "--noprofile", "-c", script],
        cwd=str(cwd),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@needs_bash
def test_shell_functions_pass_arguments_through(cli, tmp_path):
    code, init_script, err = cli("shell-init", "bash", cwd=tmp_path)
    assert code == 0
    bindir = fake_cocoplus(tmp_path / "bin")
    script_file = tmp_path / "init.sh"
    script_file.write_text(init_script)
    r = bash(
        f". {script_file}\n"
        "session status --json\n"
        "session steer 'two words; $(echo not-run)'\n"
        "/supervise fix the flaky test\n",
        tmp_path,
        bindir,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "<session>",
        "<status>",
        "<--json>",
        "<session>",
        "<steer>",
        "<two words; $(echo not-run)>",
        "<supervise>",
        "<fix the flaky test>",
    ]


@pytest.mark.slow
@needs_bash
@pytest.mark.skipif(not os.path.exists(CONSOLE_SCRIPT), reason="console script not installed")
def test_shell_init_from_the_console_script_works_in_bash(project, tmp_path):
    # The way a user loads it: eval "$(cocoplus shell-init bash)".
    r = bash(
        f'eval "$({CONSOLE_SCRIPT} shell-init bash)"\nsession steer "from the shell"\nsession status --json\n',
        project.project,
    )
    assert r.returncode == 0, r.stderr
    assert_no_traceback(r.stdout, r.stderr)
    report = json.loads(r.stdout[r.stdout.index("{") :])
    assert report["steer"]["text"].strip() == "from the shell"
    assert report["state_dir"] == project.root


@needs_bash
@pytest.mark.skipif(not os.path.exists(CONSOLE_SCRIPT), reason="console script not installed")
def test_shell_functions_report_failure_exit_codes(tmp_path):
    r = bash(f'eval "$({CONSOLE_SCRIPT} shell-init bash)"\nsession status\necho "rc=$?"\n', tmp_path)
    assert "rc=1" in r.stdout
    assert "cocoplus init" in r.stderr
