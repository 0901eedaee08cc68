"""A real Codex worker (`codex exec`) under the `workspace` sandbox, against the scripted Responses stand-in.

Codex's own sandbox (`-s workspace-write`, bubblewrap itself) runs nested inside cocoplus's: the command really
runs (its file is written, its output comes back), a write inside the tree lands, and the writes and reads the
sandbox refuses fail with the reason in the tool's output, which the model receives.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator

import pytest

from cocoplus.core.paths import Layout
from tests.e2e.conftest import Project
from tests.e2e.test_codex import codex_home
from tests.e2e.test_limits_codex_gemini import cli_json, path_with, worker
from tests.e2e.test_sandbox_claude import SECRET
from tests.supervision.workers_support import stop_workers
from tests.support.model_stubs import ResponsesStub, text, tool
from tests.support.sandbox import require_sandbox
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture
def proj(e2e_project: Project) -> Iterator[Project]:
    require_sandbox()
    e2e_project.cocoplus("install", "codex")
    (e2e_project.home / ".ssh").mkdir()
    (e2e_project.home / ".aws").mkdir()
    (e2e_project.home / ".aws" / "credentials").write_text(f"aws_secret_access_key = {SECRET}\n")
    yield e2e_project
    stop_workers(Layout(str(e2e_project.root)))


def outputs(stub: ResponsesStub) -> str:
    """Every tool output the model was sent."""
    found = []
    for body in stub.loop_requests:
        for item in body.get("input", []) if isinstance(body.get("input"), list) else []:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                found.append(json.dumps(item.get("output")))
    return "\n".join(found)


def test_a_codex_worker_under_workspace_writes_its_tree_and_nothing_else(proj: Project) -> None:
    p = proj
    home = p.home
    script = "\n".join(
        [
            "echo inside > inside.txt && echo WROTE-INSIDE",
            f"(echo x > {home}/.ssh/x) 2>&1 && echo WROTE-SSH",
            f"cat {home}/.aws/credentials 2>&1",
            "(echo '{}' > .codex/config.toml) 2>&1 && echo WROTE-SETTINGS",
            "(rm -f .cocoplus/LAYOUT) 2>&1 && echo DELETED-COCOPLUS",
            "echo done",
        ]
    )
    cmd = f"echo {base64.b64encode(script.encode()).decode()} | base64 -d > attempt.sh && sh attempt.sh"
    with ResponsesStub([tool("exec_command", cmd=cmd), text("done")]) as stub:
        env = p.env(PATH=path_with("codex"), CODEX_HOME=str(codex_home(p, stub)), STUB_API_KEY="sk-test-local")
        cli_json(p, env, "launch", "codex", "Try the files.", "--sandbox", "workspace", "--allow", "Bash")
        w = wait_until(lambda: (x := worker(p, env, "w1"))["state"] not in ("queued", "running") and x, timeout=180)
        log = (p.root / "workers" / "w1" / "output.log").read_text()
        said = outputs(stub)
    assert w["state"] == "exited", log
    rec = json.loads((p.root / "workers" / "w1" / "worker.json").read_text())
    assert rec["sandbox"] == "workspace" and rec["command"][rec["command"].index("-s") + 1] == "workspace-write"
    assert "WROTE-INSIDE" in said and (p.project / "inside.txt").read_text() == "inside\n", (said, log[-3000:])
    for refused in ("WROTE-SSH", "WROTE-SETTINGS", "DELETED-COCOPLUS"):
        assert refused not in said, said
    assert SECRET not in said and "Read-only file system" in said, said
    assert (p.root / "LAYOUT").exists() and not (home / ".ssh" / "x").exists()
