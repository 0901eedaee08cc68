"""What each agent runtime accepts back from a hook (reference/hooks-protocols.md).

The differences decide whether a deny really blocks:

* Claude Code: PreToolUse deny in `hookSpecificOutput`, plus `continue:
  false` to halt the agent; context in `hookSpecificOutput.additionalContext`.
* Codex: the same deny shape but *never* `continue`/`stopReason` on
  PreToolUse (Codex then marks the hook failed and runs the tool).
* Gemini: top-level `decision: "deny"` + `reason`, plus `continue: false`
  to halt the agent (checked against Gemini CLI 0.61.0, docs/runtimes.md).
* Cursor: `permission: "deny"` with `user_message`/`agent_message`; it has
  no post-tool stop and no prompt context channel.

Every function returns the JSON object to print (or None for nothing).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any



RUNTIMES = ("claude", "codex", "gemini", "cursor")
GEMINI_EVENTS = {"BeforeTool", "AfterTool", "BeforeAgent", "AfterAgent", "BeforeModel", "AfterModel", "BeforeToolSelection", "PreCompress"}
MAX_CONTEXT = 9500  # Claude keeps at most 10,000 characters of hook output inline


def detect(event: str, payload: dict[str, Any]) -> str:
    """Which runtime sent this payload, from its shape."""
    sent = payload.get("hook_event_name")
    name = sent if isinstance(sent, str) else event
    if "conversation_id" in payload or "cursor_version" in payload or "workspace_roots" in payload:
        return "cursor"
    if isinstance(sent, str) and sent[:1].islower():
        return "cursor"
    if name in GEMINI_EVENTS or event in GEMINI_EVENTS or ("timestamp" in payload and "turn_id" not in payload):
        return "gemini"
    tp = payload.get("transcript_path")
    # Codex's SessionStart has no turn_id; its transcript is CODEX_HOME/sessions/Y/M/D/rollout-<ts>-<id>.jsonl.
    codex_tp = isinstance(tp, str) and ("/.codex/" in tp or ("/sessions/" in tp and "/rollout-" in tp))
    if "turn_id" in payload or codex_tp or "thread-id" in payload:
        return "codex"
    return "claude"


def clip(text: str, limit: int = MAX_CONTEXT) -> str:
    return text if len(text) <= limit else text[: limit - 40] + "\n[... cut by cocoplus at the size limit]"


def deny_tool(runtime: str, event: str, reason: str, *, halt: bool = True) -> dict[str, Any]:
    if runtime == "claude":
        out: dict[str, Any] = {}
        if halt:
            out["continue"] = False
            out["stopReason"] = reason
        out["hookSpecificOutput"] = {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
        return out
    if runtime == "codex":
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        }
    if runtime == "gemini":
        # Gemini CLI 0.61.0: `decision: deny` alone blocks the tool and the model gets the reason
        # as a tool error, then keeps going; `continue: false` also ends the agent loop at once
        # ("Agent execution stopped: <stopReason>"), as Claude's deny does.
        out = {"decision": "deny", "reason": reason}
        if halt:
            out["continue"] = False
            out["stopReason"] = reason
        return out
    return {"continue": True, "permission": "deny", "user_message": reason, "agent_message": reason}


def deny_permission(runtime: str, reason: str) -> dict[str, Any] | None:
    if runtime in ("claude", "codex"):
        return {
            "hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": {"behavior": "deny", "message": reason},
            }
        }
    return None


def halt(runtime: str, event: str, reason: str, model_note: str | None = None) -> dict[str, Any] | None:
    """Stop the agent after a tool ran (PostToolUse / AfterTool); Cursor has no such channel."""
    if runtime == "cursor":
        return None
    out: dict[str, Any] = {"continue": False, "stopReason": reason}
    if runtime == "codex" and model_note:
        out["reason"] = model_note
    return out


def add_context(runtime: str, event: str, text: str) -> dict[str, Any] | None:
    """Added context for the model (prompt, session start, after a tool)."""
    if runtime == "cursor" or not text:
        return None
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": clip(text)}}


def merge(*parts: dict[str, Any] | None) -> dict[str, Any] | None:
    """Combine outputs; additionalContext strings are joined, the rest last-wins."""
    out: dict[str, Any] = {}
    for p in parts:
        if not p:
            continue
        for k, v in p.items():
            if k == "hookSpecificOutput" and k in out:
                merged = dict(out[k])
                for hk, hv in v.items():
                    if hk == "additionalContext" and hk in merged:
                        merged[hk] = clip(merged[hk] + "\n\n" + hv)
                    else:
                        merged[hk] = hv
                out[k] = merged
            else:
                out[k] = v
    return out or None
