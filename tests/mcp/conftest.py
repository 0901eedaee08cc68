"""MCP fixtures: the `cocoplus mcp` server driven by the SDK's own stdio client."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from cocoplus.core.shapes import SessionRecord
from cocoplus.session import registry
from tests.conftest import passwd_env

ALL_TOOLS = {
    "enable_supervision",
    "finish_supervision",
    "supervision_status",
    "set_supervision_scope",
    "list_sessions",
    "dispatch",
    "merge_worker",
    "steer_session",
    "stop_session",
    "resume_session",
    "answer_worker",
    "launch_worker",
    "approve_permission",
    "deny_permission",
    "report_progress",
    "notify_blocked",
    "ask_human",
    "request_context",
}

# The main brain's tools: served only with this user's capability (docs/authority.md).
BRAIN_ONLY = {
    "enable_supervision", "finish_supervision", "supervision_status", "set_supervision_scope", "list_sessions",
    "dispatch", "steer_session", "stop_session", "resume_session", "answer_worker", "launch_worker",
    "merge_worker", "approve_permission", "deny_permission",
}  # fmt: skip


class Client:
    """A connected `mcp.ClientSession` with helpers that unwrap tool results."""

    def __init__(self, session: Any) -> None:
        self.session = session

    async def tools(self) -> dict[str, Any]:
        got = await self.session.list_tools()
        return {t.name: t for t in got.tools}

    async def raw(self, name: str, **arguments: Any) -> Any:
        return await self.session.call_tool(name, arguments)

    async def call(self, name: str, **arguments: Any) -> Any:
        """The tool's JSON answer (parsed from the text content); fails on a tool error."""
        res = await self.raw(name, **arguments)
        text = res.content[0].text if res.content else ""
        assert not res.is_error, f"{name} failed: {text}"
        obj = json.loads(text)
        assert res.structured_content == obj, "structured content and text differ"
        return obj

    async def error(self, name: str, **arguments: Any) -> str:
        """The tool error's message; fails if the call succeeded."""
        res = await self.raw(name, **arguments)
        text = res.content[0].text if res.content else ""
        assert res.is_error, f"{name} unexpectedly succeeded: {text}"
        return text


def serve(
    scenario: Callable[[Client], Awaitable[Any]],
    *,
    cwd: str | os.PathLike[str],
    args: list[str] | None = None,
    env: dict[str, str] | None = None,
    command: str | None = None,
    capability: bool = True,
) -> Any:
    """Start the server as a child process (`python -m cocoplus mcp ARGS` unless `command`; by default
    `--role all`), run `scenario`, stop it.  With `capability` its environment carries this user's
    capability (COCOPLUS_MCP_TOKEN), as the main brain's controller gives it; without, only the worker
    tools are served whatever the role asked."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from cocoplus.core import seal, userfiles

    token = {userfiles.CAPABILITY_ENV: seal.capability() or ""} if capability else {}
    params = StdioServerParameters(
        command=command or sys.executable,
        args=args if args is not None else ["-m", "cocoplus", "mcp", "--role", "all"],
        # The SDK passes only a few variables on (HOME, PATH, ...): the test's own password database goes too.
        env={
            "COCOPLUS_OPERATOR": "tester",
            **passwd_env(),
            **token,
            **(env or {}),
        },  # fmt: skip
        cwd=str(cwd),
    )

    async def main() -> Any:
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return await scenario(Client(session))

    return asyncio.run(asyncio.wait_for(main(), timeout=40))


def jsonl(path: str | Path) -> list[dict[str, Any]]:
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture
def sessions(project: Layout) -> dict[str, SessionRecord]:
    """Two running sessions: cc1 (Claude Code, runtime id s-one) and cx1 (Codex, x-one)."""
    made = {}
    for rid, runtime in (("s-one", "claude"), ("x-one", "codex")):
        rec, _ = registry.ensure(
            project, runtime, rid, event="SessionStart", change=lambda r: r.update({"state": "running"})
        )
        made[rec["alias"]] = rec
    assert set(made) == {"cc1", "cx1"}
    return made
