"""Every file under `.cocoplus/` by name (`Layout`), and how the directory is found.

Standard library only (the hook path imports it).  Every path cocoplus
builds under the state directory comes from a `Layout`, with these
exceptions, each checked against it by tests/core/test_paths.py: the hook's
fast path (`hook/entry.py` STOP_FILE, HOOK_LOG, WORKTREE_MARKER) and the
worktree marker's reader (`core/worktreemark.py`), which run before `os`
and so before this module is imported, and the server's event classifier
(`server/events.py` IGNORED_FILES), which recognises changed paths by their
names relative to `.cocoplus/`.

Discovery (SPEC section 3): `COCOPLUS_DIR` wins; otherwise the nearest
ancestor of the starting directory that holds `.cocoplus/`.  `COCOPLUS_DIR`
may name the state directory itself or a project directory that holds one.
A `.cocoplus` holding a worktree marker (a worker's git worktree) stands for
the project's state directory the marker names (`governing`,
core/worktreemark.py); a damaged marker is an error, never a fallback.

It stays one file, past the size the other modules keep to, because it is
the one place that names every file under `.cocoplus/`: a reader finds them
all in `Layout`, and tests/core/test_paths.py and
tests/hardening/test_symlinks.py walk it to hold every writer to it.  The
discovery beside it is short, and the hook's tool calls use both (a module
of its own would be one more import on them).
"""

from __future__ import annotations

import os
import stat as _stat

from cocoplus.core import fsio, roots
from cocoplus.core.errors import CocoplusError, InvalidId, NotInitialized

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Mapping

STATE_DIR_NAME = ".cocoplus"
CONFIG_FILE_NAME = "cocoplus.toml"
ENV_DIR = "COCOPLUS_DIR"

_ID_FIRST = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_ID_REST = _ID_FIRST | frozenset("_-.")
ID_MAX = 128


def is_valid_id(value: object) -> bool:
    """The allow-list every outside id passes before it becomes part of a path.

    1-128 ASCII characters from `A-Za-z0-9_-.`, the first a letter or digit,
    and no `..` (so an id can never name a parent directory).
    """
    if not isinstance(value, str) or not 0 < len(value) <= ID_MAX:
        return False
    if value[0] not in _ID_FIRST or ".." in value:
        return False
    return all(c in _ID_REST for c in value)


def check_id(value: object, kind: str = "id") -> str:
    if not is_valid_id(value):
        raise InvalidId(kind, value)
    return value  # type: ignore[return-value]


