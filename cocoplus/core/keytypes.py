"""What a configuration key is (`Key`: its section, type, default, bounds, environment variable, meaning, and
whether it needs trust), what a table of named entries is (`Table`), and a value written as TOML text.

Standard library only.  A Key checks one value, from a file or from the
environment (`coerce`, `parse_env`), and every error is one line naming
where the value came from, the key, what was expected and what was found.
The keys themselves are declared in `core/keys.py`; documents and the
environment are checked against them by `core/settings.py`.

A Key also says whether its value names a program to run (`names_program`),
a place data is sent to (`sends_data`) or grants authority (`grants`).  Such
a key needs trust (`Key.needs_trust`): its value comes into effect only from
the user's own configuration file, the environment, or a project file the
user has trusted (`cocoplus trust`; docs/guides/configuration.md).  Declaring
the flag is all a new key has to do: loading (`cocoplus.config`), `config
show`, `cocoplus trust` and `config example` follow it.
"""

from __future__ import annotations

from cocoplus.core import vocab
from cocoplus.core.errors import ConfigInvalid

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
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
        "user_only",
        "secret",
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
        user_only: bool = False,
        secret: bool = False,
    ) -> None:
        """`env`: True for `COCOPLUS_<SECTION>_<KEY>`, a string for another name, False for none.

        `minimum` of an `argv` key is the least number of items; its `choices`, what each item may be.
        `required` / `required_when=(field, value)` apply to table fields.
        `user_only`: read from the user's own configuration file only, never from a project's (trusted or not) and
        never from the environment: where the phone channels' pushes go, which carry answers.  `secret`: shown as
        set or not, never its value (`config show`).
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
        self.user_only = user_only
        self.secret = secret
        if user_only and env is True:
            self.env = None  # a user-only key has no environment variable (a repository can set a hook's)

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
                f"got {short_value(value)}"
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
            raise ConfigInvalid(
                f"{where}: [{self.section}] {self.name}: expected {self.expected()}, got {short_value(text)}"
            )
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
        if self.ids and is_bare(name):
            return f"[{self.section}.{name}]"
        return f"[{self.section}.{toml_string(name)}]"


# -- showing values -----------------------------------------------------------------


def toml_value(value: Any) -> str:
    """A value as it is written in TOML (`true`, `"stage-boundary"`, `0.1`, `["a", "b"]`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return toml_string(value)
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
    return toml_string(str(value))


def short_value(value: Any) -> str:
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


def is_bare(name: str) -> bool:
    return bool(name) and all(c in _BARE for c in name)


def _key(name: str) -> str:
    return name if is_bare(name) else toml_string(name)


_BIDI_AND_SEPARATORS = vocab.BIDI_CONTROLS + "\u2028\u2029"


def toml_string(text: str) -> str:
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
