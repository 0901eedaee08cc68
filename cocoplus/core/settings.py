"""Every configuration key: its type, default, bounds, environment variable and meaning.

Standard library only.  Two kinds of section:

* fixed sections (`[session]`, `[hooks]`, ...): the keys in `KEYS`, each with
  a default and an environment override (`COCOPLUS_<SECTION>_<KEY>`, or the
  name a seed fixed, such as `JARVIS_SUPERVISION_RESTORE_TTL_S`);
* tables of named entries (`[accounts.NAME]`, `[pricing."model"]`): the
  fields in `TABLES`, declared as Keys too, with no default and no
  environment variable.

Every value, from a file or from the environment, is checked by
`Key.coerce`, and every error is one line naming where the value came from,
the key, what was expected and what was found.  `cocoplus.config` reads
cocoplus.toml against these tables; the hook reads the flat copy the CLI
compiles (`hook-config.json`) plus the environment overrides, using the same
coercion, so both always agree on what a value means.

A Key also says whether its value names a program to run (`names_program`)
or a place data is sent to (`sends_data`).  Such a key needs trust
(`Key.needs_trust`): its value comes into effect only from the user's own
configuration file, the environment, or a project file the user has
trusted (`cocoplus trust`; docs/guides/configuration.md).  Declaring the flag is all a
new key has to do: loading (`cocoplus.config`), `config show`, `cocoplus
trust` and `config example` follow it.
"""

from __future__ import annotations

import os

from cocoplus.core import vocab
from cocoplus.core.errors import ConfigInvalid
from cocoplus.core.paths import is_valid_id

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Mapping
    from typing import Any


ENV_PREFIX = "COCOPLUS_"
KINDS = ("int", "float", "bool", "str", "enum", "argv")


