"""A `codex` controller: a supervision round runs `codex exec` with cocoplus' brain MCP server and no shell.

The real Codex CLI 0.169.0 plays the main brain against the scripted Responses-API
stand-in.  cocoplus gives it the brain server through `-c mcp_servers.cocoplus...`
(`required`, tools approved so exec never prompts, only the brain tools enabled),
a read-only sandbox, and no shell (`shell_tool`, `unified_exec` off), no sub-agents
and no hooks of its own.  Codex names the tools `mcp__cocoplus` + tool name (a
namespace), as tests/mcp/test_codex_e2e.py scripts them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cocoplus.chat import store, worker
from cocoplus.core.paths import Layout
from cocoplus.session import registry
from cocoplus.supervision import autonomy, rounds
from tests.e2e.conftest import Project, e2e_project, runtime_bin  # noqa: F401 - e2e_project is a fixture
from tests.e2e.test_codex import NO_TMP_ROOTS
from tests.mcp.test_codex_e2e import NAMESPACE, namespaced_calls  # noqa: F401 - namespaced_calls is a fixture
from tests.supervision.conftest import rounds_finished
from tests.support.model_stubs import ResponsesStub, text, tool
from tests.support.trusting import trust_project

pytestmark = pytest.mark.e2e


def test_a_codex_controller_acts_through_the_brain_tools_and_has_no_shell(
    e2e_project: Project, namespaced_calls: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = e2e_project
    layout = Layout(str(p.root))
    side = p.project / "brain-side-effect.txt"
    script = [
        tool("exec_command", cmd=f"touch {side}"),
        tool(f"{NAMESPACE}__supervision_status"),
        tool(f"{NAMESPACE}__enable_supervision", max_turns=500),
        tool(f"{NAMESPACE}__finish_supervision", summary="FIN-c07: nothing left to supervise"),
        text("CODEX-BRAIN-5e9: finished."),
    ]
    with ResponsesStub(script) as stub:
        codex_home = p.home / ".codex"
        codex_home.mkdir()
        (codex_home / "config.toml").write_text(
            'model = "gpt-5-codex"\nmodel_provider = "stub"\n[model_providers.stub]\nname = "stub"\n'
            f'base_url = "{stub.url}/v1"\nwire_api = "responses"\nenv_key = "STUB_API_KEY"\n'
            f'[projects."{p.project.resolve()}"]\ntrust_level = "trusted"\n'
            # a server of the user's own: the brain does not get it
            '[mcp_servers.other]\ncommand = "no-such-server"\n' + NO_TMP_ROOTS
        )
        monkeypatch.setenv("CODEX_HOME", str(codex_home))
        monkeypatch.setenv("STUB_API_KEY", "sk-test-local")
        (p.project / "cocoplus.toml").write_text(
            f'[chat]\ncontroller = "cx"\n[accounts.cx]\nkind = "codex"\nbinary = "{runtime_bin("codex")}"\n'
        )
        trust_project(
            layout
        )  # the controller's binary is named by the project file (docs/guides/configuration.md, "Trust")
        rec, _ = registry.ensure(layout, "claude", "w-one", event="SessionStart")
        autonomy.enable(layout, task_hint="watch cc1")
        started = rounds.start_round(
            layout,
            [{"session": rec["id"], "alias": "cc1", "kind": "attention", "value": "pending"}],
            start_worker=False,
        )
        worker.serve(layout, once=True)
        task = store.read_task(layout, "master-agent", started["task"])
        assert task["state"] == "succeeded", task.get("error")
        rounds.poll(layout, start_worker=False)
        offered = stub.loop_requests[0]["tools"]
        outputs = stub.function_outputs()
    # Offered: the brain namespace with the round's tools (no enable_supervision), no shell, no other server.
    names = {t.get("name") for t in offered}
    assert "exec_command" not in names and "shell" not in names and "mcp__other" not in names
    (ns,) = [t for t in offered if t.get("name") == NAMESPACE]
    assert {t["name"] for t in ns["tools"]} == {
        "list_sessions",
        "supervision_status",
        "set_supervision_scope",
        "finish_supervision",
    } | (
        {t["name"] for t in ns["tools"]}
        & {
            "dispatch",
            "answer_worker",
            "steer_session",
            "stop_session",
            "resume_session",
            "approve_permission",
            "deny_permission",
            "launch_worker",
            "merge_worker",
        }
    )
    assert "Why you were woken:\n- cc1 is pending" in json.dumps(stub.loop_requests[0]["input"]).replace("\\n", "\n")
    # The shell call and enable_supervision were refused; nothing ran.
    assert outputs[0] == "unsupported call: exec_command" and not side.exists()
    assert json.loads(outputs[1][outputs[1].index("{") :])["round_in_progress"]["number"] == 1
    assert "unsupported call" in outputs[2]
    auto = autonomy.status(layout)["autonomous"]
    assert auto["enabled"] is False and auto["finish_summary"] == "FIN-c07: nothing left to supervise"
    assert [m["text"] for m in store.messages(layout, "master-agent").records if m["role"] == "assistant"] == [
        "CODEX-BRAIN-5e9: finished."
    ]
    (done,) = rounds_finished(layout)
    assert (done["outcome"], done["actions"]) == ("succeeded", 0)
    assert Path(layout.rounds).exists()
