"""What `cocoplus doctor` checks of cocoplus' wiring into agent runtimes, and what a stop needs from it.

`doctor` reports what is wired and what is wrong with it: commands naming
an interpreter or project that is not there, a missing pointer, hooks
written by an older release (an upgrade is available), timeouts a wait
does not fit in (`timeout_notes`), a configuration that does not load.
`hook_problems` and `carriers` read the runtimes' hook files of a project
(a stop says which runtimes will see it: `stop_warnings`, `carriers`);
`describe` says what one installed command runs.  What `install` and
`uninstall` write is `install/hooks.py`.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Mapping
from typing import Any

from cocoplus import config
from cocoplus.core import clock
from cocoplus.core.errors import CocoplusError, ConfigInvalid
from cocoplus.core.paths import Layout
from cocoplus.hook import timeouts
from cocoplus.install import bundles, files, launcher, mcp_config, plugin_hooks, wiring
from cocoplus.install.hooks import (
    configured,
    expected_command,
    expected_timeouts,
    hooks_of,
    is_ours,
    settings_path,
    target_file,
)
from cocoplus.runtimes import registry
from cocoplus.session import registry as sessions

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cocoplus.runtimes.protocol import Adapter


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
    pointer = _Pointer(project, environ)
    for adapter in registry.ordered():
        runtime = adapter.NAME
        for rel in adapter.HOOK_FILES_READ:
            name = os.path.join(*rel)
            try:
                settings = files.load_json(os.path.join(project, *rel))
            except CocoplusError:
                continue
            commands = [c for c in _commands_in(settings) if is_ours(c) and _runtime_of(c) in (runtime, None)]
            seen: set[Any] = set()
            for c in commands:
                d = describe(c)
                found: list[tuple[str, bool, str]] = []
                if d["form"] == "direct":
                    found = _direct_problems(adapter, project, tuple(rel), d, pointer)
                elif d["form"] == "launcher":
                    found = _launcher_problems(adapter, name, pointer)
                for problem, reaches, text in found:
                    if (problem, text) not in seen:
                        seen.add((problem, text))
                        out.append(
                            {"runtime": runtime, "file": name, "problem": problem, "reaches": reaches, "text": text}
                        )
    return out


class _Pointer:
    """The pointer this project's launchers source, read once: the project's own, else this user's."""

    def __init__(self, project: str, environ: dict[str, str] | None) -> None:
        self.project = project
        self.environ = environ
        self.pinned_path = launcher.project_pointer_path(project)
        self._info: dict[str, Any] | None = None
        self.on_path = shutil.which("cocoplus") is not None

    def info(self) -> dict[str, Any]:
        if self._info is None:
            own = os.path.lexists(self.pinned_path)
            self._info = launcher.read_pointer(self.environ, path=self.pinned_path if own else None)
            self._info["pinned"] = own
        return self._info


def _direct_problems(
    adapter: Adapter, project: str, rel: tuple[str, ...], d: dict[str, Any], pointer: _Pointer
) -> list[tuple[str, bool, str]]:
    """(problem, reaches, text) of one direct-form command."""
    name = os.path.join(*rel)
    fix = f"run `cocoplus install {adapter.NAME}` here"
    out: list[tuple[str, bool, str]] = []
    for key, what in (("python", "interpreter"), ("hook", "hook script")):
        if not os.path.exists(d[key]):
            out.append((
                f"missing {what}", False,
                f"{adapter.TITLE} hooks in {name} run {d[key]}, which does not exist on this machine: they fail, "
                f"and a stop does not reach the agent; {fix}",
            ))  # fmt: skip
    if d["dir"] and not _same_project(d["dir"], project):
        out.append((
            "other project", True,
            f"{adapter.TITLE} hooks in {name} were written for another project ({d['dir']}, --dir); they guard the "
            f"project the agent works in, but {fix} to rewrite them",
        ))  # fmt: skip
    local = adapter.LOCAL_HOOKS_FILE
    if not local or rel != tuple(local):
        cure = f"it moves them to {os.path.join(*local)}" if local else "it writes commands that work on every machine"
        out.append((
            "paths in a committed file", True,
            f"{name} holds hook commands with paths on this machine, in a file teams commit; {fix}: {cure}",
        ))  # fmt: skip
    info = pointer.info()
    installed = os.path.exists(d["python"]) and os.path.exists(d["hook"])  # else the problem is that, said above
    if installed and info["pinned"] and (info.get("python"), info.get("hook")) != (d["python"], d["hook"]):
        out.append((
            "two installations", True,
            f"{adapter.TITLE} hooks in {name} run the cocoplus of {d['python']}, but this project's other hooks run "
            f"the one of {info.get('python')} ({pointer.pinned_path}); run `cocoplus install` for each runtime here "
            "with one of them",
        ))  # fmt: skip
    return out


