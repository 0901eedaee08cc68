"""A real Gemini CLI worker under the `srt` profile, against the scripted Gemini stand-in (reached through srt's
proxy: `GOOGLE_GEMINI_BASE_URL` names it, so srt allows its address and port): the same checks as under
`workspace` (tests/e2e/test_sandbox_gemini.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.conftest import SECRET, Project
from tests.e2e.test_gemini import MODEL
from tests.e2e.test_limits_codex_gemini import cli_json, path_with, worker
from tests.e2e.test_sandbox_gemini import outputs
from tests.e2e.test_sandbox_srt_claude import srt_project, with_srt
from tests.e2e.test_worker_logs import gemini_env
from tests.support.model_stubs import GeminiStub, text, tool
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture
def proj() -> Iterator[Project]:
    with srt_project("gemini") as p:
        yield p


def test_a_gemini_worker_under_srt_writes_its_tree_and_nothing_else(proj: Project) -> None:
    p = proj
    home = p.home
    script = "\n".join(
        [
            "echo inside > inside.txt && echo WROTE-INSIDE",
            f"(echo x > {home}/.ssh/x) 2>&1 && echo WROTE-SSH",
            f"cat {home}/.aws/credentials 2>&1",
            "(echo '{}' > .gemini/settings.json) 2>&1 && echo WROTE-SETTINGS",
            "(rm -f .cocoplus/LAYOUT) 2>&1 && echo DELETED-COCOPLUS",
            f"(echo x > {home}/outside.txt) 2>&1 && echo WROTE-OUTSIDE",
            "echo done",
        ]
    )
    steps = [tool("write_file", file_path=str(p.project / "attempt.sh"), content=script),
             tool("run_shell_command", command="sh attempt.sh"), text("done")]  # fmt: skip
    with GeminiStub(steps) as stub:
        env = with_srt(p, gemini_env(p, stub, path_with("gemini")))
        cli_json(p, env, "launch", "gemini", "Try the files.", "--model", MODEL, "--sandbox", "srt",
                 "--allow", "Bash", "--allow", "Write")  # fmt: skip
        w = wait_until(lambda: (x := worker(p, env, "w1"))["state"] not in ("queued", "running") and x, timeout=180)
        log = (p.root / "workers" / "w1" / "output.log").read_text()
        said = outputs(stub)
    assert w["state"] == "exited" and w["sandbox"] == "srt", log
    assert "WROTE-INSIDE" in said and (p.project / "inside.txt").read_text() == "inside\n", (said[-3000:], log[-3000:])
    for refused in ("WROTE-SSH", "WROTE-SETTINGS", "DELETED-COCOPLUS", "WROTE-OUTSIDE"):
        assert refused not in said, said
    assert SECRET not in said and "Read-only file system" in said, said
    assert (p.root / "LAYOUT").exists() and not (home / ".ssh" / "x").exists() and not (home / "outside.txt").exists()
