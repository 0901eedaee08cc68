"""Wiring cocoplus into agent runtimes: `install`, `uninstall`, `doctor`.

Each runtime keeps project hooks in its own file and shape
(reference/hooks-protocols.md 1.6, 3.2, 4):

* Claude Code: `.claude/settings.json`, `hooks.<Event>[{matcher, hooks:[{type, command, timeout}]}]`
  (timeout in seconds), plus the `/supervise` slash command in `.claude/commands/`.
* Codex: `.codex/hooks.json`, the same shape as Claude's.
* Gemini CLI: `.gemini/settings.json`, `hooks.<Event>[{matcher, hooks:[{type, name, command, timeout}]}]`
  (timeout in milliseconds).
* Cursor: `.cursor/hooks.json`, `{"version": 1, "hooks": {"<event>": [{"command"}]}}`.

The command written is `<this interpreter> -S <cocoplus/hook/__main__.py> <Event> --runtime R`:
the absolute interpreter and no site scan keep every tool call's start-up
short (SPEC section 10).  Entries are recognised as cocoplus' own by that
command, upgraded in place, and everyone else's hooks are left alone.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from typing import Any

from cocoplus.core import clock, fsio
from cocoplus.core.errors import CocoplusError, UsageError
from cocoplus.core.paths import Layout

RUNTIMES = ("claude", "codex", "gemini", "cursor")

# runtime -> [(event, matcher or None)]
EVENTS: dict[str, list[tuple[str, str | None]]] = {
    "claude": [
        ("PreToolUse", "*"),
        ("PostToolUse", "*"),
        ("PostToolUseFailure", "*"),
        ("UserPromptSubmit", None),
        ("SessionStart", None),
        ("Stop", None),
        ("StopFailure", None),
        ("PermissionRequest", "*"),
        ("Notification", "permission_prompt|idle_prompt"),
        ("SessionEnd", None),
    ],
    "codex": [
        ("PreToolUse", None),
        ("PostToolUse", None),
        ("UserPromptSubmit", None),
        ("SessionStart", None),
        ("Stop", None),
        ("PermissionRequest", None),
        ("SessionEnd", None),
    ],
    "gemini": [
        ("BeforeTool", "*"),
        ("AfterTool", "*"),
        ("BeforeAgent", None),
        ("AfterAgent", None),
        ("SessionStart", None),
        ("SessionEnd", None),
        ("Notification", None),
    ],
    "cursor": [
        ("beforeShellExecution", None),
        ("beforeMCPExecution", None),
        ("beforeReadFile", None),
        ("afterShellExecution", None),
        ("afterMCPExecution", None),
        ("afterFileEdit", None),
        ("beforeSubmitPrompt", None),
        ("stop", None),
    ],
}

SETTINGS_FILE = {
    "claude": (".claude", "settings.json"),
    "codex": (".codex", "hooks.json"),
    "gemini": (".gemini", "settings.json"),
    "cursor": (".cursor", "hooks.json"),
}

SLASH_COMMAND = (".claude", "commands", "supervise.md")
HOOK_MARK = "/cocoplus/hook/__main__.py"


def hook_script() -> str:
    import cocoplus.hook

    return os.path.join(os.path.dirname(os.path.abspath(cocoplus.hook.__file__)), "__main__.py")


def hook_command(runtime: str, event: str, project: str | None = None) -> str:
    """The exact shell command a runtime runs for one event."""
    parts = [shlex.quote(sys.executable), "-S", shlex.quote(hook_script()), event, "--runtime", runtime]
    if project is not None and runtime in ("codex", "cursor"):
        # These runtimes name no project directory in the hook's environment.
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
    if HOOK_MARK in command:
        return True
    words = command.replace("'", " ").replace('"', " ").split()
    return any(os.path.basename(w) == "cocoplus" for w in words) and "hook" in words


def _settings_path(project: str, runtime: str) -> str:
    return os.path.join(project, *SETTINGS_FILE[runtime])


def load_settings(path: str) -> dict[str, Any]:
    """A runtime's JSON settings file ({} if absent or empty); refuses to touch a damaged one."""
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


