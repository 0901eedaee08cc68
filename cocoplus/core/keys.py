"""Every configuration key: its section, type, default, bounds, environment variable, meaning, and whether it needs
trust; and the tables of named entries (`[pricing."model"]`, `[accounts.NAME]`) with their fields.

Standard library only.  A new key is one `Key(...)` here (its declaration is
its documentation: the reference page is generated from its `help`); what a
Key can say is in `core/keytypes.py`, and how files and the environment are
checked against this table in `core/settings.py`.
"""

from __future__ import annotations

from cocoplus.core import vocab
from cocoplus.core.keytypes import Key, Table

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any

# Bounds: wide enough for any real run, narrow enough that a typo (or a number
# no run can reach) is refused rather than quietly turning a limit off.
DAY = 86400.0
WEEK = 7 * DAY
MAX_COUNT = 1_000_000


def _inbox(name: str, kind: str, default: Any, help: str, **rules: Any) -> Key:
    """A key of `[inbox]`: the user's own file only, no environment variable."""
    return Key("inbox", name, kind, default, help, user_only=True, env=False, **rules)


KEYS: tuple[Key, ...] = (
    # [session]: the seed's keys and defaults, then cocoplus' own.
    Key(
        "session",
        "max_iterations",
        "int",
        200,
        "iteration cap: tool calls counted by PostToolUse before the agent is stopped (while several sessions are "
        "live, each session's own calls: the one reaching it is stopped alone)",
        minimum=1,
        maximum=MAX_COUNT,
    ),
    Key(
        "session",
        "project_max_iterations",
        "int",
        0,
        "the project's ceiling: tool calls counted by all its sessions together before every one is stopped "
        "(AGENT_STOP), whatever is live; 0 means none (while several sessions are live, max_iterations applies "
        "to each session's own count)",
        minimum=0,
        maximum=MAX_COUNT,
    ),
    Key(
        "session",
        "iteration_warn_at",
        "int",
        160,
        "at this count, one checkpoint request is logged and the agent is told to update PROGRESS.md",
        minimum=0,
        maximum=MAX_COUNT,
    ),
    Key(
        "session",
        "budget_limit",
        "float",
        0.0,
        "cost limit in USD; 0.0 means no limit (spend is still measured)",
        minimum=0.0,
        maximum=1_000_000.0,
    ),
    Key(
        "session",
        "budget_reserve_fraction",
        "float",
        0.10,
        "share of the limit kept for wrap-up work; reserve begins at limit * (1 - fraction)",
        minimum=0.0,
        below=1.0,
    ),
    Key(
        "session",
        "budget_enforcement",
        "enum",
        "stage-boundary",
        "when cost is checked: at stage boundaries only, or never (measure only)",
        choices=vocab.BUDGET_ENFORCEMENTS,
    ),
    Key(
        "session",
        "stop_is_boundary",
        "bool",
        True,
        "the end of an agent turn (Stop hook) counts as a stage boundary for cost checks",
    ),
    Key(
        "session",
        "handoff_stale_hours",
        "float",
        24.0,
        "PROGRESS.md older than this is reported as stale",
        minimum=0.0,
        maximum=8760.0,
    ),
    Key(
        "session",
        "running_stale_hours",
        "float",
        6.0,
        "a `running` status older than this is healed to `exited` at the next SessionStart",
        minimum=0.0,
        maximum=8760.0,
    ),
    Key(
        "session",
        "loop_guard_repeats",
        "int",
        8,
        "the same tool with the same input this many times in a row asks for a checkpoint; "
        "twice as many stops the agent; 0 disables",
        minimum=0,
        maximum=10_000,
    ),
    Key(
        "session",
        "count_failed_tools",
        "bool",
        True,
        "failed tool calls (PostToolUseFailure) count against the iteration cap",
    ),
    # [hooks]
    Key(
        "hooks",
        "lock_timeout_s",
        "float",
        5.0,
        "how long a hook waits for a state lock before spooling its update and moving on",
        minimum=0.05,
        maximum=60.0,
    ),
    Key(
        "hooks",
        "timeout_s",
        "int",
        10,
        "timeout written into runtime hook settings by `cocoplus install` "
        "(the turn-end and permission hooks get their waits on top); "
        "each hook keeps to the timeout it was installed with: re-run install after changing it "
        "(`cocoplus doctor` says when)",
        minimum=1,
        maximum=600,
    ),
    # [ctx]
    Key(
        "ctx",
        "enabled",
        "bool",
        True,
        "read `cortex ctx show all` as a supplement to PROGRESS.md when cortex is on PATH",
    ),
    Key("ctx", "command", "str", "cortex", "the ctx executable to run", names_program=True),
    Key("ctx", "timeout_s", "float", 3.0, "how long to wait for ctx before skipping it", minimum=0.1, maximum=60.0),
    # [chat]
    Key(
        "chat",
        "controller",
        "str",
        "",
        "name of the [accounts.NAME] table that runs the master agent; empty: the only account, else none",
    ),
    Key(
        "chat",
        "default_model",
        "str",
        "",
        "system default model when neither the conversation nor the controller account names one",
    ),
    Key("chat", "default_effort", "enum", "medium", "system default reasoning effort", choices=vocab.EFFORTS),
    Key(
        "chat",
        "reply_timeout_s",
        "float",
        600.0,
        "a backend that takes longer than this fails the task",
        minimum=1.0,
        maximum=DAY,
    ),
    # [supervision]
    Key(
        "supervision",
        "max_turns",
        "int",
        60,
        "default turn cap for a supervision run (each round costs a turn)",
        minimum=1,
        maximum=10_000,
    ),
    Key(
        "supervision",
        "quiet_window_s",
        "float",
        2.0,
        "triggers are merged until this long passes without a new one",
        minimum=0.0,
        maximum=3600.0,
    ),
    Key(
        "supervision",
        "max_wait_s",
        "float",
        10.0,
        "a steady stream of triggers still starts a round after this long",
        minimum=0.0,
        maximum=3600.0,
    ),
    Key(
        "supervision",
        "reconcile_s",
        "float",
        30.0,
        "the watcher re-reads all state this often even without file events",
        minimum=0.5,
        maximum=3600.0,
    ),
    Key(
        "supervision",
        "brain_may_merge",
        "bool",
        False,
        "the main brain may merge a worker's branch into the current branch (its MCP tool merge_worker); otherwise "
        "only the operator merges (`cocoplus workers merge`). A branch that changes what runs (a runtime's settings "
        "or hooks, .mcp.json, cocoplus.toml, .cocoplus/) is the operator's to merge even so",
        grants=True,
        env=False,
    ),
    Key("supervision", "auto_supervise", "bool", True, "workflow runs enable supervision when they start"),
    Key(
        "supervision",
        "hold_turn_end_s",
        "int",
        120,
        "a supervised session's turn end waits this long for the main brain's next instruction "
        "(dispatch or answer) before it ends normally; 0 turns holding off. "
        "`cocoplus install` writes the turn-end hook's timeout above it; "
        "a hold longer than the installed timeout allows is cut to fit it, "
        "so re-run install after changing it (`cocoplus doctor` says when)",
        minimum=0,
        maximum=86400,
    ),
    # The seed's environment variables (seed 000), under their own names.
    Key(
        "supervision",
        "restore_ttl_s",
        "float",
        900.0,
        "after a restart of the watcher, enabled supervision is restored only if its last snapshot "
        "is younger than this (and a supervised worker is still active); otherwise it is closed",
        minimum=0.0,
        maximum=WEEK,
        env="JARVIS_SUPERVISION_RESTORE_TTL_S",
    ),
    Key(
        "supervision",
        "stall_watchdog_interval_s",
        "float",
        90.0,
        "how often the stall watchdog looks for supervised workers waiting too long; <= 0 disables it",
        maximum=DAY,
        env="JARVIS_SUPERVISION_STALL_WATCHDOG_INTERVAL_S",
    ),
    Key(
        "supervision",
        "stall_threshold_s",
        "float",
        900.0,
        "a supervised worker left this long in an attention state wakes the main brain (a stall)",
        minimum=0.0,
        maximum=WEEK,
        env="JARVIS_SUPERVISION_STALL_THRESHOLD_S",
    ),
    Key(
        "supervision",
        "stall_cooldown_s",
        "float",
        1800.0,
        "after a stall wake-up, the same worker in the same attention state does not wake it again for this long",
        minimum=0.0,
        maximum=WEEK,
        env="JARVIS_SUPERVISION_STALL_COOLDOWN_S",
    ),
    Key(
        "supervision",
        "stall_watchdog_startup_delay_s",
        "float",
        45.0,
        "the stall watchdog's first look comes this long after the watcher starts",
        minimum=0.0,
        maximum=DAY,
        env="JARVIS_SUPERVISION_STALL_WATCHDOG_STARTUP_DELAY_S",
    ),
    # [permissions]: what a headless worker cocoplus launched may do without asking (docs/authority.md). Rules in
    # Claude Code's syntax (`Bash(pytest *)`, `Edit`), mapped by each adapter to its runtime's tools.
    Key(
        "permissions",
        "allow",
        "argv",
        [],
        "permission rules a launched worker gets without asking, in Claude Code's syntax "
        "(Bash(pytest *), Edit, Read); each runtime's adapter maps them",
        grants=True,
        env=False,
    ),
    Key(
        "permissions",
        "deny",
        "argv",
        [],
        "permission rules always refused to a launched worker (deny wins over allow)",
        grants=True,
        env=False,
    ),
    Key(
        "permissions",
        "brain_may_allow",
        "argv",
        [],
        "rules within which the main brain may answer a worker's permission request with allow "
        "(empty: only the operator allows)",
        grants=True,
        env=False,
    ),
    Key(
        "permissions",
        "wait_s",
        "int",
        600,
        "how long a headless worker's permission request waits for an answer before it is denied; "
        "`cocoplus install` writes the permission hook's timeout above it; "
        "a wait longer than the installed timeout allows is cut to fit it, "
        "so re-run install after changing it (`cocoplus doctor` says when)",
        minimum=1,
        maximum=86400,
    ),
    # [notify]: notifications to the human, sent by the watcher's notifier (never by a hook).
    Key(
        "notify",
        "urls",
        "argv",
        [],
        "where notifications go: apprise URLs (ntfy://, mailto://, slack://, json://, ...); "
        "they say where data is sent",
        sends_data=True,
    ),
    Key("notify", "events", "argv", list(vocab.NOTIFY_EVENTS), "which events are sent", choices=vocab.NOTIFY_EVENTS),
    Key(
        "notify",
        "repeat_after_s",
        "float",
        300.0,
        "one event for one session is sent once; the same again within this window is left out",
        minimum=0.0,
        maximum=DAY,
    ),
    Key(
        "notify",
        "max_per_minute",
        "int",
        10,
        "at most this many notifications a minute to one target; more wait their turn",
        minimum=1,
        maximum=600,
    ),
    Key(
        "notify",
        "forecast_warn_s",
        "float",
        1800.0,
        "warn (event budget_forecast) when the cost budget or the iteration cap is forecast to run out within "
        "this many seconds at the current rate; once per budget and limit; 0: never",
        minimum=0.0,
        maximum=WEEK,
    ),
    # [fleet]: many projects on many machines joined over NATS JetStream (cocoplus/fleet/). The keys that say
    # where data goes, or with which credentials, come into effect only from the user's own configuration
    # or a trusted project file (sends_data).
    Key(
        "fleet",
        "url",
        "str",
        "",
        "NATS server URL(s) of the fleet, e.g. nats://host:4222; "
        "several, separated by commas, for a cluster; empty: no fleet",
        sends_data=True,
    ),
    Key("fleet", "name", "str", "default", "the fleet this project belongs to (A-Z a-z 0-9 _ -)"),
    Key("fleet", "machine", "str", "", "this machine's name in the fleet; empty: the host name"),
    Key("fleet", "project", "str", "", "this project's name in the fleet; empty: the project directory's name"),
    Key("fleet", "user", "str", "", "NATS user name (with password_env)", sends_data=True),
    Key(
        "fleet",
        "password_env",
        "str",
        "",
        "name of the environment variable holding the NATS password",
        sends_data=True,
    ),
    Key("fleet", "token_env", "str", "", "name of the environment variable holding a NATS token", sends_data=True),
    Key("fleet", "creds_file", "str", "", "NATS credentials file (user JWT and NKey seed)", sends_data=True),
    Key("fleet", "nkey_file", "str", "", "file holding a NATS NKey seed", sends_data=True),
    Key("fleet", "tls_ca", "str", "", "CA certificate file to verify the NATS server with (TLS)", sends_data=True),
    Key("fleet", "tls_cert", "str", "", "client certificate file for TLS", sends_data=True),
    Key("fleet", "tls_key", "str", "", "client key file for TLS", sends_data=True),
    Key(
        "fleet",
        "replicas",
        "int",
        0,
        "JetStream replicas of the streams a relay creates; 0: as many servers as the cluster has, at most 3",
        minimum=0,
        maximum=5,
    ),
    Key(
        "fleet",
        "heartbeat_s",
        "float",
        5.0,
        "how often a relay tells the fleet it is alive; one not heard for three beats is shown offline",
        minimum=0.5,
        maximum=3600.0,
    ),
    Key(
        "fleet",
        "ack_wait_s",
        "float",
        10.0,
        "how long fleet commands wait for online machines to acknowledge",
        minimum=0.0,
        maximum=3600.0,
    ),
    Key(
        "fleet",
        "max_command_age_s",
        "float",
        7 * DAY,
        "a fleet command older than this (since the server stored it, or since it says it was sent) "
        "is refused here, not applied; the fleet keeps acknowledgements as long",
        minimum=1.0,
        maximum=30 * DAY,
    ),
    # [workers]: processes started by `cocoplus launch`
    Key(
        "workers",
        "max_parallel",
        "int",
        4,
        "how many launched workers run at once; a launch beyond it waits in the queue and starts when one finishes",
        minimum=1,
        maximum=256,
    ),
    Key(
        "workers",
        "log_max_bytes",
        "int",
        8 * 1024 * 1024,
        "a worker's output log is rotated to output.log.1 past this size (so at most twice this is kept)",
        minimum=64 * 1024,
        maximum=1024 * 1024 * 1024,
    ),
    Key(
        "workers",
        "limit_retry_s",
        "float",
        300.0,
        "a worker paused by its runtime's rate or usage limit, where the runtime gives no reset time, is resumed "
        "this long after the limit (an estimate, shown as one), each further try twice as long after the last, up "
        "to an hour",
        minimum=1.0,
        maximum=DAY,
    ),
    Key(
        "workers",
        "failover",
        "argv",
        [],
        "runtimes a worker paused by its runtime's limit continues in, in this order, when the reset is over "
        "failover_after_s away: the first on PATH and not limited itself takes over from the handoff (a new run of "
        "the same worker); empty: it waits for the reset",
        choices=vocab.LAUNCH_RUNTIMES,
    ),
    Key(
        "workers",
        "failover_after_s",
        "float",
        900.0,
        "a limited worker fails over (failover) only when its limit resets further away than this; a nearer reset "
        "is waited for",
        minimum=0.0,
        maximum=DAY,
    ),
    Key(
        "workers",
        "failover_return",
        "bool",
        False,
        "at the reset, the work of a worker that failed over goes back to its first runtime (its session resumed "
        "with the handoff) once the other runtime's run has ended",
    ),
    Key(
        "workers",
        "worktree",
        "bool",
        False,
        "every launched worker gets a git worktree of its own on a new branch cocoplus/<alias or id> (as `launch "
        "--worktree`); its work is brought back with `workers merge`",
    ),
    Key(
        "workers",
        "worktree_dir",
        "str",
        "",
        "where workers' git worktrees are made (relative to the project, or absolute); empty: .cocoplus/worktrees, "
        "which git ignores",
    ),
    Key(
        "workers",
        "sandbox",
        "enum",
        "none",
        "the operating-system sandbox every launched worker runs in (as `launch --sandbox`): none, or workspace "
        "(bubblewrap: the worker's tree writable, the files that decide what runs and the rest of the system "
        "read-only, secrets hidden), or srt (the same files under Anthropic's sandbox runtime, and the network "
        "held to the runtime's model endpoint); a project's cocoplus.toml may only choose a stronger one than yours",
        choices=vocab.SANDBOX_PROFILES,
        env=False,
    ),
    # [sandbox]: what a sandboxed worker may reach (cocoplus/sandbox/network.py).  Like the profile, never from the
    # environment; a project's cocoplus.toml may narrow it, never widen it.
    Key(
        "sandbox",
        "network",
        "argv",
        ["all"],
        'what a sandboxed worker reaches on the network (as `launch --network`): ["all"]; ["none"] (only its '
        "runtime's model endpoint, through a proxy); or a list of hosts (registry.npmjs.org, *.pypi.org, "
        "example.com:8443) through a proxy, where a host not on it becomes a decision in the inbox; a project's "
        "cocoplus.toml may only narrow yours",
        minimum=1,
        env=False,
    ),
    Key(
        "sandbox",
        "network_wait_s",
        "float",
        300.0,
        "how long a sandboxed worker's connection to a host not on its allow list is held for an answer to the "
        "inbox's decision; then it is refused (the default: deny)",
        minimum=1.0,
        maximum=DAY,
    ),
    Key(
        "sandbox",
        "write_wait_s",
        "float",
        600.0,
        "how long a decision about a write a sandboxed worker's sandbox refused waits for an answer (approved: the "
        "path is writable in that worker's next sandbox); then it is denied (the default)",
        minimum=1.0,
        maximum=DAY,
    ),
    # [inbox]: the phone channels of the decision inbox (`cocoplus inbox run`).  Where pushes carrying one-tap
    # answers go is this user's alone: these keys are read from the user's own file only (user_only), never from a
    # project's cocoplus.toml, trusted or not, and never from the environment.
    _inbox(
        "channels",
        "argv",
        [],
        "the phone channels `cocoplus inbox run` pushes each open decision to, in order: the first that accepts it "
        "carries it, the next one gets it when one does not accept within escalate_after_s; empty: no pushes",
        choices=vocab.INBOX_CHANNELS,
    ),
    _inbox(
        "ntfy_server",
        "str",
        "https://ntfy.sh",
        "the ntfy server (ntfy.sh or one of your own); https:// unless it is on this machine",
    ),  # fmt: skip
    _inbox(
        "ntfy_topic",
        "str",
        "",
        "the ntfy topic the pushes go to (subscribe to it in the ntfy app); empty: an unguessable one is made and "
        "kept, and `cocoplus inbox` shows it",
    ),
    _inbox(
        "ntfy_token",
        "str",
        "",
        "an ntfy access token (tk_...) for publishing, on a server with access control",
        secret=True,
    ),  # fmt: skip
    _inbox(
        "ntfy_reply_topic",
        "str",
        "",
        "the ntfy topic the push's buttons post their answer to, which `cocoplus inbox run` subscribes to; empty: an "
        "unguessable one is made and kept",
    ),
    _inbox(
        "ntfy_reply_token",
        "str",
        "",
        "an ntfy access token the buttons post with (it travels in every push: give it write access to the reply "
        "topic only); empty: none",
        secret=True,
    ),
    _inbox("telegram_token", "str", "", "the Telegram bot token BotFather gave your bot", secret=True),
    _inbox("telegram_chat", "str", "", "the id of your chat with the bot (a number): only taps from it answer"),
    _inbox("telegram_api", "str", "https://api.telegram.org", "the Telegram Bot API server"),
    _inbox(
        "presence_s",
        "float",
        120.0,
        "no push while you are at the machine: a key pressed in `cocoplus top` or on the page (or presence_file "
        "touched) within this many seconds; 0: always push",
        minimum=0.0,
        maximum=DAY,
    ),
    _inbox(
        "presence_file",
        "str",
        "",
        "a file whose modification time says you are at the machine (as Claude Code's CLAUDE_CLIENT_PRESENCE_FILE); "
        "empty: none",
    ),
    _inbox(
        "escalate_after_s",
        "float",
        60.0,
        "a channel that has not accepted a decision's push within this many seconds hands it to the next channel",
        minimum=1.0,
        maximum=DAY,
    ),
    _inbox(
        "page_url",
        "str",
        "",
        "the base URL the push's Open button leads to (the decision page at <page_url>/inbox/d/<id>, e.g. the "
        "address `cocoplus serve --public` gives); empty: no Open button",
    ),
    # [telemetry]: the timeline sent as OpenTelemetry traces (OTLP over HTTP/protobuf) by `cocoplus telemetry
    # export`, the supervisor or the server. The standard OTEL_EXPORTER_OTLP_* variables of the exporting process
    # win where set; where the traces go, and with which credentials, needs trust in a project's file (sends_data).
    Key(
        "telemetry",
        "endpoint",
        "str",
        "",
        "the OTLP/HTTP endpoint traces are sent to (a base URL such as http://localhost:4318, to which /v1/traces is "
        "added, or a URL ending in /v1/traces); empty: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or "
        "OTEL_EXPORTER_OTLP_ENDPOINT of the exporting process, else no export",
        sends_data=True,
    ),
    Key(
        "telemetry",
        "headers",
        "str",
        "",
        "headers sent with every export, written as OTEL_EXPORTER_OTLP_HEADERS is (name=value pairs separated by "
        "commas, values URL-encoded: Authorization=Bearer%20...); OTEL_EXPORTER_OTLP_TRACES_HEADERS or "
        "OTEL_EXPORTER_OTLP_HEADERS win where set",
        sends_data=True,
        secret=True,
    ),
    Key(
        "telemetry",
        "interval_s",
        "float",
        5.0,
        "the batch interval: how often the exporter sends the spans that ended since, and how soon a failed export "
        "shows in doctor, top and the page",
        minimum=0.05,
        maximum=3600.0,
    ),
    Key(
        "telemetry",
        "log_content",
        "bool",
        False,
        "put tool calls' inputs, goals and decisions' texts into the spans (redacted of secrets either way); off: "
        "names, ids, outcomes and counts only",
    ),
)

