"""How long each hook may run: the timeout written for an event, and the one a running hook was installed with.

`cocoplus install` and the agent plugins write every hook's timeout with
`for_event`: `[hooks] timeout_s`; on the turn end, plus `[supervision]
hold_turn_end_s` (the hold may wait that long for the main brain); on the
permission request of a runtime whose headless run asks through it, plus
`[permissions] wait_s` (the request waits that long for an answer); then the
runtime's own caps (its adapter's `hook_timeout`: Codex runs SessionEnd for
at most 3 s, Claude Code for at most 60 s).  The hook command carries the
same number, `--timeout N` (wiring.py), so the hook knows the timeout its
runtime kills it at and ends every wait in time to answer (`Hook.wait_for`, hook/runner.py).

A command an older release wrote has no `--timeout`: `recorded` finds its
entry in the runtime's project hook files and reads the timeout written
there (`entry_timeout` of the adapter: Gemini CLI counts milliseconds).

Standard library only; at module level it imports only the registry, which
every hook process has loaded already.
"""

from cocoplus.hook import parse_timeout as parse
from cocoplus.runtimes import registry

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any

    from cocoplus.runtimes.protocol import Adapter

OPTION = "--timeout"


def for_event(adapter: "Adapter", event: str, kind: str, timeout_s: int, hold_s: int = 0, wait_s: int = 0) -> int:
    """The timeout (seconds) written for one event's hook, as the runtime will apply it."""
    total = int(timeout_s)
    if kind == "stop":
        total += int(hold_s)
    elif kind == "permission" and adapter.ASKS_PERMISSION:
        total += int(wait_s)
    return int(adapter.hook_timeout(event, total))


def in_command(command: str) -> "float | None":
    """The `--timeout` an installed hook command carries (None: a command an older release wrote)."""
    words = command.replace(";", " ").split()
    for i, word in enumerate(words):
        if word == OPTION and i + 1 < len(words):
            return parse(words[i + 1])
        if word.startswith(OPTION + "="):
            return parse(word.partition("=")[2])
    return None


def recorded(adapter: "Adapter", event: str, project: str) -> "float | None":
    """The timeout of this event's cocoplus entry in the runtime's project hook files (the shortest, if several).

    For a hook whose command carries no `--timeout`: what `install` wrote
    beside it is what the runtime applies.  None when no entry is found (a
    plugin, a hand-written command) or it names no timeout.
    """
    from cocoplus.core import fsio  # deferred: only a command without --timeout reads the hook files
    from cocoplus.core.errors import CocoplusError  # deferred: as fsio

    name = registry.normalise(event)
    found: list[float] = []
    for rel in adapter.HOOK_FILES_READ:
        try:
            doc = fsio.read_json(project + "/" + "/".join(rel))
        except CocoplusError:
            continue
        hooks = doc.get("hooks") if isinstance(doc, dict) else None
        if not isinstance(hooks, dict):
            continue
        for key, entries in hooks.items():
            if not isinstance(key, str) or registry.normalise(key) != name or not isinstance(entries, list):
                continue
            for handler in _handlers(entries):
                if _ours(handler.get("command"), adapter.NAME):
                    seconds = adapter.entry_timeout(handler)
                    if seconds is not None:
                        found.append(seconds)
    return min(found) if found else None


def _handlers(entries: "list[Any]") -> "list[dict[str, Any]]":
    out: "list[dict[str, Any]]" = []
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("hooks"), list):
            out += [h for h in entry["hooks"] if isinstance(h, dict)]
        elif isinstance(entry, dict):
            out.append(entry)
    return out


def _ours(command: "Any", runtime: str) -> bool:
    """A cocoplus hook command for `runtime` (or naming no runtime), in any form a release wrote."""
    if not isinstance(command, str):
        return False
    words = command.replace(";", " ").replace("'", " ").replace('"', " ").split()
    mine = any(mark in command for mark in registry.HOOK_MARKS)
    if not mine and not ("hook" in words and any(w == "cocoplus" or w.endswith("/cocoplus") for w in words)):
        return False
    named = [words[i + 1] for i, w in enumerate(words[:-1]) if w == "--runtime"]
    return not named or named[0] == runtime
