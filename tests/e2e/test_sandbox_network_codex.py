"""A real Codex worker (`codex exec`) under the `workspace` sandbox with a limited network, against the scripted
Responses stand-in on the loopback named by its own `config.toml` (a `base_url` cocoplus does not read): the
operator lists that address, which is then served at the same address inside, and the run completes, its command
run and its output sent to the model."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.conftest import Project, sandboxed
from tests.e2e.test_codex import codex_home
from tests.e2e.test_limits_codex_gemini import cli_json, path_with, worker
from tests.e2e.test_sandbox_codex import outputs
from tests.support.model_stubs import ResponsesStub, text, tool
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture
def proj(e2e_project: Project) -> Iterator[Project]:
    yield from sandboxed(e2e_project, "codex")


def test_a_codex_worker_reaches_a_listed_loopback_model_and_runs_its_command(proj: Project) -> None:
    p = proj
    with ResponsesStub([tool("exec_command", cmd="echo RAN-$((6*7))"), text("done")]) as stub:
        home = codex_home(p, stub)
        env = p.env(PATH=path_with("codex"), CODEX_HOME=str(home), STUB_API_KEY="sk-test-local")
        cli_json(p, env, "launch", "codex", "Run it.", "--sandbox", "workspace", "--network",
                 f"127.0.0.1:{stub.port}", "--allow", "Bash")  # fmt: skip
        w = wait_until(lambda: (x := worker(p, env, "w1"))["state"] not in ("queued", "running") and x, timeout=180)
        log = (p.root / "workers" / "w1" / "output.log").read_text()
        said = outputs(stub)
    assert w["state"] == "exited" and w["network"] == [f"127.0.0.1:{stub.port}"], log
    assert "RAN-42" in said, (said[-3000:], log[-3000:])
