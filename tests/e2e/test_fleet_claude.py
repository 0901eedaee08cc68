"""A fleet stop reaches real agents: three "machines" (project directories with their own relays and
machine names) on a real nats-server, each with the real Claude Code CLI and cocoplus' hooks."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Project, run_claude
from tests.fleet.conftest import Fleet, fleet, projects, three, wait_status  # noqa: F401 - fixtures
from tests.fleet.natsserver import Machine
from tests.support.model_stubs import AnthropicStub, text, tool

pytestmark = [pytest.mark.e2e, pytest.mark.nats, pytest.mark.slow]


def _claude(m: Machine, command: str) -> dict[str, Any]:
    p = Project(m.project, m.home)
    with AnthropicStub([tool("Bash", command=command, description="make a file"), text("done")]) as stub:
        return run_claude(p, stub)


def test_fleet_stop_all_denies_the_next_tool_on_every_machine_and_resume_lets_them_run(
    fleet: Fleet, three: list[Machine]
) -> None:
    for m in three:
        subprocess.run(["git", "init", "-q", str(m.project)], check=True)
        m.cocoplus("install", "claude")
    res = three[0].json("fleet", "stop", "--all", "--reason", "release freeze")
    assert res["acknowledged"] == 3 and res["not_answered"] == []
    for m in three:
        marker: Path = m.project / "side_effect.txt"
        result = _claude(m, f"touch {marker}")
        assert not marker.exists(), f"{m.name}: the Bash tool ran although the fleet stopped it"
        assert result.get("terminal_reason") == "hook_stopped", (m.name, result)
        assert [d["tool_name"] for d in result.get("permission_denials", [])] == ["Bash"]
    st = wait_status(fleet, three[1], lambda s: s["summary"]["stopped"] == 3)
    for name, p in projects(st).items():
        assert p["kill_switch"]["present"] and p["kill_switch"]["reason"] == "release freeze", name
        assert p["pending_count"] == 0 and p["commands"][0]["type"] == "stop" and p["commands"][0]["acknowledged"], name
    res = three[2].json("fleet", "resume", "--all", "--yes")
    assert res["acknowledged"] == 3
    for m in three:
        marker = m.project / "after_resume.txt"
        _claude(m, f"touch {marker}")
        assert marker.exists(), f"{m.name}: the Bash tool did not run after fleet resume"
