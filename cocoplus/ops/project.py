"""`cocoplus init`: where the state directory goes, and creating it."""

from __future__ import annotations

import os
import shlex
from typing import Any

from cocoplus import config as config_mod
from cocoplus.core import userfiles
from cocoplus.core.errors import CocoplusError, UsageError
from cocoplus.core.paths import STATE_DIR_NAME, Layout, is_state_dir, walk_up
from cocoplus.install import doctor as install_doctor
from cocoplus.install import hooks as runtimes
from cocoplus.session import agents, workspace
from cocoplus.supervision import headless


def init_target(start: str, named: str | None = None, named_by: str = "--dir") -> str:
    """The state directory `init` creates: in `start`, or the one `named` (by `named_by`: --dir or COCOPLUS_DIR).

    A named directory is the state directory itself when it is called
    `.cocoplus` or already holds cocoplus' files, else a project directory
    that gets a `.cocoplus/`.
    """
    if not named:
        return os.path.join(os.path.abspath(start), STATE_DIR_NAME)
    path = os.path.abspath(named)
    if os.path.basename(path) == STATE_DIR_NAME:
        if not os.path.isdir(os.path.dirname(path)):
            raise UsageError(f"{named_by} {named}: no such directory ({os.path.dirname(path)})")
        return path
    if not os.path.exists(path):
        raise UsageError(f"{named_by} {named}: no such directory")
    if not os.path.isdir(path):
        raise UsageError(f"{named_by} {named}: not a directory")
    inner = os.path.join(path, STATE_DIR_NAME)
    if os.path.isdir(inner) or not is_state_dir(path):
        return inner
    return path


def enclosing_project(state_dir: str) -> str | None:
    """The `.cocoplus/` of a project that already encloses the one `state_dir` would start, if any."""
    project = os.path.dirname(os.path.abspath(state_dir))
    parent = os.path.dirname(project)
    if parent == project:
        return None
    return walk_up(parent)


def init(start: str, named: str | None = None, named_by: str = "--dir", nested: bool = False) -> dict[str, Any]:
    """Create `.cocoplus/` (idempotent; nothing existing is overwritten).

    Inside a project that already has one, a new one would shadow it for
    everything below, so that is refused unless `nested`.
    """
    state_dir = init_target(start, named, named_by)
    if not os.path.isdir(state_dir) and not nested:
        outer = enclosing_project(state_dir)
        if outer is not None:
            raise CocoplusError(
                f"{os.path.dirname(outer)} is already a cocoplus project ({outer}); a new .cocoplus/ in "
                f"{os.path.dirname(state_dir)} would shadow it for everything below",
                hint="cocoplus commands run here already use the enclosing project; "
                "pass --nested to start a separate one",
            )
    result = workspace.init(state_dir)  # compiles the configuration's copy for the hooks
    prices_for_hooks(Layout(state_dir))
    result["nested_in"] = enclosing_project(state_dir)
    # Records a clone brought along whose commands cocoplus will not run (core.seal), one line each.
    result["ignored"] = headless.ignored_records(Layout(state_dir))
    _register(state_dir)
    return result


def _register(state_dir: str) -> None:
    """Name the project in this user's registry (session/agents.py: every project's decisions are found from it);
    one that cannot be written is no reason to fail `init` or `install` (it is named when an agent runs there)."""
    try:
        agents.register_project(state_dir)
    except CocoplusError:
        pass


def prices_for_hooks(layout: Layout) -> None:
    """Compile the price table the hooks price turns with (a hook, `python -S`, never compiles it), unless it is
    current.  A failure leaves the hooks without prices until a later command compiles it: not an error here."""
    from cocoplus.cost import price_table  # deferred: genai-prices (hundreds of ms), for init and install alone

    try:
        price_table.refresh(layout)
    except (CocoplusError, OSError):
        pass


def install(layout: Layout, runtime: str) -> dict[str, Any]:
    """`cocoplus install RUNTIME`: wire the hooks into the runtime's project settings (merging, idempotent), and
    compile what the hooks read (the configuration's copy, the price table)."""
    cfg = config_mod.load_for(layout)
    result = runtimes.install(runtime, layout.project, timeout_s=cfg.get("hooks.timeout_s"))
    config_mod.compile_for_hook(layout, cfg)
    prices_for_hooks(layout)
    _register(layout.root)
    return result


