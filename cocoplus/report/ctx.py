"""The ctx supplement: `cortex ctx show all`, read alongside PROGRESS.md.

When a `cortex` executable (`[ctx] command`) is on PATH and `cortex ctx
show all` succeeds within `[ctx] timeout_s`, `session status` and `session
progress` add ctx's in-progress tasks to In Progress, its ready steps to
Next and its discoveries as context, each labelled as coming from ctx.
cocoplus never sets `CTX_DIR` (it changes ctx's working directory); stage
commands run ctx with `CTX_STEP_ENFORCEMENT=false` so ctx's gates do not
fight the workflow's.  Where ctx and PROGRESS.md disagree on the active
task, PROGRESS.md wins and the report says so.  A missing, slow or failing
ctx is skipped with one debug line in `.cocoplus/logs/cocoplus.log`.

Which program runs: `[ctx] command` as the effective configuration has it
(`cocoplus.config.load`), never read from cocoplus.toml here, so a command
named by a project file the user has not trusted never runs
(docs/guides/configuration.md, "Trust"); the default (or the user's own value) applies instead.  A bare
name is looked up on PATH; a relative path (`tools/cortex`) is taken from
the project directory, wherever the command was typed.

Output shapes parsed (documented in docs/guides/sessions.md, "The ctx supplement"):

JSON (preferred)::

    {"tasks": [{"id": "t1", "title": "...", "status": "in_progress"}, ...],
     "steps": [{"id": "s1", "title": "...", "status": "ready"}, ...],
     "discoveries": ["...", {"text": "..."}]}

Plain text::

    Tasks:
      [in_progress] t1: title
      [todo] t2: title
    Ready:
      - s1: title
    Discoveries:
      - text

Task statuses counted as in progress: in_progress, in-progress, active, doing, started.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from typing import Any

from cocoplus import config
from cocoplus.core import clock, fsio, progress, settings
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout

ACTIVE = {"in_progress", "in-progress", "active", "doing", "started"}


def _debug(layout: Layout, message: str, *, keep: bool = True) -> None:
    """One debug line: on stderr with COCOPLUS_DEBUG=1, and in the log when ctx misbehaved (`keep`)."""
    line = f"{clock.iso()} ctx: {message}\n"
    if keep:
        fsio.append_line(layout.cli_log, line)
    if os.environ.get("COCOPLUS_DEBUG"):
        sys.stderr.write("cocoplus: debug: " + line)


def _title(item: Any) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, dict):
        for key in ("title", "text", "name", "description", "summary"):
            if isinstance(item.get(key), str):
                ident = item.get("id")
                return f"{ident}: {item[key]}" if isinstance(ident, str) and key == "title" else item[key]
    return str(item)


def parse(output: str) -> dict[str, Any]:
    """ctx's output as {"in_progress": [...], "ready": [...], "discoveries": [...]}."""
    text = output.strip()
    if text.startswith("{"):
        obj = json.loads(text)
        if not isinstance(obj, dict):
            raise ValueError("expected a JSON object")
        tasks = obj.get("tasks") or []
        steps = obj.get("steps") or obj.get("ready") or []
        return {
            "in_progress": [
                _title(t) for t in tasks if isinstance(t, dict) and str(t.get("status", "")).lower() in ACTIVE
            ],
            "ready": [
                _title(s) for s in steps if not isinstance(s, dict) or str(s.get("status", "ready")).lower() == "ready"
            ],
            "discoveries": [_title(d) for d in obj.get("discoveries") or []],
        }
    out: dict[str, list[str]] = {"in_progress": [], "ready": [], "discoveries": []}
    section = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        low = line.lower().rstrip(":")
        if line.endswith(":") and low in ("tasks", "ready", "ready steps", "steps", "discoveries"):
            section = {
                "tasks": "tasks",
                "ready": "ready",
                "ready steps": "ready",
                "steps": "ready",
                "discoveries": "discoveries",
            }[low]
            continue
        if section == "tasks":
            if line.startswith("[") and "]" in line:
                st, rest = line[1:].split("]", 1)
                if st.strip().lower() in ACTIVE:
                    out["in_progress"].append(rest.strip())
        elif section in ("ready", "discoveries"):
            out[section].append(line[2:].strip() if line.startswith(("- ", "* ")) else line)
    return out


