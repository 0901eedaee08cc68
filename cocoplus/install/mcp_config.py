"""Register `cocoplus mcp` in a runtime's project MCP configuration (`install` / `uninstall` / `doctor`).

Each adapter names its file (MCP_FILE), its format (MCP_FORMAT: a JSON
`mcpServers` object, or Codex's TOML `[mcp_servers.NAME]` tables) and the
shape of one entry (mcp_entry).  The entry under the name `cocoplus` is
cocoplus' own: `install` writes or upgrades its command (keeping any other
keys added to it, such as `env` or Codex's `default_tools_approval_mode`)
and leaves every other server and setting as it was; running it again
changes nothing; `uninstall` removes only that entry (and a file that
exists only for MCP servers, MCP_OWN_FILE, once it is left empty).  The
command (wiring.mcp_server) is the same on every machine: `sh -c` with
the launcher, which runs `cocoplus mcp` with this user's cocoplus; no
path, no `--dir` (the server finds the project from its working
directory, the session's).  Entries an earlier release wrote
(`<python> -m cocoplus --dir <project> mcp`) are upgraded in place.
"""

from __future__ import annotations

import os
from typing import Any

from cocoplus.core import fsio
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.install import files, wiring

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cocoplus.runtimes.protocol import Adapter

NAME = "cocoplus"
TOML_TABLE = "mcp_servers"


def config_path(adapter: Adapter, project: str) -> str | None:
    return os.path.join(project, *adapter.MCP_FILE) if adapter.MCP_FILE else None


def entry(adapter: Adapter, project: str) -> dict[str, Any]:
    return wiring.mcp_server(adapter)


def _merged(current: Any, ours: dict[str, Any]) -> dict[str, Any]:
    """Our entry, keeping any other keys someone added to it (env, approvals, trust, ...)."""
    return {**current, **ours} if isinstance(current, dict) else ours


def _servers(path: str, doc: dict[str, Any]) -> dict[str, Any]:
    servers = doc.get("mcpServers")
    if servers is None:
        return {}
    if not isinstance(servers, dict):
        raise CocoplusError(f'{path}: "mcpServers" is not an object; fix it by hand, cocoplus will not overwrite it')
    return servers


# -- JSON --------------------------------------------------------------------------------------


def _install_json(adapter: Adapter, path: str, project: str) -> dict[str, Any]:
    doc = files.load_json(path)
    servers = _servers(path, doc)
    want = _merged(servers.get(NAME), entry(adapter, project))
    if servers.get(NAME) == want:
        return {"changed": False, "path": path}
    existed = NAME in servers
    doc["mcpServers"] = {**servers, NAME: want}
    files.write_json(path, doc)
    return {"changed": True, "path": path, "action": "updated" if existed else "added"}


def _uninstall_json(adapter: Adapter, path: str) -> dict[str, Any]:
    doc = files.load_json(path)
    servers = _servers(path, doc)
    if NAME not in servers:
        return {"changed": False, "path": path}
    del servers[NAME]
    if servers:
        doc["mcpServers"] = servers
    else:
        doc.pop("mcpServers", None)
    if not doc and adapter.MCP_OWN_FILE:
        os.unlink(path)
    else:
        files.write_json(path, doc)
    return {"changed": True, "path": path, "action": "removed"}


def _json_servers(path: str) -> dict[str, Any]:
    return _servers(path, files.load_json(path))


# -- TOML --------------------------------------------------------------------------------------


def _install_toml(adapter: Adapter, path: str, project: str) -> dict[str, Any]:
    text = files.read_text(path)
    current = (files.parse_toml(path, text).get(TOML_TABLE) or {}).get(NAME)
    kept, removed = files.strip_toml_table(text, TOML_TABLE, NAME)
    left = files.parse_toml(path, kept)
    if NAME in (left.get(TOML_TABLE) or {}):
        raise CocoplusError(
            f"{path}: {TOML_TABLE}.{NAME} is not written as a [{TOML_TABLE}.{NAME}] table; "
            "remove it by hand and install again"
        )
    want = _merged(current, entry(adapter, project))
    new = (kept.rstrip("\n") + "\n\n" if kept.strip() else "") + files.toml_table(TOML_TABLE, NAME, want)
    if new == text:
        return {"changed": False, "path": path}
    got = files.parse_toml(path, new)
    if (got.get(TOML_TABLE) or {}).get(NAME) != want:
        raise CocoplusError(
            f"{path}: the [{TOML_TABLE}.{NAME}] table did not come out as written; fix the file by hand"
        )
    files.write_text(path, new)
    return {"changed": True, "path": path, "action": "updated" if removed else "added"}


