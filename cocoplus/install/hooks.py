"""Wiring cocoplus into agent runtimes: `install`, `uninstall`, `doctor`, for any adapter.

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
empty.  `doctor` reports what is wired and what is wrong with it: commands
naming an interpreter or project that is not there, a missing pointer,
hooks written by an older release (an upgrade is available).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from typing import Any

from cocoplus import config
from cocoplus.core import clock, fsio, keys
from cocoplus.core.errors import CocoplusError, ConfigInvalid, UsageError
from cocoplus.core.paths import STATE_DIR_NAME, Layout
from cocoplus.hook import timeouts
from cocoplus.install import bundles, files, launcher, mcp_config, wiring
from cocoplus.runtimes import registry
from cocoplus.session import registry as sessions

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
    return wiring.command(
        adapter, event, kind, form_for(adapter), expected_timeouts(adapter, configured(project))[event]
    )


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


def _hooks_of(path: str, settings: dict[str, Any]) -> dict[str, Any]:
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
    target = target_file(adapter)
    path = os.path.join(project, *target)
    settings = files.load_json(path)
    before = json.dumps(settings, sort_keys=True)
    hooks = _hooks_of(path, settings)
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
    pointer = launcher.write_pointer(environ)
    if pointer["changed"]:
        changes.append(f"this user's hooks now run this cocoplus ({pointer['path']})")
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
        "pointer": pointer["path"],
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


def describe(command: str) -> dict[str, Any]:
    """What one of cocoplus' hook commands runs: its form, the `--timeout` it tells the hook (None if it tells
    none), and for a direct one the interpreter, script and `--dir`."""
    if launcher.is_launcher(command):
        return {"form": "launcher", "timeout": timeouts.in_command(command)}
    try:
        words = shlex.split(command)
    except ValueError:
        return {"form": "other", "timeout": None}
    # `<python> [flags] <.../cocoplus/hook/__main__.py> <Event> ...` (the flags were `-S`, then `-E -S`)
    at = next((i for i, w in enumerate(words) if w.endswith(registry.HOOK_MARK)), None)
    if at is not None and at >= 1 and all(w.startswith("-") for w in words[1:at]):
        out: dict[str, Any] = {"form": "direct", "python": words[0], "hook": words[at], "dir": None}
        for i, w in enumerate(words):
            if w == "--dir" and i + 1 < len(words):
                out["dir"] = words[i + 1]
            elif w.startswith("--dir="):
                out["dir"] = w.split("=", 1)[1]
        out["timeout"] = timeouts.in_command(" ".join(words[at + 1 :]))
        return out
    return {"form": "other", "timeout": timeouts.in_command(command)}


def _same_project(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def hook_problems(project: str, environ: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """What is wrong with the cocoplus hooks installed in this project, each with how to fix it.

    `{"runtime", "file", "problem", "text", "reaches": bool}`; `reaches` is
    false where the kill switch does not reach an agent through these hooks
    (a command naming an interpreter or a script that is not there).
    """
    out: list[dict[str, Any]] = []
    pointer: dict[str, Any] | None = None
    on_path = shutil.which("cocoplus") is not None
    for adapter in registry.ordered():
        runtime = adapter.NAME
        fix = f"run `cocoplus install {runtime}` here"
        for rel in adapter.HOOK_FILES_READ:
            path = os.path.join(project, *rel)
            name = os.path.join(*rel)
            try:
                settings = files.load_json(path)
            except CocoplusError:
                continue
            commands = [c for c in _commands_in(settings) if is_ours(c) and _runtime_of(c) in (runtime, None)]
            seen: set[Any] = set()
            for c in commands:
                d = describe(c)
                if d["form"] == "direct":
                    for key, what in (("python", "interpreter"), ("hook", "hook script")):
                        if not os.path.exists(d[key]) and (key, d[key]) not in seen:
                            seen.add((key, d[key]))
                            out.append(
                                {
                                    "runtime": runtime,
                                    "file": name,
                                    "problem": f"missing {what}",
                                    "reaches": False,
                                    "text": (
                                        f"{adapter.TITLE} hooks in {name} run {d[key]}, which does not exist on this "
                                        f"machine: they fail, and a stop does not reach the agent; {fix}"
                                    ),
                                }
                            )
                    if d["dir"] and not _same_project(d["dir"], project) and ("dir", d["dir"]) not in seen:
                        seen.add(("dir", d["dir"]))
                        out.append(
                            {
                                "runtime": runtime,
                                "file": name,
                                "problem": "other project",
                                "reaches": True,
                                "text": (
                                    f"{adapter.TITLE} hooks in {name} were written for another project ({d['dir']}, "
                                    f"--dir); they guard the project the agent works in, but {fix} to rewrite them"
                                ),
                            }
                        )
                    local = adapter.LOCAL_HOOKS_FILE
                    if (not local or tuple(rel) != tuple(local)) and ("shared", name) not in seen:
                        seen.add(("shared", name))
                        cure = (
                            f"it moves them to {os.path.join(*local)}"
                            if local
                            else "it writes commands that work on every machine"
                        )
                        out.append(
                            {
                                "runtime": runtime,
                                "file": name,
                                "problem": "paths in a committed file",
                                "reaches": True,
                                "text": (
                                    f"{name} holds hook commands with paths on this machine, in a file teams commit; "
                                    f"{fix}: {cure}"
                                ),
                            }
                        )
                elif d["form"] == "launcher" and "pointer" not in seen:
                    seen.add("pointer")
                    if pointer is None:
                        pointer = launcher.read_pointer(environ)
                    if not pointer["exists"] and not on_path:
                        out.append(
                            {
                                "runtime": runtime,
                                "file": name,
                                "problem": "no cocoplus for this user",
                                "reaches": True,
                                "text": (
                                    f"{adapter.TITLE} hooks in {name} find no cocoplus for this user "
                                    f"({pointer['path']} is missing and `cocoplus` is not on PATH): only the kill "
                                    "switch holds; run `cocoplus install` (any runtime)"
                                ),
                            }
                        )
                    elif pointer["problems"]:
                        out.append(
                            {
                                "runtime": runtime,
                                "file": name,
                                "problem": "pointer broken",
                                "reaches": True,
                                "text": (
                                    f"{adapter.TITLE} hooks in {name} run this user's cocoplus through "
                                    f"{pointer['path']}: {pointer['problems'][0]}; run `cocoplus install` (any "
                                    "runtime) to point it here"
                                ),
                            }
                        )
    return out


def _runtime_of(command: str) -> str | None:
    words = command.replace(";", " ").split()
    for i, w in enumerate(words[:-1]):
        if w == "--runtime":
            return words[i + 1]
    return None


def _commands_in(settings: dict[str, Any]) -> list[str]:
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return []
    out: list[str] = []
    for entries in hooks.values():
        out += _commands(entries)
    return out


def carriers(project: str) -> dict[str, str]:
    """Which runtimes' hooks will carry a stop to their agents in this project, and how (never raises):
    project hooks `install` wrote that reach cocoplus, or this user's cocoplus plugin."""
    out: dict[str, str] = {}
    try:
        broken = {p["runtime"] for p in hook_problems(project) if p.get("reaches") is False}
    except (CocoplusError, OSError):
        broken = set()
    for adapter in registry.ordered():
        try:
            hooks = _hooks_of(settings_path(adapter, project), files.load_json(settings_path(adapter, project)))
        except (CocoplusError, OSError):
            hooks = {}
        if adapter.NAME not in broken and any(is_ours(c) for e in hooks.values() for c in _commands(e)):
            out[adapter.NAME] = f"its hooks in {os.path.relpath(settings_path(adapter, project), project)}"
        elif (where := bundles.plugin_active(adapter.NAME)) is not None:
            out[adapter.NAME] = f"this user's cocoplus plugin ({where})"
    return out


