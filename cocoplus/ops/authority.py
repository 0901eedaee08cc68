"""Who may do what: the one authority check every door's operations pass (docs/authority.md).

Principals (`vocab.PRINCIPALS`, plus `fleet:<machine>`):

* **operator**: a person at this machine: the CLI at a terminal, the web
  page with its token, `cocoplus top`.  The operator decides: every action.
* **brain**: the main brain, through the controller cocoplus starts (it
  carries this user's capability in `COCOPLUS_MCP_TOKEN`) and MCP role
  `brain`.  It acts within what the operator allows: supervision, and
  dispatch, answer, steer, stop, launch and kill for workers; it lifts only
  stops the brain made; it answers permission requests only within
  `[permissions] brain_may_allow`; and while the kill switch is on (or
  cannot be read) it may only stop and look (its own runtime runs without
  cocoplus's hooks, so this check is its kill switch).
* **worker**: an agent session: its hooks, MCP role `worker` (what
  `install` registers), and any `cocoplus` command run inside an agent's
  session (recognised from the runtime's environment markers and from the
  process ancestry cocoplus recorded for its sessions and workers).
  Workers report: report_progress, notify_blocked, ask_human,
  request_context, and read-only views.
* **budget**, **loop-guard**, **watcher**: cocoplus itself (the iteration
  and cost budgets, the runaway-loop guard, the supervision watcher).  The
  loop guard and the iteration cap stop the session that trips them (a
  session stop) and the project only where nothing narrower can be stopped
  or the seed's contract says so (one live session at the cap).
* **fleet:<machine>**: a command another machine of the fleet sent, with
  the operator's authority there; `<machine>` is the NATS user it came from
  (its subject's last token, which only that user may publish on), never
  what its body says; a resume lifts only the stop it names (by id), and
  one that names none is refused.  A command the sending machine's main
  brain made (`acting` brain) has the brain's authority, not the operator's.

An action beyond a principal's authority raises `Refused`: one line that
names who may do it; the attempt is appended to `logs/authority.jsonl`.
Nothing here imports a door (typer, fastapi, mcp).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from cocoplus.core import clock, jsonl, seal, userfiles, vocab
from cocoplus.core.errors import CocoplusError, Refused
from cocoplus.core.paths import Layout
from cocoplus.ops import operator_name
from cocoplus.runtimes import registry as runtimes
from cocoplus.sandbox import bwrap
from cocoplus.session import agents, killswitch, procinfo, registry

TOKEN_ENV = userfiles.CAPABILITY_ENV


class Principal(NamedTuple):  # not a dataclass: `dataclasses` loads `inspect`, on every CLI command (bench/cli.py)
    """Who acts: `kind` is a word of vocab.PRINCIPALS or `fleet`; `name` says more (login, alias, machine)."""

    kind: str
    name: str | None = None
    session: str | None = None  # a worker's cs_ id, where known
    why: str | None = None  # how it was recognised (for a worker: the marker or the ancestor)
    headless: bool = False  # a worker cocoplus runs with no person watching it (a launched or resumed one)
    acting: str | None = None  # for `fleet`: who made the command on the sending machine, "operator" or "brain"

    @property
    def word(self) -> str:
        """The recorded field: exactly a word of vocab.PRINCIPALS, or `fleet:<machine>`."""
        return f"{vocab.FLEET_PRINCIPAL_PREFIX}{self.name}" if self.kind == "fleet" else self.kind

    def shown(self) -> str:
        if self.kind == "operator":
            return f"the operator ({self.name})" if self.name else "the operator"
        if self.kind == "brain":
            return "the main brain"
        if self.kind == "worker":
            return f"the worker session {self.name}" if self.name else "a worker session"
        if self.kind == "fleet" and self.acting == "brain":
            return f"the main brain of machine {self.name} of the fleet"
        if self.kind == "fleet":
            return f"machine {self.name} of the fleet"
        return f"cocoplus ({self.kind})"


def operator(name: str | None = None) -> Principal:
    return Principal("operator", name or operator_name())


BRAIN = Principal("brain", "main brain")
WATCHER = Principal("watcher", "supervision watcher")


def fleet(machine: str, acting: str | None = None) -> Principal:
    """A command machine `machine` of the fleet sent, made there by its operator or (`acting="brain"`) its main
    brain: the brain's command has no more authority here than the brain has there."""
    return Principal("fleet", machine, acting="brain" if acting == "brain" else "operator")


