"""Editing a runtime's own settings files without disturbing anyone else's entries.

JSON files (hook settings, MCP configs) are read whole and refused when
damaged; TOML (Codex's config.toml) is edited as text, one `[table]` at a
time, so comments and the layout of everything else stay as they are.
Standard library only.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from typing import Any

from cocoplus.core import fsio
from cocoplus.core.errors import CocoplusError


def load_json(path: str) -> dict[str, Any]:
    """A settings file as a dict ({} if absent or empty); refuses to touch a damaged one."""
    data = fsio.read_bytes(path, limit=4 * 1024 * 1024)
    if data is None:
        return {}
    text = fsio.decode_text(data, path)
    if not text.strip():
        return {}
    try:
        obj = json.loads(text)
    except ValueError as exc:
        raise CocoplusError(f"{path}: not valid JSON ({exc}); fix it by hand, cocoplus will not overwrite it") from None
    if not isinstance(obj, dict):
        raise CocoplusError(f"{path}: expected a JSON object at the top; cocoplus will not overwrite it")
    return obj


def write_json(path: str, obj: dict[str, Any]) -> None:
    fsio.ensure_dir(os.path.dirname(path))
    fsio.atomic_write_bytes(path, (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode("utf-8"), mode=0o644)


def read_text(path: str) -> str:
    return fsio.read_text(path) or ""


def write_text(path: str, text: str) -> None:
    fsio.ensure_dir(os.path.dirname(path))
    fsio.atomic_write_bytes(path, text.encode("utf-8"), mode=0o644)


def parse_toml(path: str, text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CocoplusError(f"{path}: not valid TOML ({exc}); fix it by hand, cocoplus will not overwrite it") from None


_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]*?)\s*\]\]?\s*(#.*)?$")


def _table_pattern(table: str, key: str) -> re.Pattern[str]:
    q = re.escape(key)
    return re.compile(rf"^{re.escape(table)}\s*\.\s*({q}|\"{q}\"|'{q}')\s*(\.|$)")


def strip_toml_table(text: str, table: str, key: str) -> tuple[str, bool]:
    """Remove the `[table.key]` table and its sub-tables from TOML text.

    The blank lines that separated it from what came before go with it; what
    followed it keeps one blank line before it.
    """
    ours_re = _table_pattern(table, key)
    out: list[str] = []
    skipping = False
    removed = False
    for line in text.splitlines(keepends=True):
        m = _HEADER.match(line)
        if m:
            ours = bool(ours_re.match(m.group(1)))
            if ours and not skipping:
                while out and not out[-1].strip():
                    out.pop()
                removed = True
            elif skipping and not ours and out:
                out.append("\n")
            skipping = ours
        if not skipping:
            out.append(line)
    return "".join(out), removed


_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: str) -> str:
    return k if _BARE.match(k) else _string(k)


def _string(s: str) -> str:
    # A TOML basic string takes JSON's escapes; DEL must be escaped too.
    return json.dumps(s, ensure_ascii=False).replace("\x7f", "\\u007f")


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if -float("inf") < v < float("inf"):
            return repr(v)
        return "inf" if v > 0 else "-inf" if v < 0 else "nan"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_key(str(k))} = {_value(x)}" for k, x in v.items()) + "}"
    if hasattr(v, "isoformat"):  # dates and times from tomllib
        return str(v.isoformat())
    raise CocoplusError(f"cannot write {type(v).__name__} as TOML")


def toml_table(table: str, key: str, body: dict[str, Any]) -> str:
    """`[table.key]` with `body` (nested dicts as sub-tables), as TOML text that tomllib reads back as `body`."""
    lines: list[str] = []

    def emit(path: list[str], doc: dict[str, Any]) -> None:
        if lines:
            lines.append("")
        lines.append("[" + ".".join(_key(p) for p in path) + "]")
        subs = []
        for k, v in doc.items():
            if isinstance(v, dict):
                subs.append((k, v))
            else:
                lines.append(f"{_key(k)} = {_value(v)}")
        for k, v in subs:
            emit(path + [k], v)

    emit([table, key], body)
    return "\n".join(lines) + "\n"


def set_toml_key(text: str, table: str, key: str, value: Any) -> str:
    """`text` with `key = value` set in its `[table]` (replacing the key's line there, or added below the header;
    the table is appended when there is none), everything else as it was.  The caller reads the result back with
    tomllib before writing it: a layout this edit does not handle (the key in a dotted or inline form) shows there."""
    nl = "\r\n" if "\r\n" in text else "\n"
    line = f"{_key(key)} = {_value(value)}{nl}"
    assign = re.compile(rf"^\s*({re.escape(key)}|\"{re.escape(key)}\"|'{re.escape(key)}')\s*=")
    out: list[str] = []
    current: str | None = None
    done = False
    for raw in text.splitlines(keepends=True):
        m = _HEADER.match(raw)
        if m:
            current = "".join(m.group(1).split())
            out.append(raw if raw.endswith(("\n", "\r")) else raw + nl)
            if current == table and not done:
                out.append(line)
                done = True
            continue
        if current == table and assign.match(raw):
            continue  # the old value: the new one is below the header
        out.append(raw)
    body = "".join(out)
    if not done:
        if body and not body.endswith(("\n", "\r")):
            body += nl
        body += (nl if body.strip() else "") + f"[{table}]{nl}{line}"
    return body
