"""The real Gemini CLI calls cocoplus' MCP worker tool (registered by `cocoplus install gemini`).

Gemini CLI 0.61.0 loads `mcpServers.cocoplus` from the project's
`.gemini/settings.json` (folder trust off in the throwaway HOME) and offers
the tools as `mcp_cocoplus_<tool>`.  Its MCP servers get no session id in
their environment, so a Gemini worker passes `session`.
"""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import Project, e2e_project  # noqa: F401 - e2e_project is a fixture
from tests.e2e.test_gemini import gemini_project, run_gemini  # noqa: F401 - gemini_project is a fixture
from tests.support.model_stubs import GeminiStub, text, tool

pytestmark = pytest.mark.e2e


def test_a_gemini_worker_asks_the_human_naming_its_session(gemini_project: Project) -> None:
    p = gemini_project
    question = "QUESTION-8d0: drop the legacy endpoint now or after the release?"
    with GeminiStub([tool("mcp_cocoplus_ask_human", question=question, session="gm1"), text("asked")]) as stub:
        run_gemini(p, stub)
        names = {f["name"] for t in stub.loop_requests[0].get("tools", []) for f in t.get("functionDeclarations", [])}
    assert {"mcp_cocoplus_ask_human", "mcp_cocoplus_report_progress"} <= names
    assert "mcp_cocoplus_enable_supervision" not in names  # install registers the worker tools only
    sigs = [json.loads(x) for x in (p.root / "supervision" / "signals.jsonl").read_text().splitlines()]
    asked = [s for s in sigs if s["kind"] == "ask_human"]
    assert [(s["alias"], s["runtime"], s["message"]) for s in asked] == [("gm1", "gemini", question)]
    ledger = [json.loads(x) for x in (p.root / "chat" / "master-agent" / "ledger.jsonl").read_text().splitlines()]
    assert [(m["role"], m["text"], m["session_alias"]) for m in ledger] == [("worker", question, "gm1")]