class Key:
    __slots__ = (
        "section",
        "name",
        "kind",
        "default",
        "help",
        "minimum",
        "maximum",
        "below",
        "choices",
        "env",
        "required",
        "required_when",
        "names_program",
        "sends_data",
        "grants",
    )

    def __init__(
        self,
        section: str,
        name: str,
        kind: str,
        default: Any,
        help: str,
        *,
        minimum: float | None = None,
        maximum: float | None = None,
        below: float | None = None,
        choices: tuple[str, ...] | None = None,
        env: str | bool = True,
        required: bool = False,
        required_when: tuple[str, str] | None = None,
        names_program: bool = False,
        sends_data: bool = False,
        grants: bool = False,
    ) -> None:
        """`env`: True for `COCOPLUS_<SECTION>_<KEY>`, a string for another name, False for none.

        `minimum` of an `argv` key is the least number of items; its `choices`, what each item may be.
        `required` / `required_when=(field, value)` apply to table fields.
        """
        if kind not in KINDS:
            raise ValueError(kind)
        self.section = section
        self.name = name
        self.kind = kind
        self.default = default
        self.help = help
        self.minimum = minimum
        self.maximum = maximum
        self.below = below
        self.choices = choices
        if env is True:
            self.env: str | None = f"{ENV_PREFIX}{section.upper()}_{name.upper()}"
        else:
            self.env = env or None
        self.required = required
        self.required_when = required_when
        self.names_program = names_program
        self.sends_data = sends_data
        self.grants = grants  # grants authority (docs/authority.md): permission rules, what the brain may do

    @property
    def dotted(self) -> str:
        return f"{self.section}.{self.name}"

    @property
    def needs_trust(self) -> bool:
        """From a project file, this value applies only once the user trusts the file."""
        return self.names_program or self.sends_data or self.grants

    def trust_reason(self) -> str:
        """What the value would do, in words: `runs a program`, `sends data`, `grants authority`."""
        what = [
            w
            for w, on in (
                ("runs a program", self.names_program),
                ("sends data", self.sends_data),
                ("grants authority", self.grants),
            )
            if on
        ]
        return " and ".join(what)

    def expected(self) -> str:
        if self.kind == "bool":
            return "true or false"
        if self.kind == "enum":
            return "one of " + ", ".join(f'"{c}"' for c in self.choices or ())
        if self.kind == "argv" and self.choices is not None:
            return "a list of " + ", ".join(f'"{c}"' for c in self.choices)
        if self.kind == "argv":
            return "a non-empty list of strings" if self.minimum else "a list of strings"
        if self.kind == "str":
            return "a string"
        text = "an integer" if self.kind == "int" else "a number"
        parts = []
        if self.minimum is not None:
            parts.append(f">= {_num(self.minimum)}")
        if self.below is not None:
            parts.append(f"< {_num(self.below)}")
        if self.maximum is not None:
            parts.append(f"<= {_num(self.maximum)}")
        return text + (" " + " and ".join(parts) if parts else "")

    def coerce(self, value: Any, where: str, label: str | None = None) -> Any:
        """Check a value read from TOML (already typed) and return it normalised.

        `where` names the source (a file, `environment NAME`); `label` the
        section as the user wrote it (default `[section]`).
        """
        if not self.accepts(value):
            raise ConfigInvalid(
                f"{where}: {label or '[' + self.section + ']'} {self.name}: expected {self.expected()}, "
                f"got {_show(value)}"
            )
        if self.kind == "float":
            return float(value)
        if self.kind == "argv":
            return list(value)
        return value

    def accepts(self, value: Any) -> bool:
        """Whether a typed value has the right type and lies within the bounds."""
        k = self.kind
        if k == "bool":
            return isinstance(value, bool)
        if k == "enum":
            return isinstance(value, str) and value in (self.choices or ())
        if k == "str":
            return isinstance(value, str)
        if k == "argv":
            return (
                isinstance(value, list)
                and all(isinstance(x, str) for x in value)
                and len(value) >= (self.minimum or 0)
                and (self.choices is None or all(x in self.choices for x in value))
            )
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if k == "int" and not isinstance(value, int):
            return False
        if k == "float":
            try:
                value = float(value)
            except OverflowError:  # an integer beyond any float
                return False
            if value != value or value in (float("inf"), float("-inf")):
                return False
        if self.minimum is not None and value < self.minimum:
            return False
        if self.maximum is not None and value > self.maximum:
            return False
        if self.below is not None and value >= self.below:
            return False
        return True

    def parse_env(self, text: str) -> Any:
        """Turn an environment variable's text into a value, then check it."""
        where = f"environment {self.env}"
        k = self.kind
        value: Any = text
        try:
            if k == "int":
                value = int(text.strip())
            elif k == "float":
                value = float(text.strip())
            elif k == "bool":
                low = text.strip().lower()
                if low in ("1", "true", "yes", "on"):
                    value = True
                elif low in ("0", "false", "no", "off"):
                    value = False
                else:
                    raise ValueError(text)
            elif k == "argv":
                import shlex  # deferred: shlex loads re, which hooks avoid; only an argv value needs it

                value = shlex.split(text)
        except ValueError:
            value = None
        if value is None or not self.accepts(value):
            raise ConfigInvalid(f"{where}: [{self.section}] {self.name}: expected {self.expected()}, got {_show(text)}")
        return self.coerce(value, where)


class Table:
    """A section of named entries, `[section.NAME]`, each checked against `fields`."""

    __slots__ = ("section", "entry", "help", "fields", "ids")

    def __init__(self, section: str, entry: str, help: str, fields: tuple[Key, ...], *, ids: bool) -> None:
        """`entry`: how the name is written in docs; `ids`: names must pass the id allow-list."""
        self.section = section
        self.entry = entry
        self.help = help
        self.fields = fields
        self.ids = ids

    def field(self, name: str) -> Key | None:
        for f in self.fields:
            if f.name == name:
                return f
        return None

    def label(self, name: str) -> str:
        if self.ids and _bare(name):
            return f"[{self.section}.{name}]"
        return f"[{self.section}.{_quote(name)}]"