class Layout:
    """Every path under one `.cocoplus/` directory."""

    __slots__ = ("root", "project")

    def __init__(self, state_dir: str) -> None:
        self.root = os.path.abspath(state_dir)
        self.project = os.path.dirname(self.root)
        roots.add(self.root)

    def __repr__(self) -> str:
        return f"Layout({self.root!r})"

    def _p(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)

    # -- project level ---------------------------------------------------
    @property
    def config(self) -> str:
        return os.path.join(self.project, CONFIG_FILE_NAME)

    @property
    def marker(self) -> str:
        """Says this directory is a cocoplus state directory: an override (COCOPLUS_DIR) must name one that holds it."""
        return self._p("LAYOUT")

    # -- operator controls -----------------------------------------------
    @property
    def agent_stop(self) -> str:
        return self._p("AGENT_STOP")

    @property
    def steer(self) -> str:
        return self._p("STEER.md")

    @property
    def steer_claimed_dir(self) -> str:
        return self._p("steer-claimed")

    @property
    def pod_state(self) -> str:
        return self._p("pod-state.json")

    # -- per-session controls --------------------------------------------
    @property
    def session_stops_dir(self) -> str:
        """One file per stopped session; it exists only while some session is stopped.

        The pre-tool hook's fast path checks its absence with one `lstat`
        and reads no payload while it is absent.
        """
        return self._p("session-stops")

    def session_stop(self, cs_id: str) -> str:
        return self._p("session-stops", check_id(cs_id, "session id") + ".json")

    @property
    def session_steers_dir(self) -> str:
        return self._p("steer-sessions")

    def session_steer(self, cs_id: str) -> str:
        """A pending one-shot instruction for one session only."""
        return self._p("steer-sessions", check_id(cs_id, "session id") + ".md")

    def session_steer_claimed_dir(self, cs_id: str) -> str:
        """Per-session steers being delivered (beside the project-wide ones in `steer_claimed_dir`)."""
        return self._p("steer-claimed", check_id(cs_id, "session id"))

    @property
    def holds_dir(self) -> str:
        return self._p("holds")

    def hold(self, cs_id: str) -> str:
        """A turn end waiting for the main brain's decision (written by the waiting hook)."""
        return self._p("holds", check_id(cs_id, "session id") + ".json")

    def hold_decision(self, cs_id: str) -> str:
        """The instruction that releases a held turn end (written by dispatch or answer)."""
        return self._p("holds", check_id(cs_id, "session id") + ".decision.json")

    @property
    def resumes_dir(self) -> str:
        """Output of the headless runs `cocoplus dispatch` starts to resume an exited session."""
        return self._p("resumes")

    def resume_log(self, cs_id: str, stamp: str) -> str:
        return self._p("resumes", check_id(f"{cs_id}-{stamp}", "resume log") + ".log")

    # -- managed workers (`cocoplus launch`) --------------------------------
    @property
    def workers_dir(self) -> str:
        return self._p("workers")

    def worker_dir(self, worker_id: str) -> str:
        return self._p("workers", check_id(worker_id, "worker id"))

    def worker_record(self, worker_id: str) -> str:
        """One launched worker: its runtime, task, process, state and linked session."""
        return os.path.join(self.worker_dir(worker_id), "worker.json")

    def worker_log(self, worker_id: str) -> str:
        """The worker's output (its runtime's stdout and stderr), rotated to `output.log.1` past the size limit."""
        return os.path.join(self.worker_dir(worker_id), "output.log")

    def worker_helpers(self, worker_id: str) -> str:
        """Links to the programs a worker's runtime runs through PATH under a name of their own (its adapter's
        `helper_programs`: Codex's `codex-linux-sandbox`), first on the worker's PATH."""
        return os.path.join(self.worker_dir(worker_id), "bin")

    def worker_channel(self, worker_id: str) -> str:
        """The control channel of a sandboxed worker: a Unix socket its runner's channel process serves, mounted
        into the worker's sandbox, through which its hooks write (cocoplus/sandbox/channel.py)."""
        return os.path.join(self.worker_dir(worker_id), "channel.sock")

    def worker_write_grants(self, worker_id: str) -> str:
        """What a sandboxed worker's next sandbox makes writable: the paths the operator approved after its sandbox
        refused a write, each sealed (cocoplus/sandbox/writes.py)."""
        return os.path.join(self.worker_dir(worker_id), "write-grants.json")

    def worker_proxy(self, worker_id: str) -> str:
        """The network proxy of a sandboxed worker whose network is limited (`[sandbox] network`): a Unix socket its
        runner's proxy process serves, mounted into the worker's sandbox, through which alone it reaches other hosts
        (cocoplus/sandbox/netproxy.py)."""
        return os.path.join(self.worker_dir(worker_id), "proxy.sock")

    def worker_runner_log(self, worker_id: str) -> str:
        """What the runner process that waits for a slot and watches the worker says about itself."""
        return os.path.join(self.worker_dir(worker_id), "runner.log")

    def worker_calls(self, worker_id: str) -> str:
        """The worker's tool calls, one fixed-width line each, where its runtime's events name no session (the
        loop guard's streak; a session's own are in `session_calls`)."""
        return os.path.join(self.worker_dir(worker_id), "calls")

    def worker_stop(self, worker_id: str) -> str:
        """Why cocoplus ended the worker's run itself (its loop guard or its cap, where its runtime's events name no
        session): principal, reason, at.  Written by the hook that stops it, read when its run ends."""
        return os.path.join(self.worker_dir(worker_id), "stopped.json")

    def worker_worktree_key(self, worker_id: str) -> str:
        """The device and inode of the worker's worktree's `.cocoplus`: what makes its marker hold
        (core/worktreemark.py)."""
        return os.path.join(self.worker_dir(worker_id), "worktree.key")

    # -- workers' git worktrees (`cocoplus launch --worktree`) -------------------------------
    @property
    def worktrees_dir(self) -> str:
        """Where workers' git worktrees are made unless `[workers] worktree_dir` says elsewhere (git ignores it)."""
        return self._p("worktrees")

    def worktree(self, name: str) -> str:
        return self._p("worktrees", check_id(name, "worktree name"))

    @property
    def worktree_marker(self) -> str:
        """In a worker's worktree's `.cocoplus`: which project's state directory governs it (core/worktreemark.py)."""
        return self._p("WORKTREE")

    @property
    def hook_config(self) -> str:
        """Flat JSON copy of the config, compiled for the hook (no TOML there)."""
        return self._p("hook-config.json")

    @property
    def readme(self) -> str:
        return self._p("README.md")

    @property
    def gitignore(self) -> str:
        """Keeps state, locks, logs and tokens out of git; the handoff may be committed."""
        return self._p(".gitignore")

    # -- session continuity ----------------------------------------------
    @property
    def session_dir(self) -> str:
        return self._p("session")

    @property
    def progress(self) -> str:
        return self._p("session", "PROGRESS.md")

    @property
    def handoff_stamp(self) -> str:
        """When PROGRESS.md's content last changed, by checksum (a clone resets file times, not this)."""
        return self._p("session", "handoff-stamp.json")

    @property
    def context(self) -> str:
        return self._p("session", "CONTEXT.md")

    @property
    def task_queue(self) -> str:
        return self._p("session", "task-queue.jsonl")

    @property
    def iteration_budget(self) -> str:
        return self._p("session", "iteration-budget.json")

    @property
    def iteration_spool_dir(self) -> str:
        """Increments a hook could not apply under the lock, applied later."""
        return self._p("session", "iteration-spool")

    @property
    def budget_state(self) -> str:
        return self._p("session", "budget-state.json")

    @property
    def status(self) -> str:
        return self._p("session", "status.json")

    @property
    def steps(self) -> str:
        return self._p("session", "steps.jsonl")

    @property
    def tool_streak(self) -> str:
        """Runaway-loop guard: the last tool call's fingerprint and its run length."""
        return self._p("session", "tool-streak.json")

    @property
    def stage(self) -> str:
        """The stage in progress, if any (cost checks wait for its end)."""
        return self._p("session", "stage.json")

    # -- cost --------------------------------------------------------------
    @property
    def cost_dir(self) -> str:
        return self._p("cost")

    @property
    def spend_log(self) -> str:
        """Every priced usage record and manual cost, appended."""
        return self._p("cost", "spend.jsonl")

    @property
    def legacy_spend_log(self) -> str:
        """Where releases before 0.2 kept the spend log; moved to `spend_log` on first use."""
        return self._p("cost", "ledger.jsonl")

    @property
    def price_table(self) -> str:
        """Prices compiled from genai-prices by a cocoplus command, read by the turn-end hook."""
        return self._p("cost", "price-table.json")

    @property
    def cost_cursors(self) -> str:
        """How far each runtime record file has been read."""
        return self._p("cost", "cursors.json")

    # -- agent-runtime sessions -----------------------------------------
    @property
    def sessions_dir(self) -> str:
        return self._p("sessions")

    @property
    def sessions_index(self) -> str:
        """Alias counters and the alias/runtime-id -> cs_ id map."""
        return self._p("sessions", "index.json")

    def session_record(self, cs_id: str) -> str:
        return self._p("sessions", check_id(cs_id, "session id") + ".json")

    def session_calls(self, cs_id: str) -> str:
        """One fixed-width line per tool call of the session (its loop-guard fingerprint): appended by every
        PostToolUse instead of a rewrite of the record; the count is its size over the width."""
        return self._p("sessions", check_id(cs_id, "session id") + ".calls")

    def session_edits(self, cs_id: str) -> str:
        """The files the session's tools changed, one JSON string a line, relative to the session's own tree (its
        project or worktree): appended by every PostToolUse of an edit or write tool; the watcher compares them."""
        return self._p("sessions", check_id(cs_id, "session id") + ".edits")

    # -- supervision -----------------------------------------------------
    @property
    def supervision_dir(self) -> str:
        return self._p("supervision")

    @property
    def supervision_state(self) -> str:
        return self._p("supervision", "state.json")

    @property
    def signals(self) -> str:
        """Worker signals (attention changes, reports), appended by hooks and commands."""
        return self._p("supervision", "signals.jsonl")

    @property
    def rounds(self) -> str:
        return self._p("supervision", "rounds.jsonl")

    @property
    def night_summary(self) -> str:
        """When the last `summary` notification for the end of all workers was logged (ops/summary.py)."""
        return self._p("supervision", "night-summary.json")

    @property
    def current_round(self) -> str:
        """The supervision round in progress, if any."""
        return self._p("supervision", "round.json")

    @property
    def supervisor_pid(self) -> str:
        return self._p("supervision", "supervisor.json")

    @property
    def supervisor_cursor(self) -> str:
        """How far the supervisor has read `signals` (a byte offset)."""
        return self._p("supervision", "cursor.json")

    @property
    def workflows(self) -> str:
        return self._p("supervision", "workflows.json")

    @property
    def stall_cooldowns(self) -> str:
        """When the stall watchdog last fired per session and attention (so a restart keeps the cooldown)."""
        return self._p("supervision", "stall-cooldowns.json")

    @property
    def collisions(self) -> str:
        """Every collision the watcher has signalled (two sessions, one path): each is signalled once."""
        return self._p("supervision", "collisions.json")

    # -- master-agent conversation ---------------------------------------
    @property
    def chat_dir(self) -> str:
        return self._p("chat")

    def conversation_dir(self, conversation: str) -> str:
        return self._p("chat", check_id(conversation, "conversation id"))

    def conversation_file(self, conversation: str) -> str:
        return os.path.join(self.conversation_dir(conversation), "conversation.json")

    def ledger(self, conversation: str) -> str:
        return os.path.join(self.conversation_dir(conversation), "ledger.jsonl")

    def tasks_dir(self, conversation: str) -> str:
        return os.path.join(self.conversation_dir(conversation), "tasks")

    def task_record(self, conversation: str, task_id: str) -> str:
        return os.path.join(self.tasks_dir(conversation), check_id(task_id, "task id") + ".json")

    @property
    def chat_worker_pid(self) -> str:
        return self._p("chat", "worker.json")

    # -- notifications -----------------------------------------------------
    @property
    def notify_dir(self) -> str:
        return self._p("notify")

    @property
    def notify_state(self) -> str:
        """The notifier's cursors into the logs it reads, messages not yet delivered, and each target's retry state."""
        return self._p("notify", "state.json")

    @property
    def notify_deliveries(self) -> str:
        """Every delivery the notifier tried: when, which message (id, kind, title), which target, and how it went."""
        return self._p("notify", "deliveries.jsonl")

    @property
    def notify_log(self) -> str:
        """What the notifier sent, and which targets failed."""
        return self._p("logs", "notify.log")

    # -- telemetry (OpenTelemetry export) -----------------------------------
    @property
    def telemetry_dir(self) -> str:
        return self._p("telemetry")

    @property
    def telemetry_status(self) -> str:
        """The trace exporter: which process exports (pid, command), its interval, and its last export's outcome
        (when, how many spans, the HTTP status and error of a failure), read by `doctor`, `top` and the page."""
        return self._p("telemetry", "status.json")

    @property
    def telemetry_cursor(self) -> str:
        """The spans already exported (their ids), so that an exporter that restarts sends none twice."""
        return self._p("telemetry", "cursor.json")

    # -- fleet relay ---------------------------------------------------------
    @property
    def fleet_dir(self) -> str:
        return self._p("fleet")

    @property
    def relay_state(self) -> str:
        """The relay process: pid, connection, last error (written by `cocoplus relay run`)."""
        return self._p("fleet", "relay.json")

    @property
    def fleet_commands(self) -> str:
        """Every fleet command the relay applied here, appended (what makes a command apply once)."""
        return self._p("fleet", "commands.jsonl")

    @property
    def mcp_approvals(self) -> str:
        """The runtimes' per-user approvals of cocoplus' project MCP server that `install` added (so that `uninstall`
        removes only those): `{runtime: {"file", "key", "created"}}`."""
        return self._p("mcp-approvals.json")

    @property
    def fleet_sent(self) -> str:
        """Every fleet command sent from this project, appended: when it was sent, then what each target answered."""
        return self._p("fleet", "sent.jsonl")

    @property
    def fleet_cursors(self) -> str:
        """How far each mirrored file (signals, rounds, ledgers) has been published to the fleet."""
        return self._p("fleet", "cursors.json")

    # -- server ------------------------------------------------------------
    @property
    def secrets_dir(self) -> str:
        """What only cocoplus outside a sandbox reads: a directory, so that a worker's sandbox hides it whole (a file
        hidden by a mount over it shows again, inside, once it is replaced by a rename outside)."""
        return self._p("secrets")

    @property
    def server_token(self) -> str:
        return self._p("secrets", "server-token")

    @property
    def legacy_server_token(self) -> str:
        """Where the server kept its token before `secrets/`: removed when a server starts, hidden from a sandbox
        while it is there."""
        return self._p("server-token")

    # -- plumbing ----------------------------------------------------------
    @property
    def locks_dir(self) -> str:
        return self._p("locks")

    def lock(self, name: str) -> str:
        return self._p("locks", check_id(name, "lock name") + ".lock")

    @property
    def kill_switch_lock(self) -> str:
        """Held while AGENT_STOP and the run state (status.json, pod-state.json) change together."""
        return self.lock("kill-switch")

    @property
    def logs_dir(self) -> str:
        return self._p("logs")

    @property
    def hook_log(self) -> str:
        return self._p("logs", "hook.log")

    @property
    def cli_log(self) -> str:
        return self._p("logs", "cocoplus.log")

    @property
    def supervisor_log(self) -> str:
        """Output of a supervisor started in the background."""
        return self._p("logs", "supervisor.log")

    @property
    def chat_worker_log(self) -> str:
        """Output of a chat worker started in the background."""
        return self._p("logs", "chat-worker.log")

    @property
    def relay_log(self) -> str:
        """Output of a fleet relay started in the background."""
        return self._p("logs", "relay.log")

    @property
    def permissions_dir(self) -> str:
        """Headless workers' permission requests and the decisions taken on them (session/permissions.py)."""
        return self._p("permissions")

    @property
    def permission_requests_dir(self) -> str:
        return self._p("permissions", "requests")

    def permission_request(self, req_id: str) -> str:
        return self._p("permissions", "requests", check_id(req_id, "permission request id") + ".json")

    @property
    def permission_log(self) -> str:
        """Every permission decision (who, what, which rule, when): `cocoplus permissions log`."""
        return self._p("permissions", "decisions.jsonl")

    @property
    def inbox_left(self) -> str:
        """The operator's answers through the inbox (`cocoplus decide`, a tap, the page: the action, who, through
        which channel), including leaving a decision as it is: the inbox shows them resolved, also once their source
        is gone, such as a stop lifted (cocoplus/inbox/decisions.py)."""
        return self._p("inbox", "left.jsonl")

    @property
    def authority_log(self) -> str:
        """Every action refused to its principal (docs/authority.md), one JSON object a line."""
        return self._p("logs", "authority.jsonl")

    def appended_files(self) -> list[str]:
        """Every file cocoplus only ever appends to (logs and JSONL records), fixed names only.

        A line that could not be appended to one of them leaves a marker
        beside it (`fsio.note_loss`); `session status` reports those.
        """
        return [
            self.steps,
            self.task_queue,
            self.signals,
            self.rounds,
            self.spend_log,
            self.hook_log,
            self.cli_log,
            self.supervisor_log,
            self.chat_worker_log,
            self.notify_log,
            self.notify_deliveries,
            self.fleet_commands,
            self.fleet_sent,
            self.relay_log,
            self.authority_log,
            self.permission_log,
        ]

    def rel(self, path: str) -> str:
        """A path as shown to users: relative to the project directory."""
        try:
            r = os.path.relpath(path, self.project)
        except ValueError:
            return path
        return path if r.startswith("..") else r