def acting_as(principal: Principal) -> str:
    """What a command this principal sends through the fleet says about who made it (fleet/commands.py)."""
    return "brain" if principal.kind == "brain" or principal.acting == "brain" else "operator"


def _for_brain(principal: Principal) -> bool:
    return principal.kind == "brain" or (principal.kind == "fleet" and principal.acting == "brain")


def worker(
    name: str | None = None, session: str | None = None, why: str | None = None, headless: bool = False
) -> Principal:
    return Principal("worker", name, session, why, headless)


# -- the rules --------------------------------------------------------------------------------------

# action -> the principals that may take it ("fleet" stands for every fleet:<machine>).  What a rule
# cannot say alone (whose stop a resume lifts, the kill switch for the brain, brain_may_allow) is
# checked by the functions below.
EVERYONE = (*vocab.PRINCIPALS, "fleet")
RULES: dict[str, tuple[str, ...]] = {
    "read": EVERYONE,  # status, lists, logs, views
    "report": ("operator", "brain", "worker"),  # report_progress, notify_blocked, ask_human, request_context
    "stop": ("operator", "brain", "budget", "loop-guard", "fleet"),  # the project's kill switch
    # one session's stop; cocoplus' own guards stop the session that trips them (its loop, its own count at the cap)
    "stop_session": ("operator", "brain", "budget", "loop-guard", "fleet"),
    "resume": ("operator", "brain", "watcher", "fleet"),  # and only a stop it may lift (may_lift)
    "resume_session": ("operator", "brain", "watcher", "fleet"),
    "steer": ("operator", "brain", "fleet"),
    "dispatch": ("operator", "brain", "watcher", "fleet"),  # dispatch, answer, per-session steer
    "launch": ("operator", "brain"),
    "kill_worker": ("operator", "brain"),
    # a worker's branch; the brain only with [supervision] brain_may_merge, and never one changing a protected path
    "merge": ("operator", "brain"),
    "clean_workers": ("operator",),  # remove ended workers' worktrees (and, with --force, unmerged branches)
    "supervise": ("operator", "brain"),  # enable, scope, exclude/include, workflow runs
    "supervise_finish": ("operator", "brain"),
    # `/supervise GOAL`: a person types it in their own agent session, so its command runs there as a worker; a
    # worker no person watches (headless) may not start it.
    "supervise_start": ("operator", "brain", "worker"),
    "approve": ("operator", "brain"),  # the brain within [permissions] brain_may_allow
    "decide": ("operator",),  # the decision inbox: `cocoplus decide`, the phone's channels, the decision page
    "deny": ("operator", "brain"),
    "queue": ("operator",),  # the project's task queue
    "chat": ("operator",),  # the master-agent conversation
    "capability": ("operator",),  # `cocoplus mcp token`
    "configure": ("operator",),  # init, install, uninstall, trust, config, chat setup, notify, budget settings
    "serve": ("operator",),  # start the server, the relay, the notifier
    # start the watcher: the operator, or cocoplus itself (a watcher a worker's runner started, vouched for by a
    # sealed entry in this user's registry: session/agents.py)
    "watch": ("operator", "watcher"),
}

# Who may lift a stop made by whom: the operator lifts every stop; the brain only its own; the watcher
# (a scheduled resume) only stops it made; a fleet machine with the operator's authority lifts the stop
# it names by id.  A stop with no principal (a hand-made AGENT_STOP, an earlier release's) is the operator's.
LIFTS: dict[str, tuple[str, ...]] = {
    "operator": ("*",),
    "brain": ("brain",),
    "watcher": ("watcher",),
    "fleet": ("*",),
}
# What the brain may still do while the kill switch is on (or cannot be read).
BRAIN_WHILE_STOPPED = ("read", "stop", "stop_session", "resume", "supervise_finish", "deny")