def _uninstall_toml(adapter: Adapter, path: str) -> dict[str, Any]:
    text = files.read_text(path)
    files.parse_toml(path, text)
    kept, removed = files.strip_toml_table(text, TOML_TABLE, NAME)
    if not removed:
        return {"changed": False, "path": path}
    files.parse_toml(path, kept)
    if not kept.strip() and adapter.MCP_OWN_FILE:
        os.unlink(path)
    else:
        files.write_text(path, kept)
    return {"changed": True, "path": path, "action": "removed"}


def _toml_servers(path: str) -> dict[str, Any]:
    servers = files.parse_toml(path, files.read_text(path)).get(TOML_TABLE)
    return servers if isinstance(servers, dict) else {}


_FORMATS = {
    "json": (_install_json, _uninstall_json, _json_servers),
    "toml": (_install_toml, _uninstall_toml, _toml_servers),
}


# -- entry points ------------------------------------------------------------------------------


def install(adapter: Adapter, project: str) -> dict[str, Any] | None:
    """Write or upgrade the `cocoplus` entry: `{"changed", "path", "action"?}`;
    None where the runtime has no MCP config."""
    path = config_path(adapter, project)
    if path is None:
        return None
    return _FORMATS[adapter.MCP_FORMAT][0](adapter, path, project)


def uninstall(adapter: Adapter, project: str) -> dict[str, Any] | None:
    """Remove the `cocoplus` entry (only it): `{"changed", "path"}`."""
    path = config_path(adapter, project)
    if path is None:
        return None
    if not os.path.exists(path):
        return {"changed": False, "path": path}
    return _FORMATS[adapter.MCP_FORMAT][1](adapter, path)


def current(adapter: Adapter, project: str) -> bool | None:
    """Whether cocoplus' entry is what `install` writes now (None: no MCP config or no entry)."""
    path = config_path(adapter, project)
    if path is None or not os.path.exists(path):
        return None
    try:
        have = _FORMATS[adapter.MCP_FORMAT][2](path).get(NAME)
    except CocoplusError:
        return None
    if not isinstance(have, dict):
        return None
    return _merged(have, entry(adapter, project)) == have


def registered(adapter: Adapter, project: str) -> bool | None:
    """Whether the runtime's project MCP config names cocoplus' server (None: it has none)."""
    path = config_path(adapter, project)
    if path is None:
        return None
    if not os.path.exists(path):
        return False
    try:
        return NAME in _FORMATS[adapter.MCP_FORMAT][2](path)
    except CocoplusError:
        return False


# -- the runtime's own approval of the server (Claude Code's `enabledMcpjsonServers`) -----------------------------


def _approval_file(adapter: Adapter, project: str) -> str | None:
    if adapter.MCP_APPROVAL is None or adapter.LOCAL_HOOKS_FILE is None or adapter.MCP_FORMAT != "json":
        return None
    return os.path.join(project, *adapter.LOCAL_HOOKS_FILE)


def _ours_exactly(adapter: Adapter, project: str) -> str | None:
    """Why the MCP file's `cocoplus` entry is not exactly the one `install` writes (None when it is): a server the
    runtime is told to use without asking must be cocoplus's own command, with nothing added (an `env`, another
    command) by whoever wrote the file."""
    path = config_path(adapter, project)
    assert path is not None
    rel = os.path.relpath(path, project)
    try:
        have = _json_servers(path).get(NAME) if os.path.exists(path) else None
    except CocoplusError as exc:
        return str(exc)
    want = entry(adapter, project)
    if have is None:
        return f"{rel} has no {NAME} entry"
    if have == want:
        return None
    if isinstance(have, dict) and all(have.get(k) == v for k, v in want.items()):
        return f"{rel}'s {NAME} entry carries what install does not write ({', '.join(sorted(set(have) - set(want)))})"
    return f"{rel}'s {NAME} entry is not the one install writes"


