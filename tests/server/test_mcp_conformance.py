"""The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in
tests/e2e/runtimes/package.json and run by the pinned Node 22 beside it) against `cocoplus serve`'s `/mcp`.

The suite takes only a URL, so it talks to the server through a loopback proxy that adds the token
(tests/support/tokenproxy.py); the server's own Host and Origin checks still see what the suite sends.

Every server scenario of the suite is accounted for (a new version's scenarios fail the listing test until
they are):

* PASS: the scenarios about the protocol itself, which any server must pass: no check of theirs fails.
* UNKNOWN_TOOL: scenarios that call a tool only the suite's reference server has. cocoplus answers a call
  of a tool it does not have with -32602, as MCP has it: they run, and that answer is their one failure.
* NOT_RUN: scenarios that call the reference server's own tools, prompts and resources, or a capability
  cocoplus does not declare, with the reason.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cocoplus.core.paths import Layout
from tests.conftest import ENV_PREFIXES
from tests.server.conftest import Served, add_sessions, start_server, stop_server
from tests.support.runtimes import conformance_command
from tests.support.tokenproxy import TokenProxy

pytestmark = pytest.mark.timeout(300)

PASS = [
    "server-initialize",
    "ping",
    "tools-list",
    "resources-list",
    "prompts-list",
    "server-sse-multiple-streams",
    "server-sse-polling",
    "dns-rebinding-protection",
]
UNKNOWN_TOOL = {"tools-call-simple-text": "test_simple_text", "tools-call-error": "test_error_handling"}
FIXTURE_TOOL = "calls the reference server's tool `{}`, which cocoplus does not have"
NOT_RUN = {
    "logging-set-level": "cocoplus declares no `logging` capability (test_cocoplus_declares_no_logging)",
    "completion-complete": "asks for completions of the reference server's prompt `test_prompt_with_arguments`; "
    "cocoplus declares no `completions` capability",
    "tools-call-image": FIXTURE_TOOL.format("test_image_content"),
    "tools-call-audio": FIXTURE_TOOL.format("test_audio_content"),
    "tools-call-embedded-resource": FIXTURE_TOOL.format("test_embedded_resource"),
    "tools-call-mixed-content": FIXTURE_TOOL.format("test_multiple_content_types"),
    "tools-call-with-logging": FIXTURE_TOOL.format("test_tool_with_logging"),
    "tools-call-with-progress": FIXTURE_TOOL.format("test_tool_with_progress"),
    "tools-call-sampling": FIXTURE_TOOL.format("test_sampling"),
    "tools-call-elicitation": FIXTURE_TOOL.format("test_elicitation"),
    "json-schema-2020-12": "looks for the reference server's tool `json_schema_2020_12_tool` in the tool list",
    "elicitation-sep1034-defaults": FIXTURE_TOOL.format("test_elicitation_sep1034_defaults"),
    "elicitation-sep1330-enums": FIXTURE_TOOL.format("test_elicitation_sep1330_enums"),
    "resources-read-text": "reads the reference server's resource `test://static-text`; cocoplus has no resources",
    "resources-read-binary": "reads the reference server's resource `test://static-binary`",
    "resources-templates-read": "reads the reference server's template `test://template/{id}/data`",
    "resources-subscribe": "subscribes to the reference server's `test://watched-resource`; cocoplus declares "
    "`subscribe: false`",
    "resources-unsubscribe": "unsubscribes from the reference server's `test://watched-resource`",
    "prompts-get-simple": "gets the reference server's prompt `test_simple_prompt`; cocoplus has no prompts",
    "prompts-get-with-args": "gets the reference server's prompt `test_prompt_with_arguments`",
    "prompts-get-embedded-resource": "gets the reference server's prompt `test_prompt_with_embedded_resource`",
    "prompts-get-with-image": "gets the reference server's prompt `test_prompt_with_image`",
}


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, TokenProxy]]:
    """One server (a project with sessions, in an environment isolated like the suite's) and its token proxy."""
    from cocoplus.session.workspace import init

    base = tmp_path_factory.mktemp("conformance")
    (base / "home").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIXES)}
    env.update(HOME=str(base / "home"), COCOPLUS_OPERATOR="tester")
    (base / "proj").mkdir()
    init(str(base / "proj" / ".cocoplus"))
    layout = Layout(str(base / "proj" / ".cocoplus"))
    add_sessions(layout)
    served = start_server(layout, env=env)
    try:
        with TokenProxy(served.port, served.token) as proxy:
            yield served, proxy
    finally:
        stop_server(served)