_WHO_MAY = {
    "read": "anyone",
    "report": "a worker session (or the operator)",
    "supervise_start": "the operator, the main brain, or a person in their own agent session (/supervise)",
    "capability": "the operator at a terminal",
    "configure": "the operator at a terminal",
    "serve": "the operator at a terminal",
    "watch": "the operator at a terminal, or cocoplus itself",
    "queue": "the operator",
    "merge": (
        "the operator (`cocoplus workers merge`), or the main brain where [supervision] brain_may_merge = true and "
        "the branch changes no protected path"
    ),
    "chat": "the operator",
}


def _kinds(action: str) -> tuple[str, ...]:
    try:
        return RULES[action]
    except KeyError:
        raise CocoplusError(f"internal error: unknown action {action!r} in the authority table") from None


def who_may(action: str) -> str:
    """Who may take `action`, in words (the second half of every refusal)."""
    if action in _WHO_MAY:
        return _WHO_MAY[action]
    kinds = [k for k in _kinds(action) if k in ("operator", "brain")]
    return " or ".join("the operator" if k == "operator" else "the main brain" for k in kinds) or "the operator"


def allowed(principal: Principal, action: str) -> bool:
    kinds = _kinds(action)
    return principal.kind in kinds and (principal.kind != "fleet" or not _for_brain(principal) or "brain" in kinds)


def require(
    principal: Principal, action: str, doing: str, layout: Layout | None = None, *, target: str | None = None
) -> None:
    """Refuse (`Refused`, one line naming who may) unless `principal` may take `action`; record a refusal.

    `doing` names the action as the user would (`session resume`, `dispatch cc2`).  For the brain, also
    refuse what the kill switch forbids.
    """
    if not allowed(principal, action):
        refuse(principal, action, f"{doing} is for {who_may(action)}, not {principal.shown()}", layout, target=target)
    if action == "supervise_start" and principal.kind == "worker" and principal.headless:
        refuse(
            principal, action,
            f"{doing} is typed by a person in their own session, not run by a headless worker ({principal.shown()})",
            layout, target=target,
        )  # fmt: skip
    if _for_brain(principal) and action not in BRAIN_WHILE_STOPPED and layout is not None:
        stopped = _kill_switch(layout)
        if stopped:
            refuse(
                principal, action,
                f"{doing} is refused to the main brain while {stopped}; the operator may act "
                "(`cocoplus session resume` lifts the kill switch)",
                layout, target=target,
            )  # fmt: skip


def _kill_switch(layout: Layout) -> str | None:
    stopped, why = killswitch.kill_switch_state(layout.root)
    if stopped is False:
        return None
    if stopped is None:
        return f"the kill switch cannot be read ({why})"
    info = killswitch.read_stop(layout) or {}
    who = info.get("principal") or "the operator"
    return f"the kill switch is on (AGENT_STOP by {who}: {info.get('reason') or 'no reason'})"


def stop_principal(info: Mapping[str, Any] | None) -> str:
    """Who made a stop: its recorded principal, else `operator` (a hand-made or earlier stop)."""
    p = (info or {}).get("principal")
    return p if isinstance(p, str) and p else "operator"


def lift_refusal(principal: Principal, info: Mapping[str, Any] | None) -> str | None:
    """None if `principal` may lift the stop `info`; else why not (naming who may)."""
    if info is None:
        return None
    made_by = stop_principal(info)
    # Another machine's brain lifts no stop here: the brains' own stops are each machine's (`brain` here is this
    # machine's), and the operator's are the operator's.
    kinds = () if principal.kind == "fleet" and _for_brain(principal) else LIFTS.get(principal.kind, ())
    if "*" in kinds or made_by in kinds:
        return None
    shown = {"operator": "the operator", "budget": "a budget", "loop-guard": "the runaway-loop guard"}.get(
        made_by, made_by
    )
    ask = "; the main brain can ask for it with ask_human" if _for_brain(principal) else ""
    return f"this stop was made by {shown}: only the operator may lift it (`cocoplus session resume`){ask}"


