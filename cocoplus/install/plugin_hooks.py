"""`install` and `uninstall` for a runtime that loads hooks only from installed plugins (an adapter's `PLUGIN`: the
Antigravity CLI), and what `doctor` checks of it.

Such a runtime reads no project hook file cocoplus could write, so
`install` writes a plugin into this user's cocoplus directory
(`userfiles.plugin_directory`): `plugin.json` and `hooks.json` side by side at
its root, the hooks as one named hook (the plugin's name) holding each
installed event: an event installed with a matcher as matcher groups, the
others as a flat list of handlers (docs/runtimes.md, "Antigravity CLI").  Then
it installs it with the runtime's own command (`agy plugin install DIR`) when
the runtime is on PATH, else says the command to run.  The plugin is global to
this user: its commands carry no project, and the hook finds the project from
each payload and does nothing outside a cocoplus project.  Nothing is written
into the project (nothing to commit).  `uninstall` runs `agy plugin uninstall`
and removes the copy.

Each command runs this user's cocoplus through the pointer file
(launcher.py's `plugin_launcher`); with no cocoplus at all it prints the
runtime's own answer, a deny before a tool (the runtime refuses a tool whose
hook answered nothing), saying how to remove the plugin.
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

from cocoplus import __version__
from cocoplus.core import fsio, userfiles
from cocoplus.core.errors import CocoplusError
from cocoplus.hook import timeouts
from cocoplus.install import files, launcher, wiring
from cocoplus.session import procinfo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cocoplus.runtimes.protocol import Adapter

MANIFEST = "plugin.json"
HOOKS = "hooks.json"
# How long the runtime's own plugin command may take.
COMMAND_TIMEOUT_S = 60


def directory(adapter: Adapter) -> str:
    return userfiles.plugin_directory(adapter.NAME)


def command(adapter: Adapter, event: str, kind: str, seconds: int) -> str:
    """The plugin's command for one event: this user's cocoplus, else the runtime's own well-formed answer."""
    if kind == "pre_tool":
        fallback: dict[str, Any] | None = adapter.deny_tool(
            event,
            f"cocoplus: its {adapter.TITLE} plugin is installed but cocoplus is not installed for this user, so "
            f"this call cannot be checked and is refused ({launcher.INSTALL_HINT}; or remove the plugin: "
            f"{adapter.COMMAND} plugin uninstall {adapter.PLUGIN})",
        )
    else:
        fallback = adapter.pass_answer(kind)
    return launcher.plugin_launcher(
        adapter.NAME, event, seconds, wiring.flags(adapter, kind), json.dumps(fallback if fallback is not None else {})
    )


def hooks_document(adapter: Adapter, timeout_s: int, hold_s: int = 0, wait_s: int = 0) -> dict[str, Any]:
    """The plugin's `hooks.json`: one named hook holding every installed event."""
    named: dict[str, Any] = {"enabled": True}
    for event, kind, matcher in wiring.events(adapter):
        seconds = timeouts.for_event(adapter, event, kind, timeout_s, hold_s, wait_s)
        handler = adapter.hook_entry(command(adapter, event, kind, seconds), event, seconds)
        named[event] = [{"matcher": matcher, "hooks": [handler]}] if matcher is not None else [handler]
    return {str(adapter.PLUGIN): named}


def manifest(adapter: Adapter) -> dict[str, Any]:
    return {
        "name": adapter.PLUGIN,
        "version": __version__,
        "description": "cocoplus: the kill switch, the iteration cap, steering and permission rules for "
        f"{adapter.TITLE} sessions in cocoplus projects",
    }


def _write(path: str, doc: dict[str, Any]) -> bool:
    """Write a JSON file of the plugin if it differs (never through a symbolic link); whether it changed."""
    text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    if os.path.lexists(path) and not os.path.islink(path) and files.read_text(path) == text:
        return False
    fsio.ensure_dir(os.path.dirname(path))
    fsio.atomic_write_bytes(path, text.encode("utf-8"), mode=0o644)
    return True


