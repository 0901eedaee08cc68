"""Register `cocoplus mcp` in a runtime's project MCP configuration (called by `cocoplus install/uninstall`).

| runtime | file | entry |
|---|---|---|
| Claude Code | `.mcp.json` | `mcpServers.cocoplus = {type: stdio, command, args}` |
| Codex CLI | `.codex/config.toml` | `[mcp_servers.cocoplus] command, args` (read only in a trusted project) |
| Gemini CLI | `.gemini/settings.json` | `mcpServers.cocoplus = {command, args}` |
| Cursor | `.cursor/mcp.json` | `mcpServers.cocoplus = {type: stdio, command, args}` |

The entry under the name `cocoplus` is cocoplus' own: `install` writes or
upgrades its command (keeping any other keys added to it, such as `env` or
Codex's `default_tools_approval_mode`) and leaves every other server and
setting as it was; running it again changes nothing; `uninstall` removes only that entry (and a file that
is left empty by it).  The command is this interpreter with `-m cocoplus
--dir <project> mcp`, like the hooks' absolute interpreter.  Standard library
and cocoplus.core only: `cocoplus install` imports this module.
"""

from __future__ import annotations

import os
import re
import sys
import tomllib
from typing import Any

from cocoplus.core import fsio
from cocoplus.core.errors import CocoplusError, UsageError

NAME = "cocoplus"
FILES = {
    "claude": (".mcp.json",),
    "codex": (".codex", "config.toml"),
    "gemini": (".gemini", "settings.json"),
    "cursor": (".cursor", "mcp.json"),
}
# Files that exist only for MCP servers: removed when uninstall leaves them empty.
OWN_FILES = ("claude", "cursor", "codex")


def config_path(runtime: str, project: str) -> str:
    if runtime not in FILES:
        raise UsageError(f"unknown runtime {runtime!r}: use one of {', '.join(FILES)}")
    return os.path.join(project, *FILES[runtime])


def server_command(project: str, role: str = "all") -> tuple[str, list[str]]:
    """(command, args) that start the server for this project."""
    args = ["-m", "cocoplus", "--dir", os.path.abspath(project), "mcp"]
    if role != "all":
        args += ["--role", role]
    return sys.executable, args


def entry(runtime: str, project: str) -> dict[str, Any]:
    command, args = server_command(project)
    if runtime in ("claude", "cursor"):
        return {"type": "stdio", "command": command, "args": args}
    return {"command": command, "args": args}


def _merged(current: Any, ours: dict[str, Any]) -> dict[str, Any]:
    """Our entry, keeping any other keys someone added to it (env, approvals, trust, ...)."""
    return {**current, **ours} if isinstance(current, dict) else ours


# -- JSON files (Claude, Gemini, Cursor) ------------------------------------------------------


def _load_json(path: str) -> dict[str, Any]:
    from cocoplus.runtimes import load_settings

    return load_settings(path)


def _write_json(path: str, obj: dict[str, Any]) -> None:
    from cocoplus.runtimes import write_settings

    write_settings(path, obj)


def _servers(path: str, doc: dict[str, Any]) -> dict[str, Any]:
    servers = doc.get("mcpServers")
    if servers is None:
        return {}
    if not isinstance(servers, dict):
        raise CocoplusError(f'{path}: "mcpServers" is not an object; fix it by hand, cocoplus will not overwrite it')
    return servers


def _install_json(runtime: str, project: str) -> dict[str, Any]:
    path = config_path(runtime, project)
    doc = _load_json(path)
    servers = _servers(path, doc)
    want = _merged(servers.get(NAME), entry(runtime, project))
    if servers.get(NAME) == want:
        return {"changed": False, "path": path}
    existed = NAME in servers
    doc["mcpServers"] = {**servers, NAME: want}
    _write_json(path, doc)
    return {"changed": True, "path": path, "action": "updated" if existed else "added"}


def _uninstall_json(runtime: str, project: str) -> dict[str, Any]:
    path = config_path(runtime, project)
    if not os.path.exists(path):
        return {"changed": False, "path": path}
    doc = _load_json(path)
    servers = _servers(path, doc)
    if NAME not in servers:
        return {"changed": False, "path": path}
    del servers[NAME]
    if servers:
        doc["mcpServers"] = servers
    else:
        doc.pop("mcpServers", None)
    if not doc and runtime in OWN_FILES:
        os.unlink(path)
    else:
        _write_json(path, doc)
    return {"changed": True, "path": path, "action": "removed"}