def refuse(
    principal: Principal, action: str, why: str, layout: Layout | None = None, *, target: str | None = None
) -> None:
    """Record the attempt, and raise the one-line refusal."""
    if layout is not None:
        record(layout, principal, action, "refused", why=why, target=target)
    raise Refused(f"refused: {why}", principal.word, action)


def record(layout: Layout, principal: Principal, action: str, outcome: str, **fields: Any) -> None:
    """One line in logs/authority.jsonl (never raises: the refusal itself is what the caller must see)."""
    doc = {"ts": clock.iso(), "principal": principal.word, "name": principal.name, "action": action, "outcome": outcome}
    if principal.session:
        doc["session"] = principal.session
    if principal.why:
        doc["recognised_by"] = principal.why
    doc.update({k: v for k, v in fields.items() if v is not None})
    try:
        jsonl.append_jsonl(layout.authority_log, doc, layout.lock("authority-log"), durable=False)
    except (CocoplusError, OSError):
        pass


# -- the capability (COCOPLUS_MCP_TOKEN) -------------------------------------------------------------


capability = seal.capability


def holds_capability(environ: dict[str, str] | None = None) -> bool:
    """Whether the environment carries this user's capability (the main brain's controller does)."""
    env = os.environ if environ is None else environ
    given = env.get(TOKEN_ENV)
    if not given:
        return False
    try:
        mine = capability(create=False)
    except CocoplusError:
        return False
    from hmac import compare_digest  # deferred: hashlib and OpenSSL load only where a capability is compared

    return mine is not None and compare_digest(given.strip(), mine)


# -- who runs this door ---------------------------------------------------------------------------------


def sandbox_marker() -> dict[str, Any] | None:
    """What the read-only marker of a cocoplus sandbox says (its worker), when this process runs inside one; a
    marker that cannot be read still marks one (an empty dict)."""
    try:
        if os.lstat(bwrap.MARKER).st_uid != os.geteuid():
            return None  # another user's file in a shared /tmp marks nothing
    except OSError:
        return None
    try:
        with open(bwrap.MARKER, encoding="utf-8") as f:
            doc = json.loads(f.read())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def agent_markers(environ: dict[str, str] | None = None) -> list[str]:
    """The variables in `environ` that an agent runtime (or cocoplus for its workers) sets for its tools."""
    env = os.environ if environ is None else environ
    return [n for n in runtimes.agent_env() if n != "COCOPLUS_ROUND" and env.get(n)]


def agent_ancestor(layout: Layout | None) -> tuple[str, str] | None:
    """(alias or id, what) of a recorded agent session's runtime, or a managed worker's runner, among this
    process's ancestors, from `layout`'s own records (those written before this user's registry of agent
    processes, session/agents.py, existed).  A session's process counts when its pid and start time match and
    its recorded command line runs that session's runtime (a hook run by hand records whatever ran it)."""
    if layout is None:
        return None
    chain = procinfo.ancestors()
    if not chain:
        return None
    mine = {pid: ticks for pid, ticks in chain}

    def match(proc: Any) -> bool:
        if not isinstance(proc, dict):
            return False
        pid, ticks = proc.get("pid"), proc.get("start_ticks")
        return isinstance(pid, int) and pid in mine and (ticks is None or ticks == mine[pid])

    try:
        sessions, _problems = registry.list_sessions(layout)
    except CocoplusError:
        sessions = []
    for rec in sessions:
        proc = rec.get("process")
        if match(proc) and agents.runs_runtime((proc or {}).get("argv"), rec.get("runtime")):
            return str(rec.get("alias") or rec.get("id")), f"session {rec.get('alias') or rec.get('id')}"
        if match(rec.get("resumed")):
            return str(rec.get("alias") or rec.get("id")), f"session {rec.get('alias') or rec.get('id')} (resumed)"
    try:
        from cocoplus.supervision import (
            workers,  # deferred: the worker code loads the configuration; only a worker's ancestry needs it
        )

        recs, _ = workers.records(layout)
    except CocoplusError:
        recs = []
    for w in recs:
        if match(w.get("runner")) or match({"pid": w.get("pid"), "start_ticks": w.get("start_ticks")}):
            return str(w.get("alias") or w.get("id")), f"worker {w.get('id')}"
    return None


