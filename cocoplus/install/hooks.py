"""Wiring cocoplus into agent runtimes: what `install` and `uninstall` write, for any adapter.

Team-safe, in the spirit of pre-commit (the configuration is committed; the
hook is installed per clone): nothing machine-specific goes into a file a
team commits.

* Where the runtime has a per-user project file (LOCAL_HOOKS_FILE: Claude
  Code's `.claude/settings.local.json`), the hooks go there, in the direct
  form `<this interpreter> -S <cocoplus/hook/__main__.py> <Event> --runtime R`
  (the fastest start, SPEC section 10), and git is told to ignore the file.
* Elsewhere (`.codex/hooks.json`, `.gemini/settings.json`,
  `.cursor/hooks.json`) they are the launcher: the same few lines of shell
  on every machine, which run this user's cocoplus through a per-user
  pointer file that `install` writes (install/launcher.py).
* The MCP server entry and the `/supervise` command carry no path either.

What goes where is built by wiring.py, which also builds the agent
plugins and extensions.  Entries are recognised as cocoplus' own by their
command (any form any release wrote), upgraded in place (and moved out of
a committed file), and everyone else's hooks are left alone.  `uninstall`
also removes the files and directories `install` created that are left
empty.  What `cocoplus doctor` checks of the wiring (and what a stop needs
to know of it) is `install/doctor.py`.
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

from cocoplus import config
from cocoplus.core import fsio, keys
from cocoplus.core.errors import CocoplusError, ConfigInvalid, UsageError
from cocoplus.core.paths import STATE_DIR_NAME, Layout
from cocoplus.hook import timeouts
from cocoplus.install import files, launcher, mcp_config, plugin_hooks, wiring
from cocoplus.runtimes import registry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cocoplus.runtimes.protocol import Adapter

SLASH_COMMAND = "supervise.md"
hook_script = launcher.hook_script


def adapter_for(runtime: str) -> Adapter:
    if not registry.known(runtime):
        raise UsageError(f"unknown runtime {runtime!r}: use one of {registry.listing()}")
    return registry.get(runtime)


def form_for(adapter: Adapter) -> str:
    """The command form `install` writes: direct into a per-user file, the launcher into a committed one."""
    return "direct" if adapter.LOCAL_HOOKS_FILE else "launcher"


def target_file(adapter: Adapter) -> tuple[str, ...]:
    """The project file `install` writes the hooks into (project-relative parts)."""
    return tuple(adapter.LOCAL_HOOKS_FILE or adapter.HOOKS_FILE)


def hook_command(runtime: str, event: str, project: str | None = None) -> str:
    """The exact shell command `install` writes for one event of one runtime (in `project`: with the timeout its
    cocoplus.toml asks for; else with the defaults')."""
    adapter = adapter_for(runtime)
    kind = registry.kind(adapter, event)
    return expected_command(adapter, event, kind, expected_timeouts(adapter, configured(project))[event])


def expected_command(adapter: Adapter, event: str, kind: str, seconds: int) -> str:
    """The command `install` writes for one event with this timeout: its plugin's, or the project file's form."""
    if adapter.PLUGIN is not None:
        return plugin_hooks.command(adapter, event, kind, seconds)
    return wiring.command(adapter, event, kind, form_for(adapter), seconds)


def configured(project: str | None) -> dict[str, int]:
    """What the hooks' timeouts are made of, from this project's configuration (the defaults where it does not
    load, or with no project): `timeout_s` (`[hooks] timeout_s`), `hold_s` (`[supervision] hold_turn_end_s`),
    `wait_s` (`[permissions] wait_s`)."""
    values: dict[str, Any] | None = None
    if project is not None:
        try:
            cfg = config.load(project)
            values = {name: cfg.get(key) for name, key in TIMEOUT_KEYS.items()}
        except ConfigInvalid:
            values = None
    if values is None:
        values = {name: keys.BY_DOTTED[key].default for name, key in TIMEOUT_KEYS.items()}
    return {name: int(v) for name, v in values.items()}


# What each hook timeout is made of (hook/timeouts.py), and the key that sets it.
TIMEOUT_KEYS = {"timeout_s": "hooks.timeout_s", "hold_s": "supervision.hold_turn_end_s", "wait_s": "permissions.wait_s"}


def expected_timeouts(adapter: Adapter, parts: dict[str, int]) -> dict[str, int]:
    """`{event: seconds}`: the timeout `install` writes for each installed event, from `configured`'s parts."""
    return {event: timeouts.for_event(adapter, event, kind, **parts) for event, kind, _m in wiring.events(adapter)}


def is_ours(command: Any) -> bool:
    """Whether a hook command is cocoplus' own, in any form any release wrote."""
    if not isinstance(command, str):
        return False
    if registry.HOOK_MARK in command or launcher.is_launcher(command):
        return True
    words = command.replace("'", " ").replace('"', " ").split()
    return any(os.path.basename(w) == "cocoplus" for w in words) and "hook" in words


def settings_path(adapter: Adapter, project: str) -> str:
    """The file `install` writes the hooks into."""
    return os.path.join(project, *target_file(adapter))


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


def hooks_of(path: str, settings: dict[str, Any]) -> dict[str, Any]:
    hooks = settings.get("hooks")
    if hooks is None:
        return {}
    if not isinstance(hooks, dict):
        raise CocoplusError(f'{path}: "hooks" is not an object; fix it by hand, cocoplus will not overwrite it')
    return hooks


def _remove_ours(adapter: Adapter, project: str, path: str) -> list[str]:
    """Take cocoplus' entries out of one hook file (deleting it if nothing else is left); the events touched."""
    settings = files.load_json(path)
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return []
    events: list[str] = []
    for event in list(hooks):
        entries = hooks[event]
        if not isinstance(entries, list):
            continue
        kept, removed = _strip_ours(entries)
        if removed:
            events.append(event)
            if kept:
                hooks[event] = kept
            else:
                del hooks[event]
    if not events:
        return []
    if not hooks:
        del settings["hooks"]
    left = {k: v for k, v in settings.items() if adapter.SETTINGS_DEFAULTS.get(k, object()) != v}
    if left:
        files.write_json(path, settings)
    else:
        os.unlink(path)  # it held nothing but what install put there
        _remove_empty_dirs(project, path)
    return events


def install(
    runtime: str, project: str, timeout_s: int | None = None, environ: dict[str, str] | None = None
) -> dict[str, Any]:
    """Wire one runtime into the project; say which files to commit and which not.

    Every hook's timeout fits the waits this project's configuration asks for (hook/timeouts.py);
    `timeout_s` overrides `[hooks] timeout_s`.
    """
    adapter = adapter_for(runtime)
    parts = configured(project)
    if timeout_s is not None:
        parts["timeout_s"] = int(timeout_s)
    if adapter.PLUGIN is not None:  # it loads hooks only from installed plugins: nothing goes into the project
        result = plugin_hooks.install(adapter, project, parts, environ)
        result["todo"] = result["todo"] + adapter.todo(project) + _precompile()
        return result
    target = target_file(adapter)
    path = os.path.join(project, *target)
    settings = files.load_json(path)
    before = json.dumps(settings, sort_keys=True)
    hooks = hooks_of(path, settings)
    changes: list[str] = []
    commit: list[str] = []
    # Entries an earlier release wrote into another file the runtime reads (a committed one) move here.
    for rel in adapter.HOOK_FILES_READ:
        other = os.path.join(project, *rel)
        if tuple(rel) != target and os.path.exists(other):
            moved = _remove_ours(adapter, project, other)
            if moved:
                changes.append(
                    f"{os.path.join(*rel)}: cocoplus' entries moved to {os.path.join(*target)} ({', '.join(moved)})"
                )
                commit.append(os.path.join(*rel))
    for event, wanted in wiring.hooks(
        adapter, form_for(adapter), parts["timeout_s"], parts["hold_s"], parts["wait_s"]
    ).items():
        entries = hooks.get(event) or []
        if not isinstance(entries, list):
            raise CocoplusError(f"{path}: hooks.{event} is not a list; fix it by hand")
        kept, removed = _strip_ours(entries)
        kept.extend(wanted)
        hooks[event] = kept
        if json.dumps(kept, sort_keys=True) != json.dumps(entries, sort_keys=True):
            changes.append(f"{event}: {'updated' if removed else 'added'}")
    settings["hooks"] = hooks
    for key, value in adapter.SETTINGS_DEFAULTS.items():
        settings.setdefault(key, value)
    if json.dumps(settings, sort_keys=True) != before:
        files.write_json(path, settings)
    written = [path]
    local: list[str] = []
    notes: list[str] = []
    if adapter.LOCAL_HOOKS_FILE:
        local.append(os.path.join(*target))
        notes += _keep_out_of_git(project, path)
    else:
        commit.append(os.path.join(*target))
    if adapter.SLASH_COMMAND_DIR is not None:
        cmd_path, cmd_changed = _install_slash_command(project, adapter.SLASH_COMMAND_DIR)
        written.append(cmd_path)
        commit.append(os.path.relpath(cmd_path, project))
        if cmd_changed:
            changes.append("/supervise slash command: written")
    mcp = mcp_config.install(adapter, project)
    if mcp:
        mcp_rel = os.path.relpath(mcp["path"], project)
        if mcp_rel not in commit:
            commit.append(mcp_rel)
        if mcp.get("changed"):
            changes.append(f"MCP server: registered in {mcp_rel}")
            written.append(mcp["path"])
        ok = mcp_config.approve(adapter, project, Layout(os.path.join(project, STATE_DIR_NAME)))
        if ok is not None:
            where = f"{os.path.relpath(ok['path'], project)} ({adapter.MCP_APPROVAL})"
            if ok["approved"] and ok["changed"]:
                changes.append(f"MCP server: approved for you in {where}, so {adapter.TITLE} does not ask")
            elif ok["changed"]:
                changes.append(f"MCP server: the approval in {where} withdrawn ({ok['why']})")
            if not ok["approved"]:
                notes.append(f"{ok['why']}, so it is not approved for you: {ok['asks']}")
    pinned = launcher.write_project_pointer(project)
    if pinned["changed"]:
        changes.append(f"this project's hooks now run this cocoplus ({pinned['path']})")
    pointer = launcher.write_pointer(environ, only_if_unusable=True)  # the fallback, for projects not pinned
    if pointer["changed"]:
        changes.append(f"this user's other hooks now run this cocoplus ({pointer['path']})")
    gitignore = os.path.join(project, STATE_DIR_NAME, ".gitignore")
    if os.path.exists(gitignore):
        commit.append(os.path.relpath(gitignore, project))
    return {
        "runtime": runtime,
        "settings": path,
        "settings_rel": os.path.join(*target),
        "files": written,
        "changes": changes,
        "changed": bool(changes),
        "commit": commit,
        "do_not_commit": local,
        "pointer": pinned["path"],
        "todo": notes
        + adapter.todo(project)
        + adapter.settings_notes(settings)
        + _precompile()
        + _plugin_notes(adapter),
    }


def install_user(environ: dict[str, str] | None = None) -> dict[str, Any]:
    """`cocoplus install` with no runtime: point this user's hooks (launchers, plugins) at this cocoplus."""
    pointer = launcher.write_pointer(environ)
    return {"runtime": None, "pointer": pointer["path"], "changed": pointer["changed"], "todo": _precompile()}


def _keep_out_of_git(project: str, path: str) -> list[str]:
    """Make git ignore a per-user file: nothing to say if it already does; else add it to this clone's
    `.git/info/exclude` (never committed) and say so.  Not a git work tree: nothing to do."""
    rel = os.path.relpath(path, project)

    def git(*args: str) -> subprocess.CompletedProcess[str] | None:
        try:
            return subprocess.run(
                ["git", "-C", project, *args], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
            )
        except (OSError, subprocess.SubprocessError):
            return None

    r = git("check-ignore", "-q", "--no-index", rel)
    if r is None:
        return [f"make sure {rel} is never committed (it holds paths on this machine): add it to .gitignore"]
    if r.returncode == 0:
        notes = []
    elif r.returncode == 1:
        top = git("rev-parse", "--show-toplevel")
        exclude = git("rev-parse", "--git-path", "info/exclude")
        if top is None or exclude is None or top.returncode or exclude.returncode:
            return [f"make sure {rel} is never committed (it holds paths on this machine): add it to .gitignore"]
        exclude_path = os.path.join(project, exclude.stdout.strip())
        line = "/" + os.path.relpath(os.path.realpath(path), os.path.realpath(top.stdout.strip()))
        try:
            current = files.read_text(exclude_path)
            files.write_text(
                exclude_path, current + ("" if not current or current.endswith("\n") else "\n") + line + "\n"
            )
        except (CocoplusError, OSError) as exc:
            return [f"could not add {rel} to git's exclude file ({exc}); add it to .gitignore"]
        notes = [f"{rel} is kept out of git by this clone's {os.path.relpath(exclude_path, project)}"]
    else:
        return []  # not a git work tree
    tracked = git("ls-files", "--error-unmatch", rel)
    if tracked is not None and tracked.returncode == 0:
        notes.append(
            f"{rel} is committed: remove it from git (`git rm --cached {rel}`); it holds paths on this machine"
        )
    return notes


def _plugin_notes(adapter: Adapter) -> list[str]:
    """A cocoplus plugin enabled in the user's Claude Code settings runs the same hooks again: say so."""
    if adapter.NAME != "claude":
        return []
    path = os.path.join(os.path.expanduser("~"), ".claude", "settings.json")
    try:
        enabled = files.load_json(path).get("enabledPlugins")
    except CocoplusError:
        return []
    if isinstance(enabled, dict) and any(str(k).startswith("cocoplus@") and v for k, v in enabled.items()):
        return ["the cocoplus plugin is enabled for this user too: every hook would run twice; disable one of them"]
    return []


def _precompile() -> list[str]:
    """Byte-compile the modules the hook imports, so no hook run
    compiles them (PYTHONDONTWRITEBYTECODE, read-only caches)."""
    import compileall  # deferred: compileall loads importlib and more; only install needs it

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ok = all(
        compileall.compile_dir(os.path.join(root, sub), quiet=2, force=False)
        for sub in ("core", "session", "hook", "runtimes", "cost")
    ) and compileall.compile_file(os.path.join(root, "config.py"), quiet=2, force=False)
    if ok:
        return []
    return [
        f"could not byte-compile cocoplus' hook modules in {root}: each hook run compiles them again (slower start)"
    ]


def _install_slash_command(project: str, directory: tuple[str, ...]) -> tuple[str, bool]:
    path = os.path.join(project, *directory, SLASH_COMMAND)
    text = wiring.supervise_markdown()
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
    if adapter.PLUGIN is not None:
        return plugin_hooks.uninstall(adapter)
    changes: list[str] = []
    for rel in adapter.HOOK_FILES_READ:
        path = os.path.join(project, *rel)
        if os.path.exists(path):
            changes += [
                f"{event}: removed" + ("" if tuple(rel) == target_file(adapter) else f" from {os.path.join(*rel)}")
                for event in _remove_ours(adapter, project, path)
            ]
    if adapter.SLASH_COMMAND_DIR is not None:
        cmd_path = os.path.join(project, *adapter.SLASH_COMMAND_DIR, SLASH_COMMAND)
        current = fsio.read_text(cmd_path) if os.path.exists(cmd_path) else None
        if current is not None and "cocoplus" in current:
            os.unlink(cmd_path)
            changes.append("/supervise slash command: removed")
            _remove_empty_dirs(project, cmd_path)
    ok = mcp_config.unapprove(adapter, project, Layout(os.path.join(project, STATE_DIR_NAME)))
    if ok and ok["changed"]:
        changes.append(f"MCP server: the approval install added to {os.path.relpath(ok['path'], project)} removed")
    mcp = mcp_config.uninstall(adapter, project)
    if mcp and mcp.get("changed"):
        changes.append("MCP server: removed")
        _remove_empty_dirs(project, mcp["path"])
    path = settings_path(adapter, project)
    if changes and os.path.exists(path):
        left = {k: v for k, v in files.load_json(path).items() if adapter.SETTINGS_DEFAULTS.get(k, object()) != v}
        if not left:
            os.unlink(path)  # it holds nothing but what install put there
        _remove_empty_dirs(project, path)
    return {"runtime": runtime, "settings": path, "changes": changes, "changed": bool(changes)}


# -- what the installed commands point at ------------------------------------------------------
