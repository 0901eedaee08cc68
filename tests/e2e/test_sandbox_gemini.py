"""A real Gemini CLI worker under the `workspace` sandbox, against the scripted Gemini stand-in: the same checks as
Claude Code's and Codex's (tests/e2e/test_sandbox_claude.py, test_sandbox_codex.py), so that the table test of the
sandbox's arguments (tests/sandbox/test_bwrap.py) stands beside a real worker of every runtime `launch` supports."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import SECRET, Project, sandboxed
from tests.e2e.test_gemini import MODEL
from tests.e2e.test_limits_codex_gemini import cli_json, path_with, worker
from tests.e2e.test_worker_logs import gemini_env
from tests.support.model_stubs import GeminiStub, text, tool
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture
def proj(e2e_project: Project) -> Iterator[Project]:
    yield from sandboxed(e2e_project, "gemini", secrets=True)


def outputs(stub: GeminiStub) -> str:
    """Every shell command's output the model was sent (not the file it wrote, which echoes the script)."""
    found = []
    for body in stub.loop_requests:
        for content in body.get("contents", []):
            for part in content.get("parts", []) if isinstance(content, dict) else []:
                reply = part.get("functionResponse") if isinstance(part, dict) else None
                if isinstance(reply, dict) and reply.get("name") == "run_shell_command":
                    found.append(json.dumps(reply.get("response")))
    return "\n".join(found)


def test_a_gemini_worker_under_workspace_writes_its_tree_and_nothing_else(proj: Project) -> None:
    p = proj
    home = p.home
    script = "\n".join(
        [
            "echo inside > inside.txt && echo WROTE-INSIDE",
            f"(echo x > {home}/.ssh/x) 2>&1 && echo WROTE-SSH",
            f"cat {home}/.aws/credentials 2>&1",
            "(echo '{}' > .gemini/settings.json) 2>&1 && echo WROTE-SETTINGS",
            "(rm -f .cocoplus/LAYOUT) 2>&1 && echo DELETED-COCOPLUS",
            "echo done",
        ]
    )
    steps = [tool("write_file", file_path=str(p.project / "attempt.sh"), content=script),
             tool("run_shell_command", command="sh attempt.sh"), text("done")]  # fmt: skip
    with GeminiStub(steps) as stub:
        env = gemini_env(p, stub, path_with("gemini"))
        cli_json(p, env, "launch", "gemini", "Try the files.", "--model", MODEL, "--sandbox", "workspace",
                 "--allow", "Bash", "--allow", "Write")  # fmt: skip
        w = wait_until(lambda: (x := worker(p, env, "w1"))["state"] not in ("queued", "running") and x, timeout=180)
        log = (p.root / "workers" / "w1" / "output.log").read_text()
        said = outputs(stub)
    assert w["state"] == "exited" and w["sandbox"] == "workspace", log
    assert "WROTE-INSIDE" in said and (p.project / "inside.txt").read_text() == "inside\n", (said[-3000:], log[-3000:])
    for refused in ("WROTE-SSH", "WROTE-SETTINGS", "DELETED-COCOPLUS"):
        assert refused not in said, said
    assert SECRET not in said and "Read-only file system" in said, said
    assert (p.root / "LAYOUT").exists() and not (home / ".ssh" / "x").exists()
