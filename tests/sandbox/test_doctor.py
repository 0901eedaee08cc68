"""`cocoplus sandbox doctor`: the probe's findings, one cause and one fix, and a non-zero exit when a sandbox
cannot be applied. The failures are made real: bubblewrap hidden from PATH, a `bwrap` that fails as bubblewrap does
under AppArmor's restriction ("loopback: Failed RTM_NEWADDR") or in a container ("Failed to make / slave"), and
sysctls read from a directory laid out as /proc is. The real probe runs where bubblewrap is installed."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from cocoplus.sandbox import probe, srt
from tests.support.sandbox import require_sandbox, require_srt

RTM = "bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted"
SLAVE = "bwrap: Failed to make / slave: Permission denied"


def fake_bwrap(bindir: Path, error: str) -> Path:
    """A `bwrap` that answers --version as bubblewrap does and fails every sandbox with `error`."""
    bindir.mkdir(parents=True, exist_ok=True)
    path = bindir / "bwrap"
    path.write_text(
        f'#!/bin/sh\nif [ "$1" = "--version" ]; then echo "bubblewrap 0.8.0"; exit 0; fi\necho "{error}" >&2\nexit 1\n'
    )
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def fake_proc(root: Path, **ctl: str) -> Path:
    """A directory laid out as /proc with the given sysctls (`apparmor`, `max_userns`, `clone`)."""
    names = {
        "apparmor": "sys/kernel/apparmor_restrict_unprivileged_userns",
        "max_userns": "sys/user/max_user_namespaces",
        "clone": "sys/kernel/unprivileged_userns_clone",
    }
    for key, value in ctl.items():
        f = root / names[key]
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(value + "\n")
    (root / "1").mkdir(parents=True, exist_ok=True)
    (root / "1" / "cgroup").write_text("0::/init.scope\n")
    return root


def test_without_bubblewrap_the_doctor_says_install_it_and_exits_1(cli_subprocess, tmp_path: Path) -> None:
    env = dict(os.environ, PATH=str(tmp_path / "empty"))
    (tmp_path / "empty").mkdir()
    r = cli_subprocess("sandbox", "doctor", cwd=tmp_path, env=env)
    assert r.code == 1, r
    assert "bubblewrap (`bwrap`) is not on PATH" in r.out
    assert [ln for ln in r.out.splitlines() if ln.startswith("fix: ")] == [f"fix: {probe.FIX_INSTALL}"]
    assert "Traceback" not in r.err


def test_a_loopback_refusal_under_apparmor_is_named_with_the_apparmor_fix(tmp_path: Path) -> None:
    fake_bwrap(tmp_path / "bin", RTM)
    proc = fake_proc(tmp_path / "proc", apparmor="1", max_userns="15000")
    found = probe.probe({"PATH": str(tmp_path / "bin")}, proc=str(proc), root=str(tmp_path / "root"))
    assert not found["ok"] and found["version"] == "0.8.0" and found["loopback"] == "down"
    assert RTM in found["cause"] and found["fix"] == probe.FIX_APPARMOR
    assert found["sysctls"]["kernel.apparmor_restrict_unprivileged_userns"] == "1"


def test_the_same_refusal_inside_a_container_gets_the_container_fix(tmp_path: Path) -> None:
    fake_bwrap(tmp_path / "bin", SLAVE)
    proc = fake_proc(tmp_path / "proc", max_userns="15000")
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / ".dockerenv").write_text("")
    found = probe.probe({"PATH": str(tmp_path / "bin")}, proc=str(proc), root=str(tmp_path / "root"))
    assert found["container"] == "docker" and found["fix"] == probe.FIX_CONTAINER and SLAVE in found["cause"]


def test_the_one_fix_for_each_kernel_setting() -> None:
    """Which fix a failure gets, for each combination the probe can meet (unprivileged, no container)."""
    assert probe._fix_for(RTM, {"kernel.apparmor_restrict_unprivileged_userns": "1"}, None, False) == probe.FIX_APPARMOR
    assert probe._fix_for("x", {"user.max_user_namespaces": "0"}, None, False) == probe.FIX_MAX_USERNS
    assert probe._fix_for("x", {"kernel.unprivileged_userns_clone": "0"}, None, False) == probe.FIX_USERNS_CLONE
    assert probe._fix_for(SLAVE, {}, "docker", True) == probe.FIX_CONTAINER
    assert probe._fix_for("bwrap: something else", {}, None, True) == probe.FIX_OTHER


def test_the_doctor_json_names_the_throwaway_sandbox_it_tried(cli_subprocess, tmp_path: Path) -> None:
    fake_bwrap(tmp_path / "bin", RTM)
    env = dict(os.environ, PATH=f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    r = cli_subprocess("sandbox", "doctor", "--json", cwd=tmp_path, env=env)
    assert r.code == 1
    found = json.loads(r.out)
    assert found["ok"] is False and found["tried"][0] == str(tmp_path / "bin" / "bwrap")
    assert {"--unshare-net", "--unshare-pid"} <= set(found["tried"])


def test_where_bubblewrap_works_the_doctor_brings_up_loopback_and_exits_0(cli_subprocess, tmp_path: Path) -> None:
    require_sandbox()
    r = cli_subprocess("sandbox", "doctor", cwd=tmp_path)
    assert r.code == 0, r
    assert "loopback in a throwaway sandbox: up" in r.out and not [ln for ln in r.out.splitlines() if "fix:" in ln]
    # srt is not on this PATH: the doctor names its one fix, and workspace still applies (exit 0)
    assert (
        f"srt: cannot be applied: Anthropic's sandbox runtime (`srt`) is not on PATH\n  to use it: {srt.FIX_INSTALL}"
        in r.out
    )


def test_where_srt_works_the_doctor_shows_its_pinned_version(cli_subprocess, tmp_path: Path) -> None:
    found = require_srt()
    r = cli_subprocess("sandbox", "doctor", "--json", cwd=tmp_path, env=dict(os.environ, PATH=found["PATH"]))
    held = json.loads(r.out)["srt"]
    assert r.code == 0 and held["ok"] is True and held["version"] == srt.PINNED and held["fix"] is None, r
    r = cli_subprocess("sandbox", "doctor", cwd=tmp_path, env=dict(os.environ, PATH=found["PATH"]))
    assert f"({srt.PINNED})" in r.out and "the `srt` profile can be applied" in r.out


def test_an_srt_that_fails_is_named_with_its_cause(tmp_path: Path) -> None:
    """An `srt` that answers its version but cannot start a sandbox (srt's own words when socat is missing)."""
    require_sandbox()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "srt"
    fake.write_text(
        '#!/bin/sh\nif [ "$1" = "--version" ]; then echo "0.0.83"; exit 0; fi\n'
        'echo "Error: Sandbox dependencies are not available: socat not found" >&2\nexit 1\n'
    )
    fake.chmod(0o755)
    found = srt.probe({"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"})
    assert not found["ok"] and found["version"] == "0.0.83" and "socat not found" in found["cause"]
    assert found["fix"] == srt.FIX_TOOLS and found["tried"][:2] == [str(fake), "--settings"]


def test_cocoplus_doctor_shows_the_probe_and_calls_it_a_problem_when_workers_need_it(cli_subprocess, project) -> None:
    from cocoplus.core import userfiles

    env = {"PATH": "/nonexistent"}
    r = cli_subprocess("doctor", "--json", cwd=project.project, env=env)
    box = json.loads(r.out)["sandbox"]
    assert box["ok"] is False and box["problem"] is False and "not on PATH" in box["text"]
    user = Path(userfiles.config_file())
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text('[workers]\nsandbox = "workspace"\n')
    r = cli_subprocess("doctor", cwd=project.project, env=env)
    assert "problem: sandbox: cannot be applied here: bubblewrap (`bwrap`) is not on PATH" in r.out + r.err, r
