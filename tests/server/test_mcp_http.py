"""MCP over Streamable HTTP at `cocoplus serve`'s `/mcp`, driven by the SDK's own client against a real server.

Behind the server's token (reads too) and its Host check; the roles of `cocoplus mcp`: worker by default,
brain and all only with this user's capability in `Cocoplus-Mcp-Token`; the server's project, and a worker
tool that needs its `session` argument; errors as on stdin/stdout;
and a server constructed for public mode has no `/mcp` at all.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from cocoplus.core import seal
from cocoplus.core.paths import Layout
from cocoplus.server import mcp_http
from cocoplus.server.app import create_app
from tests.mcp.conftest import ALL_TOOLS, BRAIN_ONLY, jsonl
from tests.server.conftest import AUTH, BASE, PORT, TOKEN, Served, start_server, stop_server

WORKER_TOOLS = ALL_TOOLS - BRAIN_ONLY
JSON_SSE = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def session(
    served: Served, scenario: Callable[[ClientSession], Awaitable[Any]], **headers: str
) -> tuple[Any, str | None]:
    """Run `scenario` in an initialized client session with the token and `headers`; (its result, the role the
    server said it served)."""
    seen: list[str] = []

    async def note(response: Any) -> None:
        if "cocoplus-mcp-role" in response.headers:
            seen.append(response.headers["cocoplus-mcp-role"])

    async def main() -> Any:
        async with create_mcp_http_client(headers={**served.auth, **headers}) as client:
            client.event_hooks["response"].append(note)
            async with streamable_http_client(served.url + "/mcp", http_client=client) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    return await scenario(s)

    got = asyncio.run(asyncio.wait_for(main(), timeout=60))
    assert len(set(seen)) <= 1, seen
    return got, (seen[0] if seen else None)


async def names(s: ClientSession) -> set[str]:
    return {t.name for t in (await s.list_tools()).tools}


@pytest.mark.slow
def test_mcp_needs_the_token_and_this_servers_host(served: Served) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    for method, headers in (("POST", JSON_SSE), ("GET", {"Accept": "text/event-stream"}), ("DELETE", {})):
        r = httpx.request(method, served.url + "/mcp", headers=headers, json=init if method == "POST" else None)
        assert r.status_code == 401, (method, r.status_code, r.text)
    evil = {**served.auth, **JSON_SSE, "Host": "evil.example.com", "Origin": "http://evil.example.com"}
    assert httpx.post(served.url + "/mcp", headers=evil, json=init).status_code == 403
    wrong_port = {**served.auth, **JSON_SSE, "Host": "localhost:1"}
    assert httpx.post(served.url + "/mcp", headers=wrong_port, json=init).status_code == 403
    assert "mcp:" in "".join(served.lines) and f"{served.url}/mcp" in "".join(served.lines)


@pytest.mark.slow
def test_roles_are_those_of_cocoplus_mcp(served: Served) -> None:
    tools, role = session(served, names)
    assert (tools, role) == (WORKER_TOOLS, "worker")
    # Asking for the brain without the capability, or with a token that is not this user's: the worker tools.
    for headers in ({"Cocoplus-Mcp-Role": "brain"}, {"Cocoplus-Mcp-Role": "all", "Cocoplus-Mcp-Token": "nope"}):
        tools, role = session(served, names, **headers)
        assert (tools, role) == (WORKER_TOOLS, "worker"), headers
    capability = seal.capability()
    assert capability
    tools, role = session(served, names, **{"Cocoplus-Mcp-Role": "brain", "Cocoplus-Mcp-Token": capability})
    assert (tools, role) == (BRAIN_ONLY, "brain")
    tools, role = session(served, names, **{"Cocoplus-Mcp-Role": "all", "Cocoplus-Mcp-Token": capability})
    assert (tools, role) == (ALL_TOOLS, "all")
    r = httpx.post(served.url + "/mcp", headers={**served.auth, **JSON_SSE, "Cocoplus-Mcp-Role": "root"}, json={})
    assert r.status_code == 400 and "role must be one of" in r.json()["error"]["message"], r.text


@pytest.mark.slow
def test_a_session_opened_as_the_brain_is_unknown_without_the_capability(served: Served) -> None:
    brain = {**served.auth, **JSON_SSE, "Cocoplus-Mcp-Role": "brain", "Cocoplus-Mcp-Token": seal.capability() or ""}
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    r = httpx.post(served.url + "/mcp", headers=brain, json=init)
    assert r.status_code == 200 and r.headers["cocoplus-mcp-role"] == "brain", r.text
    sid = r.headers["mcp-session-id"]
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    without = {**served.auth, **JSON_SSE, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
    assert (
        httpx.post(served.url + "/mcp", headers={**without, "Cocoplus-Mcp-Role": "brain"}, json=call).status_code == 404
    )
    listed = httpx.post(served.url + "/mcp", headers={**without, **brain}, json=call)
    assert listed.status_code == 200 and "dispatch" in listed.text, listed.text


@pytest.mark.slow
def test_the_tools_act_on_the_servers_project_as_their_role(sproject: Layout) -> None:
    # No runtime's environment reaches an HTTP server: a worker tool names its session, or is told to.
    served = start_server(sproject)
    try:

        async def report(s: ClientSession) -> Any:
            named = await s.call_tool(
                "report_progress", {"status": "blocked", "message": "over http", "session": "cx1"}
            )
            unnamed = await s.call_tool("report_progress", {"status": "working", "message": "who?"})
            return named, unnamed

        (named, unnamed), _ = session(served, report)
        assert not named.is_error and named.structured_content["signal"]["message"] == "over http", named
        assert unnamed.is_error and "pass the `session` argument" in unnamed.content[0].text, unnamed
        signals = [s for s in jsonl(sproject.signals) if s["kind"] == "report_progress"]
        assert [(s["message"], s["alias"]) for s in signals] == [("over http", "cx1")], signals

        async def stop(s: ClientSession) -> Any:
            return await s.call_tool("stop_session", {"session": "cc2", "reason": "from the brain over http"})

        capability = seal.capability() or ""
        res, role = session(served, stop, **{"Cocoplus-Mcp-Role": "brain", "Cocoplus-Mcp-Token": capability})
        assert role == "brain" and not res.is_error, res
        stops = [json.loads(p.read_text()) for p in sorted(Path(sproject.session_stops_dir).glob("*.json"))]
        assert [(s["reason"], s["principal"]) for s in stops] == [("from the brain over http", "brain")], stops
    finally:
        stop_server(served)


@pytest.mark.slow
def test_errors_follow_the_negotiated_version_over_http(served: Served) -> None:
    headers = {**served.auth, **JSON_SSE}
    r = httpx.post(served.url + "/mcp", headers=headers, content=b"not json")
    assert r.status_code == 400 and r.json() == {"jsonrpc": "2.0", "error": r.json()["error"]}, r.text
    assert r.json()["error"]["code"] == -32700
    old = httpx.post(served.url + "/mcp", headers={**headers, "mcp-protocol-version": "2025-06-18"}, content=b"x")
    assert old.status_code == 400 and "id" in old.json() and old.json()["id"] is None, old.text

    async def unknown(s: ClientSession) -> Any:
        out = {}
        for method, call in (("tool", s.call_tool("no_such_tool", {})), ("prompt", s.get_prompt("no_such_prompt"))):
            try:
                await call
            except MCPError as exc:
                out[method] = (exc.code, exc.message)
        return out

    got, _ = session(served, unknown)
    assert got == {"tool": (-32602, "Unknown tool: no_such_tool"), "prompt": (-32602, "Unknown prompt: no_such_prompt")}
    assert "Traceback" not in "".join(served.lines)


def test_a_server_constructed_for_public_mode_never_serves_mcp(sproject: Layout) -> None:
    assert mcp_http.serves_mcp(None) and not mcp_http.serves_mcp("https://cocoplus.example.com")
    local = create_app(sproject, token=TOKEN, port=PORT)
    public = create_app(sproject, token=TOKEN, port=PORT, public_url="https://cocoplus.example.com")
    assert "/mcp" in {getattr(r, "path", None) for r in local.app.routes}
    assert "/mcp" not in {getattr(r, "path", None) for r in public.app.routes}
    assert public.app.state.mcp is None
    with TestClient(public, base_url=BASE) as c:
        r = c.post("/mcp", headers={**AUTH, **JSON_SSE}, json={"jsonrpc": "2.0", "id": 1, "method": "initialize"})
        assert r.status_code == 404, r.text
