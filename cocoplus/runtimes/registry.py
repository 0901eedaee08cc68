"""The agent runtimes cocoplus knows: one adapter module each, found in `adapters/`.

Nothing lists the runtimes by hand: a runtime is a module
`cocoplus/runtimes/adapters/<name>.py` (see `protocol.py` for what
it declares), so adding one is adding a module.  `names()` reads that
directory; `get(name)` imports the one adapter asked for, which is all the
hook's fast path needs; `ordered()` imports them all, for listings.

Standard library only, and nothing at import: the hook imports this module
before every tool call, from `python -S`, where not even `os` is loaded yet
(importing it would cost more than the whole fast path).  So files are
listed with the built-in `posix` module, and annotations are strings (no
`from __future__`, which is an import too).
"""

import posix
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Collection, Mapping
    from typing import Any

    from cocoplus.runtimes.protocol import Adapter

# The part of every hook command cocoplus writes that marks it as cocoplus' own: the hook
# script of the direct form, the pointer file of the launcher (install/launcher.py).
HOOK_MARK = "/cocoplus/hook/__main__.py"
HOOK_MARKS = (HOOK_MARK, "/cocoplus/hook.sh")

_DIR = __file__.rpartition("/")[0] + "/adapters"
_PACKAGE = "cocoplus.runtimes.adapters."
_names = None
_kinds: "dict[str, dict[str, str]]" = {}


def names() -> "tuple[str, ...]":
    """Every runtime name, alphabetically (one `listdir`, no import)."""
    global _names
    if _names is None:
        _names = tuple(sorted(n[:-3] for n in posix.listdir(_DIR) if n.endswith(".py") and not n.startswith("_")))
    return _names


def known(name: object) -> bool:
    return isinstance(name, str) and name in names()


def get(name: str) -> "Adapter":
    """The adapter module for `name` (imported on first use); KeyError for a name no module has."""
    if not known(name):
        raise KeyError(name)
    module = sys.modules.get(_PACKAGE + name)
    if module is None:
        __import__(_PACKAGE + name)
        module = sys.modules[_PACKAGE + name]
    return module


def ordered() -> "list[Adapter]":
    """Every adapter, in the order listings use (each declares its RANK)."""
    return sorted((get(n) for n in names()), key=lambda a: (a.RANK, a.NAME))


def listing() -> str:
    """`claude, codex, ...`: for messages that name the choices."""
    return ", ".join(a.NAME for a in ordered())


# -- events -----------------------------------------------------------------------


def normalise(event: str) -> str:
    """Event names are compared lower-cased without `-` and `_` (`PreToolUse` = `pre-tool-use`)."""
    return event.replace("-", "").replace("_", "").lower()


def kind(adapter: "Adapter", event: str) -> str:
    """What cocoplus does with `event` from this runtime (`pre_tool`, `stop`, ...; `other` if unknown)."""
    table = _kinds.get(adapter.NAME)
    if table is None:
        table = _kinds[adapter.NAME] = {normalise(e): k for e, k, _m in adapter.EVENTS}
    return table.get(normalise(event), "other")


def kind_any(event: str) -> str:
    """The kind of `event` when the runtime is not known: the first adapter that names it."""
    for adapter in ordered():
        k = kind(adapter, event)
        if k != "other":
            return k
    return "other"


def asks_before_tool(adapter: "Adapter") -> bool:
    """Whether the runtime's pre-tool hook is also its permission prompt: it asks through a hook (`ASKS_PERMISSION`)
    and has no permission event (the Antigravity CLI)."""
    return adapter.ASKS_PERMISSION and not any(k == "permission" for _e, k, _m in adapter.EVENTS)


def installed_events(adapter: "Adapter") -> "list[tuple[str, str | None]]":
    """(event, matcher or None) for every event `cocoplus install` wires for this runtime."""
    return [(e, m or None) for e, _k, m in adapter.EVENTS if m is not None]


# -- which runtime is talking ----------------------------------------------------------


def project_env(heads: "Collection[str] | None" = None) -> "tuple[str, ...]":
    """Every environment variable through which some runtime names the project directory.

    With `heads` (what the environment's variable names begin with, up to
    the first `_`), only the runtimes named by one of them are imported to be
    asked: an adapter's variables begin with its name.
    """
    seen: list[str] = []
    for adapter in ordered() if heads is None else [get(n) for n in names() if n.upper() in heads]:
        seen.extend(v for v in adapter.PROJECT_ENV if v not in seen)
    return tuple(seen)


def session_env() -> "tuple[str, ...]":
    """Environment variables naming the runtime session, most specific runtime first."""
    seen: list[str] = []
    for adapter in sorted(ordered(), key=lambda a: -a.DETECT_PRIORITY):
        seen.extend(v for v in adapter.SESSION_ENV if v not in seen)
    return tuple(seen)


# What cocoplus itself sets in an agent's environment (beside each runtime's own variables).
COCOPLUS_AGENT_ENV = (
    "COCOPLUS_SESSION",
    "COCOPLUS_ROUND",
    "COCOPLUS_WORKER",
    "COCOPLUS_WORKER_ALIAS",
    "COCOPLUS_HEADLESS",
    "COCOPLUS_WORKTREE",
)


def agent_env() -> "tuple[str, ...]":
    """Every variable that marks an agent's environment: each runtime's session and tool variables
    (`SESSION_ENV`, `CHILD_ENV`) and cocoplus' own for its workers.  A process cocoplus starts for itself
    (a watcher, a worker's runner) is started without them; a command that has them runs inside an agent."""
    seen: list[str] = []
    for adapter in ordered():
        seen.extend(v for v in (*adapter.SESSION_ENV, *adapter.CHILD_ENV) if v not in seen)
    return (*seen, *COCOPLUS_AGENT_ENV)


def detect(event: str, payload: "Mapping[str, Any]", environ: "Mapping[str, str]") -> "Adapter":
    """The runtime that sent a hook installed without `--runtime`, from its environment and payload shape."""
    for adapter in sorted(ordered(), key=lambda a: -a.DETECT_PRIORITY):
        if adapter.detect(event, payload, environ):
            return adapter
    raise LookupError("no runtime adapter recognises this payload")  # pragma: no cover - one adapter accepts anything


def resolve(named: str, environ: "Mapping[str, str]") -> "tuple[Adapter, str | None]":
    """(the runtime really running, the runtime whose hook file started us if that is another one).

    Some runtimes also run the hooks installed for another (Cortex Code reads
    `.claude/settings*.json`).  Such a guest declares the host in HOSTS and
    recognises itself from environment variables named after it
    (`CORTEX_...`), checked before anything host-specific.  Only a runtime
    whose name begins some variable's name is imported to be asked.
    """
    heads = {k.partition("_")[0] for k in environ}
    for name in names():
        if name == named or name.upper() not in heads:
            continue
        adapter = get(name)
        if named in adapter.HOSTS and adapter.recognise(environ):
            return adapter, named
    return get(named), None


def wired(adapter: "Adapter", project: str) -> bool:
    """Whether this runtime's own hook file holds cocoplus' hooks for it (a text search, no parse)."""
    marks = [m.encode() for m in HOOK_MARKS]
    want = [f"--runtime {adapter.NAME}{end}".encode() for end in (" ", '"', ";")]
    for rel in adapter.HOOK_FILES_READ:
        try:
            with open("/".join((project, *rel)), "rb") as fh:
                text = fh.read(4 * 1024 * 1024)
        except OSError:
            continue
        if any(m in text for m in marks) and any(w in text for w in want):
            return True
    return False