def registered_ancestry(layout: Layout | None = None) -> Principal | None:
    """What this user's registry of processes (session/agents.py) makes this process, from it and its ancestors,
    nearest first: the principal a sealed entry of cocoplus's own makes it (the watcher a runner started), or a
    worker below an agent process of any project (headless below a worker's runner or a headless resume), or
    None.  An entry of cocoplus's own nearer than every agent process decides; an agent process nearer than it
    makes a worker."""
    chain = procinfo.ancestors(os.getpid())
    here = os.path.realpath(layout.root) if layout is not None else None
    for _i, doc in agents.find(chain):
        kind = doc.get("kind")
        if kind in agents.OWN_KINDS:
            if agents.own_principal(doc) == agents.WATCHER:
                return WATCHER
            continue  # an entry of cocoplus's own kind whose seal does not hold: it makes nothing
        if kind in agents.AGENT_KINDS:
            ident = str(doc.get("id") or doc.get("pid"))
            where = "" if doc.get("state_dir") == here else f" of {doc.get('project')}"
            what = {agents.WORKER: "worker", agents.RESUMED: "session (resumed)"}.get(str(kind), "session")
            headless = kind in (agents.WORKER, agents.RESUMED)
            return worker(ident, None, f"process ancestry: {what} {ident}{where}", headless)
    return None


def caller(layout: Layout | None = None, environ: dict[str, str] | None = None) -> Principal:
    """The principal of a command run in this process: brain (holds the capability); watcher (a process cocoplus
    started as its watcher, vouched for by a sealed entry in this user's registry); worker (inside an agent's
    session: the runtime's environment markers, or an agent process this user's cocoplus recorded, in any
    project, among its ancestors); else the operator."""
    env = dict(os.environ) if environ is None else environ
    held = sandbox_marker()
    if held is not None:  # inside a cocoplus sandbox: a worker, whatever else it carries
        return worker(held.get("worker"), env.get("COCOPLUS_SESSION") or None, f"sandbox marker {bwrap.MARKER}", True)
    if holds_capability(env):
        return BRAIN
    registered = registered_ancestry(layout)
    if registered is not None and registered.kind == "watcher":
        return registered
    markers = agent_markers(env)
    if markers:
        name = env.get("COCOPLUS_WORKER_ALIAS") or env.get("COCOPLUS_WORKER") or None
        headless = bool(env.get("COCOPLUS_HEADLESS") or env.get("COCOPLUS_WORKER"))
        return worker(name, env.get("COCOPLUS_SESSION") or None, f"environment: {', '.join(markers[:3])}", headless)
    if registered is not None:
        return registered
    found = agent_ancestor(layout)  # records written before this user's registry existed
    if found is not None:
        return worker(found[0], None, f"process ancestry: {found[1]}")
    return operator()


def display(principal: Principal, given: str | None = None) -> str:
    """The name recorded beside the principal (`operator` field of a stop, `by` of an action): the login name
    for the operator and for the brain (whose brain it is), else who it is in words."""
    if given:
        return given
    if principal.kind == "operator" and principal.name:
        return principal.name
    if principal.kind == "brain":
        return operator_name()  # whose brain it is; the principal beside it says it was the brain
    return principal.shown()


def acting(
    principal: Principal | None, action: str, doing: str, layout: Layout | None, given: str | None = None
) -> tuple[Principal, str]:
    """(who acts, the name to record) after `require`: the opening of every acting operation."""
    who = principal if principal is not None else caller(layout)
    require(who, action, doing, layout)
    return who, display(who, given)