def _launcher_problems(adapter: Adapter, name: str, pointer: _Pointer) -> list[tuple[str, bool, str]]:
    """(problem, reaches, text) of the launchers in one file: which cocoplus they run, if any."""
    info = pointer.info()
    out: list[tuple[str, bool, str]] = []
    if not info["pinned"]:
        out.append((
            "not pinned", True,
            f"{adapter.TITLE} hooks in {name} run whichever cocoplus this user's pointer names "
            f"({info.get('python') or 'none'}), which the next `cocoplus install` of another installation may "
            f"switch, not the one that wired this project; run `cocoplus install {adapter.NAME}` here with the "
            "cocoplus these hooks are to run",
        ))  # fmt: skip
    if not info["exists"] and not pointer.on_path:
        out.append((
            "no cocoplus for this user", True,
            f"{adapter.TITLE} hooks in {name} find no cocoplus for this user ({info['path']} is missing and "
            "`cocoplus` is not on PATH): only the kill switch holds; run `cocoplus install` (any runtime)",
        ))  # fmt: skip
    elif info["problems"]:
        out.append((
            "pointer broken", True,
            f"{adapter.TITLE} hooks in {name} run cocoplus through {info['path']}: {info['problems'][0]}; run "
            f"`cocoplus install {adapter.NAME}` here to point them at this cocoplus",
        ))  # fmt: skip
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
            hooks = hooks_of(settings_path(adapter, project), files.load_json(settings_path(adapter, project)))
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


# The hook problems `doctor` exits non-zero for.
FAILING = ("not pinned", "two installations", "pointer broken", "missing interpreter", "missing hook script")

# What a launched worker gives up when it runs without its runtime's cocoplus hooks (`launch --unsupervised`).
UNSUPERVISED_GIVES_UP = (
    "no kill switch at its tool calls (its runner still ends it once AGENT_STOP exists), no steer, no iteration cap, "
    "no permission routing or rules, no session record, no cost or loop guard"
)


def launch_problem(layout: Layout, runtime: str, environ: Mapping[str, str] | None = None) -> str | None:
    """Why `runtime` would not run this project's cocoplus hooks for a launched worker (None: it will), with the
    fix: they are not written, not current, or name what is not there; for a runtime that runs a project's hooks
    only once a person reviewed them (Codex), the project is not trusted in its configuration, or hooks other than
    cocoplus' own are there (cocoplus skips the runtime's review only for its own: the adapter's `launch_argv`)."""
    adapter = registry.get(runtime)
    project = layout.project
    fix = f"run `cocoplus install {runtime}` here"
    report = doctor(layout)
    info = report["runtimes"].get(runtime) or {}
    if info.get("error"):
        return f"{info['error']}; fix it, then {fix}"
    if not info.get("wired"):
        return f"its cocoplus hooks are not installed in this project; {fix}"
    if info.get("missing"):
        return f"its cocoplus hooks for {', '.join(info['missing'])} are missing in this project; {fix}"
    for problem in report["hook_problems"]:  # (doctor read them already)
        if problem["runtime"] == runtime and problem["reaches"] is False:
            return str(problem["text"])
    if adapter.HOOKS_NEED_REVIEW:
        return adapter.hooks_unreviewed(project, dict(os.environ if environ is None else environ), is_ours)
    return None


