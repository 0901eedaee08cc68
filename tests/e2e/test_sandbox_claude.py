"""A real Claude Code worker under the `workspace` sandbox (bubblewrap), against the scripted model stand-in.

Its shell writes inside its tree; it cannot write `~/.ssh`, read a planted secret, write outside its tree or edit
`.claude/settings.local.json`, and the model is told so in the tool result. Skipped with the doctor's reason where
a sandbox cannot be applied (tests/support/sandbox.py); on CI it must run.
"""

from __future__ import annotations

import base64
import json
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from tests.e2e.conftest import SECRET, Project, cocoplus, sandboxed
from tests.e2e.test_workers_claude import HeldStub, env_for
from tests.support.model_stubs import AnthropicStub, text, tool
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture
def proj(e2e_project: Project) -> Iterator[Project]:
    yield from sandboxed(e2e_project, "claude", secrets=True)


def attempts(p: Project) -> str:
    """One shell command that runs a script trying each thing and saying which succeeded, one line each. The
    script is sent encoded, as a worker hiding its intent from the permission rules would: here only the
    sandbox stands between it and the files."""
    home = p.home
    script = "\n".join(
        [
            "echo inside > inside.txt && echo WROTE-INSIDE",
            f"(echo x > {home}/.ssh/x) 2>&1 && echo WROTE-SSH",
            f"cat {home}/.aws/credentials 2>&1",
            f"cat {home}/.ssh/id_ed25519 2>&1",
            f"(echo x > {home}/outside.txt) 2>&1 && echo WROTE-OUTSIDE",
            "(echo '{}' > .claude/settings.local.json) 2>&1 && echo WROTE-SETTINGS",
            "(rm -f .cocoplus/AGENT_STOP; touch .cocoplus/AGENT_STOP) 2>&1 && echo WROTE-COCOPLUS",
            "echo done",
        ]
    )
    return f"echo {base64.b64encode(script.encode()).decode()} | base64 -d > attempt.sh && sh attempt.sh"


def launched_env(p: Project, stub: AnthropicStub) -> dict[str, str]:
    return env_for(p, stub)


def worker_state(p: Project, env: dict[str, str]) -> dict[str, Any]:
    listing = json.loads(cocoplus(p.project, "workers", "list", "--json", env=env).stdout)
    (w,) = listing["workers"]
    return dict(w)


def tool_results(stub: AnthropicStub) -> str:
    """The text of every tool result the model was sent (not the commands it sent)."""
    found = []
    for request in stub.loop_requests[1:]:
        for message in request.get("messages", []):
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    found.append(json.dumps(block.get("content")))
    return "\n".join(found)


def test_a_claude_worker_under_workspace_writes_its_tree_and_nothing_else(proj: Project) -> None:
    p = proj
    with AnthropicStub([tool("Bash", command=attempts(p)), text("done")]) as stub:
        env = launched_env(p, stub)
        settings = (p.project / ".claude" / "settings.local.json").read_text()
        out = cocoplus(p.project, "launch", "claude", "Try the files.", "--sandbox", "workspace", "--allow", "Bash",
                       "--json", env=env)  # fmt: skip
        assert json.loads(out.stdout)["sandbox"] == "workspace"
        w = wait_until(lambda: (x := worker_state(p, env))["state"] in ("exited", "failed") and x, timeout=60)
        log = (p.root / "workers" / "w1" / "output.log").read_text()
        assert w["state"] == "exited", log
        results = tool_results(stub)
        listing = cocoplus(p.project, "workers", "list", env=env).stdout
    assert w["sandbox"] == "workspace" and "SANDBOX" in listing and "workspace" in listing, listing
    assert "WROTE-INSIDE" in results, (results[-3000:], log[-3000:])
    assert (p.project / "inside.txt").read_text() == "inside\n"
    for refused in ("WROTE-SSH", "WROTE-OUTSIDE", "WROTE-SETTINGS", "WROTE-COCOPLUS"):
        assert refused not in results, results
    assert SECRET not in results and "PRIVATE KEY" not in results
    assert "Read-only file system" in results  # the model is told why
    assert not (p.home / ".ssh" / "x").exists() and not (p.home / "outside.txt").exists()
    assert (p.project / ".claude" / "settings.local.json").read_text() == settings
    assert not (p.root / "AGENT_STOP").exists()