def state_dir_problem(state_dir: str) -> str | None:
    """Why `state_dir` must not be written to, or None if it is safe.

    It must be a real directory (not a symbolic link), owned by the user
    running cocoplus, and not writable by others: a cloned repository or
    another account must not be able to steer cocoplus's writes elsewhere.
    A missing directory is no problem (there is nothing to write into yet).
    """
    try:
        st = os.lstat(state_dir)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{state_dir}: cannot examine ({exc.strerror})"
    if _stat.S_ISLNK(st.st_mode):
        return f"{state_dir}: is a symbolic link; cocoplus only uses a real directory as its state directory"
    if not _stat.S_ISDIR(st.st_mode):
        return f"{state_dir}: exists and is not a directory"
    euid = os.geteuid() if hasattr(os, "geteuid") else None
    if euid is not None and st.st_uid != euid:
        return (
            f"{state_dir}: owned by uid {st.st_uid}, not by you (uid {euid}); "
            "cocoplus writes only to its own user's state"
        )
    if st.st_mode & _stat.S_IWOTH:
        return f"{state_dir}: writable by every user (mode {_stat.S_IMODE(st.st_mode):o}); run `chmod 700 {state_dir}`"
    return None


def check_state_dir(state_dir: str) -> str:
    """`state_dir` if it is safe to write to (see `state_dir_problem`), else CocoplusError naming why."""
    problem = state_dir_problem(state_dir)
    if problem:
        raise CocoplusError(problem)
    return state_dir


