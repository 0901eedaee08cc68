"""`cocoplus chat setup claude|codex|openai|command`: write a controller account into cocoplus.toml.

Adds (or replaces) the `[accounts.NAME]` table and sets `[chat] controller
= "NAME"`, editing the file as text so every other line (comments, other
tables, their order) stays as it was.  The result is parsed again and
checked like any cocoplus.toml before it is written (atomically, keeping
the file's permissions); if the edit would not read back as intended,
nothing is written and the error shows the lines to add by hand.
"""

from __future__ import annotations

import os
import re
import shutil
from typing import Any

from cocoplus import config as config_mod
from cocoplus.core import fsio, keytypes, settings, vocab
from cocoplus.core.errors import CocoplusError, UsageError
from cocoplus.core.paths import Layout

NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$")
_CONTROLLER = re.compile(r"^\s*controller\s*=")


def entry_for(
    kind: str,
    *,
    binary: str | None = None,
    model: str | None = None,
    effort: str | None = None,
    base_url: str | None = None,
    api_key_env: str | None = None,
    command: list[str] | None = None,
) -> dict[str, Any]:
    """The `[accounts.NAME]` table for a controller of `kind`, checked as cocoplus.toml would check it."""
    if kind not in vocab.ACCOUNT_KINDS:
        raise UsageError(f"chat setup: the kind must be one of {', '.join(vocab.ACCOUNT_KINDS)}, got {kind!r}")
    if effort is not None and effort not in vocab.EFFORTS:
        raise UsageError(f"chat setup: --effort must be one of {', '.join(vocab.EFFORTS)}, got {effort!r}")
    extra = {"binary": binary, "base_url": base_url, "api_key_env": api_key_env}
    allowed = {"claude": ("binary",), "codex": ("binary",), "openai": ("base_url", "api_key_env"), "command": ()}[kind]
    wrong = [f"--{k.replace('_', '-')}" for k, v in extra.items() if v is not None and k not in allowed]
    if wrong:
        raise UsageError(f"chat setup {kind}: {', '.join(wrong)} does not apply to a {kind} account")
    if command and kind != "command":
        raise UsageError(f"chat setup {kind}: a program to run is only for `chat setup command`")
    entry: dict[str, Any] = {"kind": kind}
    if kind in ("claude", "codex"):
        program = binary or kind
        if (os.sep in program and not os.access(program, os.X_OK)) or (
            os.sep not in program and shutil.which(program) is None
        ):
            raise CocoplusError(
                f"chat setup {kind}: {program} is not on PATH",
                hint=f"install it, or pass --binary with the path of the {kind} CLI",
            )
        if binary:
            entry["binary"] = binary
    elif kind == "openai":
        if not model:
            raise UsageError("chat setup openai: --model is required (the Responses API needs one)")
        if base_url:
            entry["base_url"] = base_url
        entry["api_key_env"] = api_key_env or "OPENAI_API_KEY"
    elif kind == "command":
        if not command:
            raise UsageError(
                "chat setup command: give the program and its arguments after `--`, e.g. `-- my-brain --model {model}`"
            )
        entry["command"] = list(command)
    if model:
        entry["default_model"] = model
    if effort:
        entry["default_reasoning_effort"] = effort
    return entry


def _block(name: str, entry: dict[str, Any], nl: str) -> str:
    return f"[accounts.{name}]{nl}" + "".join(f"{k} = {keytypes.toml_value(v)}{nl}" for k, v in entry.items())


def _table_of(line: str) -> str | None:
    m = _HEADER.match(line)
    return "".join(m.group(1).split()).replace('"', "").replace("'", "") if m else None


def edit(text: str, name: str, entry: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """`text` with the account table added or replaced and `[chat] controller` set; and what changed."""
    nl = "\r\n" if "\r\n" in text else "\n"
    controller = f"controller = {keytypes.toml_value(name)}{nl}"
    out: list[str] = []
    current: str | None = None
    replaced = chat_seen = False
    for line in text.splitlines(keepends=True):
        table = _table_of(line)
        if table is not None:
            current = table
            if table == f"accounts.{name}":
                replaced = True
                continue  # the old table is dropped; the new one is appended below
            out.append(line if line.endswith(("\n", "\r")) else line + nl)
            if table == "chat" and not chat_seen:
                chat_seen = True
                out.append(controller)
            continue
        if current == f"accounts.{name}" or (current == "chat" and _CONTROLLER.match(line)):
            continue
        out.append(line)
    body = "".join(out)
    if body and not body.endswith(("\n", "\r")):
        body += nl
    if not chat_seen:
        body += (nl if body.strip() else "") + f"[chat]{nl}{controller}"
    body += nl + _block(name, entry, nl)
    return body, {"replaced_account": replaced}


def setup(layout: Layout, kind: str, name: str | None = None, **fields: Any) -> dict[str, Any]:
    """Write the controller account `name` (default: the kind) and make it the controller."""
    import tomllib  # deferred: only this command parses the edited text

    name = name or kind
    if not NAME.match(name):
        raise UsageError(f"chat setup: the account name may use letters, digits, - and _ only, got {name!r}")
    entry = entry_for(kind, **fields)
    path = layout.config
    shown = os.path.basename(path)
    before = config_mod.load_for(layout)  # a file that does not load is not edited (the error names the cause)
    text = fsio.read_text(path) or ""
    new, change = edit(text, name, entry)
    written = [
        f"[chat] controller = {keytypes.toml_value(name)}",
        f"[accounts.{name}] " + ", ".join(f"{k} = {keytypes.toml_value(v)}" for k, v in entry.items()),
    ]
    by_hand = "add these by hand: " + "; ".join(written)
    try:
        data = tomllib.loads(new)
        settings.check_document(data, shown)
    except (tomllib.TOMLDecodeError, CocoplusError) as exc:
        raise CocoplusError(
            f"{shown}: cannot add the account automatically ({exc}); nothing was written", hint=by_hand
        ) from None
    if (data.get("chat") or {}).get("controller") != name or (data.get("accounts") or {}).get(name) != entry:
        raise CocoplusError(
            f"{shown}: cannot add the account automatically (the file is laid out in a way this edit does not handle); "
            "nothing was written",
            hint=by_hand,
        )
    try:
        mode = os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        mode = 0o644
    fsio.atomic_write_bytes(path, new.encode("utf-8"), mode=mode)
    previous = before.get("chat.controller") or None
    return {
        "path": path,
        "file": shown,
        "account": name,
        "kind": kind,
        "entry": entry,
        "controller": name,
        "previous_controller": previous if previous != name else None,
        "replaced_account": change["replaced_account"],
        "created_file": not text,
        "written": written,
    }
