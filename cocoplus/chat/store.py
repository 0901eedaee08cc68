"""Files of a master-agent conversation: `.cocoplus/chat/<conversation>/`.

* `conversation.json`: `modelOverride`, `reasoningEffortOverride`, timestamps.
* `ledger.jsonl`: messages in order: `{"id", "role": user|assistant|system|worker, "text", "ts", "task"}`.
* `tasks/<task>.json`: reply tasks: `{"id", "kind": chat|supervision, "state":
  queued|running|succeeded|failed, "model", "effort", "error", "attempts", ...}`.

Task and message ids are sortable (`t_<ns hex>_<random>`), so "oldest
queued first" is a sort by name.
"""

from __future__ import annotations

import os
import time
from typing import Any

from cocoplus.core import clock, fsio, jsonl
from cocoplus.core.errors import NotFound, UsageError
from cocoplus.core.paths import Layout, check_id, is_valid_id
from cocoplus.core.records import SCHEMA_VERSION
from cocoplus.core.vocab import EFFORTS, MESSAGE_ROLES, TASK_STATES

DEFAULT_CONVERSATION = "master-agent"


def new_id(prefix: str) -> str:
    return f"{prefix}_{time.time_ns():x}_{os.urandom(3).hex()}"


def conversation(layout: Layout, conv: str) -> dict[str, Any]:
    check_id(conv, "conversation id")
    doc = fsio.read_json(layout.conversation_file(conv))
    if doc is None:
        return {
            "schema_version": SCHEMA_VERSION,
            "id": conv,
            "modelOverride": None,
            "reasoningEffortOverride": None,
            "created_at": None,
            "updated_at": None,
        }
    return doc


def set_overrides(
    layout: Layout,
    conv: str,
    *,
    model: str | None = None,
    effort: str | None = None,
    clear: bool = False,
    clear_model: bool = False,
    clear_effort: bool = False,
) -> dict[str, Any]:
    check_id(conv, "conversation id")
    if effort is not None and effort not in EFFORTS:
        raise UsageError(f"reasoning effort must be one of {', '.join(EFFORTS)}, got {effort!r}")
    if model is not None and (not model.strip() or len(model) > 200):
        raise UsageError("model name must be 1-200 characters")
    now = clock.iso()

    def update(cur: dict[str, Any] | None) -> dict[str, Any]:
        doc = dict(cur) if cur else {"schema_version": SCHEMA_VERSION, "id": conv, "created_at": now}
        doc.setdefault("modelOverride", None)
        doc.setdefault("reasoningEffortOverride", None)
        if clear or clear_model:
            doc["modelOverride"] = None
        if clear or clear_effort:
            doc["reasoningEffortOverride"] = None
        if model is not None:
            doc["modelOverride"] = model.strip()
        if effort is not None:
            doc["reasoningEffortOverride"] = effort
        doc["updated_at"] = now
        return doc

    fsio.ensure_dir(layout.conversation_dir(conv))
    return fsio.locked_update(layout.conversation_file(conv), layout.lock(f"chat-{conv}"), update)


def append_message(
    layout: Layout, conv: str, role: str, text: str, task: str | None = None, **extra: Any
) -> dict[str, Any]:
    if role not in MESSAGE_ROLES:
        raise ValueError(role)
    msg: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "id": new_id("m"),
        "role": role,
        "text": text,
        "ts": clock.iso(),
        "task": task,
    }
    for k, v in extra.items():
        if v is not None:
            msg[k] = v
    fsio.ensure_dir(layout.conversation_dir(conv))
    jsonl.append_jsonl(layout.ledger(conv), msg, layout.lock(f"ledger-{conv}"))
    return msg


def messages(layout: Layout, conv: str) -> jsonl.JsonlRead:
    check_id(conv, "conversation id")
    return jsonl.read_jsonl(layout.ledger(conv))


def write_task(layout: Layout, task: dict[str, Any]) -> None:
    fsio.ensure_dir(layout.tasks_dir(task["conversation"]))
    fsio.atomic_write_json(layout.task_record(task["conversation"], task["id"]), task)


def read_task(layout: Layout, conv: str, task_id: str) -> dict[str, Any]:
    doc = fsio.read_json(layout.task_record(conv, task_id))
    if doc is None:
        raise NotFound(f"no task {task_id} in conversation {conv}")
    return doc


def update_task(layout: Layout, conv: str, task_id: str, change: Any) -> dict[str, Any]:
    def fn(cur: dict[str, Any] | None) -> dict[str, Any]:
        if cur is None:
            raise NotFound(f"no task {task_id} in conversation {conv}")
        doc = dict(cur)
        change(doc)
        doc["updated_at"] = clock.iso()
        return doc

    return fsio.locked_update(layout.task_record(conv, task_id), layout.lock(f"task-{conv}"), fn)


def conversations(layout: Layout) -> list[str]:
    try:
        names = sorted(os.listdir(layout.chat_dir))
    except FileNotFoundError:
        return []
    return [n for n in names if is_valid_id(n) and os.path.isdir(os.path.join(layout.chat_dir, n))]


def tasks(layout: Layout, conv: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Every task of a conversation, oldest first, and problems reading them."""
    try:
        names = sorted(n for n in os.listdir(layout.tasks_dir(conv)) if n.endswith(".json") and not n.startswith("."))
    except FileNotFoundError:
        return [], []
    out, problems = [], []
    for n in names:
        try:
            doc = fsio.read_json(os.path.join(layout.tasks_dir(conv), n))
        except Exception as exc:  # noqa: BLE001 - one bad task must not hide the others
            problems.append(str(exc))
            continue
        if doc and doc.get("state") in TASK_STATES:
            out.append(doc)
    return out, problems


def new_task(
    layout: Layout, conv: str, kind: str, message_id: str | None, prompt: str | None = None, **extra: Any
) -> dict[str, Any]:
    task: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "id": new_id("t"),
        "conversation": conv,
        "kind": kind,
        "state": "queued",
        "message": message_id,
        "prompt": prompt,
        "model": None,
        "effort": None,
        "error": None,
        "attempts": 0,
        "created_at": clock.iso(),
    }
    task.update({k: v for k, v in extra.items() if v is not None})
    write_task(layout, task)
    return task
