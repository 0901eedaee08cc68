"""Every fixed configuration key: its type, default, range and meaning.

Standard library only.  `cocoplus.config` reads cocoplus.toml against this
table; the hook reads the flat copy the CLI compiles (`hook-config.json`)
plus `COCOPLUS_<SECTION>_<KEY>` environment overrides, using the same
coercion, so both always agree on what a value means.
"""

from __future__ import annotations

import os

from cocoplus.core.errors import ConfigInvalid

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any


ENV_PREFIX = "COCOPLUS_"


class Key:
    __slots__ = ("section", "name", "kind", "default", "minimum", "maximum", "below", "choices", "help")

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
    ) -> None:
        self.section = section
        self.name = name
        self.kind = kind  # int | float | bool | str | enum | argv
        self.default = default
        self.minimum = minimum
        self.maximum = maximum
        self.below = below
        self.choices = choices
        self.help = help

    @property
    def dotted(self) -> str:
        return f"{self.section}.{self.name}"

    @property
    def env(self) -> str:
        return f"{ENV_PREFIX}{self.section.upper()}_{self.name.upper()}"

    def expected(self) -> str:
        if self.kind == "int":
            text = "an integer"
        elif self.kind == "float":
            text = "a number"
        elif self.kind == "bool":
            return "true or false"
        elif self.kind == "enum":
            return "one of " + ", ".join(f'"{c}"' for c in self.choices or ())
        elif self.kind == "argv":
            return "a list of strings"
        else:
            return "a string"
        parts = []
        if self.minimum is not None:
            parts.append(f">= {self.minimum:g}")
        if self.below is not None:
            parts.append(f"< {self.below:g}")
        if self.maximum is not None:
            parts.append(f"<= {self.maximum:g}")
        return text + (" " + " and ".join(parts) if parts else "")

    def coerce(self, value: Any, where: str) -> Any:
        """Check a value read from TOML (already typed) and return it normalised."""
        bad = ConfigInvalid(
            f"{where}: [{self.section}] {self.name}: expected {self.expected()}, got {_show(value)}"
        )
        k = self.kind
        if k == "bool":
            if not isinstance(value, bool):
                raise bad
            return value
        if k == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                raise bad
        elif k == "float":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise bad
            value = float(value)
            if value != value or value in (float("inf"), float("-inf")):
                raise bad
        elif k == "enum":
            if value not in (self.choices or ()):
                raise bad
            return value
        elif k == "argv":
            if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
                raise bad
            return list(value)
        else:
            if not isinstance(value, str):
                raise bad
            return value
        if self.minimum is not None and value < self.minimum:
            raise bad
        if self.maximum is not None and value > self.maximum:
            raise bad
        if self.below is not None and value >= self.below:
            raise bad
        return value

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
                import shlex

                value = shlex.split(text)
        except ValueError:
            raise ConfigInvalid(
                f"{where}: [{self.section}] {self.name}: expected {self.expected()}, got {_show(text)}"
            ) from None
        return self.coerce(value, where)


