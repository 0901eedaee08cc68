"""What Codex CLI 0.169.0 accepts from a hook: its published schemas (tests/fixtures/codex-schemas/0.169.0),
plus the rules its output parser adds on top of them.

`problems(event, code, out, err)` lists why Codex would not take a hook's
answer as given (empty: it would).  The schemas say which fields an answer
may have (`additionalProperties: false` everywhere: an unknown field fails
the hook, and for PreToolUse and PermissionRequest the tool then runs); the
rules are the checks of `codex-rs/hooks/src/engine/output_parser.rs` and of
the events' exit-code handling, each quoted with the message Codex 0.169.0
reports (every one of those messages is a string in the 0.169.0 binary).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jsonschema

SCHEMAS = Path(__file__).resolve().parents[1] / "fixtures" / "codex-schemas" / "0.169.0"
FILES = {
    "PreToolUse": "pre-tool-use",
    "PermissionRequest": "permission-request",
    "PostToolUse": "post-tool-use",
    "PreCompact": "pre-compact",
    "PostCompact": "post-compact",
    "SessionStart": "session-start",
    "SessionEnd": "session-end",
    "SubagentStart": "subagent-start",
    "SubagentStop": "subagent-stop",
    "UserPromptSubmit": "user-prompt-submit",
    "Stop": "stop",
    "Interrupt": "interrupt",
}
# Exit 2 with a reason on stderr: what it means to Codex per event (the event modules' handling of code 2).
EXIT_2 = {
    "PreToolUse": "blocks the tool",
    "PermissionRequest": "denies the request",
    "PostToolUse": "feeds stderr to the model",
    "UserPromptSubmit": "blocks the prompt",
    "Stop": "continues the turn with stderr",
    "SubagentStop": "continues the subagent with stderr",
}


@functools.cache
def schema(event: str, side: str) -> dict[str, Any] | None:
    """The `side` ("input" or "output") schema of `event`, or None where 0.169.0 has none."""
    path = SCHEMAS / f"{FILES[event]}.command.{side}.schema.json"
    if not path.exists():
        return None
    loaded: dict[str, Any] = json.loads(path.read_text())
    jsonschema.Draft7Validator.check_schema(loaded)
    return loaded


def schema_errors(instance: Any, event: str, side: str) -> list[str]:
    s = schema(event, side)
    if s is None:
        return [f"Codex 0.169.0 has no {side} schema for {event}"]
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '$'}: {e.message}"
        for e in jsonschema.Draft7Validator(s).iter_errors(instance)
    ]


def _text(v: Any) -> bool:
    return isinstance(v, str) and bool(v.strip())


def parser_rules(event: str, out: dict[str, Any]) -> list[str]:
    """Codex 0.169.0's output-parser checks beyond the schema, as the messages it reports."""
    found: list[str] = []
    hso = out.get("hookSpecificOutput") if isinstance(out.get("hookSpecificOutput"), dict) else None
    if event in ("PreToolUse", "PermissionRequest"):
        if out.get("continue") is False:
            found.append(f"{event} hook returned unsupported continue:false")
        if "stopReason" in out:
            found.append(f"{event} hook returned unsupported stopReason")
        if out.get("suppressOutput"):
            found.append(f"{event} hook returned unsupported suppressOutput")
    if event == "PreToolUse":
        specific = hso is not None and any(
            k in hso for k in ("permissionDecision", "permissionDecisionReason", "updatedInput")
        )
        if specific:
            assert hso is not None
            decision = hso.get("permissionDecision")
            if "updatedInput" in hso and decision != "allow":
                found.append("PreToolUse hook returned updatedInput without permissionDecision:allow")
            elif decision == "allow" and "updatedInput" not in hso:
                found.append("PreToolUse hook returned unsupported permissionDecision:allow")
            elif decision == "ask":
                found.append("PreToolUse hook returned unsupported permissionDecision:ask")
            elif decision == "deny" and not _text(hso.get("permissionDecisionReason")):
                found.append(
                    "PreToolUse hook returned permissionDecision:deny without a non-empty permissionDecisionReason"
                )
            elif decision is None and "permissionDecisionReason" in hso:
                found.append("PreToolUse hook returned permissionDecisionReason without permissionDecision")
        elif out.get("decision") == "approve":
            found.append("PreToolUse hook returned unsupported decision:approve")
        elif out.get("decision") == "block" and not _text(out.get("reason")):
            found.append("PreToolUse hook returned decision:block without a non-empty reason")
        elif "decision" not in out and "reason" in out:
            found.append("PreToolUse hook returned reason without decision")
    if event == "PermissionRequest" and hso is not None and isinstance(hso.get("decision"), dict):
        d = hso["decision"]
        if "updatedInput" in d:
            found.append("PermissionRequest hook returned unsupported updatedInput")
        if "updatedPermissions" in d:
            found.append("PermissionRequest hook returned unsupported updatedPermissions")
        if d.get("interrupt"):
            found.append("PermissionRequest hook returned unsupported interrupt:true")
    if event == "PostToolUse":
        if out.get("suppressOutput"):
            found.append("PostToolUse hook returned unsupported suppressOutput")
        if hso is not None and "updatedMCPToolOutput" in hso:
            found.append("PostToolUse hook returned unsupported updatedMCPToolOutput")
        if out.get("decision") != "block" and out.get("continue", True) and "reason" in out:
            found.append("PostToolUse hook returned reason without decision")
    if (
        event in ("PostToolUse", "UserPromptSubmit", "Stop", "SubagentStop")
        and out.get("decision") == "block"
        and not _text(out.get("reason"))
    ):
        found.append(f"{event} hook returned decision:block without a non-empty reason")
    return found


def problems(event: str, code: int, out: str, err: str) -> list[str]:
    """Why Codex 0.169.0 would not take this answer to `event` as given; empty if it would."""
    if code == 2:
        if event not in EXIT_2:
            return [f"exit 2 means nothing to a {event} hook"]
        return [] if err.strip() else [f"{event} hook exited with code 2 but wrote no reason to stderr"]
    if code != 0:
        return [f"hook exited with code {code}"]
    if not out.strip():
        return []
    try:
        obj = json.loads(out)
    except ValueError:
        return [f"stdout is not JSON: {out[:120]!r}"]
    if not isinstance(obj, dict):
        return [f"stdout is JSON but not an object: {out[:120]!r}"]
    if schema(event, "output") is None:
        return [f"{event} has no output in Codex 0.169.0, but the hook printed {out[:120]!r}"]
    return schema_errors(obj, event, "output") + parser_rules(event, obj)


FIXED = frozenset(("hookEventName", "permissionDecision", "decision", "behavior"))


def shape(value: Any, key: str = "") -> Any:
    """An answer with its free text blanked: equal for answers that differ only in what they say."""
    if isinstance(value, dict):
        return {k: shape(v, k) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [shape(v) for v in value]
    if isinstance(value, str) and key not in FIXED:
        return "<text>"
    return value