def _run(adapter: Adapter, *args: str) -> tuple[bool, str] | None:
    """Run the runtime's own command (None: it is not on PATH): whether it succeeded, and its last line."""
    program = procinfo.find_program(adapter.COMMAND, os.environ.get("PATH"))
    if program is None:
        return None
    try:
        r = subprocess.run(
            [program, *args],
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return False, str(exc)
    said = (r.stdout.strip() or r.stderr.strip()).splitlines()
    return r.returncode == 0, said[-1] if said else f"exit {r.returncode}"


def _installed_copy_current(adapter: Adapter, source: str) -> bool:
    """Whether the runtime holds a copy of the plugin whose hooks are the ones just written."""
    where = adapter.plugin_active(os.environ)
    if where is None:
        return False
    try:
        return files.read_text(os.path.join(where, HOOKS)) == files.read_text(os.path.join(source, HOOKS))
    except CocoplusError:
        return False


def install(
    adapter: Adapter, project: str, parts: dict[str, int], environ: dict[str, str] | None = None
) -> dict[str, Any]:
    """Write the plugin and install it with the runtime's own command (or say the command); the `install` result."""
    source = directory(adapter)
    changes: list[str] = []
    if _write(os.path.join(source, MANIFEST), manifest(adapter)):
        changes.append(f"plugin manifest written ({userfiles.shown(os.path.join(source, MANIFEST))})")
    if _write(
        os.path.join(source, HOOKS), hooks_document(adapter, parts["timeout_s"], parts["hold_s"], parts["wait_s"])
    ):
        changes.append(f"plugin hooks written ({userfiles.shown(os.path.join(source, HOOKS))})")
    todo: list[str] = []
    how = f"{adapter.COMMAND} plugin install {source}"
    if changes or not _installed_copy_current(adapter, source):
        ran = _run(adapter, "plugin", "install", source)
        if ran is None:
            todo.append(f"`{adapter.COMMAND}` is not on PATH: run `{how}` to install cocoplus' plugin")
        elif ran[0]:
            changes.append(f"plugin installed: `{how}` ({ran[1]})")
        else:
            todo.append(f"`{how}` failed ({ran[1]}): run it yourself")
    # As for any runtime (install/hooks.py): this project pinned to this cocoplus (found where the runtime runs a
    # hook in the project), this user's pointer written only where it names no usable cocoplus.
    pinned = launcher.write_project_pointer(project)
    if pinned["changed"]:
        changes.append(f"this project's hooks now run this cocoplus ({pinned['path']})")
    pointer = launcher.write_pointer(environ, only_if_unusable=True)
    if pointer["changed"]:
        changes.append(f"this user's other hooks now run this cocoplus ({pointer['path']})")
    return {
        "runtime": adapter.NAME,
        "settings": os.path.join(source, HOOKS),
        "settings_rel": userfiles.shown(os.path.join(source, HOOKS)),
        "files": [os.path.join(source, MANIFEST), os.path.join(source, HOOKS)],
        "changes": changes,
        "changed": bool(changes),
        "commit": [],
        "do_not_commit": [],
        "pointer": pinned["path"],
        "plugin": source,
        "todo": todo,
    }


def uninstall(adapter: Adapter) -> dict[str, Any]:
    """Remove the plugin from the runtime (its own command, or say it) and this user's copy."""
    source = directory(adapter)
    changes: list[str] = []
    todo: list[str] = []
    how = f"{adapter.COMMAND} plugin uninstall {adapter.PLUGIN}"
    if adapter.plugin_active(os.environ) is not None:
        ran = _run(adapter, "plugin", "uninstall", str(adapter.PLUGIN))
        if ran is None:
            todo.append(f"`{adapter.COMMAND}` is not on PATH: run `{how}` to remove cocoplus' plugin")
        elif ran[0]:
            changes.append(f"plugin removed: `{how}`")
        else:
            todo.append(f"`{how}` failed ({ran[1]}): run it yourself")
    if os.path.isdir(source) and not os.path.islink(source):
        for name in (MANIFEST, HOOKS):
            path = os.path.join(source, name)
            if os.path.lexists(path):
                os.unlink(path)
        try:
            os.rmdir(source)  # only if nothing else was put there
        except OSError:
            todo.append(f"{userfiles.shown(source)} holds files cocoplus did not write: left as it is")
        changes.append(f"this user's copy of the plugin removed ({userfiles.shown(source)})")
    return {
        "runtime": adapter.NAME,
        "settings": os.path.join(source, HOOKS),
        "changes": changes,
        "changed": bool(changes),
        "todo": todo,
    }


def installed_file(adapter: Adapter) -> str:
    """The plugin's hooks.json the runtime runs: its installed copy, else this user's (not installed yet)."""
    where = adapter.plugin_active(os.environ)
    return os.path.join(where if where is not None else directory(adapter), HOOKS)


def installed_hooks(adapter: Adapter) -> dict[str, Any]:
    """`{event: entries}` of the plugin the runtime runs ({} when it holds none, or it cannot be read)."""
    where = adapter.plugin_active(os.environ)
    if where is None:
        return {}
    try:
        named = files.load_json(os.path.join(where, HOOKS)).get(str(adapter.PLUGIN))
    except CocoplusError:
        return {}
    return {k: v for k, v in named.items() if isinstance(v, list)} if isinstance(named, dict) else {}


def loaded(adapter: Adapter) -> dict[str, Any]:
    """What `doctor` knows of the plugin: where the runtime keeps it, whether its own plugin list names it, and what
    its log last said of the hooks it loaded (the log is where a hooks.json it refused is reported)."""
    info: dict[str, Any] = {"installed": adapter.plugin_active(os.environ), "listed": None, "log": None}
    listed = _run_output(adapter, "plugin", "list")
    if listed is not None:
        info["listed"] = str(adapter.PLUGIN) in listed
    log = os.path.join(userfiles.home(), *adapter.PLUGIN_LOG) if adapter.PLUGIN_LOG else None
    if log is not None and os.path.isfile(log):
        try:
            lines = files.read_text(log).splitlines()
        except CocoplusError:
            lines = []
        said = [x.strip() for x in lines if "hooks.json" in x and ("loaded" in x or "failed" in x)]
        info["log"] = said[-1][:300] if said else None
    return info


def _run_output(adapter: Adapter, *args: str) -> str | None:
    program = procinfo.find_program(adapter.COMMAND, os.environ.get("PATH"))
    if program is None:
        return None
    try:
        r = subprocess.run(
            [program, *args], capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout if r.returncode == 0 else None


def notes(adapter: Adapter) -> list[str]:
    """`doctor`'s lines about the plugin of a runtime that loads hooks only from plugins ([] for any other)."""
    if adapter.PLUGIN is None:
        return []
    info = loaded(adapter)
    out: list[str] = []
    if info["installed"] is None:
        out.append(
            f"cocoplus' {adapter.TITLE} plugin is not installed: run `cocoplus install {adapter.NAME}` (it "
            f"loads hooks only from plugins)"
        )
    if info["listed"] is False:
        out.append(f"`{adapter.COMMAND} plugin list` does not name {adapter.PLUGIN}: its hooks do not run")
    if info["log"] and "failed" in info["log"]:
        out.append(f"{adapter.TITLE}'s log says: {info['log']}")
    return out
