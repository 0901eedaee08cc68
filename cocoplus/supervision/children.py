"""Starting an agent runtime as a child of cocoplus (a launched worker, a resumed session): where its program
is, and the environment it gets.  The runtime's own markers of an agent session (`runtimes.registry.agent_env`)
and the brain's capability are left out, so the child is its own session, and `COCOPLUS_HEADLESS` says no person
watches it (its permission prompts reach whoever may answer them).
"""

from __future__ import annotations

import os
from typing import Any

from cocoplus.runtimes import registry as runtimes
from cocoplus.session import procinfo

HEADLESS_ENV = "COCOPLUS_HEADLESS"
# Beside every marker of an agent (`registry.agent_env`): the brain's capability, and a token that vouches for a
# process cocoplus starts for itself (session/agents.py), which no agent may inherit.
DROP_ENV = ("COCOPLUS_MCP_TOKEN", "COCOPLUS_VOUCHED")


def on_path(command: str, env: Any) -> list[str]:
    found = procinfo.find_program(command, env.get("PATH"))
    return [found] if found else []


def child_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The dispatcher's environment without what a runtime set for its own hooks and tools, cocoplus' own
    markers of an agent, and the brain's capability (`registry.agent_env`)."""
    env = dict(os.environ if environ is None else environ)
    for name in (*runtimes.agent_env(), *DROP_ENV):
        env.pop(name, None)
    return env
