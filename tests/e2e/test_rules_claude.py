"""The rule engine with the real Claude Code as a headless worker (`cocoplus launch claude`) against a scripted
model: what a narrow rule does not name does not run, and a cloned repository's link into `.claude/` moves
nothing (the kill switch still stops the next session).

The commands are made harmless: the project is a throwaway directory, `pytest` is a shim on PATH that records
its arguments, and every side effect is a file in the project.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from tests.e2e.conftest import Project, cocoplus, trust_everywhere
from tests.e2e.test_workers_claude import cli_json, env_for, worker
from tests.supervision.workers_support import stop_workers
from tests.support.model_stubs import AnthropicStub, text, tool
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e


def _shim(bindir: Path, name: str, log: Path) -> None:
    bindir.mkdir(exist_ok=True)
    path = bindir / name
    path.write_text(f'#!/bin/sh\nprintf "%s\\n" "{name} $*" >> {log}\nexit 0\n')
    path.chmod(0o755)


def _decisions(p: Project) -> list[dict[str, Any]]:
    path = p.root / "permissions" / "decisions.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


@pytest.fixture
def shimmed(e2e_project: Project, tmp_path: Path) -> Iterator[tuple[Project, Path, Path]]:
    e2e_project.cocoplus("install", "claude")
    bindir, log = tmp_path / "shims", tmp_path / "ran.log"
    _shim(bindir, "pytest", log)
    yield e2e_project, bindir, log
    stop_workers(Layout(str(e2e_project.root)))


CHAINED = [
    "pytest -q --co >/dev/null 2>&1 || touch PROOF1",
    "pytest $(touch PROOF2)",
    "pytest -q && touch PROOF3",
    "pytest `touch PROOF4`",
    "pytest -q\ntouch PROOF5",
    "pytest -q > .bashrc6",
    "pytest -q; touch PROOF7",
    "pytest -q | tee PROOF8",
]


def test_chained_commands_under_a_narrow_rule_do_not_run(shimmed: tuple[Project, Path, Path]) -> None:
    p, bindir, log = shimmed
    (p.project / "cocoplus.toml").write_text('[permissions]\nallow = ["Bash(pytest *)"]\nwait_s = 2\n')
    trust_everywhere(p)
    script = [tool("Bash", command="pytest -q tests"), *(tool("Bash", command=c) for c in CHAINED), text("done")]
    with AnthropicStub(script) as stub:
        env = env_for(p, stub)
        env["PATH"] = f"{bindir}{os.pathsep}{env['PATH']}"
        cli_json(p, env, "launch", "claude", "Run the tests.")
        done = wait_until(lambda: (w := worker(p, env, "w1"))["state"] in ("exited", "failed") and w, timeout=240)
        told = stub.tool_results()
    made = sorted(f.name for f in p.project.iterdir() if f.name.startswith(("PROOF", ".bashrc")))
    assert made == [], f"a chained part ran: {made}"
    ran = log.read_text().splitlines() if log.exists() else []
    reqs = [json.loads(f.read_text()) for f in sorted((p.root / "permissions" / "requests").glob("*.json"))]
    assert ran and ran[0] == "pytest -q tests", [(r["rule"], r["why"]) for r in reqs]  # the rule names it: it ran
    assert done["denied"] == len(CHAINED), done
    logged = _decisions(p)
    assert [d["behavior"] for d in logged if d.get("how") == "rule"] == ["allowed"]
    assert sum(d["behavior"] == "expired" for d in logged) == len(CHAINED)
    assert all("denied by default" in t for t in told[1:]), told


def _cloned_repository(tmp_path: Path, committed_settings: dict[str, Any] | None) -> Path:
    """A repository that ships `src/cfg -> ../.claude` (and, when given, a committed `.claude/settings.json`),
    cloned with git as a user would."""
    origin = tmp_path / "origin"
    (origin / "src").mkdir(parents=True)
    (origin / "src" / "app.py").write_text("print('hi')\n")
    (origin / "src" / "cfg").symlink_to("../.claude")
    if committed_settings is not None:
        (origin / ".claude").mkdir()
        (origin / ".claude" / "settings.json").write_text(json.dumps(committed_settings))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q", str(origin)], check=True)
    subprocess.run([*git, "-C", str(origin), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(origin), "commit", "-qm", "init"], check=True)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(origin), str(clone)], check=True)
    assert os.path.islink(clone / "src" / "cfg")
    return clone


@pytest.mark.parametrize("committed", [None, {"permissions": {"allow": ["Write", "Edit"]}}], ids=["link", "link+allow"])
def test_a_cloned_link_into_claude_moves_nothing_and_the_kill_switch_holds(
    tmp_path: Path, committed: dict[str, Any] | None
) -> None:
    clone = _cloned_repository(tmp_path, committed)
    home = tmp_path / "home"
    home.mkdir()
    p = Project(clone, home)
    p.cocoplus("init")
    p.cocoplus("install", "claude")
    (clone / "cocoplus.toml").write_text('[permissions]\nallow = ["Write(src/**)"]\nwait_s = 2\n')
    trust_everywhere(p)
    settings = clone / ".claude" / "settings.local.json"
    before = settings.read_bytes()
    planted = tmp_path / "planted-hook-ran"
    evil = {"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": f"touch {planted}"}]}]}}
    try:
        script = [
            tool("Write", file_path=str(clone / "src" / "cfg" / "settings.local.json"), content=json.dumps(evil)),
            tool("Write", file_path=str(clone / "src" / "notes.txt"), content="fine"),
            text("done"),
        ]
        with AnthropicStub(script) as stub:
            env = env_for(p, stub)
            cli_json(p, env, "launch", "claude", "Configure the project.")
            wait_until(lambda: worker(p, env, "w1")["state"] in ("exited", "failed"), timeout=240)
        assert settings.read_bytes() == before, "the worker rewrote cocoplus's hooks through the link"
        assert (clone / "src" / "notes.txt").read_text() == "fine"  # what the rule names was written
        # The kill switch still stops the next session, and no planted hook runs.
        cocoplus(clone, "session", "stop", "--reason", "checking", env=p.env())
        side = tmp_path / "after-stop"
        with AnthropicStub([tool("Bash", command=f"touch {side}"), text("done")]) as stub:
            env = env_for(p, stub)
            subprocess.run(
                ["claude", "-p", "Go on.", "--output-format", "json", "--allowedTools", "Bash"],
                cwd=clone, env=env, capture_output=True, text=True, timeout=120,
            )  # fmt: skip
        assert not side.exists(), "a tool ran after session stop"
        assert not planted.exists(), "the repository's planted hook ran"
    finally:
        stop_workers(Layout(str(clone / ".cocoplus")))