KEYS: tuple[Key, ...] = (
    # [session]: the seed's keys and defaults, then cocoplus' own.
    Key("session", "max_iterations", "int", 200, "iteration cap: tool calls counted by PostToolUse before the agent is stopped", minimum=1),
    Key("session", "iteration_warn_at", "int", 160, "at this count, one checkpoint request is logged and the agent is told to update PROGRESS.md", minimum=0),
    Key("session", "budget_limit", "float", 0.0, "cost limit in USD; 0.0 means no limit (spend is still measured)", minimum=0.0),
    Key("session", "budget_reserve_fraction", "float", 0.10, "share of the limit kept for wrap-up work; reserve begins at limit * (1 - fraction)", minimum=0.0, below=1.0),
    Key("session", "budget_enforcement", "enum", "stage-boundary", "when cost is checked: at stage boundaries only, or never (measure only)", choices=("stage-boundary", "off")),
    Key("session", "stop_is_boundary", "bool", True, "the end of an agent turn (Stop hook) counts as a stage boundary for cost checks"),
    Key("session", "handoff_stale_hours", "float", 24.0, "PROGRESS.md older than this is reported as stale", minimum=0.0),
    Key("session", "running_stale_hours", "float", 6.0, "a `running` status older than this is healed to `exited` at the next SessionStart", minimum=0.0),
    Key("session", "loop_guard_repeats", "int", 8, "the same tool with the same input this many times in a row asks for a checkpoint; twice as many stops the agent; 0 disables", minimum=0),
    Key("session", "count_failed_tools", "bool", True, "failed tool calls (PostToolUseFailure) count against the iteration cap"),
    # [hooks]
    Key("hooks", "lock_timeout_s", "float", 5.0, "how long a hook waits for a state lock before spooling its update and moving on", minimum=0.05, maximum=60.0),
    Key("hooks", "timeout_s", "int", 10, "timeout written into runtime hook settings by `cocoplus install`", minimum=1, maximum=600),
    # [ctx]
    Key("ctx", "enabled", "bool", True, "read `cortex ctx show all` as a supplement to PROGRESS.md when cortex is on PATH"),
    Key("ctx", "command", "str", "cortex", "the ctx executable to run"),
    Key("ctx", "timeout_s", "float", 3.0, "how long to wait for ctx before skipping it", minimum=0.1, maximum=60.0),
    # [chat]
    Key("chat", "controller", "str", "", "name of the [accounts.NAME] table that runs the master agent; empty: the first account, else none"),
    Key("chat", "default_model", "str", "", "system default model when neither the conversation nor the controller account names one"),
    Key("chat", "default_effort", "enum", "medium", "system default reasoning effort", choices=("low", "medium", "high")),
    Key("chat", "reply_timeout_s", "float", 600.0, "a backend that takes longer than this fails the task", minimum=1.0),
    # [supervision]
    Key("supervision", "max_turns", "int", 60, "default turn cap for a supervision run", minimum=1),
    Key("supervision", "quiet_window_s", "float", 2.0, "triggers are merged until this long passes without a new one", minimum=0.0),
    Key("supervision", "max_wait_s", "float", 10.0, "a steady stream of triggers still starts a round after this long", minimum=0.0),
    Key("supervision", "reconcile_s", "float", 30.0, "the watcher re-reads all state this often even without file events", minimum=0.5),
    Key("supervision", "auto_supervise", "bool", True, "workflow runs enable supervision when they start"),
)

BY_DOTTED: dict[str, Key] = {k.dotted: k for k in KEYS}
SECTIONS: tuple[str, ...] = tuple(dict.fromkeys(k.section for k in KEYS))
# Sections whose contents are free-form tables, checked by cocoplus.config.
OPEN_SECTIONS = ("pricing", "accounts")


def defaults() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {s: {} for s in SECTIONS}
    for k in KEYS:
        out[k.section][k.name] = k.default
    return out


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


def env_overrides(environ: dict[str, str] | None = None, errors: list[str] | None = None) -> dict[str, tuple[Key, Any]]:
    """`COCOPLUS_<SECTION>_<KEY>` values present in the environment, checked.

    With `errors`, a bad variable is reported there and skipped (the others
    still apply); without it, the first bad one raises ConfigInvalid.
    """
    env = os.environ if environ is None else environ
    out: dict[str, tuple[Key, Any]] = {}
    for k in KEYS:
        raw = env.get(k.env)
        if raw is None:
            continue
        try:
            out[k.dotted] = (k, k.parse_env(raw))
        except ConfigInvalid as exc:
            if errors is None:
                raise
            errors.append(str(exc))
    return out


def _show(value: Any) -> str:
    if isinstance(value, str):
        text = '"' + value + '"'
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, dict):
        text = "a table"
    elif isinstance(value, list):
        text = "an array"
    else:
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