def _records(layout: Layout) -> dict[str, Any]:
    return fsio.read_json(layout.mcp_approvals) or {}


def _save_records(layout: Layout, records: dict[str, Any]) -> None:
    if records:
        fsio.atomic_write_json(layout.mcp_approvals, records)
    elif os.path.lexists(layout.mcp_approvals):
        os.unlink(layout.mcp_approvals)


def _names(path: str, settings: dict[str, Any], key: str) -> list[str] | None:
    listed = settings.get(key)
    if listed is None:
        return None
    if not isinstance(listed, list) or not all(isinstance(n, str) for n in listed):
        raise CocoplusError(f'{path}: "{key}" is not a list of server names; fix it by hand')
    return list(listed)


def approve(adapter: Adapter, project: str, layout: Layout) -> dict[str, Any] | None:
    """Approve cocoplus's server in the runtime's per-user project settings (never the committed file, never the
    user's global settings), only while the MCP file's entry is exactly the one `install` writes; an approval
    `install` added earlier for an entry that has changed since is withdrawn.  `{"approved", "changed", "why",
    "asks"}`; None where the runtime has no such setting."""
    path = _approval_file(adapter, project)
    if path is None:
        return None
    key = str(adapter.MCP_APPROVAL)
    records = _records(layout)
    got = records.get(adapter.NAME)
    mine: dict[str, Any] | None = got if isinstance(got, dict) else None
    why = _ours_exactly(adapter, project)
    settings = files.load_json(path)
    listed = _names(path, settings, key)
    if why is not None:
        withdrawn = mine is not None and _withdraw(path, settings, key, mine)
        if mine:
            records.pop(adapter.NAME, None)
            _save_records(layout, records)
        return {"approved": False, "changed": withdrawn, "why": why, "asks": adapter.MCP_ASKS, "path": path}
    if listed is not None and NAME in listed:
        return {"approved": True, "changed": False, "why": None, "asks": None, "path": path}
    settings[key] = [*(listed or []), NAME]
    files.write_json(path, settings)
    records[adapter.NAME] = {"file": os.path.relpath(path, project), "key": key, "created": listed is None}
    _save_records(layout, records)
    return {"approved": True, "changed": True, "why": None, "asks": None, "path": path}


def _withdraw(path: str, settings: dict[str, Any], key: str, mine: dict[str, Any]) -> bool:
    listed = _names(path, settings, key)
    if not listed or NAME not in listed:
        return False
    left = [n for n in listed if n != NAME]
    if left or not mine.get("created"):
        settings[key] = left
    else:
        settings.pop(key, None)
    files.write_json(path, settings)
    return True


def unapprove(adapter: Adapter, project: str, layout: Layout) -> dict[str, Any] | None:
    """Withdraw the approval `approve` added, and only it (one the user wrote stays): `{"changed", "path"}`."""
    path = _approval_file(adapter, project)
    if path is None:
        return None
    records = _records(layout)
    mine = records.pop(adapter.NAME, None)
    if not mine:
        return {"changed": False, "path": path}
    changed = os.path.exists(path) and _withdraw(path, files.load_json(path), str(adapter.MCP_APPROVAL), mine)
    _save_records(layout, records)
    return {"changed": changed, "path": path}


def approved(adapter: Adapter, project: str) -> bool | None:
    """Whether the runtime's per-user project settings approve cocoplus's server (None: it has no such setting)."""
    path = _approval_file(adapter, project)
    if path is None:
        return None
    try:
        return NAME in (_names(path, files.load_json(path), str(adapter.MCP_APPROVAL)) or [])
    except CocoplusError:
        return False
