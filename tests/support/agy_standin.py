#!/usr/bin/env python3
"""A STAND-IN for the Antigravity CLI (`agy`), for the tests: not agy, and not a model of anything but its hooks.

The real `agy` cannot be installed here (its installer is a script from
Google's site, in no package registry this project reaches), so the tests that
need `agy` on PATH get this script under that name (`install(bin_dir)`).  It
does what the public accounts of agy's plugins and hooks say agy does, no
more (each cited in docs/runtimes.md, "Antigravity CLI"):

* `agy plugin install DIR` checks the plugin's layout (`plugin.json` with a
  `name`, `hooks.json` beside it at the root: toolahead 0.7.0 on agy 1.1.11;
  skillsaw's antigravity-hooks-valid) and copies it to
  `~/.gemini/config/plugins/<name>/` (lean-ctx#284, agy 1.0.6);
  `agy plugin uninstall NAME` removes it; `agy plugin list` names the
  installed plugins;
* `agy run --workspace DIR --tool NAME --arg KEY=VALUE ...` stands for one
  agent turn with one tool call (the only part of a session the tests need):
  it loads every installed plugin's `hooks.json` as agy parses it (top-level
  keys are hook names; `PreToolUse`/`PostToolUse` hold `{matcher, hooks}`
  groups, every other event a flat list of handlers; a file that does not
  parse is dropped whole and the log says so: claude-remember#564, skillsaw),
  logs `loaded N named hooks from M hooks.json file(s)` to
  `~/.gemini/antigravity-cli/cli.log`, runs `PreInvocation`, then
  `PreToolUse` for the call, then `Stop`.  Each hook is run with `sh -c`,
  its payload (camelCase protojson: `conversationId`, `workspacePaths`,
  `toolCall: {name, args}`) on stdin, killed at its `timeout` (seconds);
* a PreToolUse answer decides the call: `deny` refuses it (the reason goes
  to the model), `allow` runs it, `ask`/`force_ask` puts it to the person
  (there is none here: it is not run, and the result says it was asked), and
  a missing, malformed or late answer refuses it (agy fails closed:
  safe-chains `targets::agy`, agentmemory#1146);
* `run_command` runs its `CommandLine` with `sh -c` in `Cwd`; `write_to_file`
  writes `CodeContent` to `TargetFile`.

It prints one JSON object: what happened to the call (`ran`, `denied`,
`asked`), the reason, and each hook's raw answer.  Standard library only.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

TOOL_EVENTS = ("PreToolUse", "PostToolUse")
EVENTS = ("PreToolUse", "PostToolUse", "PreInvocation", "PostInvocation", "Stop", "SessionStart")
DEFAULT_TIMEOUT_S = 30


def home() -> Path:
    return Path(os.environ.get("HOME") or os.path.expanduser("~"))


def plugins_dir() -> Path:
    return home() / ".gemini" / "config" / "plugins"


def log(line: str) -> None:
    path = home() / ".gemini" / "antigravity-cli" / "cli.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fh.write(line + "\n")


def parse_hooks(path: Path) -> dict[str, list[dict[str, Any]]]:
    """{event: [handler + its matcher]} from one hooks.json, as agy reads it; ValueError: the whole file is dropped."""
    doc = json.loads(path.read_text())
    if not isinstance(doc, dict):
        raise ValueError("the root is not an object of named hooks")
    out: dict[str, list[dict[str, Any]]] = {}
    for name, hook in doc.items():
        if not isinstance(hook, dict):
            raise ValueError(f"hook {name!r} is not an object")
        if hook.get("enabled", True) is False:
            continue
        for event, entries in hook.items():
            if event == "enabled":
                continue
            if not isinstance(entries, list):
                raise ValueError(f"cannot unmarshal {type(entries).__name__} into field {event} of hook {name!r}")
            known = next((e for e in EVENTS if e.lower() == event.lower()), None)
            for entry in entries:
                for h in _handlers(name, event, known, entry):
                    if known is not None:  # an event agy does not dispatch is dropped quietly
                        out.setdefault(known, []).append({**h, "hook": name})
    return out


def _handlers(name: str, event: str, known: str | None, entry: Any) -> list[dict[str, Any]]:
    """The handlers of one entry of an event (a group of a tool event, else the handler itself), each with its
    matcher; ValueError as agy's parser refuses them."""
    if not isinstance(entry, dict):
        raise ValueError(f"an entry of {name}.{event} is not an object")
    if known in TOOL_EVENTS:
        handlers = entry.get("hooks")
        if not isinstance(handlers, list):
            raise ValueError(f"{name}.{event}: a group's hooks is not an array")
        matcher = entry.get("matcher", "")
    else:
        handlers, matcher = [entry], ""
    for h in handlers:
        if not isinstance(h, dict) or h.get("type", "command") != "command" or "command" not in h:
            raise ValueError(f"invalid hook {name!r}: command hook must specify 'command'")
        timeout = h.get("timeout", DEFAULT_TIMEOUT_S)
        if not isinstance(timeout, int) or isinstance(timeout, bool):
            raise ValueError(f"invalid hook {name!r}: timeout is not a whole number")
    return [{**h, "matcher": matcher} for h in handlers]


