"""Wiring cocoplus into agent runtimes: `install`, `uninstall`, `doctor`, for any adapter.

Each adapter says where its project hooks live and in which shape
(HOOKS_FILE, GROUPED, hook_entry), which events to wire (EVENTS), and
whether it has an MCP config and a slash-command directory.  The command
written is `<this interpreter> -S <cocoplus/hook/__main__.py> <Event>
--runtime R`: the absolute interpreter and no site scan keep every tool
call's start-up short (SPEC section 10).  Entries are recognised as
cocoplus' own by that command, upgraded in place, and everyone else's
hooks are left alone.  `uninstall` also removes the directories `install`
created that are left empty.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from types import ModuleType
from typing import Any

import cocoplus.hook
from cocoplus import config
from cocoplus.core import clock, fsio, settings
from cocoplus.core.errors import CocoplusError, ConfigInvalid, UsageError
from cocoplus.core.paths import Layout
from cocoplus.runtimes import files, mcp_config, registry
from cocoplus.session import registry as sessions

SLASH_COMMAND = "supervise.md"


def adapter_for(runtime: str) -> ModuleType:
    if not registry.known(runtime):
        raise UsageError(f"unknown runtime {runtime!r}: use one of {registry.listing()}")
    return registry.get(runtime)


def hook_script() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(cocoplus.hook.__file__)), "__main__.py")


def hook_command(runtime: str, event: str, project: str | None = None) -> str:
    """The exact shell command a runtime runs for one event."""
    parts = [shlex.quote(sys.executable), "-S", shlex.quote(hook_script()), event, "--runtime", runtime]
    if project is not None and registry.get(runtime).NEEDS_DIR:
        # The runtime names no project directory in the hook's environment.
        parts += ["--dir", shlex.quote(project)]
    return " ".join(parts)


def cocoplus_executable() -> str:
    argv0 = sys.argv[0] if sys.argv else ""
    if os.path.isabs(argv0) and os.path.basename(argv0) == "cocoplus" and os.access(argv0, os.X_OK):
        return argv0
    found = shutil.which("cocoplus")
    if found:
        return found
    candidate = os.path.join(os.path.dirname(sys.executable), "cocoplus")
    return candidate if os.path.exists(candidate) else "cocoplus"


def is_ours(command: Any) -> bool:
    if not isinstance(command, str):
        return False
    if registry.HOOK_MARK in command:
        return True
    words = command.replace("'", " ").replace('"', " ").split()
    return any(os.path.basename(w) == "cocoplus" for w in words) and "hook" in words


def settings_path(adapter: ModuleType, project: str) -> str:
    return os.path.join(project, *adapter.HOOKS_FILE)


def _strip_ours(entries: list[Any]) -> tuple[list[Any], int]:
    """Remove cocoplus handlers from a list of matcher groups (or a flat list of handlers)."""
    kept: list[Any] = []
    removed = 0
    for entry in entries:
        if not isinstance(entry, dict):
            kept.append(entry)
            continue
        if "hooks" in entry and isinstance(entry["hooks"], list):
            others = [h for h in entry["hooks"] if not (isinstance(h, dict) and is_ours(h.get("command")))]
            removed += len(entry["hooks"]) - len(others)
            if others:
                kept.append({**entry, "hooks": others})
            elif len(entry["hooks"]) == 0:
                kept.append(entry)
        elif is_ours(entry.get("command")):
            removed += 1
        else:
            kept.append(entry)
    return kept, removed


def _remove_empty_dirs(project: str, path: str) -> list[str]:
    """Remove the directories above `path` (up to, not including, `project`) that are empty now."""
    removed: list[str] = []
    d = os.path.dirname(path)
    while d != project and d.startswith(project + os.sep):
        try:
            os.rmdir(d)  # only succeeds on an empty directory
        except OSError:
            break
        removed.append(os.path.relpath(d, project))
        d = os.path.dirname(d)
    return removed


def install(runtime: str, project: str, timeout_s: int = 10) -> dict[str, Any]:
    adapter = adapter_for(runtime)
    path = settings_path(adapter, project)
    settings = files.load_json(path)
    before = json.dumps(settings, sort_keys=True)
    hooks = settings.get("hooks")
    if hooks is None:
        hooks = {}
    if not isinstance(hooks, dict):
        raise CocoplusError(f"{path}: \"hooks\" is not an object; fix it by hand, cocoplus will not overwrite it")
    changes: list[str] = []
    turn_end_s = timeout_s + _hold_seconds(project)
    for event, matcher in registry.installed_events(adapter):
        entries = hooks.get(event) or []
        if not isinstance(entries, list):
            raise CocoplusError(f"{path}: hooks.{event} is not a list; fix it by hand")
        kept, removed = _strip_ours(entries)
        # The turn-end hook may hold the turn for the main brain ([supervision] hold_turn_end_s): its timeout is above that.
        seconds = turn_end_s if registry.kind(adapter, event) == "stop" else timeout_s
        handler = adapter.hook_entry(hook_command(runtime, event, project), event, seconds)
        if adapter.GROUPED:
            group: dict[str, Any] = {"hooks": [handler]}
            if matcher is not None:
                group = {"matcher": matcher, **group}
            kept.append(group)
        else:
            kept.append(handler)
        hooks[event] = kept
        if json.dumps(kept, sort_keys=True) != json.dumps(entries, sort_keys=True):
            changes.append(f"{event}: {'updated' if removed else 'added'}")
    settings["hooks"] = hooks
    for key, value in adapter.SETTINGS_DEFAULTS.items():
        settings.setdefault(key, value)
    if json.dumps(settings, sort_keys=True) != before:
        files.write_json(path, settings)
    written = [path]
    if adapter.SLASH_COMMAND_DIR is not None:
        cmd_path, cmd_changed = _install_slash_command(project, adapter.SLASH_COMMAND_DIR)
        written.append(cmd_path)
        if cmd_changed:
            changes.append("/supervise slash command: written")
    mcp = mcp_config.install(adapter, project)
    if mcp and mcp.get("changed"):
        changes.append(f"MCP server: registered in {os.path.relpath(mcp['path'], project)}")
        written.append(mcp["path"])
    return {
        "runtime": runtime,
        "settings": path,
        "files": written,
        "changes": changes,
        "changed": bool(changes),
        "todo": adapter.todo(project) + adapter.settings_notes(settings) + _precompile(),
    }


def _hold_seconds(project: str) -> int:
    """`[supervision] hold_turn_end_s` of this project (its default when cocoplus.toml does not load)."""
    try:
        return int(config.load(project).get("supervision.hold_turn_end_s"))
    except ConfigInvalid:
        return int(settings.BY_DOTTED["supervision.hold_turn_end_s"].default)


def _precompile() -> list[str]:
    """Byte-compile the modules the hook imports, so no hook run compiles them (PYTHONDONTWRITEBYTECODE, read-only caches)."""
    import compileall  # deferred: compileall loads importlib and more; only install needs it

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ok = all(
        compileall.compile_dir(os.path.join(root, sub), quiet=2, force=False)
        for sub in ("core", "session", "hook", "runtimes", "cost")
    ) and compileall.compile_file(os.path.join(root, "config.py"), quiet=2, force=False)
    if ok:
        return []
    return [f"could not byte-compile cocoplus' hook modules in {root}: each hook run compiles them again (slower start)"]


def _slash_command_text() -> str:
    exe = cocoplus_executable()
    return (
        "---\n"
        "description: Turn on cocoplus autonomous supervision with a goal and run the first round\n"
        "argument-hint: [goal]\n"
        f"allowed-tools: Bash({exe} supervise:*)\n"
        "---\n"
        f"!`{shlex.quote(exe)} supervise \"$ARGUMENTS\"`\n\n"
        "Supervision is on with the goal above (see the output). Summarise for the user what cocoplus reported: "
        "turns used and left, and the sessions being watched. Ask the user before any irreversible action.\n"
    )


def _install_slash_command(project: str, directory: tuple[str, ...]) -> tuple[str, bool]:
    path = os.path.join(project, *directory, SLASH_COMMAND)
    text = _slash_command_text()
    current = fsio.read_text(path) if os.path.exists(path) else None
    if current == text:
        return path, False
    if current is not None and "cocoplus" not in current:
        raise CocoplusError(f"{path}: exists and was not written by cocoplus; move it away to install /supervise")
    fsio.ensure_dir(os.path.dirname(path))
    fsio.atomic_write_bytes(path, text.encode("utf-8"), mode=0o644)
    return path, True


def uninstall(runtime: str, project: str) -> dict[str, Any]:
    adapter = adapter_for(runtime)
    path = settings_path(adapter, project)
    settings = files.load_json(path)
    changes: list[str] = []
    hooks = settings.get("hooks")
    if isinstance(hooks, dict):
        for event in list(hooks):
            entries = hooks[event]
            if not isinstance(entries, list):
                continue
            kept, removed = _strip_ours(entries)
            if removed:
                changes.append(f"{event}: removed")
                if kept:
                    hooks[event] = kept
                else:
                    del hooks[event]
        if not hooks:
            del settings["hooks"]
    if changes:
        files.write_json(path, settings)
    if adapter.SLASH_COMMAND_DIR is not None:
        cmd_path = os.path.join(project, *adapter.SLASH_COMMAND_DIR, SLASH_COMMAND)
        current = fsio.read_text(cmd_path) if os.path.exists(cmd_path) else None
        if current is not None and "cocoplus" in current:
            os.unlink(cmd_path)
            changes.append("/supervise slash command: removed")
            _remove_empty_dirs(project, cmd_path)
    mcp = mcp_config.uninstall(adapter, project)
    if mcp and mcp.get("changed"):
        changes.append("MCP server: removed")
        _remove_empty_dirs(project, mcp["path"])
    if changes and os.path.exists(path):
        left = {k: v for k, v in files.load_json(path).items() if adapter.SETTINGS_DEFAULTS.get(k, object()) != v}
        if not left:
            os.unlink(path)  # it holds nothing but what install put there
        _remove_empty_dirs(project, path)
    return {"runtime": runtime, "settings": path, "changes": changes, "changed": bool(changes)}


def doctor(layout: Layout) -> dict[str, Any]:
    """Which runtimes are wired, whether the entries are current, and whether hooks have fired."""
    project = layout.project
    records, problems = sessions.list_sessions(layout)
    problems = list(problems) + _config_problems(layout)
    out: dict[str, Any] = {"project": project, "runtimes": {}, "problems": problems}
    for adapter in registry.ordered():
        runtime = adapter.NAME
        path = settings_path(adapter, project)
        info: dict[str, Any] = {"settings": path, "exists": os.path.exists(path)}
        try:
            settings = files.load_json(path)
        except CocoplusError as exc:
            info.update(wired=False, error=str(exc))
            out["runtimes"][runtime] = info
            continue
        hooks: dict[str, Any] = settings["hooks"] if isinstance(settings.get("hooks"), dict) else {}
        wired: list[str] = []
        stale: list[str] = []
        missing: list[str] = []
        for event, _m in registry.installed_events(adapter):
            ours = [c for c in _commands(hooks.get(event)) if is_ours(c)]
            if not ours:
                missing.append(event)
                continue
            wired.append(event)
            if hook_command(runtime, event, project) not in ours:
                stale.append(event)
        info["mcp_registered"] = mcp_config.registered(adapter, project)
        mine = [r for r in records if r.get("runtime") == runtime]
        last = max((r.get("last_event_at") or "" for r in mine), default="") or None
        info.update(
            wired=bool(wired),
            events=wired,
            missing=missing,
            outdated=stale,
            sessions_seen=len(mine),
            last_hook_event_at=last,
            fired=bool(mine),
        )
        out["runtimes"][runtime] = info
    out["hook_log"] = layout.rel(layout.hook_log) if os.path.exists(layout.hook_log) else None
    out["checked_at"] = clock.iso()
    return out


def _config_problems(layout: Layout) -> list[str]:
    """A cocoplus.toml that does not load: the hooks run on their last good values until it is fixed."""
    try:
        config.load_for(layout)
    except ConfigInvalid as exc:
        return [f"{exc} (the hooks keep using the last good values until it is fixed)"]
    return []


def _commands(entries: Any) -> list[str]:
    cmds: list[str] = []
    if not isinstance(entries, list):
        return cmds
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        if isinstance(entry.get("hooks"), list):
            cmds.extend(h["command"] for h in entry["hooks"] if isinstance(h, dict) and isinstance(h.get("command"), str))
        elif isinstance(entry.get("command"), str):
            cmds.append(entry["command"])
    return cmds