def doctor(layout: Layout) -> dict[str, Any]:
    """`cocoplus doctor`: which runtimes are wired, what is wrong with their hooks, whether they fired; the
    records whose commands cocoplus will not run (core.seal); how the files are watched."""
    from cocoplus.ops import supervision as supervision_ops  # deferred: the supervision ops, for doctor alone

    result = install_doctor.doctor(layout)
    result["ignored"] = headless.ignored_records(layout)
    result["grants"] = headless.grant_notes(layout)
    result["user_files"] = user_file_notes()
    result["rules"] = rule_notes()
    result["file_events"] = supervision_ops.file_events(layout)
    result["inbox"] = inbox_notes()
    result["sandbox"] = sandbox_note(layout)
    result["telemetry"] = telemetry_note(layout)
    return result


def telemetry_note(layout: Layout) -> dict[str, Any]:
    """The trace export when traces are configured (or an export was tried): where to, which process exports, and
    the problem in one line (`export pending: nothing exporting`, or the last export's failure), or None."""
    from cocoplus.telemetry import status  # deferred: only doctor asks about the trace export

    rep = status.report(layout)
    return rep if rep.get("configured") or rep.get("last") or rep.get("problem") else {}


def sandbox_note(layout: Layout) -> dict[str, Any]:
    """The sandbox probe (`cocoplus sandbox doctor`) in one line, and whether it is a problem: it is when this
    project's workers get a profile (`[workers] sandbox`) that cannot be applied here."""
    from cocoplus.sandbox import probe, profiles  # deferred: only doctor probes the sandbox

    found = probe.probe()
    try:
        profile = profiles.effective(layout)
    except CocoplusError:
        profile = profiles.NONE
    if found["ok"] and profile == profiles.SRT:
        from cocoplus.sandbox import srt  # deferred: only doctor probes the sandbox

        held = srt.probe()
        if not held["ok"]:
            found = {**found, "ok": False, "cause": held["cause"], "fix": held["fix"]}
    if found["ok"]:
        text = f"sandbox: workers can be sandboxed here (bubblewrap {found['version']}, loopback up); profile {profile}"
    else:
        text = f"sandbox: cannot be applied here: {found['cause']}; fix: {found['fix']}"
    return {"ok": found["ok"], "profile": profile, "text": text, "problem": not found["ok"] and profile != "none"}


def inbox_notes() -> list[str]:
    """Whether this user's `cocoplus inbox run` runs when phone channels are configured, and its recent delivery
    failures (never dropped silently)."""
    from cocoplus.inbox import runner  # deferred: only doctor asks about the phone's service

    st = runner.status()
    lines = [st["note"]] if st["note"] and st["channels"] else []
    lines += [f"[inbox] {st['problem']}"] if st.get("problem") else []
    return lines + [f"phone delivery failed: {f}" for f in st["failures"]]


def rule_notes() -> list[str]:
    """What is wrong with the permission rules' machinery here: a shell parser that cannot be loaded makes every
    shell command of a headless worker that is more than plain words wait for an answer (no rule can allow one)."""
    from cocoplus.rules import parser  # deferred: only doctor asks whether the parser loads

    why = parser.available()
    if why is None:
        return []
    return [f"{why}: no permission rule can allow a shell command that is more than plain words (`&&`, quotes, "
            "`$`, a redirection, ...), so each one waits for an answer; reinstall cocoplus (its tree-sitter and "
            "tree-sitter-bash dependencies)"]  # fmt: skip


def user_file_notes() -> list[str]:
    """One line for each of this user's files left where an earlier release kept them (`$XDG_CONFIG_HOME/cocoplus`,
    `$HOME/.config/cocoplus`): cocoplus reads them only from the password database's home now, so each line says
    how to move the file there (or, where a file is there already, that the old one is not read)."""
    lines: list[str] = []
    for old, new, taken in userfiles.legacy_files():
        if taken:
            lines.append(
                f"{old}: not read (this user's files are read from {userfiles.shown(os.path.dirname(new))}/ now, "
                f"where {os.path.basename(new)} exists already); compare the two and remove the old one"
            )
        else:
            lines.append(
                f"{old}: not read (this user's files are read from {userfiles.shown(os.path.dirname(new))}/ now); "
                f"move it: mkdir -p {shlex.quote(os.path.dirname(new))} && mv {shlex.quote(old)} {shlex.quote(new)}"
            )
    return lines