def test_its_hooks_still_stop_it_through_the_channel_and_the_model_is_told(proj: Project) -> None:
    """`.cocoplus/` is read-only inside, yet the kill switch holds: after `session stop`, the worker's next tool call
    is denied by its hook (run outside, through the control channel), and the run ends stopped by the hook."""
    p = proj
    script = [tool("Bash", command="echo first > first.txt"), tool("Bash", command="echo second > second.txt"),
              text("done")]  # fmt: skip
    with HeldStub(script, hold=(2,)) as stub:
        env = launched_env(p, stub)
        cocoplus(p.project, "launch", "claude", "Work.", "--sandbox", "workspace", "--allow", "Bash", env=env)
        assert stub.arrived[2].wait(120), "the first tool call's result never reached the model"
        cocoplus(p.project, "session", "stop", "--reason", "enough", env=env)
        stub.release(2)
        w = wait_until(lambda: (x := worker_state(p, env))["state"] != "running" and x, timeout=120)
    log = (p.root / "workers" / "w1" / "output.log").read_text()
    assert (p.project / "first.txt").exists() and not (p.project / "second.txt").exists(), log
    result = json.loads(next(ln for ln in log.splitlines() if '"type":"result"' in ln and ln.startswith("{")))
    assert result.get("terminal_reason") == "hook_stopped", result
    assert [d["tool_name"] for d in result.get("permission_denials", [])] == ["Bash"], result
    assert w["state"] == "exited"


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_a_write_its_sandbox_refused_is_a_decision_and_approved_its_next_run_writes(proj: Project, shell: str) -> None:
    """The real Claude Code's PostToolUseFailure for a write to ~/cache (read-only in its sandbox) reaches the
    channel, which opens a decision; approved through the inbox, the grant is sealed; this run still cannot write
    there, and its next run (a dispatch that resumes its session) can.  Claude Code runs its commands in the shell
    SHELL names, or in zsh when SHELL is not set and zsh is installed; each says the error in its own words."""
    from cocoplus.sandbox import writes
    from cocoplus.session import permissions

    p = proj
    layout = Layout(str(p.root))
    cache = p.home / "cache"
    cache.mkdir()
    write = f"echo x > {cache}/pkg.tgz && echo WROTE-CACHE"
    script = [tool("Bash", command=write), text("the cache is read-only"), tool("Bash", command=write), text("done")]
    with HeldStub(script, hold=(2,)) as stub:
        program = shutil.which(shell)
        assert program, f"{shell} is not installed (tests/e2e/runtimes/install.sh installs it)"
        env = {**launched_env(p, stub), "SHELL": program}
        cocoplus(p.project, "launch", "claude", "Fill the cache.", "--sandbox", "workspace", "--allow", "Bash",
                 "--alias", "cacher", env=env)  # fmt: skip
        assert stub.arrived[2].wait(120), "the failed write's result never reached the model"
        (req,) = wait_until(
            lambda: [r for r in permissions.requests(layout, state=None) if r.get("tool") == writes.TOOL], timeout=60
        )
        assert req["state"] == "pending" and req["call"] == {"path": str(cache), "refused": f"{cache}/pkg.tgz"}, req
        assert cocoplus(p.project, "decide", req["id"], "approve", env=env).returncode == 0
        wait_until(lambda: (p.root / "workers" / "w1" / "write-grants.json").exists(), timeout=30)
        stub.release(2)
        ended = wait_until(
            lambda: (
                (x := worker_state(p, env))["state"] in ("exited", "failed") and x["session_state"] == "exited" and x
            ),
            timeout=120,
        )
        assert ended["state"] == "exited", ended
        assert not (cache / "pkg.tgz").exists()  # this run's mounts did not change
        first = tool_results(stub)
        said = {"bash": f"{cache}/pkg.tgz: Read-only file system", "zsh": f"read-only file system: {cache}/pkg.tgz"}
        assert said[shell] in first and "WROTE-CACHE" not in first, first
        out = json.loads(cocoplus(p.project, "dispatch", "cacher", "Try again.", "--json", env=env).stdout)
        assert out["route"] == "resume" and out["resume"]["worker"] == "w1", out
        w = wait_until(lambda: (x := worker_state(p, env))["state"] in ("exited", "failed") and x, timeout=120)
        results = tool_results(stub)
    runner_log = (p.root / "workers" / "w1" / "runner.log").read_text()
    assert w["state"] == "exited" and "WROTE-CACHE" in results, (results[-2000:], runner_log[-2000:])
    assert (cache / "pkg.tgz").read_text() == "x\n"
    assert f"as approved after an earlier one refused a write: {cache}" in runner_log