# Bounds: wide enough for any real run, narrow enough that a typo (or a number
# no run can reach) is refused rather than quietly turning a limit off.
DAY = 86400.0
WEEK = 7 * DAY
MAX_COUNT = 1_000_000

KEYS: tuple[Key, ...] = (
    # [session]: the seed's keys and defaults, then cocoplus' own.
    Key(
        "session",
        "max_iterations",
        "int",
        200,
        "iteration cap: tool calls counted by PostToolUse before the agent is stopped",
        minimum=1,
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
)

BY_DOTTED: dict[str, Key] = {k.dotted: k for k in KEYS}
SECTIONS: tuple[str, ...] = tuple(dict.fromkeys(k.section for k in KEYS))


def _price(name: str, what: str, required: bool = False) -> Key:
    return Key(
        "pricing",
        name,
        "float",
        None,
        f"USD per million {what}",
        minimum=0.0,
        maximum=10_000.0,
        env=False,
        required=required,
    )


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
            Key(
                "accounts",
                "kind",
                "enum",
                None,
                "the backend: claude (Claude Code CLI in print mode), codex (`codex exec`), openai (an "
                "OpenAI-compatible Responses endpoint), command (any program: the prompt on stdin, "
                "the reply on stdout)",
                choices=vocab.ACCOUNT_KINDS,
                env=False,
                required=True,
            ),
            Key(
                "accounts",
                "command",
                "argv",
                None,
                'argv of the program; "{model}" and "{effort}" are filled in',
                minimum=1,
                env=False,
                required_when=("kind", "command"),
                names_program=True,
            ),
            Key(
                "accounts",
                "binary",
                "str",
                None,
                "path of the CLI to run (claude, codex)",
                env=False,
                names_program=True,
            ),
            Key(
                "accounts",
                "base_url",
                "str",
                None,
                "the OpenAI-compatible endpoint (openai)",
                env=False,
                sends_data=True,
            ),
            # Which of the user's secrets is sent to the endpoint: a repo must not pick it.
            Key(
                "accounts",
                "api_key_env",
                "str",
                None,
                "name of the environment variable holding the API key (openai)",
                env=False,
                sends_data=True,
            ),
            Key("accounts", "default_model", "str", None, "model used when the conversation sets none", env=False),
            Key(
                "accounts",
                "default_reasoning_effort",
                "enum",
                None,
                "reasoning effort used when the conversation sets none",
                choices=vocab.EFFORTS,
                env=False,
            ),
            Key(
                "accounts",
                "timeout_s",
                "float",
                None,
                "a reply that takes longer fails (default: [chat] reply_timeout_s)",
                minimum=1.0,
                maximum=DAY,
                env=False,
            ),
        ),
        ids=True,
    ),
)
TABLES_BY_SECTION: dict[str, Table] = {t.section: t for t in TABLES}
# Kept for callers that ask which sections hold named entries.
OPEN_SECTIONS: tuple[str, ...] = tuple(TABLES_BY_SECTION)


def defaults() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {s: {} for s in SECTIONS}
    for k in KEYS:
        out[k.section][k.name] = k.default
    return out


# -- checking what a file says ------------------------------------------------------


def check_document(
    data: dict[str, Any], where: str
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, dict[str, Any]]]]:
    """A parsed TOML document: (fixed-section values it sets, table entries it defines), all checked."""
    values: dict[str, dict[str, Any]] = {}
    tables: dict[str, dict[str, dict[str, Any]]] = {}
    for section, body in data.items():
        table = TABLES_BY_SECTION.get(section)
        if table is not None:
            tables[section] = check_table(table, body, where)
        elif section in SECTIONS:
            values[section] = check_section(section, body, where)
        else:
            raise ConfigInvalid(_unknown_section(section, body, where))
    return values, tables


def check_section(section: str, body: Any, where: str) -> dict[str, Any]:
    label = f"[{section}]"
    if not isinstance(body, dict):
        raise ConfigInvalid(f"{where}: {label}: expected a table, got {_show(body)}")
    known = [k for k in KEYS if k.section == section]
    out: dict[str, Any] = {}
    for name, value in body.items():
        key = BY_DOTTED.get(f"{section}.{name}")
        if key is None:
            raise ConfigInvalid(_unknown_key(where, label, name, known))
        out[name] = key.coerce(value, where, label)
    return out