def stop_warnings(layout: Layout) -> list[str]:
    """What `session stop` says about hooks that do not guard this project as installed (never raises)."""
    try:
        return [
            p["text"]
            for p in hook_problems(layout.project)
            if p["problem"] in ("missing interpreter", "missing hook script", "other project")
        ]
    except (CocoplusError, OSError):
        return []


def doctor(layout: Layout) -> dict[str, Any]:
    """Which runtimes are wired, whether the entries are current, what is wrong with them,
    and whether hooks have fired."""
    project = layout.project
    records, problems = sessions.list_sessions(layout)
    problems = list(problems) + _config_problems(layout)
    found = hook_problems(project)
    parts = configured(project)
    out: dict[str, Any] = {"project": project, "runtimes": {}, "problems": problems, "hook_problems": found}
    for adapter in registry.ordered():
        runtime = adapter.NAME
        path = settings_path(adapter, project)
        info: dict[str, Any] = {"settings": path, "exists": os.path.exists(path)}
        hooks: dict[str, list[str]] = {}
        installed: dict[str, list[float]] = {}  # event -> the timeouts its cocoplus hooks were installed with
        stray: list[str] = []
        error = None
        for rel in adapter.HOOK_FILES_READ:
            try:
                settings = files.load_json(os.path.join(project, *rel))
            except CocoplusError as exc:
                error = str(exc)
                continue
            doc = settings["hooks"] if isinstance(settings.get("hooks"), dict) else {}
            for event, entries in doc.items():
                handlers = [
                    h
                    for h in _handlers(entries)
                    if is_ours(h["command"]) and _runtime_of(h["command"]) in (runtime, None)
                ]
                ours = [h["command"] for h in handlers]
                if ours:
                    hooks.setdefault(event, []).extend(ours)
                    for h in handlers:
                        seconds = timeouts.in_command(h["command"])
                        seconds = adapter.entry_timeout(h) if seconds is None else seconds
                        if seconds is not None:
                            installed.setdefault(event, []).append(seconds)
                    if tuple(rel) != target_file(adapter):
                        stray.append(os.path.join(*rel))
        if error and not hooks:
            info.update(wired=False, error=error)
            out["runtimes"][runtime] = info
            continue
        wired: list[str] = []
        stale: list[str] = []
        missing: list[str] = []
        expected = expected_timeouts(adapter, parts)
        for event, kind, _m in wiring.events(adapter):
            ours = hooks.get(event, [])
            if not ours:
                missing.append(event)
                continue
            wired.append(event)
            if ours != [wiring.command(adapter, event, kind, form_for(adapter), expected[event])] or stray:
                stale.append(event)
        info["plugin"] = bundles.plugin_active(runtime)
        info["timeouts"] = timeout_notes(
            adapter, {e: min(t) for e, t in installed.items() if e in wired}, expected, parts
        )
        if info["plugin"] and runtime in bundles.RUNTIMES:
            info["timeouts"] += timeout_notes(adapter, bundles.carried(adapter), expected, parts, plugin=info["plugin"])
        if info["plugin"] and wired:
            info["twice"] = (
                f"the cocoplus plugin ({info['plugin']}) and `cocoplus install {runtime}` are both active: every hook "
                f"runs twice; run `cocoplus uninstall {runtime}` or disable the plugin"
            )
        info["mcp_registered"] = mcp_config.registered(adapter, project)
        info["mcp_current"] = mcp_config.current(adapter, project)
        mine = [r for r in records if r.get("runtime") == runtime]
        last = max((r.get("last_event_at") or "" for r in mine), default="") or None
        info.update(
            wired=bool(wired),
            events=wired,
            missing=missing,
            outdated=stale,
            upgrade_available=bool(wired) and bool(stale or info["mcp_current"] is False),
            in_other_files=sorted(set(stray)),
            problems=[p["text"] for p in found if p["runtime"] == runtime],
            sessions_seen=len(mine),
            last_hook_event_at=last,
            fired=bool(mine),
        )
        out["runtimes"][runtime] = info
    out["pointer"] = launcher.read_pointer()
    out["cocoplus_on_path"] = shutil.which("cocoplus")
    out["hook_log"] = layout.rel(layout.hook_log) if os.path.exists(layout.hook_log) else None
    out["checked_at"] = clock.iso()
    return out


