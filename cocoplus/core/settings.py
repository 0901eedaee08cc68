"""Configuration checked against the key table (`core/keys.py`): the defaults, a parsed document's sections and
tables of named entries, the values that need trust, the relations between keys, and the environment's overrides.

Standard library only.  Two kinds of section:

* fixed sections (`[session]`, `[hooks]`, ...): the keys in `keys.KEYS`, each
  with a default and an environment override (`COCOPLUS_<SECTION>_<KEY>`, or
  the name a seed fixed, such as `JARVIS_SUPERVISION_RESTORE_TTL_S`);
* tables of named entries (`[accounts.NAME]`, `[pricing."model"]`): the
  fields in `keys.TABLES`, declared as Keys too, with no default and no
  environment variable.

Every value, from a file or from the environment, is checked by
`Key.coerce` (`core/keytypes.py`), and every error is one line naming where
the value came from, the key, what was expected and what was found.
`cocoplus.config` reads cocoplus.toml through these; the hook reads the flat
copy the CLI compiles (`hook-config.json`) plus the environment overrides,
using the same coercion, so both always agree on what a value means.
"""

from __future__ import annotations

import os

from cocoplus.core.errors import ConfigInvalid
from cocoplus.core.keys import BY_DOTTED, KEYS, OPEN_SECTIONS, SECTIONS, TABLES_BY_SECTION
from cocoplus.core.keytypes import Key, Table, is_bare, short_value, toml_string
from cocoplus.core.paths import is_valid_id

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Mapping
    from typing import Any


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
        raise ConfigInvalid(f"{where}: {label}: expected a table, got {short_value(body)}")
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
            f"{where}: [{table.section}]: expected tables [{table.section}.{table.entry}], got {short_value(body)}"
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
        raise ConfigInvalid(f"{where}: {label}: expected a table ({table.help}), got {short_value(entry)}")
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
    return f"{where}: {label} unknown key {toml_string(name)} (known: {names})"


def _unknown_section(section: str, body: Any, where: str) -> str:
    known = ", ".join(f"[{s}]" for s in (*SECTIONS, *OPEN_SECTIONS))
    if not isinstance(body, dict):
        homes = [k.section for k in KEYS if k.name == section]
        home = f"; it belongs under [{homes[0]}]" if homes else ""
        return f"{where}: {toml_string(section)} is outside any section{home} (sections: {known})"
    return f"{where}: unknown section [{toml_string(section) if not is_bare(section) else section}] (known: {known})"


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
