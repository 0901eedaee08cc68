"""A real Gemini CLI worker under the `workspace` sandbox with the network `none`, against the scripted Gemini
stand-in on the loopback (GOOGLE_GEMINI_BASE_URL, reached through the worker's proxy at the URL it was given): its
run completes, and its shell cannot reach a loopback "registry" outside, directly or through the proxy (the same
check as Claude Code's, tests/e2e/test_sandbox_network_claude.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.conftest import Project, sandboxed
from tests.e2e.test_gemini import MODEL
from tests.e2e.test_limits_codex_gemini import cli_json, path_with, worker
from tests.e2e.test_sandbox_gemini import outputs
from tests.e2e.test_worker_logs import gemini_env
from tests.sandbox.test_network import Server
from tests.support.model_stubs import GeminiStub, text, tool
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture
def proj(e2e_project: Project) -> Iterator[Project]:
    yield from sandboxed(e2e_project, "gemini")


def test_a_gemini_worker_under_none_reaches_its_model_and_not_a_loopback_registry(proj: Project) -> None:
    p = proj
    registry = Server("registry-ok")
    url = f"http://127.0.0.1:{registry.port}/pkg"
    command = (
        f"curl -sS -m 10 {url}; echo DIRECT=$?; curl -sS -m 10 --noproxy '' -x \"$HTTP_PROXY\" {url}; echo PROXIED=$?"
    )
    try:
        with GeminiStub([tool("run_shell_command", command=command), text("done")]) as stub:
            env = gemini_env(p, stub, path_with("gemini"))
            cli_json(p, env, "launch", "gemini", "Fetch the package.", "--model", MODEL, "--sandbox", "workspace",
                     "--network", "none", "--allow", "Bash")  # fmt: skip
            w = wait_until(lambda: (x := worker(p, env, "w1"))["state"] not in ("queued", "running") and x, timeout=180)
            log = (p.root / "workers" / "w1" / "output.log").read_text()
            said = outputs(stub)
    finally:
        registry.close()
    assert w["state"] == "exited" and w["network"] == "none", log
    assert "DIRECT=7" in said and "network is none" in said, (said[-3000:], log[-3000:])
    assert "registry-ok" not in said and registry.hits == 0