def timeout_notes(
    adapter: Adapter,
    installed: Mapping[str, float],
    expected: dict[str, int],
    parts: dict[str, int],
    plugin: str | None = None,
) -> list[str]:
    """What doctor says about hook timeouts written for other settings than this project's (one sentence, or none).

    `installed` is what the runtime's hooks carry (`plugin`: this user's cocoplus plugin, which carries the
    defaults' waits); `expected` what `install` would write now.  A shorter one cuts the turn-end hold or the
    permission wait to fit (`wait_for`, hook/timeouts.py); a longer one only needs writing again.
    """
    from cocoplus.core.lock import wait_allowed  # deferred: doctor alone weighs the waits

    kinds = {e: k for e, k, _m in adapter.EVENTS}
    short: list[str] = []
    other: list[str] = []
    for event, want in expected.items():
        have = installed.get(event)
        if have is None or have == want:
            continue
        what = "[hooks] timeout_s"
        cut = ""
        kind = kinds.get(event)
        if kind == "stop" and parts["hold_s"] > 0:
            what += " + [supervision] hold_turn_end_s"
            cut = (
                f"the turn-end hold lasts at most {wait_allowed(have, parts['timeout_s']):g} s, not {parts['hold_s']} s"
            )
        elif kind == "permission" and adapter.ASKS_PERMISSION:
            what += " + [permissions] wait_s"
            cut = (
                f"a permission request waits at most {wait_allowed(have, parts['timeout_s']):g} s for an answer, "
                f"not {parts['wait_s']} s"
            )
        text = f"{event}: {have:g} s written, {want} s for {what} now"
        if have < want:
            short.append(text + (f" ({cut})" if cut else ""))
        else:
            other.append(text)
    if not short and not (other and plugin is None):
        return []
    listed = "; ".join(short + other)
    if plugin is not None:
        return [
            f"the cocoplus plugin ({plugin}) carries hook timeouts for the default settings, not this project's "
            f"({listed}); for the waits cocoplus.toml asks for, "
            f"use `cocoplus install {adapter.NAME}` here instead of the plugin"
        ]
    return [
        f"{adapter.TITLE} hook timeouts were written for other settings than the current ones ({listed}): run "
        f"`cocoplus install {adapter.NAME}` again"
    ]


def _config_problems(layout: Layout) -> list[str]:
    """A cocoplus.toml that does not load: the hooks run on their last good values until it is fixed."""
    try:
        config.load_for(layout)
    except ConfigInvalid as exc:
        return [f"{exc} (the hooks keep using the last good values until it is fixed)"]
    return []


def _handlers(entries: Any) -> list[dict[str, Any]]:
    """Every handler (with a command) in one event's entries: matcher groups, or a flat list."""
    out: list[dict[str, Any]] = []
    if not isinstance(entries, list):
        return out
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        for h in entry["hooks"] if isinstance(entry.get("hooks"), list) else [entry]:
            if isinstance(h, dict) and isinstance(h.get("command"), str):
                out.append(h)
    return out


def _commands(entries: Any) -> list[str]:
    cmds: list[str] = []
    if not isinstance(entries, list):
        return cmds
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        if isinstance(entry.get("hooks"), list):
            cmds.extend(
                h["command"] for h in entry["hooks"] if isinstance(h, dict) and isinstance(h.get("command"), str)
            )
        elif isinstance(entry.get("command"), str):
            cmds.append(entry["command"])
    return cmds