def load_all() -> dict[str, list[dict[str, Any]]]:
    files = sorted(plugins_dir().glob("*/hooks.json")) if plugins_dir().is_dir() else []
    merged: dict[str, list[dict[str, Any]]] = {}
    names: set[str] = set()
    read = 0
    for path in files:
        try:
            hooks = parse_hooks(path)
        except ValueError as exc:
            log(f"W hooks_manager.go:33] failed to parse hooks.json at {path}: {exc}")
            continue
        read += 1
        for event, handlers in hooks.items():
            merged.setdefault(event, []).extend(handlers)
            names.update(h["hook"] for h in handlers)
    log(f"I hooks_manager.go:53] loaded {len(names)} named hooks from {read} hooks.json file(s)")
    return merged


def matches(matcher: str, tool: str) -> bool:
    if matcher in ("", "*"):
        return True
    try:
        return re.fullmatch(matcher, tool) is not None
    except re.error:
        return matcher == tool


def run_hook(handler: dict[str, Any], payload: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """(the answer, or None when there is none or it is not a JSON object; what happened)."""
    try:
        r = subprocess.run(
            ["sh", "-c", handler["command"]],
            input=json.dumps(payload).encode(),
            capture_output=True,
            timeout=int(handler.get("timeout", DEFAULT_TIMEOUT_S)),
        )
    except subprocess.TimeoutExpired:
        return None, "timed out"
    text = r.stdout.decode("utf-8", "replace").strip()
    try:
        answer = json.loads(text) if text else None
    except ValueError:
        return None, f"not JSON (exit {r.returncode}): {text[:200]}"
    return (answer, "ok") if isinstance(answer, dict) else (None, f"no answer (exit {r.returncode})")


def run_tool(name: str, args: dict[str, str]) -> str:
    if name == "run_command":
        r = subprocess.run(
            ["sh", "-c", args.get("CommandLine", "")], cwd=args.get("Cwd") or None, capture_output=True, text=True
        )
        return r.stdout + r.stderr
    if name == "write_to_file":
        Path(args["TargetFile"]).write_text(args.get("CodeContent", ""))
        return "written"
    return ""


def turn(workspace: str, tool: str, args: dict[str, str], conversation: str) -> dict[str, Any]:
    hooks = load_all()
    common = {
        "conversationId": conversation,
        "modelName": "stand-in",
        "transcriptPath": str(home() / ".gemini" / "antigravity-cli" / "conversations" / f"{conversation}.jsonl"),
        "workspacePaths": [workspace] if workspace else [],
        "artifactDirectoryPath": str(home() / ".gemini" / "antigravity-cli" / "brain" / conversation),
    }
    said: dict[str, Any] = {}
    for h in hooks.get("PreInvocation", []):
        said.setdefault("PreInvocation", []).append(run_hook(h, {**common, "invocationNum": 0, "initialNumSteps": 1}))
    pre = {**common, "stepIdx": 1, "toolCall": {"name": tool, "args": args}}
    outcome, reason = "ran", ""
    for h in hooks.get("PreToolUse", []):
        if not matches(str(h.get("matcher", "")), tool):
            continue
        answer, how = run_hook(h, pre)
        said.setdefault("PreToolUse", []).append([answer, how])
        decision = (answer or {}).get("decision")
        if decision == "deny":
            outcome, reason = "denied", str(answer.get("reason") or "") if answer else ""
            break
        if decision in ("ask", "force_ask"):
            outcome, reason = "asked", str((answer or {}).get("reason") or "")
            break
        if decision != "allow":  # a missing or malformed decision: agy fails closed
            outcome, reason = "denied", f"tool call denied by pre-tool hook {h['hook']}: {how}"
            break
    output = run_tool(tool, args) if outcome == "ran" else ""
    for h in hooks.get("Stop", []):
        stop = {**common, "executionNum": 1, "terminationReason": "model_finished", "fullyIdle": True}
        said.setdefault("Stop", []).append(run_hook(h, stop))
    return {"outcome": outcome, "reason": reason, "output": output, "hooks": said}


def plugin_install(source: str) -> int:
    src = Path(source)
    manifest = src / "plugin.json"
    if not manifest.is_file():
        print(f"[error] {src}: missing plugin.json", file=sys.stderr)
        return 1
    name = json.loads(manifest.read_text()).get("name")
    if not isinstance(name, str) or not name:
        print(f"[error] {manifest}: no name", file=sys.stderr)
        return 1
    dest = plugins_dir() / name
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(src, dest)
    hooks = "✔ hooks : 1 processed" if (src / "hooks.json").is_file() else "hooks : skipped (not found)"
    print(f"[ok] {name}\n        {hooks}")
    return 0


def main(argv: list[str]) -> int:
    if argv[:2] == ["plugin", "install"] and len(argv) == 3:
        return plugin_install(argv[2])
    if argv[:2] == ["plugin", "uninstall"] and len(argv) == 3:
        dest = plugins_dir() / argv[2]
        if not dest.is_dir():
            print(f"[error] no plugin named {argv[2]}", file=sys.stderr)
            return 1
        shutil.rmtree(dest)
        print(f"[ok] removed {argv[2]}")
        return 0
    if argv[:2] == ["plugin", "list"]:
        names = sorted(p.name for p in plugins_dir().iterdir()) if plugins_dir().is_dir() else []
        print(f"loaded: {names}" if names else "No imported plugins")
        return 0
    if argv[:1] == ["run"]:
        workspace, tool, args, conversation = "", "run_command", {}, str(uuid.uuid4())
        i = 1
        while i < len(argv):
            if argv[i] == "--workspace":
                workspace = argv[i + 1]
            elif argv[i] == "--tool":
                tool = argv[i + 1]
            elif argv[i] == "--arg":
                key, _, value = argv[i + 1].partition("=")
                args[key] = value
            elif argv[i] == "--conversation":
                conversation = argv[i + 1]
            i += 2
        print(json.dumps(turn(workspace, tool, args, conversation)))
        return 0
    print("agy (cocoplus test stand-in): plugin install|uninstall|list, run", file=sys.stderr)
    return 2


def install(bin_dir: Path) -> Path:
    """Put this stand-in on a PATH directory as `agy` (a two-line shell script running it with this interpreter)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    target = bin_dir / "agy"
    target.write_text(f'#!/bin/sh\nexec {sys.executable} {Path(__file__).resolve()} "$@"\n')
    target.chmod(0o755)
    return target


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
