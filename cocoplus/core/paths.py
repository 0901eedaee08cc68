"""The one place that names every file under `.cocoplus/`, and how it is found.

Standard library only (the hook path imports it).  Nothing else in cocoplus
spells a file name under the state directory; it asks a `Layout`.

Discovery (SPEC section 3): `COCOPLUS_DIR` wins; otherwise the nearest
ancestor of the starting directory that holds `.cocoplus/`.  `COCOPLUS_DIR`
may name the state directory itself or a project directory that holds one.
"""

from __future__ import annotations

import os

from cocoplus.core.errors import InvalidId, NotInitialized

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

    def __repr__(self) -> str:
        return f"Layout({self.root!r})"

    def _p(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)

    # -- project level ---------------------------------------------------
    @property
    def config(self) -> str:
        return os.path.join(self.project, CONFIG_FILE_NAME)

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

    @property
    def hook_config(self) -> str:
        """Flat JSON copy of the config, compiled for the hook (no TOML there)."""
        return self._p("hook-config.json")

    @property
    def readme(self) -> str:
        return self._p("README.md")

    # -- session continuity ----------------------------------------------
    @property
    def session_dir(self) -> str:
        return self._p("session")

    @property
    def progress(self) -> str:
        return self._p("session", "PROGRESS.md")

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
    def supervisor_pid(self) -> str:
        return self._p("supervision", "supervisor.json")

    @property
    def workflows(self) -> str:
        return self._p("supervision", "workflows.json")

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

    # -- server ------------------------------------------------------------
    @property
    def server_token(self) -> str:
        return self._p("server-token")

    # -- plumbing ----------------------------------------------------------
    @property
    def locks_dir(self) -> str:
        return self._p("locks")

    def lock(self, name: str) -> str:
        return self._p("locks", check_id(name, "lock name") + ".lock")

    @property
    def logs_dir(self) -> str:
        return self._p("logs")

    @property
    def hook_log(self) -> str:
        return self._p("logs", "hook.log")

    @property
    def cli_log(self) -> str:
        return self._p("logs", "cocoplus.log")

    def rel(self, path: str) -> str:
        """A path as shown to users: relative to the project directory."""
        try:
            r = os.path.relpath(path, self.project)
        except ValueError:
            return path
        return path if r.startswith("..") else r


def _state_in(directory: str) -> str | None:
    candidate = os.path.join(directory, STATE_DIR_NAME)
    return candidate if os.path.isdir(candidate) else None


def find_state_dir(start: str | None = None, environ: dict[str, str] | None = None) -> str | None:
    """Locate `.cocoplus/`: `COCOPLUS_DIR`, else the nearest ancestor of `start`."""
    env = os.environ if environ is None else environ
    override = env.get(ENV_DIR)
    if override:
        inner = _state_in(override)
        if inner:
            return inner
        return os.path.abspath(override) if os.path.isdir(override) else None
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


def discover(start: str | None = None, environ: dict[str, str] | None = None) -> Layout:
    """The Layout for the current project, or NotInitialized with what to do."""
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
    return Layout(found)


def init_target(start: str | None = None, environ: dict[str, str] | None = None) -> str:
    """Where `cocoplus init` creates the state directory (same rule as discovery)."""
    env = os.environ if environ is None else environ
    override = env.get(ENV_DIR)
    if override:
        return _state_in(override) or os.path.abspath(override)
    return os.path.join(os.path.abspath(start or os.getcwd()), STATE_DIR_NAME)
