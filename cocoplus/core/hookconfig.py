"""The hooks' compiled copy of the configuration (`.cocoplus/hook-config.json`), as the hooks read it.

`cocoplus.config.compile_for_hook` writes the copy: every key's value from
the defaults and the configuration files (no environment), the stamps
(mtime, size) of those files, and the same values with the relations
between keys already applied (`effective`) under a checksum.  A hook event
that needs a value calls `for_hook`, which in the common case (the copy is
fresh, its checksum holds, no environment variable overrides a key) uses
`effective` as it is: no key table, no TOML, one file read and two `stat`
calls.  An override in the environment loads the key table
(`cocoplus.core.keys`, checked by `cocoplus.core.settings`); a stale or
damaged copy is compiled again by the caller's `compile`
(`cocoplus.session.values` passes `cocoplus.config`'s, imported only then).  The hook never fails on
configuration: a bad cocoplus.toml keeps the last good values (or the
defaults) and the problem is returned, to be logged.

Standard library only, and light: it is imported by every hook event that
reads a value.
"""

from __future__ import annotations

import os

from cocoplus.core import fsio, jsonfast, userfiles
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import CONFIG_FILE_NAME, Layout

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Callable, Mapping
    from typing import Any

VERSION = 3


def config_files(project_dir: str) -> tuple[str, str]:
    """A project's configuration files, lowest precedence first: the user's own, then the project's cocoplus.toml."""
    return userfiles.config_file(), os.path.join(project_dir, CONFIG_FILE_NAME)


def _stamp(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def stamps(project_dir: str) -> list[list[int] | None]:
    """(mtime, size) of every configuration file, so the hook sees any of them change.

    Trusting or revoking a file changes no stamp: `cocoplus trust` compiles
    the copy again itself (and the hook never uses a value that needs trust).
    """
    return [_stamp(path) for path in config_files(project_dir)]


_M61 = (1 << 61) - 1  # a Mersenne prime: the text's bytes as one number, modulo it


def checksum(values: Mapping[str, Any]) -> int:
    """What `effective` is checked against: a hand-edited or damaged copy is read through the key table instead.

    Integer arithmetic on the serialised values (no zlib to load on every hook event).
    """
    raw = jsonfast.dumps(values, compact=True).encode("utf-8", "surrogatepass")
    return int.from_bytes(raw, "little") % _M61


def document(values: dict[str, dict[str, Any]], effective: dict[str, dict[str, Any]], **fields: Any) -> dict[str, Any]:
    """The copy's content (for `config.compile_for_hook`): `fields`
    are the stamps, the explicit keys, pricing, the variables."""
    return {
        "schema_version": VERSION,
        "written_by": "cocoplus config",
        **fields,
        "values": values,
        "effective": effective,
        "checksum": checksum(effective),
    }


def for_hook(
    layout: Layout, environ: Mapping[str, str], compile: Callable[[Layout], dict[str, Any]] | None = None
) -> tuple[dict[str, Any], str | None]:
    """The values a hook uses (sections, plus `pricing`), and a problem to log (None if there is none).

    A stale or missing copy is compiled again with `compile` (config.compile_for_hook) when one is given;
    without it the last copy's values (or the defaults) are used and the problem says so."""
    try:
        doc = fsio.read_json(layout.hook_config)
    except CocoplusError:
        doc = None
    fresh = (
        isinstance(doc, dict)
        and doc.get("schema_version") == VERSION
        and isinstance(doc.get("values"), dict)
        and doc.get("source") == stamps(layout.project)
    )
    if fresh and doc is not None:
        names = doc.get("env")
        effective = doc.get("effective")
        if (
            isinstance(names, list)
            and not any(isinstance(n, str) and n in environ for n in names)
            and isinstance(effective, dict)
            and doc.get("checksum") == checksum(effective)
        ):
            pricing = doc.get("pricing")
            return {**effective, "pricing": pricing if isinstance(pricing, dict) else {}}, None
        return _through_key_table(doc, None, environ)
    if compile is None:
        return _through_key_table(
            doc if isinstance(doc, dict) and isinstance(doc.get("values"), dict) else None,
            "the compiled configuration is stale or missing (a cocoplus command compiles it again)",
            environ,
        )
    try:
        return _through_key_table(compile(layout), None, environ)
    except CocoplusError as exc:
        return _through_key_table(
            doc if isinstance(doc, dict) and isinstance(doc.get("values"), dict) else None, str(exc), environ
        )


def _through_key_table(
    doc: dict[str, Any] | None, problem: str | None, environ: Mapping[str, str]
) -> tuple[dict[str, Any], str | None]:
    """Every stored value checked against its key (or the default), environment overrides applied, relations derived."""
    from cocoplus.core import keys, settings  # deferred: the key table, only for an override or a stale or damaged copy

    values = settings.defaults()
    stored = doc.get("values") if doc is not None else None
    if isinstance(stored, dict):
        for k in keys.KEYS:
            section = stored.get(k.section)
            if isinstance(section, dict) and k.name in section:
                try:
                    values[k.section][k.name] = k.coerce(section[k.name], "hook-config.json")
                except CocoplusError:
                    pass
    errors: list[str] = []
    overrides = settings.env_overrides(environ, errors)
    for _dotted, (key, value) in overrides.items():
        values[key.section][key.name] = value
    if errors:
        problem = "; ".join([problem, *errors] if problem else errors)
    explicit = set(overrides)
    listed = doc.get("explicit") if doc is not None else None
    if isinstance(listed, list):
        explicit |= {k for k in listed if isinstance(k, str)}
    settings.derive(values, explicit)
    pricing = doc.get("pricing") if doc is not None else None
    out: dict[str, Any] = dict(values)
    out["pricing"] = pricing if isinstance(pricing, dict) else {}
    return out, problem