def check_table(table: Table, body: Any, where: str) -> dict[str, dict[str, Any]]:
    if not isinstance(body, dict):
        raise ConfigInvalid(
            f"{where}: [{table.section}]: expected tables [{table.section}.{table.entry}], got {_show(body)}"
        )
    out: dict[str, dict[str, Any]] = {}
    for name, entry in body.items():
        out[name] = check_entry(table, name, entry, where)
    return out


def check_entry(table: Table, name: str, entry: Any, where: str) -> dict[str, Any]:
    label = table.label(name)
    if table.ids:
        if not is_valid_id(name):
            raise ConfigInvalid(
                f"{where}: {label}: names in [{table.section}] use A-Z a-z 0-9 _ - . (1-128 characters, no ..)"
            )
    elif not name.strip():
        raise ConfigInvalid(f"{where}: {label}: the name is empty")
    if not isinstance(entry, dict):
        raise ConfigInvalid(f"{where}: {label}: expected a table ({table.help}), got {_show(entry)}")
    out: dict[str, Any] = {}
    for field, value in entry.items():
        key = table.field(field)
        if key is None:
            raise ConfigInvalid(_unknown_key(where, label, field, table.fields))
        out[field] = key.coerce(value, where, label)
    for key in table.fields:
        if key.name in out:
            continue
        if key.required:
            raise ConfigInvalid(f"{where}: {label} {key.name}: missing (expected {key.expected()})")
        if key.required_when is not None and out.get(key.required_when[0]) == key.required_when[1]:
            other, value = key.required_when
            raise ConfigInvalid(
                f'{where}: {label} {key.name}: missing (needed when {other} = "{value}"; expected {key.expected()})'
            )
    return out


def _unknown_key(where: str, label: str, name: str, known: Any) -> str:
    names = ", ".join(k.name for k in known)
    return f"{where}: {label} unknown key {_quote(name)} (known: {names})"


def _unknown_section(section: str, body: Any, where: str) -> str:
    known = ", ".join(f"[{s}]" for s in (*SECTIONS, *OPEN_SECTIONS))
    if not isinstance(body, dict):
        homes = [k.section for k in KEYS if k.name == section]
        home = f"; it belongs under [{homes[0]}]" if homes else ""
        return f"{where}: {_quote(section)} is outside any section{home} (sections: {known})"
    return f"{where}: unknown section [{_quote(section) if not _bare(section) else section}] (known: {known})"


# -- keys that need trust ----------------------------------------------------------


def needing_trust(
    values: dict[str, dict[str, Any]], tables: dict[str, dict[str, dict[str, Any]]]
) -> list[dict[str, Any]]:
    """The values of one checked document (`check_document`) that need trust, in file order.

    Each is `{"key", "label", "value", "what"}`: `key` is `section.name` for
    a fixed key or `section.ENTRY.field` for a table field, `label` how the
    file spells it (`[ctx] command`, `[accounts.x] command`), `what` what the
    value does (`runs a program`, `sends data`).
    """
    found: list[dict[str, Any]] = []
    for section, body in values.items():
        for name, value in body.items():
            key = BY_DOTTED[f"{section}.{name}"]
            if key.needs_trust:
                found.append(
                    {"key": key.dotted, "label": f"[{section}] {name}", "value": value, "what": key.trust_reason()}
                )
    for section, entries in tables.items():
        table = TABLES_BY_SECTION[section]
        for entry_name, entry in entries.items():
            for field_name, value in entry.items():
                field = table.field(field_name)
                if field is not None and field.needs_trust:
                    found.append(
                        {
                            "key": f"{section}.{entry_name}.{field_name}",
                            "label": f"{table.label(entry_name)} {field_name}",
                            "value": value,
                            "what": field.trust_reason(),
                        }
                    )
    return found


