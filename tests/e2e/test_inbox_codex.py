"""A worker's question reaches the phone, with the real Codex CLI against a scripted Responses-API model, a real
`cocoplus inbox run` and the ntfy stand-in.

Codex fires no permission request (docs/runtimes.md), so what it routes to the inbox is its questions: the model
calls cocoplus' MCP tool `ask_human` (registered by `cocoplus install codex`, as tests/mcp/test_codex_e2e.py sets
it up), the run ends, and the open question is pushed: a question needs words, which a bare link cannot carry, so
the push has no answer button; it has Leave and Open, which leads to the decision page.  The operator answers
with `cocoplus decide ID answer --text ...`: the answer reaches the worker like a dispatch, as its next run
(`codex exec resume`), whose request to the model carries the text; the push is followed up.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from cocoplus.core.paths import Layout
from cocoplus.inbox import decisions
from tests.e2e.conftest import Project, cocoplus, e2e_project  # noqa: F401 - e2e_project is a fixture
from tests.e2e.test_codex import run_codex
from tests.inbox.test_service import TOPIC, Service, ledger, ntfy, start, user_config  # noqa: F401 - fixtures
from tests.mcp.test_codex_e2e import NAMESPACE, namespaced_calls  # noqa: F401 - namespaced_calls is a fixture
from tests.support.model_stubs import ResponsesStub, text, tool
from tests.support.ntfy_stub import NtfyStub
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e

QUESTION = "QUESTION-3d1: keep the old parser's API or drop it?"
ANSWER = "ANSWER-8c4: drop it, nobody calls it"


def mcp_ready(p: Project) -> None:
    """cocoplus' MCP entry in the project's .codex/config.toml, with the keys a `codex exec` worker needs (see
    tests/mcp/test_codex_e2e.py)."""
    p.cocoplus("install", "codex")
    cfg = p.project / ".codex" / "config.toml"
    added = (
        'default_tools_approval_mode = "approve"\nrequired = true\n'
        'env_vars = ["LD_PRELOAD", "NSS_WRAPPER_PASSWD", "NSS_WRAPPER_GROUP"]\n'
    )
    cfg.write_text(cfg.read_text().replace("[mcp_servers.cocoplus]\n", "[mcp_servers.cocoplus]\n" + added))


def test_a_codex_workers_question_reaches_the_phone_and_the_answer_reaches_its_next_run(
    e2e_project: Project, namespaced_calls: None, ntfy: NtfyStub, start: Callable[[], Service]
) -> None:
    p = e2e_project
    layout = Layout(str(p.root))
    mcp_ready(p)
    user_config(ntfy)
    start()
    script = [tool(f"{NAMESPACE}__ask_human", question=QUESTION, session="cx1"), text("I asked."), text("RESUMED")]
    with ResponsesStub(script) as stub:
        run_codex(p, stub, "Rework the parser.", timeout=240)
        asked = json.loads(stub.function_outputs()[0][stub.function_outputs()[0].index("{") :])
        assert asked["alias"] == "cx1", asked
        # The open question is pushed: its words, no answer button (a link cannot carry text), Leave and Open.
        push = ntfy.wait_for_messages(TOPIC, 1, timeout=60)[0]
        (d,) = decisions.collect(layout)
        assert d["kind"] == "question" and d["id"] in push["title"] and QUESTION in push["message"], (d, push)
        assert [(a["label"], a["action"]) for a in push["actions"]] == [("Leave", "http"), ("Open", "view")]
        assert push["actions"][1]["url"].endswith(f"/inbox/d/{d['id']}")
        assert "it waits for you (no deadline)" in push["message"]
        # The operator answers from the terminal; the answer is the worker's next run, and the model sees it.
        env = p.env(CODEX_HOME=str(p.home / ".codex"), STUB_API_KEY="sk-test-local", COCOPLUS_OPERATOR="tester")
        out = json.loads(cocoplus(p.project, "decide", d["id"], "answer", "--text", ANSWER, "--json", env=env).stdout)
        assert out["route"] == "resume" and out["channel"] == "cli", out
        log = p.project / out["resume"]["log"]
        wait_until(lambda: "turn.completed" in log.read_text(), timeout=180)
        assert ANSWER in json.dumps(stub.loop_requests[-1]["input"])
        assert QUESTION in json.dumps(stub.loop_requests[-1]["input"])  # the same thread: it asked, it is answered
    assert decisions.collect(layout) == []
    follow = wait_until(lambda: [m for m in ntfy.messages(TOPIC) if m.get("sequence_id") == push["id"]], timeout=60)
    assert "resolved: answered by tester at the terminal" in str(follow[0]["message"]), follow
    assert not follow[0].get("actions") and [e["channel"] for e in ledger("followed_up", d["id"])] == ["phone:ntfy"]