def write_settings(path: str, obj: dict[str, Any]) -> None:
    fsio.ensure_dir(os.path.dirname(path))
    fsio.atomic_write_bytes(path, (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode("utf-8"), mode=0o644)


def _handler(runtime: str, event: str, project: str, timeout_s: int) -> dict[str, Any]:
    cmd = hook_command(runtime, event, project)
    if runtime == "gemini":
        return {"type": "command", "name": f"cocoplus-{event}", "command": cmd, "timeout": timeout_s * 1000}
    if runtime == "cursor":
        return {"command": cmd}
    return {"type": "command", "command": cmd, "timeout": timeout_s}


def _strip_ours(entries: list[Any]) -> tuple[list[Any], int]:
    """Remove cocoplus handlers from a list of matcher groups (or Cursor's flat list)."""
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


def install(runtime: str, project: str, timeout_s: int = 10) -> dict[str, Any]:
    if runtime not in RUNTIMES:
        raise UsageError(f"unknown runtime {runtime!r}: use one of {', '.join(RUNTIMES)}")
    path = _settings_path(project, runtime)
    settings = load_settings(path)
    before = json.dumps(settings, sort_keys=True)
    hooks = settings.get("hooks")
    if hooks is None:
        hooks = {}
    if not isinstance(hooks, dict):
        raise CocoplusError(f"{path}: \"hooks\" is not an object; fix it by hand, cocoplus will not overwrite it")
    changes: list[str] = []
    for event, matcher in EVENTS[runtime]:
        entries = hooks.get(event) or []
        if not isinstance(entries, list):
            raise CocoplusError(f"{path}: hooks.{event} is not a list; fix it by hand")
        kept, removed = _strip_ours(entries)
        handler = _handler(runtime, event, project, timeout_s)
        if runtime == "cursor":
            kept.append(handler)
        else:
            group: dict[str, Any] = {"hooks": [handler]}
            if matcher is not None:
                group = {"matcher": matcher, **group}
            kept.append(group)
        hooks[event] = kept
        new_json = json.dumps(kept, sort_keys=True)
        old_json = json.dumps(entries, sort_keys=True)
        if new_json != old_json:
            changes.append(f"{event}: {'updated' if removed else 'added'}")
    settings["hooks"] = hooks
    if runtime == "cursor":
        settings.setdefault("version", 1)
    extra: list[str] = []
    if runtime == "gemini":
        tools = settings.get("tools")
        if isinstance(tools, dict) and tools.get("enableHooks") is False:
            extra.append("hooks are disabled in this settings file (tools.enableHooks = false); enable them")
    wrote = json.dumps(settings, sort_keys=True) != before
    if wrote:
        write_settings(path, settings)
    files = [path]
    if runtime == "claude":
        cmd_path, cmd_changed = _install_slash_command(project)
        files.append(cmd_path)
        if cmd_changed:
            changes.append("/supervise slash command: written")
    mcp = None
    try:
        from cocoplus.mcp import register as mcp_register

        mcp = mcp_register.install(runtime, project)
    except ImportError:
        mcp = None
    if mcp and mcp.get("changed"):
        changes.append(f"MCP server: registered in {os.path.relpath(mcp['path'], project)}")
        files.append(mcp["path"])
    return {
        "runtime": runtime,
        "settings": path,
        "files": files,
        "changes": changes,
        "changed": bool(changes),
        "todo": _todo(runtime, project) + extra,
    }


def _todo(runtime: str, project: str) -> list[str]:
    if runtime == "claude":
        return [
            "interactive sessions run project hooks only after you accept the folder's trust dialog; `claude -p` trusts it",
            "check with `/hooks` inside Claude Code, then `cocoplus doctor` after the first tool call",
        ]
    if runtime == "codex":
        return [
            f'trust the project in ~/.codex/config.toml: [projects."{project}"] trust_level = "trusted"',
            "review and trust the new hooks with `/hooks` in Codex (changed hooks are skipped until trusted); "
            "for vetted automation, `codex exec --dangerously-bypass-hook-trust`",
        ]
    if runtime == "gemini":
        return ["hooks load from .gemini/settings.json; if folder trust is on, trust this folder"]
    return [
        "Cursor has no post-tool stop: the iteration cap creates AGENT_STOP and the next command is denied",
        "Cursor cannot add context to a prompt: steers stay pending for another runtime or `session status`",
    ]


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


def _install_slash_command(project: str) -> tuple[str, bool]:
    path = os.path.join(project, *SLASH_COMMAND)
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
    if runtime not in RUNTIMES:
        raise UsageError(f"unknown runtime {runtime!r}: use one of {', '.join(RUNTIMES)}")
    path = _settings_path(project, runtime)
    settings = load_settings(path)
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
        write_settings(path, settings)
    if runtime == "claude":
        cmd_path = os.path.join(project, *SLASH_COMMAND)
        current = fsio.read_text(cmd_path) if os.path.exists(cmd_path) else None
        if current is not None and "cocoplus" in current:
            os.unlink(cmd_path)
            changes.append("/supervise slash command: removed")
    try:
        from cocoplus.mcp import register as mcp_register

        mcp = mcp_register.uninstall(runtime, project)
        if mcp and mcp.get("changed"):
            changes.append("MCP server: removed")
    except ImportError:
        pass
    return {"runtime": runtime, "settings": path, "changes": changes, "changed": bool(changes)}


def doctor(layout: Layout) -> dict[str, Any]:
    """Which runtimes are wired, whether the entries are current, and whether hooks have fired."""
    from cocoplus.session import registry

    project = layout.project
    records, problems = registry.list_sessions(layout)
    out: dict[str, Any] = {"project": project, "runtimes": {}, "problems": problems}
    for runtime in RUNTIMES:
        path = _settings_path(project, runtime)
        info: dict[str, Any] = {"settings": path, "exists": os.path.exists(path)}
        try:
            settings = load_settings(path)
        except CocoplusError as exc:
            info.update(wired=False, error=str(exc))
            out["runtimes"][runtime] = info
            continue
        hooks = settings.get("hooks") if isinstance(settings.get("hooks"), dict) else {}
        wired, stale, missing = [], [], []
        for event, _m in EVENTS[runtime]:
            cmds = _commands(hooks.get(event))
            ours = [c for c in cmds if is_ours(c)]
            if not ours:
                missing.append(event)
                continue
            wired.append(event)
            if hook_command(runtime, event, project) not in ours:
                stale.append(event)
        try:
            from cocoplus.mcp import register as mcp_register

            info["mcp_registered"] = mcp_register.registered(runtime, project)
        except ImportError:
            info["mcp_registered"] = None
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


def _commands(entries: Any) -> list[str]:
    cmds: list[str] = []
    if not isinstance(entries, list):
        return cmds
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        if isinstance(entry.get("hooks"), list):
            cmds.extend(h.get("command") for h in entry["hooks"] if isinstance(h, dict) and isinstance(h.get("command"), str))
        elif isinstance(entry.get("command"), str):
            cmds.append(entry["command"])
    return cmds
