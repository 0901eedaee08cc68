"""The master-agent conversation as functions: `cocoplus.ops.chat` (for every door) and supervision rounds call these.

`send()` writes the user's message to the ledger and queues a reply task,
makes sure a worker runs, and returns at once with `masterReplyState`
`queued` or `running` (or `failed` when nothing can run it, with why).
"""

from __future__ import annotations

import time
from typing import Any

from cocoplus import config as config_mod
from cocoplus.chat import backends, store, worker
from cocoplus.core import vocab
from cocoplus.core.errors import CocoplusError, NotFound, UsageError
from cocoplus.core.paths import Layout, check_id

MAX_MESSAGE = 64 * 1024


def _check_message(text: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise UsageError("the message is empty")
    if len(text.encode("utf-8")) > MAX_MESSAGE:
        raise UsageError(f"the message is over {MAX_MESSAGE // 1024} KiB")
    return text


def _reply_of(layout: Layout, task: dict[str, Any]) -> dict[str, Any] | None:
    if task.get("state") != "succeeded":
        return None
    for m in store.messages(layout, task["conversation"]).records:
        if m.get("id") == task.get("reply_message"):
            return m
    return None


def send(
    layout: Layout,
    text: str,
    conversation: str = store.DEFAULT_CONVERSATION,
    *,
    kind: str = "chat",
    prompt: str | None = None,
    role: str = "user",
    start_worker: bool = True,
    **task_extra: Any,
) -> dict[str, Any]:
    check_id(conversation, "conversation id")
    _check_message(text)
    worker.recover(layout)
    msg = store.append_message(layout, conversation, role, text)
    cfg = config_mod.load_for(layout)
    why = None
    try:
        _name, acct = backends.controller(cfg)
        if acct is None:
            why = 'no controller account: add an [accounts.NAME] table and [chat] controller = "NAME" to cocoplus.toml'
    except CocoplusError as exc:
        why = str(exc)
    task = store.new_task(layout, conversation, kind, msg["id"], prompt, **task_extra)
    if why:
        task = store.update_task(layout, conversation, task["id"], lambda d: d.update(state="failed", error=why))
    elif start_worker:
        worker.ensure_worker(layout)
        task = store.read_task(layout, conversation, task["id"])
    out: dict[str, Any] = {
        "message": msg,
        "task": task,
        "masterReplyState": task["state"] if task["state"] in vocab.REPLY_STATES else "succeeded",
    }
    reply = _reply_of(layout, task)
    if reply:
        out["reply"] = reply
    return out


def wait(layout: Layout, conversation: str, task_id: str, timeout: float, poll: float = 0.1) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        task = store.read_task(layout, conversation, task_id)
        if task["state"] in ("succeeded", "failed"):
            return {"task": task, "reply": _reply_of(layout, task)}
        if time.monotonic() >= deadline:
            return {"task": task, "reply": None, "timed_out": True}
        if task["state"] == "running" and not worker.worker_running(layout):
            worker.recover(layout)
        time.sleep(poll)


def retry(layout: Layout, conversation: str = store.DEFAULT_CONVERSATION, task_id: str | None = None) -> dict[str, Any]:
    worker.recover(layout)
    items, _ = store.tasks(layout, conversation)
    if task_id is None:
        failed = [t for t in items if t["state"] == "failed"]
        if not failed:
            raise NotFound(f"no failed task in conversation {conversation}")
        target = failed[-1]
    else:
        check_id(task_id, "task id")
        target = store.read_task(layout, conversation, task_id)
        if target["state"] != "failed":
            raise CocoplusError(f"task {task_id} is {target['state']}, not failed")

    def requeue(doc: dict[str, Any]) -> None:
        doc["state"] = "queued"
        doc["previous_error"] = doc.get("error")
        doc["error"] = None
        doc.pop("finished_at", None)

    task = store.update_task(layout, conversation, target["id"], requeue)
    worker.ensure_worker(layout)
    return {"task": task, "masterReplyState": "queued"}


def info(
    layout: Layout, conversation: str = store.DEFAULT_CONVERSATION, environ: dict[str, str] | None = None
) -> dict[str, Any]:
    check_id(conversation, "conversation id")
    cfg = config_mod.load_for(layout, environ)
    conv = store.conversation(layout, conversation)
    try:
        res = backends.resolve(cfg, conv)
        problem = None
    except CocoplusError as exc:
        res, problem = {}, str(exc)
    items, problems = store.tasks(layout, conversation)
    return {
        "conversation": conversation,
        "modelOverride": conv.get("modelOverride"),
        "reasoningEffortOverride": conv.get("reasoningEffortOverride"),
        "controller": res.get("controller"),
        "controllerKind": res.get("kind"),
        "model": res.get("model"),
        "modelSource": res.get("model_source"),
        "effort": res.get("effort"),
        "effortSource": res.get("effort_source"),
        "workerRunning": worker.worker_running(layout),
        "files": {
            "conversation": layout.rel(layout.conversation_file(conversation)),
            "ledger": layout.rel(layout.ledger(conversation)),
            "tasks": layout.rel(layout.tasks_dir(conversation)),
        },
        "tasks": {s: sum(1 for t in items if t["state"] == s) for s in store.TASK_STATES},
        "problems": ([problem] if problem else []) + problems,
    }


def conversation_view(layout: Layout, conversation: str = store.DEFAULT_CONVERSATION) -> dict[str, Any]:
    """Messages in order, plus the pending and failed tasks (what `chat log` shows).  `ops.chat.log` adds
    what the main brain (or an operator) did, from supervision."""
    check_id(conversation, "conversation id")
    worker.recover(layout)
    log = store.messages(layout, conversation)
    items, problems = store.tasks(layout, conversation)
    pending = [t for t in items if t["state"] in vocab.UNFINISHED_TASK_STATES]
    failed_last = None
    for t in items:
        if t["state"] == "failed":
            failed_last = t
        elif t["state"] == "succeeded" and failed_last is not None and t["id"] > failed_last["id"]:
            failed_last = None
    state = (
        "running"
        if any(t["state"] == "running" for t in pending)
        else ("queued" if pending else ("failed" if failed_last else "idle"))
    )
    return {
        "conversation": conversation,
        "messages": log.records,
        "pending": [{"id": t["id"], "state": t["state"], "kind": t["kind"]} for t in pending],
        "failed": None
        if failed_last is None
        else {
            "id": failed_last["id"],
            "error": failed_last.get("error"),
            "retry": f"cocoplus chat retry {failed_last['id']}",
        },
        "masterReplyState": state,
        "problems": log.problems + problems,
    }


def set_overrides(
    layout: Layout,
    conversation: str,
    *,
    model: str | None = None,
    effort: str | None = None,
    clear: bool = False,
    clear_model: bool = False,
    clear_effort: bool = False,
) -> dict[str, Any]:
    """Set and/or clear this conversation's model and effort overrides in one locked update."""
    return store.set_overrides(
        layout,
        conversation,
        model=model,
        effort=effort,
        clear=clear,
        clear_model=clear_model,
        clear_effort=clear_effort,
    )