# -- TOML (Codex) ----------------------------------------------------------------------------
# Edited as text so comments and the layout of everything else stay as they are;
# the result is parsed again before it is written.

_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]*?)\s*\]\]?\s*(#.*)?$")
_OURS = re.compile(r'^mcp_servers\s*\.\s*(cocoplus|"cocoplus"|\'cocoplus\')\s*(\.|$)')


def _parse_toml(path: str, text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CocoplusError(f"{path}: not valid TOML ({exc}); fix it by hand, cocoplus will not overwrite it") from None


def _strip_ours(text: str) -> tuple[str, bool]:
    """Remove the `[mcp_servers.cocoplus]` table and its sub-tables from TOML text.

    The blank lines that separated the table from what came before go with it;
    what followed it keeps one blank line before it.
    """
    out: list[str] = []
    skipping = False
    removed = False
    for line in text.splitlines(keepends=True):
        m = _HEADER.match(line)
        if m:
            ours = bool(_OURS.match(m.group(1)))
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


def _toml_block(table: dict[str, Any]) -> str:
    import tomli_w

    return tomli_w.dumps({"mcp_servers": {NAME: table}})


def _install_toml(project: str) -> dict[str, Any]:
    path = config_path("codex", project)
    text = fsio.read_text(path) or ""
    current = (_parse_toml(path, text).get("mcp_servers") or {}).get(NAME)
    kept, removed = _strip_ours(text)
    left = _parse_toml(path, kept)
    if NAME in (left.get("mcp_servers") or {}):
        raise CocoplusError(f"{path}: mcp_servers.{NAME} is not written as a [mcp_servers.{NAME}] table; remove it by hand and install again")
    want = _merged(current, entry("codex", project))
    new = (kept.rstrip("\n") + "\n\n" if kept.strip() else "") + _toml_block(want)
    if new == text:
        return {"changed": False, "path": path}
    got = _parse_toml(path, new)
    if (got.get("mcp_servers") or {}).get(NAME) != want:
        raise CocoplusError(f"{path}: the [mcp_servers.{NAME}] table did not come out as written; fix the file by hand")
    fsio.ensure_dir(os.path.dirname(path))
    fsio.atomic_write_bytes(path, new.encode("utf-8"), mode=0o644)
    return {"changed": True, "path": path, "action": "updated" if removed else "added"}


def _uninstall_toml(project: str) -> dict[str, Any]:
    path = config_path("codex", project)
    if not os.path.exists(path):
        return {"changed": False, "path": path}
    text = fsio.read_text(path) or ""
    _parse_toml(path, text)
    kept, removed = _strip_ours(text)
    if not removed:
        return {"changed": False, "path": path}
    _parse_toml(path, kept)
    if not kept.strip():
        os.unlink(path)
    else:
        fsio.atomic_write_bytes(path, kept.encode("utf-8"), mode=0o644)
    return {"changed": True, "path": path, "action": "removed"}


# -- entry points ------------------------------------------------------------------------------


def install(runtime: str, project: str) -> dict[str, Any]:
    """Write or upgrade the `cocoplus` MCP server entry; `{"changed", "path", "action"?}`."""
    config_path(runtime, project)
    if runtime == "codex":
        return _install_toml(project)
    return _install_json(runtime, project)


def uninstall(runtime: str, project: str) -> dict[str, Any]:
    """Remove the `cocoplus` MCP server entry (only it); `{"changed", "path"}`."""
    config_path(runtime, project)
    if runtime == "codex":
        return _uninstall_toml(project)
    return _uninstall_json(runtime, project)


def registered(runtime: str, project: str) -> bool:
    """Whether the runtime's project MCP config names cocoplus' server (for `cocoplus doctor`)."""
    path = config_path(runtime, project)
    if not os.path.exists(path):
        return False
    try:
        if runtime == "codex":
            text = fsio.read_text(path) or ""
            servers = _parse_toml(path, text).get("mcp_servers")
        else:
            servers = _servers(path, _load_json(path))
    except CocoplusError:
        return False
    return isinstance(servers, dict) and NAME in servers