def _state_in(directory: str) -> str | None:
    candidate = os.path.join(directory, STATE_DIR_NAME)
    return governing(candidate) if os.path.isdir(candidate) else None


def governing(state_dir: str) -> str:
    """The state directory that governs `state_dir`: itself, or for a worker's worktree the project's its marker
    names (core/worktreemark.py); CocoplusError naming the marker when that cannot be known."""
    from cocoplus.core import worktreemark  # deferred: the hook finds its state directory by its own walk

    if not worktreemark.has_marker(state_dir):
        return state_dir
    target, why = worktreemark.follow(os.path.abspath(state_dir))
    if target is None:
        raise CocoplusError(str(why))
    return target


# Any of these in a directory makes it a state directory, whatever it is called.
STATE_MARKERS = ("session", "sessions", "locks", "AGENT_STOP", "hook-config.json")


def is_state_dir(path: str) -> bool:
    """A directory cocoplus keeps state in: called `.cocoplus`, or holding its files."""
    if not os.path.isdir(path):
        return False
    return os.path.basename(os.path.abspath(path)) == STATE_DIR_NAME or any(
        os.path.lexists(os.path.join(path, m)) for m in STATE_MARKERS
    )


def find_state_dir(start: str | None = None, environ: Mapping[str, str] | None = None) -> str | None:
    """Locate `.cocoplus/`: `COCOPLUS_DIR` (a project holding one, or a state directory itself),
    else the nearest ancestor of `start`."""
    env = os.environ if environ is None else environ
    override = env.get(ENV_DIR)
    if override:
        inner = _state_in(override)
        if inner:
            return inner
        return governing(os.path.abspath(override)) if is_state_dir(override) else None
    return walk_up(start if start is not None else os.getcwd())


