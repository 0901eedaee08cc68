"""Ways a state file gets damaged, and how to inflict them on a project."""

from __future__ import annotations

import os
import shutil

from cocoplus.core.paths import Layout

DAMAGED_SESSION_ID = "cs_damaged"

# file key -> (Layout attribute or callable, status-report part, kind)
#   kind "json": one JSON object; "jsonl": one object a line; "markdown": text
#   with required sections; "predicates": CONTEXT.md; "steer": free text;
#   "stop": presence is all that counts.
FILES: dict[str, tuple[str, str, str]] = {
    "iteration-budget.json": ("iteration_budget", "iteration_budget", "json"),
    "budget-state.json": ("budget_state", "cost_budget", "json"),
    "status.json": ("status", "status", "json"),
    "pod-state.json": ("pod_state", "pod_state", "json"),
    "sessions/<id>.json": ("session", "sessions", "json"),
    "task-queue.jsonl": ("task_queue", "queue", "jsonl"),
    "steps.jsonl": ("steps", "steps", "jsonl"),
    "PROGRESS.md": ("progress", "handoff", "markdown"),
    "CONTEXT.md": ("context", "predicates", "predicates"),
    "AGENT_STOP": ("agent_stop", "kill_switch", "stop"),
    "STEER.md": ("steer", "steer", "steer"),
}

WRONG_TYPES: dict[str, bytes] = {
    "iteration-budget.json": b'{"cap": "200", "consumed": -1, "warn_at": 1.5, "warned": "no", "stopped": 0}\n',
    "budget-state.json": b'{"state": "broke", "limit": "10", "spent": true, "reserve_fraction": 2}\n',
    "status.json": b'{"state": "crashed", "reason": 5, "updated_at": 0}\n',
    "pod-state.json": b'{"state": "done", "reason": ["x"], "updated_at": null}\n',
    "sessions/<id>.json": b'{"id": 7, "runtime": "vim", "runtime_session_id": null, "alias": [], "state": "on"}\n',
}
WRONG_TYPE_LINES = b'[1, 2, 3]\n"just a string"\n'

DAMAGES = ("empty", "truncated", "wrong_types", "binary", "directory", "nan", "huge_int", "deep_nesting")


def content(file_key: str, damage: str) -> bytes | None:
    """The damaged bytes for a file (None: a directory takes its place)."""
    kind = FILES[file_key][2]
    line_end = b"\n" if kind == "jsonl" else b""
    if damage == "empty":
        return b""
    if damage == "truncated":
        # Cut mid-record: for a log this is a torn tail (no final newline).
        return b'{"cap": 200, "consumed": 3, "warn_a'
    if damage == "wrong_types":
        return WRONG_TYPES.get(file_key, WRONG_TYPE_LINES)
    if damage == "binary":
        return b"\x89PNG\r\n\x1a\n\x00\xff\xfe\xfd garbage \x00\x01\n\xc3\x28\xa0\xa1\n"
    if damage == "directory":
        return None
    if damage == "nan":
        return b'{"cap": NaN, "consumed": Infinity, "warn_at": -Infinity}' + line_end
    if damage == "huge_int":
        return b'{"cap": ' + b"9" * 10_000 + b', "consumed": 0}' + line_end
    if damage == "deep_nesting":
        return b"[" * 100_000 + b"]" * 100_000 + line_end
    raise ValueError(damage)


def path_of(layout: Layout, file_key: str) -> str:
    attr = FILES[file_key][0]
    if attr == "session":
        return layout.session_record(DAMAGED_SESSION_ID)
    return getattr(layout, attr)


def inflict(layout: Layout, file_key: str, damage: str) -> str:
    """Damage one file in place; return its path."""
    path = path_of(layout, file_key)
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)
    data = content(file_key, damage)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if data is None:
        os.mkdir(path)
    else:
        with open(path, "wb") as fh:
            fh.write(data)
    return path


def expectation(file_key: str, damage: str) -> str:
    """What cocoplus should make of it.

    "damaged": status marks that part damaged (or lists the problem) and
    `session check` fails naming the file.  "fine": the content is valid
    for that kind of file.  "torn": an interrupted append, repaired on the
    next write, reported but not a check failure.  "stop": the kill switch
    is on, whatever the content.
    """
    kind = FILES[file_key][2]
    if kind == "stop":
        return "stop"
    if kind == "jsonl":
        if damage == "empty":
            return "fine"
        if damage == "truncated":
            return "torn"
        return "damaged"
    if kind == "predicates" and damage == "empty":
        return "fine"
    if kind == "steer" and damage not in ("binary", "directory"):
        return "fine"  # any text is a valid instruction
    return "damaged"