def lift_check(principal: Principal, layout: Layout, doing: str) -> Callable[[Mapping[str, Any]], None]:
    """The `lift` callback for killswitch.resume / stops.resume: refuses a stop this principal may not lift."""

    def check(stop: Mapping[str, Any]) -> None:
        why = lift_refusal(principal, stop)
        if why is not None:
            refuse(principal, "resume", f"{doing}: {why}", layout, target=stop.get("session") or stop.get("id"))

    return check


# -- the CLI's commands -------------------------------------------------------------------------------------

# Every `cocoplus` command (first word, or first two) and the action it takes; a command missing here is
# refused to everyone but the operator (tests/ops/test_authority.py checks that every command is listed).
COMMANDS: dict[str, str] = {
    "hook": "read", "shell-init": "read", "doctor": "read", "sandbox doctor": "read", "top": "read", "mcp": "read",
    "session status": "read", "session progress": "read", "session check": "read", "session queue list": "read",
    "session list": "read", "sessions list": "read", "supervision status": "read", "supervisor status": "read",
    "supervision watcher status": "read", "workers list": "read", "summary": "read", "timeline": "read",
    "replay": "read", "telemetry status": "read", "telemetry export": "serve",
    "workers logs": "read", "budget status": "read", "chat log": "read", "chat info": "read", "config show": "read",
    "config example": "read", "notify status": "read", "relay status": "read", "fleet status": "read",
    "plugin path": "read", "permissions list": "read", "permissions log": "read", "permissions check": "read",
    "inbox": "read", "decide": "decide", "inbox run": "watch", "inbox pair": "configure", "inbox devices": "configure",
    "approve": "approve", "deny": "deny", "mcp token": "capability",
    "report progress": "report", "report blocked": "report", "ask-human": "report", "request-context": "report",
    "budget add-cost": "report", "stage start": "report", "stage end": "report",
    "session stop": "stop", "fleet stop": "stop",
    "session resume": "resume", "fleet resume": "resume", "session resume-at": "resume_session",
    "session steer": "steer", "fleet steer": "steer",
    "dispatch": "dispatch", "answer": "dispatch", "fleet dispatch": "dispatch",
    "launch": "launch", "workers kill": "kill_worker", "workers diff": "read", "workers merge": "merge",
    "workers clean": "clean_workers",
    "supervise": "supervise_start", "supervision enable": "supervise", "supervision scope": "supervise",
    "supervision exclude": "supervise", "supervision include": "supervise", "workflow start": "supervise",
    "supervision finish": "supervise_finish", "workflow end": "supervise_finish",
    "session queue add": "queue", "session queue done": "queue", "session queue promote": "queue",
    "chat send": "chat", "chat retry": "chat", "chat set": "chat", "chat menu": "chat",
    "init": "configure", "install": "configure", "uninstall": "configure", "trust": "configure",
    "chat setup": "configure", "plugin build": "configure", "notify test": "configure", "fleet join": "configure",
    "serve": "serve", "supervisor run": "watch", "supervisor stop": "serve", "supervision watcher run": "watch",
    "supervision watcher stop": "serve", "relay run": "serve",
    "relay stop": "serve", "notify run": "serve", "chat worker": "watch",
}  # fmt: skip


def command_named(words: list[str]) -> tuple[str, str]:
    """(the command a command line's leading words name, its action): `session queue add "x"` ->
    (`session queue add`, `queue`); a command not in the table is `configure`."""
    for n in (3, 2, 1):
        name = " ".join(words[:n])
        if len(words) >= n and name in COMMANDS:
            return name, COMMANDS[name]
    return " ".join(words[:2]), "configure"


def command_action(words: list[str]) -> str:
    return command_named(words)[1]


def check_command(words: list[str], layout: Layout | None) -> None:
    """Refuse a command its caller may not run (the CLI calls this before the command; ops check again)."""
    name, action = command_named(words)
    if action == "read" or not words:
        return
    require(caller(layout), action, "cocoplus " + name, layout)
