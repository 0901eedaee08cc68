"""Pieces of hook answers that several runtimes share (docs/runtimes.md).

Each adapter assembles its dialect from these, so a shape written once here
means the same thing everywhere it is used.  Every function returns the JSON
object to print, or None for nothing.  No imports at all, and annotations
as strings: adapters import this module on the hook's fast path (see
`registry`).
"""

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Mapping
    from typing import Any

MAX_CONTEXT = 9500  # Claude Code keeps at most 10,000 characters of hook output inline


def clip(text: str, limit: int = MAX_CONTEXT) -> str:
    return text if len(text) <= limit else text[: limit - 40] + "\n[... cut by cocoplus at the size limit]"


def permission_deny(reason: str) -> "dict[str, Any]":
    """Claude Code's PreToolUse deny (also Codex's and Cortex Code's): the tool does not run."""
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }


def halt(reason: str) -> "dict[str, Any]":
    """`continue: false`: the agent stops after the hooks run; `stopReason` is shown to the user."""
    return {"continue": False, "stopReason": reason}


def context(event: str, text: str) -> "dict[str, Any] | None":
    """Added context for the model, inside `hookSpecificOutput` (top-level is ignored)."""
    if not text:
        return None
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": clip(text)}}


def permission_request_deny(reason: str) -> "dict[str, Any]":
    """A PermissionRequest answered with deny (Claude Code, Codex)."""
    return {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "deny", "message": reason},
        }
    }


def permission_request_allow(message: "str | None" = None) -> "dict[str, Any]":
    """A PermissionRequest answered with allow (Claude Code, Codex)."""
    return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}


def block_turn_end(reason: str) -> "dict[str, Any]":
    """Stop `decision: block`: the turn goes on with `reason` as the next instruction (Claude Code, Codex)."""
    return {"decision": "block", "reason": reason}


def system_message(text: str) -> "dict[str, Any] | None":
    """A message shown to the user, not the model."""
    return {"systemMessage": text} if text else None


def nothing(*_args: "Any") -> None:
    """For a channel the runtime does not have (and the adapters' `pass_answer`, `hooks_unreviewed` and
    `ask_person` where a runtime has nothing to say there)."""
    return


def tool_call(payload: "Mapping[str, Any]") -> "tuple[str, Any]":
    """The tool a payload names (`tool_name`) and its input (`tool_input`): every adapter's but agy's."""
    name = payload.get("tool_name")
    return (name if isinstance(name, str) else ""), payload.get("tool_input")


def merge(*parts: "dict[str, Any] | None") -> "dict[str, Any] | None":
    """Combine answers; additionalContext strings are joined, everything else last-wins."""
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


def first_text(payload: "Any", *keys: str) -> "str | None":
    """The first non-empty string among `payload[key]`."""
    for key in keys:
        v = payload.get(key)
        if isinstance(v, str) and v:
            return v
    return None


def cwd(payload: "Any") -> "list[str]":
    """The payload's `cwd`, if it is an absolute path."""
    v = payload.get("cwd")
    return [v] if isinstance(v, str) and v.startswith("/") else []


def seconds(value: "Any") -> "float | None":
    """A positive number from a hook file (a handler's `timeout`), or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        return None
    return float(value)


# The edit and write tools (by Claude Code's names, which an adapter maps its own to) and the input key naming the
# one file each changes.
EDIT_INPUTS = {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}
PATCH_BEGIN = "*** Begin Patch"
PATCH_HEADS = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")


def patch_paths(text: str) -> "list[str]":
    """The files an apply_patch envelope (`*** Begin Patch` ... `*** End Patch`) adds, updates, deletes or moves to,
    as it names them (relative to the session's directory, or absolute)."""
    out: list[str] = []
    if PATCH_BEGIN not in text:
        return out
    for line in text.split("\n"):
        if not line.startswith("*** "):
            continue
        for head in PATCH_HEADS:
            if line.startswith(head):
                path = line[len(head) :].strip()
                if path and path not in out:
                    out.append(path)
                break
    return out


def edited_paths(payload: "Any", names: "dict[str, str] | None" = None) -> "list[str]":
    """The files a tool call changed, as its input names them: an edit or write tool's file (its name mapped
    through `names` to Claude Code's), or the files of an apply_patch envelope, given to Codex's `apply_patch` or
    inside a shell command (`apply_patch <<'EOF'` ...).  [] for any other call: a shell command's own writes are
    not reported by any runtime's hooks."""
    tool = payload.get("tool_name")
    inp = payload.get("tool_input")
    if not isinstance(tool, str) or not isinstance(inp, dict):
        return []
    key = EDIT_INPUTS.get(names.get(tool, tool) if names else tool)
    if key is not None:
        path = inp.get(key)
        return [path] if isinstance(path, str) and path else []
    for field in ("command", "patch", "input"):
        value = inp.get(field)
        if isinstance(value, list):  # a command as an argument vector (`["apply_patch", "*** Begin Patch..."]`)
            value = "\n".join(v for v in value if isinstance(v, str))
        if isinstance(value, str) and PATCH_BEGIN in value:
            return patch_paths(value)
    return []