def walk_up(start: str) -> str | None:
    cur = os.path.abspath(start)
    while True:
        found = _state_in(cur)
        if found:
            return found
        parent = os.path.dirname(cur)
        if parent == cur:
            return None
        cur = parent


def discover(start: str | None = None, environ: Mapping[str, str] | None = None, *, check: bool = True) -> Layout:
    """The Layout for the current project, or NotInitialized with what to do.

    With `check` (the default, for anything that may write), a state
    directory that is a symbolic link, owned by another user or writable by
    everyone is refused (`state_dir_problem`).
    """
    env = os.environ if environ is None else environ
    found = find_state_dir(start, env)
    if found is None:
        if env.get(ENV_DIR):
            raise NotInitialized(
                f"{ENV_DIR}={env[ENV_DIR]} does not name a .cocoplus directory",
                hint="run `cocoplus init` there, or unset " + ENV_DIR,
            )
        where = os.path.abspath(start or os.getcwd())
        raise NotInitialized(
            f"no .cocoplus directory in {where} or any parent",
            hint="run `cocoplus init` in the project directory",
        )
    if check:
        check_state_dir(found)
    layout = Layout(found)
    if check:
        ensure_marker(layout)
    return layout


def init_target(start: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """Where `cocoplus init` creates the state directory (same rule as discovery)."""
    env = os.environ if environ is None else environ
    override = env.get(ENV_DIR)
    if override:
        return _state_in(override) or os.path.abspath(override)
    return os.path.join(os.path.abspath(start or os.getcwd()), STATE_DIR_NAME)


MARKER_TEXT = "cocoplus state directory (layout 1)\n"


def ensure_marker(layout: Layout) -> None:
    """Write the layout marker where it is missing (`cocoplus init`, every command that finds its project, and
    the hook in the project the runtime names); never raises: a missing marker only makes an override of
    this directory fail closed."""
    if os.path.lexists(layout.marker):
        return
    try:
        fsio.atomic_write_text(layout.marker, MARKER_TEXT)
    except (CocoplusError, OSError):
        pass
