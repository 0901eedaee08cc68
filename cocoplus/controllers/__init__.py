"""Controller kinds: what can run the main brain, in one registry.

A controller account (`[accounts.NAME] kind = ...`, `cocoplus chat setup
KIND`) answers the master-agent conversation and runs supervision rounds.
Each kind says how the brain acts through it (`controllers/brain.py` has
what it can do): `mcp`, cocoplus' brain MCP tools mounted in an agent CLI;
`cli`, `cocoplus` commands on its PATH; or nothing (it can only answer).
An agent-CLI kind names the runtime whose adapter gives its command line
(cocoplus/runtimes/adapters).  The kinds' names are the vocabulary's
(`core/vocab.ACCOUNT_KINDS`, which the configuration's key table checks);
tests/chat holds the two equal.  Standard library only.
"""

from __future__ import annotations

from typing import NamedTuple


class Kind(NamedTuple):
    name: str
    acts: str | None  # "mcp", "cli", or None: how the brain acts through it
    runtime: str | None  # the agent runtime it runs, or None


KINDS: dict[str, Kind] = {
    "claude": Kind("claude", "mcp", "claude"),
    "codex": Kind("codex", "mcp", "codex"),
    "openai": Kind("openai", None, None),
    "command": Kind("command", "cli", None),
}
# Agent CLIs that can be a controller account (`cocoplus chat setup claude|codex`).
AGENT_CLIS: tuple[str, ...] = tuple(k.name for k in KINDS.values() if k.runtime)
# Kinds that act through the brain MCP tools, and through the CLI.
MCP_KINDS: tuple[str, ...] = tuple(k.name for k in KINDS.values() if k.acts == "mcp")
CLI_KINDS: tuple[str, ...] = tuple(k.name for k in KINDS.values() if k.acts == "cli")