def run_scenario(proxy: TokenProxy, scenario: str, out: Path) -> tuple[int, list[dict[str, Any]], str]:
    """(exit code, the checks the suite recorded, its output) of one scenario against `/mcp` via `localhost`."""
    url = f"http://localhost:{proxy.port}/mcp"
    r = subprocess.run(
        [*conformance_command(), "server", "--url", url, "--scenario", scenario, "--output-dir", str(out)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    found = sorted(out.glob("**/checks.json"))
    checks: list[dict[str, Any]] = json.loads(found[-1].read_text()) if found else []
    return r.returncode, checks, r.stdout + r.stderr


def test_every_scenario_of_the_suite_is_accounted_for() -> None:
    r = subprocess.run([*conformance_command(), "list", "--server"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    listed = set(re.findall(r"^\s+- (\S+)", r.stdout, re.M))
    assert len(listed) >= 30, r.stdout
    classified = [*PASS, *UNKNOWN_TOOL, *NOT_RUN]
    assert len(classified) == len(set(classified))
    assert listed == set(classified), (sorted(listed - set(classified)), sorted(set(classified) - listed))


@pytest.mark.slow
@pytest.mark.parametrize("scenario", PASS)
def test_scenario_passes(target: tuple[Served, TokenProxy], scenario: str, tmp_path: Path) -> None:
    served, proxy = target
    before = len(proxy.requests)
    code, checks, output = run_scenario(proxy, scenario, tmp_path)
    failed = [c for c in checks if c["status"] == "FAILURE"]
    assert checks and not failed and code == 0, (failed, output[-3000:])
    assert any(line.startswith("POST /mcp ") for line in proxy.requests[before:]), proxy.requests[before:]
    assert any(c["status"] == "SUCCESS" for c in checks) or scenario == "server-sse-polling", checks
    assert "Traceback" not in "".join(served.lines)


@pytest.mark.slow
@pytest.mark.parametrize("scenario", sorted(UNKNOWN_TOOL))
def test_a_scenario_calling_a_tool_cocoplus_does_not_have_gets_invalid_params(
    target: tuple[Served, TokenProxy], scenario: str, tmp_path: Path
) -> None:
    _served, proxy = target
    code, checks, output = run_scenario(proxy, scenario, tmp_path)
    failed = [c["errorMessage"] for c in checks if c["status"] == "FAILURE"]
    assert code == 1 and failed == [f"Failed: MCP error -32602: Unknown tool: {UNKNOWN_TOOL[scenario]}"], (
        failed,
        output[-3000:],
    )


def test_cocoplus_declares_no_logging(target: tuple[Served, TokenProxy]) -> None:
    """So `logging-set-level` is rightly not run: were logging declared, that scenario would have to pass."""
    served, _proxy = target
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    headers = {**served.auth, "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    r = httpx.post(served.url + "/mcp", headers=headers, json=init)
    assert r.status_code == 200, r.text
    data = next(line[5:] for line in r.text.splitlines() if line.startswith("data:") and line[5:].strip())
    capabilities = json.loads(data)["result"]["capabilities"]
    assert "logging" not in capabilities and "completions" not in capabilities, capabilities
    assert capabilities["resources"].get("subscribe") is False, capabilities
