"""Hook waits end inside the timeout Claude Code was given for the hook, with the real CLI against a scripted model.

`cocoplus install claude` runs with short waits; then cocoplus.toml asks
for much longer ones, without installing again.  Claude Code kills a hook
at the timeout written beside its command, and what the hook would have
said is lost (docs/runtimes.md): the steps cocoplus records after a wait
show that the hook outlived its wait and answered.

* the turn-end hold, raised to 600 s, ends at the 2 s the installed timeout
  leaves it, and the run ends normally;
* a headless worker's permission request, its wait raised to 600 s, is
  denied at the 3 s the installed timeout leaves it, and the agent is told.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.lock import Lock
from cocoplus.core.paths import Layout
from cocoplus.supervision import autonomy
from tests.e2e.conftest import Project, run_claude
from tests.e2e.test_workers_claude import cli_json, env_for, worker
from tests.supervision.workers_support import stop_workers
from tests.support.model_stubs import AnthropicStub, text, tool
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e


def installed_timeout(p: Project, event: str) -> int:
    doc = json.loads((p.project / ".claude" / "settings.local.json").read_text())
    (handler,) = doc["hooks"][event][0]["hooks"]
    assert f"--timeout {handler['timeout']}" in handler["command"]
    timeout: int = handler["timeout"]
    return timeout


def steps(p: Project, event: str) -> list[dict[str, Any]]:
    return [s for s in p.steps() if s["event"] == event]


def hook_log(p: Project) -> str:
    path = p.root / "logs" / "hook.log"
    return path.read_text() if path.exists() else ""


@pytest.fixture
def worker_proj(e2e_project: Project) -> Iterator[Project]:
    yield e2e_project
    stop_workers(Layout(str(e2e_project.root)))


def test_a_hold_raised_after_install_ends_before_claude_code_kills_the_hook(e2e_project: Project) -> None:
    p = e2e_project
    (p.project / "cocoplus.toml").write_text("[hooks]\ntimeout_s = 4\n[supervision]\nhold_turn_end_s = 2\n")
    p.cocoplus("install", "claude")
    assert installed_timeout(p, "Stop") == 6
    (p.project / "cocoplus.toml").write_text("[hooks]\ntimeout_s = 4\n[supervision]\nhold_turn_end_s = 600\n")
    layout = Layout(str(p.root))
    autonomy.enable(layout, task_hint="finish the parser change")
    with (
        Lock(layout.lock("supervisor")),
        AnthropicStub([text("parser change done")]) as stub,
    ):  # a watcher: the turn end is held
        result = run_claude(p, stub, "Finish the parser change.", timeout=240)
        assert len(stub.loop_requests) == 1  # released: no continuation
    assert result["subtype"] == "success" and result["result"] == "parser change done"
    assert [s["seconds"] for s in steps(p, "hold_started")] == [2]
    assert [s["outcome"] for s in steps(p, "hold_ended")] == ["released: no decision within 2s"]
    assert (
        "hold_turn_end_s is 600 s, but this hook was installed with a timeout of 6 s: it waits at most 2 s"
        in hook_log(p)
    )
    assert not os.listdir(layout.holds_dir)


def test_a_permission_wait_raised_after_install_ends_before_claude_code_kills_the_hook(worker_proj: Project) -> None:
    p = worker_proj
    (p.project / "cocoplus.toml").write_text("[hooks]\ntimeout_s = 4\n[permissions]\nwait_s = 3\n")
    p.cocoplus("install", "claude")
    assert installed_timeout(p, "PermissionRequest") == 7
    (p.project / "cocoplus.toml").write_text("[hooks]\ntimeout_s = 4\n[permissions]\nwait_s = 600\n")
    side = p.project / "side_effect.txt"
    with AnthropicStub([tool("Bash", command=f"touch {side}"), text("could not")]) as stub:
        env = env_for(p, stub)
        cli_json(p, env, "launch", "claude", "Make the file.")
        done = wait_until(lambda: (w := worker(p, env, "w1"))["state"] in ("exited", "failed") and w, timeout=180)
        told = json.dumps(stub.tool_results())
    assert not side.exists()
    assert "was denied by default: no one answered within 3 s" in told, told
    assert done["state"] == "exited" and done["denied"] == 1
    decisions = [
        json.loads(x) for x in Path(p.root, "permissions", "decisions.jsonl").read_text().splitlines() if x.strip()
    ]
    assert [(d["behavior"], d["how"]) for d in decisions] == [("expired", "deadline")]
    assert (
        "[permissions] wait_s is 600 s, but this hook was installed with a timeout of 7 s: it waits at most 3 s"
        in hook_log(p)
    )
