"""What a controller may call is every brain tool the MCP server offers: a Claude Code or Codex controller is given
`controllers.brain.tools()` as its allowed tools, so a tool missing there is one the brain is offered and then
refused (merge_worker was: the scripted night's brain could not merge)."""

from __future__ import annotations

from cocoplus.controllers import brain
from cocoplus.mcp.server import BRAIN_TOOLS


def test_the_controllers_tools_are_the_brain_tools_of_the_mcp_server() -> None:
    assert set(brain.tools(in_round=False)) == set(BRAIN_TOOLS)
    assert set(brain.tools(in_round=True)) == set(BRAIN_TOOLS) - set(brain.ROUND_EXCLUDED)
