"""How long each hook may run: the timeout written for an event, the one a running hook was installed with, and a
hook's own wait (the turn-end hold, a permission request's) kept within it.

`cocoplus install` and the agent plugins write every hook's timeout with
`for_event`: `[hooks] timeout_s`; on the turn end, plus `[supervision]
hold_turn_end_s` (the hold may wait that long for the main brain); on the
permission request of a runtime whose headless run asks through it, plus
`[permissions] wait_s` (the request waits that long for an answer); then the
runtime's own caps (its adapter's `hook_timeout`: Codex runs SessionEnd for
at most 3 s, Claude Code for at most 60 s).  The hook command carries the
same number, `--timeout N` (wiring.py), so the hook knows the timeout its
runtime kills it at and ends every wait in time to answer (`wait_for`).

A command an older release wrote has no `--timeout`: `recorded` finds its
entry in the runtime's project hook files and reads the timeout written
there (`entry_timeout` of the adapter: Gemini CLI counts milliseconds).

A hook that waits (`wait_for`) waits at most what its installed timeout
leaves once the rest of the hook is provided for; before the wait it runs
what was waiting for its answer (`before_wait`: the signal that wakes the
supervisor), and after it the work left gets a hook's own lock budget again
(`after_wait`).  The runner imports this module only for a hook that waits
or a command without `--timeout`.

Standard library only; at module level it imports only the registry and the
lock, which every hook process that gets here has loaded already (and `gc`,
built into the interpreter).
"""

import gc
import time

from cocoplus.core.errors import CocoplusError
from cocoplus.core.lock import Budget, hook_margin, set_process_budget, wait_allowed
from cocoplus.hook import parse_timeout as parse
from cocoplus.runtimes import registry

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Callable
    from typing import Any

    from cocoplus.hook.runner import Hook  # only a type: the runner imports this module
    from cocoplus.runtimes.protocol import Adapter

OPTION = "--timeout"


def for_event(adapter: "Adapter", event: str, kind: str, timeout_s: int, hold_s: int = 0, wait_s: int = 0) -> int:
    """The timeout (seconds) written for one event's hook, as the runtime will apply it."""
    total = int(timeout_s)
    if kind == "stop":
        total += int(hold_s)
    elif (
        kind == "permission" or (kind == "pre_tool" and registry.asks_before_tool(adapter))
    ) and adapter.ASKS_PERMISSION:
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


def of_older_command(
    adapter: "Adapter", event: str, kind: str, project: str, values: "Callable[[], dict[str, dict[str, Any]]]"
) -> float:
    """The timeout a command an older release wrote (no `--timeout`) is killed at: the one `install` wrote beside it
    in `adapter`'s hook files; where none is written, what `install` writes now from the configuration."""
    found = recorded(adapter, event, project)
    if found is None:
        v = values()
        found = for_event(
            adapter, event, kind, v["hooks"]["timeout_s"], v["supervision"]["hold_turn_end_s"],
            v["permissions"]["wait_s"],
        )  # fmt: skip
    return float(found)


def wait_for(h: "Hook", wanted_s: float, key: str) -> float:
    """How long a wait the configuration sets at `wanted_s` (by `key`) may last, counted from the hook process's
    start: all of it, or what the installed timeout leaves once the rest of the hook is provided for."""
    allowed = wait_allowed(h.installed_s, h.base_s)
    if wanted_s <= allowed:
        return wanted_s
    h.log(
        f"{key} is {wanted_s:g} s, but this hook was installed with a timeout of {h.installed_s:g} s: it waits "
        f"at most {allowed:g} s (`cocoplus doctor` says how to make the timeout fit)"
    )
    return allowed


def before_wait(h: "Hook") -> None:
    """Run the callbacks waiting for the answer now (the signal that wakes the supervisor), before the wait; and
    turn the garbage collector back on, which the hook's own process keeps off while it starts (hook/entry.py):
    a wait may last minutes."""
    gc.enable()
    pending, h.after = h.after, []
    for fn in pending:
        try:
            fn()
        except CocoplusError as exc:
            h.log(f"before holding: {exc}")


def after_wait(h: "Hook") -> None:
    """The lock budget of the work after a wait: what a hook without a wait has, and no later than the margin
    before the installed timeout."""
    now = time.monotonic()
    margin = hook_margin(h.base_s)
    set_process_budget(Budget(min(h.base_s - margin, h.started + h.installed_s - margin - now), started=now))