BY_DOTTED: dict[str, Key] = {k.dotted: k for k in KEYS}
SECTIONS: tuple[str, ...] = tuple(dict.fromkeys(k.section for k in KEYS))


def _price(name: str, what: str, required: bool = False) -> Key:
    return Key(
        "pricing", name, "float", None, f"USD per million {what}", minimum=0.0, maximum=10_000.0, env=False,
        required=required,
    )  # fmt: skip


def _account(name: str, kind: str, help: str, **rules: Any) -> Key:
    """A field of `[accounts.NAME]`: no default, no environment variable."""
    return Key("accounts", name, kind, None, help, env=False, **rules)


TABLES: tuple[Table, ...] = (
    Table(
        "pricing",
        '"model"',
        "prices for models the bundled price table does not know, in USD per million tokens; "
        "they win over the bundled table",
        (
            _price("input", "input tokens", required=True),
            _price("output", "output tokens", required=True),
            _price("cache_read", "tokens read from the prompt cache"),
            _price("cache_write", "tokens written to the prompt cache (5-minute writes)"),
            _price("cache_write_1h", "tokens written to the 1-hour prompt cache"),
        ),
        ids=False,
    ),
    Table(
        "accounts",
        "NAME",
        "accounts that can run the master agent; [chat] controller picks one",
        (
            _account(
                "kind",
                "enum",
                "the backend: claude (Claude Code CLI in print mode), codex (`codex exec`), openai (an "
                "OpenAI-compatible Responses endpoint), command (any program: the prompt on stdin, "
                "the reply on stdout)",
                choices=vocab.ACCOUNT_KINDS,
                required=True,
            ),
            _account(
                "command",
                "argv",
                'argv of the program; "{model}" and "{effort}" are filled in',
                minimum=1,
                required_when=("kind", "command"),
                names_program=True,
            ),
            _account("binary", "str", "path of the CLI to run (claude, codex)", names_program=True),
            _account("base_url", "str", "the OpenAI-compatible endpoint (openai)", sends_data=True),
            # Which of the user's secrets is sent to the endpoint: a repo must not pick it.
            _account(
                "api_key_env", "str", "name of the environment variable holding the API key (openai)", sends_data=True
            ),
            _account("default_model", "str", "model used when the conversation sets none"),
            _account(
                "default_reasoning_effort",
                "enum",
                "reasoning effort used when the conversation sets none",
                choices=vocab.EFFORTS,
            ),
            _account(
                "timeout_s",
                "float",
                "a reply that takes longer fails (default: [chat] reply_timeout_s)",
                minimum=1.0,
                maximum=DAY,
            ),
        ),
        ids=True,
    ),
)
TABLES_BY_SECTION: dict[str, Table] = {t.section: t for t in TABLES}
# Kept for callers that ask which sections hold named entries.
OPEN_SECTIONS: tuple[str, ...] = tuple(TABLES_BY_SECTION)
