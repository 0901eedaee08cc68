"""The real Codex CLI calls cocoplus' MCP worker tool (registered by `cocoplus install codex`).

Codex 0.169.0 reads `[mcp_servers.cocoplus]` from the project's
`.codex/config.toml` (the project is trusted in the throwaway CODEX_HOME),
offers the tools to the model as one namespace `mcp__cocoplus`, and answers
a `function_call` that names the namespace.  It gives MCP servers a minimal
environment with no session id, so a Codex worker passes `session`.  Two
keys a user adds to cocoplus' table (later installs keep them) make `codex
exec` usable: `default_tools_approval_mode = "approve"` (exec never prompts,
so an unapproved MCP call fails) and `required = true` (otherwise exec starts
the first turn without waiting for the server, and a server that takes half a
second longer to start, as on a busy machine, is missing from the turn).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.conftest import Project, e2e_project  # noqa: F401 - e2e_project is a fixture
from tests.e2e.test_codex import run_codex
from tests.support import model_stubs
from tests.support.model_stubs import ResponsesStub, text, tool

pytestmark = pytest.mark.e2e
NAMESPACE = "mcp__cocoplus"


@pytest.fixture
def namespaced_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Script `mcp__cocoplus__X` calls as Codex expects them: `namespace` + `name`."""
    send = model_stubs._send_sse

    def patched(h: Any, events: list[tuple[str | None, Any]]) -> None:
        for _name, data in events:
            items = [data.get("item")] + list((data.get("response") or {}).get("output") or [])
            for it in items:
                if (
                    isinstance(it, dict)
                    and it.get("type") == "function_call"
                    and it["name"].startswith(NAMESPACE + "__")
                ):
                    it["namespace"] = NAMESPACE
                    it["name"] = it["name"][len(NAMESPACE) + 2 :]
        send(h, events)

    monkeypatch.setattr(model_stubs, "_send_sse", patched)


def test_a_codex_worker_reports_progress_naming_its_session(e2e_project: Project, namespaced_calls: None) -> None:
    p = e2e_project
    p.cocoplus("install", "codex")
    cfg = p.project / ".codex" / "config.toml"
    added = 'default_tools_approval_mode = "approve"\nrequired = true\n'
    # Codex starts MCP servers with a few variables only, so the test's password database (nss_wrapper,
    # tests/conftest.py), which gives this user the test's home where the launcher looks for the pointer,
    # is passed on by name; a real user's home comes from the real database.
    passwd = 'env_vars = ["LD_PRELOAD", "NSS_WRAPPER_PASSWD", "NSS_WRAPPER_GROUP"]\n'
    cfg.write_text(cfg.read_text().replace("[mcp_servers.cocoplus]\n", "[mcp_servers.cocoplus]\n" + added + passwd))
    p.cocoplus("install", "codex")  # an upgrade keeps them
    assert added in cfg.read_text()
    name = f"{NAMESPACE}__report_progress"
    script = [
        tool(name, status="needs_review", message="REVIEW-4b1: the parser is done"),
        tool(name, status="needs_review", message="REVIEW-4b1: the parser is done", session="cx1"),
        text("done"),
    ]
    with ResponsesStub(script) as stub:
        run_codex(p, stub)
        offered = [t for t in stub.loop_requests[0]["tools"] if t.get("name") == NAMESPACE]
        outputs = stub.function_outputs()
    assert offered and {t["name"] for t in offered[0]["tools"]} >= {
        "report_progress",
        "notify_blocked",
        "ask_human",
        "request_context",
    }
    # No session id in Codex's environment for MCP servers: the tool says what to pass ...
    assert "which session is this? pass the `session` argument" in outputs[0]
    # ... and with `session` it works.
    reply = json.loads(outputs[1][outputs[1].index("{") :])
    assert reply["alias"] == "cx1" and reply["signal"]["value"] == "needs_review"
    sigs = [json.loads(x) for x in (p.root / "supervision" / "signals.jsonl").read_text().splitlines()]
    mine = [s for s in sigs if s["kind"] == "report_progress"]
    assert [(s["alias"], s["runtime"], s["value"], s["message"]) for s in mine] == [
        ("cx1", "codex", "needs_review", "REVIEW-4b1: the parser is done")
    ]
