"""What cocoplus puts into an agent runtime, in one place.

`cocoplus install` (install.py) and the agent-native packages (bundles.py:
the Claude Code plugin and marketplace, the Gemini CLI extension, the Codex
and Cortex Code plugins) are built from these functions and the adapters'
declarations, so the two cannot drift apart (tests/packaging rebuilds the
packages and compares them with the shipped ones):

* `hooks(adapter, form, timeout_s, hold_s, wait_s)`: the runtime's `hooks`
  object, one entry per installed event in the runtime's shape, with the
  command in the given form (launcher.py) and the event's timeout
  (`timeouts.for_event`, the one place it is computed), which the command
  also carries as `--timeout N`: the hook ends every wait in time for it;
* `mcp_server(adapter)`: the MCP server entry, started through the launcher
  (no path of this machine, no `--dir`: the server finds the project from
  its working directory, which the runtime sets to the session's);
* `supervise_markdown()` / `supervise_toml()`: the `/supervise` command for
  Claude Code and Gemini CLI, running `cocoplus` from PATH.

Standard library only.
"""

from __future__ import annotations

from typing import Any

from cocoplus.hook import COUNT_BEFORE_CALL, timeouts
from cocoplus.install import launcher
from cocoplus.runtimes import registry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cocoplus.runtimes.protocol import Adapter

FORMS = ("direct", "launcher")


# The tool-call events that say so where the pre-tool hook counts each call before it runs.
COUNTED_KINDS = ("pre_tool", "post_tool", "post_tool_failure")


def flags(adapter: Adapter, kind: str) -> tuple[str, ...]:
    """How one event's hook is wired: `COUNT_BEFORE_CALL` on the tool-call events of a runtime whose pre-tool hook
    counts each call (`COUNTS_BEFORE_CALL`)."""
    return (COUNT_BEFORE_CALL,) if adapter.COUNTS_BEFORE_CALL and kind in COUNTED_KINDS else ()


def command(adapter: Adapter, event: str, kind: str, form: str, timeout_s: int | None = None) -> str:
    """The command that runs cocoplus' hook for `event`, in the given form, telling it its timeout."""
    wired = flags(adapter, kind)
    if form == "direct":
        return launcher.direct(adapter.NAME, event, timeout_s=timeout_s, flags=wired)
    if form == "launcher":
        return launcher.hook_launcher(
            adapter.NAME, event, kind, adapter.TITLE, adapter.PROJECT_ENV, timeout_s=timeout_s, flags=wired
        )
    raise ValueError(f"unknown command form {form!r}: {FORMS}")


def events(adapter: Adapter) -> list[tuple[str, str, str | None]]:
    """(event, kind, matcher or None) for every event cocoplus wires for this runtime."""
    kinds = {e: k for e, k, _m in adapter.EVENTS}
    return [(event, kinds[event], matcher) for event, matcher in registry.installed_events(adapter)]


def entry(
    adapter: Adapter,
    event: str,
    kind: str,
    matcher: str | None,
    form: str,
    timeout_s: int,
    hold_s: int = 0,
    wait_s: int = 0,
) -> dict[str, Any]:
    """One event's entry in the runtime's shape: a matcher group, or a flat handler."""
    seconds = timeouts.for_event(adapter, event, kind, timeout_s, hold_s, wait_s)
    handler = adapter.hook_entry(command(adapter, event, kind, form, seconds), event, seconds)
    if not adapter.GROUPED:
        return dict(handler)
    group: dict[str, Any] = {"hooks": [handler]}
    return {"matcher": matcher, **group} if matcher is not None else group


def hooks(
    adapter: Adapter, form: str, timeout_s: int, hold_s: int = 0, wait_s: int = 0
) -> dict[str, list[dict[str, Any]]]:
    """The runtime's `hooks` object as cocoplus writes it: `{event: [entry]}`.

    `timeout_s` is `[hooks] timeout_s`, `hold_s` `[supervision] hold_turn_end_s`, `wait_s` `[permissions] wait_s`.
    """
    return {
        event: [entry(adapter, event, kind, matcher, form, timeout_s, hold_s, wait_s)]
        for event, kind, matcher in events(adapter)
    }


def mcp_server(adapter: Adapter) -> dict[str, Any]:
    """The runtime's entry for cocoplus' MCP server (`cocoplus mcp`, this user's cocoplus via the launcher)."""
    return dict(adapter.mcp_entry("sh", ["-c", launcher.program_launcher("mcp")]))


SUPERVISE_DESCRIPTION = "Turn on cocoplus autonomous supervision with a goal and run the first round"
SUPERVISE_AFTER = (
    "Summarise for the user what cocoplus reported above: whether supervision is on, its goal, turns used and left, "
    "and the sessions being watched. With no goal given, nothing was changed: say so, and how to start it as the "
    "output says. Ask the user before any irreversible action."
)


def supervise_markdown() -> str:
    """Claude Code's `/supervise` (a project command or a plugin's): runs `cocoplus supervise` from PATH."""
    return (
        "---\n"
        f"description: {SUPERVISE_DESCRIPTION}\n"
        "argument-hint: [goal]\n"
        "allowed-tools: Bash(cocoplus supervise:*)\n"
        "---\n"
        '!`cocoplus supervise "$ARGUMENTS"`\n\n'
        f"{SUPERVISE_AFTER}\n"
    )


def supervise_toml() -> str:
    """Gemini CLI's `/supervise` (an extension command): the same, as a TOML command with a shell injection."""
    return (
        f'description = "{SUPERVISE_DESCRIPTION}"\n'
        'prompt = """\n'
        "!{cocoplus supervise {{args}}}\n\n"
        f"{SUPERVISE_AFTER}\n"
        '"""\n'
    )
