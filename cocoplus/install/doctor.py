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
from cocoplus.install import bundles, files, launcher, mcp_config, wiring
from cocoplus.install.hooks import (
    configured,
    expected_timeouts,
    form_for,
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
    info = doctor(layout)["runtimes"].get(runtime) or {}
    if info.get("error"):
        return f"{info['error']}; fix it, then {fix}"
    if not info.get("wired"):
        return f"its cocoplus hooks are not installed in this project; {fix}"
    if info.get("missing"):
        return f"its cocoplus hooks for {', '.join(info['missing'])} are missing in this project; {fix}"
    for problem in hook_problems(project):
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
        # An entry of ours for an event install no longer wires (Claude Code's PostToolUse, before its pre-tool hook
        # counted the calls): outdated until `install` runs again.
        stale += sorted(e for e in hooks if hooks[e] and e not in expected and e not in stale)
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
