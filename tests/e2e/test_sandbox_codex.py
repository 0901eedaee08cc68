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
from cocoplus.sandbox import writes
from cocoplus.session import permissions
from tests.e2e.conftest import SECRET, Project, outside_tmp, sandboxed
from tests.e2e.test_codex import codex_home
from tests.e2e.test_limits_codex_gemini import cli_json, path_with, worker
from tests.support.model_stubs import Holding, ResponsesStub, text, tool
from tests.support.sandbox import require_sandbox
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture
def proj(e2e_project: Project) -> Iterator[Project]:
    yield from sandboxed(e2e_project, "codex", secrets=True)


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


class HeldResponses(Holding, ResponsesStub):
    """Codex's stand-in, holding the agent-loop requests numbered in `hold` until `release(n)`."""


def test_a_write_both_sandboxes_refused_is_a_decision_and_approved_its_next_run_writes() -> None:
    """The real Codex's PostToolUse for a write to ~/cache (read-only in cocoplus's sandbox and in Codex's own,
    nested) opens a decision; approved, its resumed run (`codex exec resume`) writes there: the grant is mounted
    writable by cocoplus's sandbox and joins Codex's own writable roots (without either, the write fails)."""

    require_sandbox()
    with outside_tmp("codex", "cocoplus-codex-e2e-") as p:
        refused_then_written(p)


def refused_then_written(p: Project) -> None:
    layout = Layout(str(p.root))
    cache = p.home / "cache"
    cache.mkdir()
    write = f"echo x > {cache}/pkg.tgz && echo WROTE-CACHE"
    script = [tool("exec_command", cmd=write), text("the cache is read-only"), tool("exec_command", cmd=write),
              text("done")]  # fmt: skip
    with HeldResponses(script, hold=(2,)) as stub:
        env = p.env(PATH=path_with("codex"), CODEX_HOME=str(codex_home(p, stub)), STUB_API_KEY="sk-test-local")
        cli_json(p, env, "launch", "codex", "Fill the cache.", "--sandbox", "workspace", "--allow", "Bash",
                 "--alias", "cacher")  # fmt: skip
        assert stub.arrived[2].wait(180), "the failed write's result never reached the model"
        (req,) = wait_until(
            lambda: [r for r in permissions.requests(layout, state=None) if r.get("tool") == writes.TOOL], timeout=60
        )
        assert req["state"] == "pending" and req["call"] == {"path": str(cache), "refused": f"{cache}/pkg.tgz"}, req
        cli_json(p, env, "decide", req["id"], "approve")
        wait_until(lambda: (p.root / "workers" / "w1" / "write-grants.json").exists(), timeout=30)
        stub.release(2)
        w = wait_until(
            lambda: (x := worker(p, env, "w1"))["state"] not in ("queued", "running") and x["session_state"] == "exited"
            and x, timeout=180,
        )  # fmt: skip
        assert w["state"] == "exited" and not (cache / "pkg.tgz").exists(), w
        out = cli_json(p, env, "dispatch", "cacher", "Try again.")
        assert out["route"] == "resume" and out["resume"]["worker"] == "w1", out
        w = wait_until(lambda: (x := worker(p, env, "w1"))["state"] not in ("queued", "running") and x, timeout=180)
        said = outputs(stub)
    runner_log = (p.root / "workers" / "w1" / "runner.log").read_text()
    assert w["state"] == "exited" and "WROTE-CACHE" in said, (said[-2000:], runner_log[-2000:])
    assert (cache / "pkg.tgz").read_text() == "x\n"
    assert f"as approved after an earlier one refused a write: {cache}" in runner_log