def names_program(key: str) -> bool:
    """Whether the value at `key` names a program to run.

    `key` is `ctx.command`, or `accounts.NAME.command` for a table field."""
    parts = key.split(".")
    if len(parts) == 2:
        found = BY_DOTTED.get(key)
    else:
        table = TABLES_BY_SECTION.get(parts[0])
        found = table.field(parts[-1]) if table is not None else None
    return found is not None and found.names_program


def incomplete(table: Table, entry: dict[str, Any]) -> str | None:
    """The first required field an entry lacks (its name), None when it has them all."""
    for key in table.fields:
        if key.name in entry:
            continue
        if key.required or (key.required_when is not None and entry.get(key.required_when[0]) == key.required_when[1]):
            return key.name
    return None


# -- relations between keys ---------------------------------------------------------


def derive(values: dict[str, dict[str, Any]], explicit: set[str]) -> str | None:
    """Fill in values that follow others when the user did not set them.

    `iteration_warn_at` left at its default follows a lowered cap: 80% of
    `max_iterations`.  Returns a note saying what was derived, if anything.
    """
    s = values["session"]
    if "session.iteration_warn_at" not in explicit and s["iteration_warn_at"] > s["max_iterations"]:
        s["iteration_warn_at"] = s["max_iterations"] * 4 // 5
        return "derived (80% of max_iterations)"
    return None


def check_relations(values: dict[str, dict[str, Any]], where: str) -> None:
    s = values["session"]
    if s["iteration_warn_at"] > s["max_iterations"]:
        raise ConfigInvalid(
            f"{where}: [session] iteration_warn_at: expected an integer <= max_iterations "
            f"({s['max_iterations']}), got {s['iteration_warn_at']}"
        )


# -- the environment ----------------------------------------------------------------


def env_overrides(
    environ: Mapping[str, str] | None = None, errors: list[str] | None = None
) -> dict[str, tuple[Key, Any]]:
    """Environment overrides present (`COCOPLUS_<SECTION>_<KEY>`, or a key's own name), checked.

    With `errors`, a bad variable is reported there and skipped (the others
    still apply); without it, the first bad one raises ConfigInvalid.
    """
    env = os.environ if environ is None else environ
    out: dict[str, tuple[Key, Any]] = {}
    for k in KEYS:
        raw = env.get(k.env) if k.env else None
        if raw is None:
            continue
        try:
            out[k.dotted] = (k, k.parse_env(raw))
        except ConfigInvalid as exc:
            if errors is None:
                raise
            errors.append(str(exc))
    return out


# -- showing values -----------------------------------------------------------------


def toml_value(value: Any) -> str:
    """A value as it is written in TOML (`true`, `"stage-boundary"`, `0.1`, `["a", "b"]`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, float):
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    return _quote(str(value))


def _show(value: Any) -> str:
    """A value found where another was expected: short, one line."""
    if isinstance(value, dict):
        text = "a table"
    elif isinstance(value, list) and not all(isinstance(v, (str, int, float)) for v in value):
        text = "an array"
    else:
        text = toml_value(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _num(x: float) -> str:
    if float(x).is_integer() and abs(x) < 1e15:
        return str(int(x))
    return repr(float(x))


_BARE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _bare(name: str) -> bool:
    return bool(name) and all(c in _BARE for c in name)


def _key(name: str) -> str:
    return name if _bare(name) else _quote(name)


_BIDI_AND_SEPARATORS = vocab.BIDI_CONTROLS + "\u2028\u2029"


def _quote(text: str) -> str:
    """A TOML basic string: control characters (C0, DEL, C1), bidi controls and line separators escaped,
    so a message stays on one line and a terminal showing it acts on nothing."""
    out = ['"']
    for c in text:
        if c == '"' or c == "\\":
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif c == "\r":
            out.append("\\r")
        elif ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or 0xD800 <= ord(c) <= 0xDFFF or c in _BIDI_AND_SEPARATORS:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)
