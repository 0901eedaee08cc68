"""Every fixed word list of cocoplus, defined here and nowhere else.

The state files, the config key table, the pydantic models, the REST API,
the MCP tools and the web page (through `GET /api/v1/meta`) all take their
allowed values from these tuples.  Standard library only, importing nothing
but `__future__`: the hook reads it.
"""

from __future__ import annotations

# Reasoning effort of the master agent (docs/backends.md), in increasing order.
EFFORTS = ("low", "medium", "high")

# Canonical run states (status.json, pod-state.json, session records); a budget stop is `exited`.
RUN_STATES = ("running", "paused", "completed", "exited", "failed", "idle", "retired")
# The run states of a session that is still at work (supervised, shown by default, counted as active).
ACTIVE_STATES = ("running", "paused", "idle")

# Cost budget states (budget-state.json) and when cost is enforced.
BUDGET_STATES = ("normal", "reserve", "exhausted")
BUDGET_ENFORCEMENTS = ("stage-boundary", "off")

# Attention states of a worker session; each one wakes the main brain.
ATTENTION_STATES = ("pending", "awaiting_authorization", "awaiting_decision")

# Which sessions supervision watches; `invert` is an action on the visible list, not a stored mode.
SCOPE_MODES = ("all", "only", "except")
SCOPE_ACTIONS = (*SCOPE_MODES, "invert")

# report_progress statuses (docs/guides/supervision.md); all but `working` wake the main brain.
PROGRESS_STATUSES = ("working", "completed", "blocked", "needs_review")

# Backends of an `[accounts.NAME]` table.
ACCOUNT_KINDS = ("claude", "codex", "openai", "command")

# A master-agent reply task; the states of one not finished yet; the reply state `chat send`
# answers with (docs/backends.md).
TASK_STATES = ("queued", "running", "succeeded", "failed")
UNFINISHED_TASK_STATES = TASK_STATES[:2]
REPLY_STATES = (*UNFINISHED_TASK_STATES, "failed")

# An item of session/task-queue.jsonl.
QUEUE_STATES = ("queued", "done", "dropped")

# Who wrote a message of a master-agent conversation, and what a reply task is for.
MESSAGE_ROLES = ("user", "assistant", "system", "worker")
TASK_KINDS = ("chat", "supervision")

# What a record of the spend log is spent on (`budget add-cost --category`).
SPEND_CATEGORIES = ("execution", "coordination", "landing")

# A worker started by `cocoplus launch`: waiting for a slot, its process running, ended (normally, or
# killed by `workers kill`), or died without a turn end (crash, OOM, a signal).
WORKER_STATES = ("queued", "running", "exited", "failed")
LIVE_WORKER_STATES = WORKER_STATES[:2]
# The runtimes `cocoplus launch` starts.
LAUNCH_RUNTIMES = ("claude", "codex", "gemini")
# A worker's sandbox profiles, weakest first (cocoplus/sandbox/profiles.py): a project may only choose a later one.
# `srt` holds the same files as `workspace` and adds a network held to the model endpoint.
SANDBOX_PROFILES = ("none", "workspace", "srt")

# Which tools `cocoplus mcp --role` serves (`worker` is the default; `brain` and `all` need this
# user's capability in COCOPLUS_MCP_TOKEN).
MCP_ROLES = ("brain", "worker", "all")

# A headless worker's permission request (session/permissions.py): waiting for an answer, or how it ended.
PERMISSION_STATES = ("pending", "allowed", "denied", "expired")

# Who acted (recorded on every stop and action, docs/authority.md): a person at this machine, the
# main brain, a worker session, cocoplus's own budgets and loop guard, the supervision watcher;
# and `fleet:<machine>` for a command another machine of the fleet sent.
PRINCIPALS = ("operator", "brain", "worker", "budget", "loop-guard", "watcher")
FLEET_PRINCIPAL_PREFIX = "fleet:"

# What a notification can be about (`[notify] events`, every kind by default): a worker asks the
# human, waits for authorization (a permission request), goes pending (its turn ended and it waits
# for the next instruction), stalls, is paused by its runtime's rate or usage limit; the operator
# stops the project or a session; the cost budget
# reaches reserve, is exhausted or stops the agent; the iteration cap or the loop guard stops an
# agent; supervision finishes; a supervision round fails; two live sessions changed the same file.
NOTIFY_EVENTS = (
    "ask_human",
    "awaiting_authorization",
    "pending",
    "stalled",
    "limited",
    "failover",
    "hand_back",
    "request_expired",
    "operator_stop",
    "budget_reserve",
    "budget_exhausted",
    "budget_stop",
    "budget_forecast",
    "iteration_cap",
    "loop_guard",
    "supervision_finished",
    "round_failed",
    "collision",
    "summary",
)

# The phone channels of the decision inbox (`[inbox] channels`), and the channel each records its answers under.
INBOX_CHANNELS = ("ntfy", "telegram")

# The bidi controls no untrusted text may carry to a person's screen (core.inert shows them as
# `\u202e`, a TOML string escapes them): the Arabic letter mark, LRM and RLM, the embeddings and
# overrides U+202A-U+202E, the isolates U+2066-U+2069.
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def as_dict() -> dict[str, list[str]]:
    """Every list by name, as the REST API publishes it."""
    return {
        "efforts": list(EFFORTS),
        "run_states": list(RUN_STATES),
        "active_states": list(ACTIVE_STATES),
        "budget_states": list(BUDGET_STATES),
        "budget_enforcements": list(BUDGET_ENFORCEMENTS),
        "attention_states": list(ATTENTION_STATES),
        "scope_modes": list(SCOPE_MODES),
        "scope_actions": list(SCOPE_ACTIONS),
        "progress_statuses": list(PROGRESS_STATUSES),
        "account_kinds": list(ACCOUNT_KINDS),
        "task_states": list(TASK_STATES),
        "unfinished_task_states": list(UNFINISHED_TASK_STATES),
        "reply_states": list(REPLY_STATES),
        "queue_states": list(QUEUE_STATES),
        "message_roles": list(MESSAGE_ROLES),
        "task_kinds": list(TASK_KINDS),
        "spend_categories": list(SPEND_CATEGORIES),
        "mcp_roles": list(MCP_ROLES),
        "principals": list(PRINCIPALS),
        "permission_states": list(PERMISSION_STATES),
        "notify_events": list(NOTIFY_EVENTS),
        "worker_states": list(WORKER_STATES),
        "launch_runtimes": list(LAUNCH_RUNTIMES),
    }


# Interpreters that run a script named by their first word that is not an option (`python3 tools/brain.py`):
# `cocoplus trust` pins that script when it lies in the project, as it pins a program named by a path there.
# A version suffix is allowed (`python3.12`, `node22`).
SCRIPT_INTERPRETERS = (
    "python",
    "pypy",
    "node",
    "nodejs",
    "bun",
    "deno",
    "sh",
    "bash",
    "dash",
    "zsh",
    "ksh",
    "ruby",
    "perl",
    "php",
)