def _command_path(layout: Layout, command: str) -> str:
    """A relative path is the project's (ctx runs there); a bare name is left for PATH."""
    if os.sep in command and not os.path.isabs(command):
        return os.path.join(layout.project, command)
    return command


def read(layout: Layout, values: dict[str, Any] | None = None, *, for_stage: bool = False) -> dict[str, Any]:
    """Run ctx once; {"ok": False, "skipped": reason} when it is absent, slow or failing."""
    if values is None:
        try:
            values = config.load_for(layout).hook_values()
        except CocoplusError:
            values = settings.defaults()
    cfg = values["ctx"]
    if not cfg["enabled"]:
        return {"ok": False, "skipped": "disabled in cocoplus.toml"}
    exe = shutil.which(_command_path(layout, cfg["command"]))
    if exe is None:
        _debug(layout, f"{cfg['command']!r} not on PATH; skipped", keep=False)  # the usual case: no log noise
        return {"ok": False, "skipped": "not on PATH"}
    from cocoplus.core import proc  # deferred: subprocess loads only where a ctx is on PATH (session status)

    env = dict(os.environ)
    if for_stage:
        env["CTX_STEP_ENFORCEMENT"] = "false"
    try:
        r = proc.run(
            [exe, "ctx", "show", "all"], input=None, timeout=float(cfg["timeout_s"]), cwd=layout.project, env=env
        )
    except OSError as exc:
        _debug(layout, f"`{cfg['command']} ctx show all` could not run ({exc}); skipped")
        return {"ok": False, "skipped": "could not run"}
    except proc.Timeout:
        _debug(layout, f"`{cfg['command']} ctx show all` took longer than {cfg['timeout_s']:g}s; skipped")
        return {"ok": False, "skipped": "timed out"}
    if r.returncode != 0:
        first = (r.stderr.strip().splitlines() or [""])[0][:200]
        _debug(layout, f"`{cfg['command']} ctx show all` exited {r.returncode} ({first}); skipped")
        return {"ok": False, "skipped": f"exit {r.returncode}"}
    try:
        parsed = parse(r.stdout)
    except ValueError as exc:
        _debug(layout, f"`{cfg['command']} ctx show all` printed something unreadable ({exc}); skipped")
        return {"ok": False, "skipped": "unreadable output"}
    parsed["ok"] = True
    parsed["active_task"] = parsed["in_progress"][0] if parsed["in_progress"] else None
    return parsed


def _cocoplus_active(layout: Layout) -> str | None:
    try:
        text = fsio.read_text(layout.progress)
    except CocoplusError:
        return None
    if not text:
        return None
    sec = progress.parse(text).find("In Progress")
    if sec is None or not sec.items():
        return None
    item = sec.items()[0]
    return item[2:].strip() if item.startswith(("- ", "* ", "+ ")) else item


def _norm(s: str) -> str:
    return " ".join(s.lower().replace(":", " ").split())


def disagreement(layout: Layout, snap: dict[str, Any]) -> str | None:
    ours = _cocoplus_active(layout)
    theirs = snap.get("active_task")
    if not ours or not theirs:
        return None
    a, b = _norm(ours), _norm(theirs)
    if a in b or b in a:
        return None
    return f"ctx reports the active task as {theirs!r}, PROGRESS.md says {ours!r}; cocoplus' PROGRESS.md wins"


def supplement_status(rep: dict[str, Any], layout: Layout) -> None:
    snap = read(layout)
    if not snap.get("ok"):
        return
    note = disagreement(layout, snap)
    rep["ctx"] = {
        "source": "ctx (cortex ctx show all)",
        "in_progress": snap["in_progress"],
        "next": snap["ready"],
        "discoveries": snap["discoveries"],
        "active_task_note": note,
        "summary": f"{len(snap['in_progress'])} task(s) in progress, {len(snap['ready'])} ready step(s), "
        f"{len(snap['discoveries'])} discover(y/ies)" + (f"; {note}" if note else ""),
    }


def supplement_progress(rep: dict[str, Any], layout: Layout) -> None:
    snap = read(layout)
    if not snap.get("ok"):
        return
    rep["ctx"] = {
        "In Progress": snap["in_progress"],
        "Next": snap["ready"],
        "Notes": [f"discovery: {d}" for d in snap["discoveries"]],
    }
    note = disagreement(layout, snap)
    if note:
        rep["ctx_note"] = note