def doctor(layout: Layout) -> dict[str, Any]:
    """Which runtimes are wired, whether the entries are current, what is wrong with them,
    and whether hooks have fired."""
    project = layout.project
    records, problems = sessions.list_sessions(layout)
    broken = _config_problems(layout)
    problems = list(problems) + broken
    found = hook_problems(project)
    parts = configured(project)
    out: dict[str, Any] = {"project": project, "runtimes": {}, "problems": problems, "hook_problems": found}
    out["config"] = {"ok": not broken, "error": broken[0] if broken else None}  # `doctor` exits 1 when not ok
    for adapter in registry.ordered():
        runtime = adapter.NAME
        path = settings_path(adapter, project)
        info: dict[str, Any] = {"settings": path, "exists": os.path.exists(path)}
        hooks: dict[str, list[str]] = {}
        installed: dict[str, list[float]] = {}  # event -> the timeouts its cocoplus hooks were installed with
        stray: list[str] = []
        error = None
        for rel, doc in _hook_documents(adapter, project):
            if isinstance(doc, str):
                error = doc
                continue
            if _collect(adapter, doc, hooks, installed) and rel is not None and tuple(rel) != target_file(adapter):
                stray.append(os.path.join(*rel))
        if adapter.PLUGIN is not None:  # the hooks it runs are its plugin's
            info.update(settings=plugin_hooks.installed_file(adapter), exists=bool(hooks))
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
            if ours != [expected_command(adapter, event, kind, expected[event])] or stray:
                stale.append(event)
        # An entry of ours for an event install no longer wires (Claude Code's PostToolUse, before its pre-tool hook
        # counted the calls): outdated until `install` runs again.
        stale += sorted(e for e in hooks if hooks[e] and e not in expected and e not in stale)
        info["plugin"] = bundles.plugin_active(runtime)
        info["plugin_notes"] = plugin_hooks.notes(adapter)  # hooks only from a plugin: installed, listed, loaded?
        info["timeouts"] = timeout_notes(
            adapter, {e: min(t) for e, t in installed.items() if e in wired}, expected, parts
        )
        if info["plugin"] and runtime in bundles.RUNTIMES:
            info["timeouts"] += timeout_notes(adapter, bundles.carried(adapter), expected, parts, plugin=info["plugin"])
        if info["plugin"] and wired and adapter.PLUGIN is None:
            info["twice"] = (
                f"the cocoplus plugin ({info['plugin']}) and `cocoplus install {runtime}` are both active: every hook "
                f"runs twice; run `cocoplus uninstall {runtime}` or disable the plugin"
            )
        info["mcp_registered"] = mcp_config.registered(adapter, project)
        info["mcp_current"] = mcp_config.current(adapter, project)
        info["mcp_approved"] = mcp_config.approved(adapter, project)  # None: the runtime has no such setting
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
    pinned = launcher.project_pointer_path(project)
    out["project_pointer"] = launcher.read_pointer(path=pinned) if os.path.lexists(pinned) else None
    # What makes `doctor` exit non-zero: hooks that run another cocoplus than the one that wired the project, or
    # none (a pointer or interpreter that is gone).
    out["failed"] = [p["text"] for p in found if p["problem"] in FAILING]
    out["cocoplus_on_path"] = shutil.which("cocoplus")
    out["hook_log"] = layout.rel(layout.hook_log) if os.path.exists(layout.hook_log) else None
    out["checked_at"] = clock.iso()
    return out


def _hook_documents(adapter: Adapter, project: str) -> list[tuple[tuple[str, ...] | None, dict[str, Any] | str]]:
    """(the project file's parts, or None for a plugin; its `{event: entries}`, or why it cannot be read) for every
    place the runtime runs hooks from that `install` writes: its project hook files, or the plugin it installed."""
    if adapter.PLUGIN is not None:
        return [(None, plugin_hooks.installed_hooks(adapter))]
    out: list[tuple[tuple[str, ...] | None, dict[str, Any] | str]] = []
    for rel in adapter.HOOK_FILES_READ:
        try:
            settings = files.load_json(os.path.join(project, *rel))
        except CocoplusError as exc:
            out.append((rel, str(exc)))
            continue
        out.append((rel, settings["hooks"] if isinstance(settings.get("hooks"), dict) else {}))
    return out


def _collect(
    adapter: Adapter, doc: dict[str, Any], hooks: dict[str, list[str]], installed: dict[str, list[float]]
) -> bool:
    """Add cocoplus' commands for this runtime in one `{event: entries}` to `hooks`, and the timeouts they were
    installed with to `installed`; whether there was any."""
    found = False
    for event, entries in doc.items():
        handlers = [
            h for h in _handlers(entries) if is_ours(h["command"]) and _runtime_of(h["command"]) in (adapter.NAME, None)
        ]
        if not handlers:
            continue
        found = True
        hooks.setdefault(event, []).extend(h["command"] for h in handlers)
        for h in handlers:
            seconds = timeouts.in_command(h["command"])
            seconds = adapter.entry_timeout(h) if seconds is None else seconds
            if seconds is not None:
                installed.setdefault(event, []).append(seconds)
    return found


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
