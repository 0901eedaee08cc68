"""The background worker that turns queued master-agent tasks into replies.

One worker per project, guarded by the `chat-worker` lock, which it holds
for its whole life (the OS drops it if the worker dies).  It takes the
oldest queued task (so one task at a time per conversation, in order),
resolves model and effort, runs the backend, appends the reply to the
ledger and marks the task `succeeded`; a backend error or timeout marks it
`failed` with a readable reason.  A task left `running` by a worker that
died is found by whoever next looks (the next worker, `chat send`, `chat
log`, the supervisor) and marked `failed`; `chat retry` queues it again.

The worker (`cocoplus chat worker`, which `ensure_worker` starts) runs at a
lower scheduling priority (`NICE`), its backend with it:
a reply takes seconds anyway, while the server's answers, the hooks and the
CLI share the same cores and are waited on.  A process starts one worker at a
time: until the one it started holds the lock (a Python start takes a moment)
or has gone, `ensure_worker` starts no other, so a burst of sends is one start.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from cocoplus import config as config_mod
from cocoplus.chat import backends, store
from cocoplus.controllers import brain
from cocoplus.core import clock, fsio, proc
from cocoplus.core.errors import CocoplusError
from cocoplus.core.lock import is_locked, try_lock
from cocoplus.core.paths import Layout

HISTORY = 20
NICE = 10
"""How much lower the worker's scheduling priority is than the process that starts it (`os.nice`)."""
START_GRACE_S = 30.0
"""How long a started worker may take to hold its lock before another may be started in its place."""

_started: dict[str, tuple[subprocess.Popen[bytes], float]] = {}
_starting = threading.Lock()


def worker_running(layout: Layout) -> bool:
    return is_locked(layout.lock("chat-worker"))


def recover(layout: Layout) -> list[dict[str, Any]]:
    """Mark tasks left `running` by a dead worker as failed. Returns them."""
    if worker_running(layout):
        return []
    failed = []
    for conv in store.conversations(layout):
        items, _ = store.tasks(layout, conv)
        for t in items:
            if t["state"] != "running":
                continue
            pid = t.get("worker_pid")

            def mark(doc: dict[str, Any], pid: Any = pid) -> None:
                if doc["state"] == "running":
                    doc["state"] = "failed"
                    doc["error"] = (
                        f"the worker (pid {pid}) stopped while this task was running; "
                        "`cocoplus chat retry` runs it again"
                    )
                    doc["finished_at"] = clock.iso()

            failed.append(store.update_task(layout, conv, t["id"], mark))
    return failed


def ensure_worker(layout: Layout) -> int | None:
    """Start a detached worker unless one runs, or one this process started is still starting. Returns the new
    pid, if any."""
    with _starting:
        if worker_running(layout):
            return None
        earlier = _started.get(layout.root)
        if earlier is not None and earlier[0].poll() is None and time.monotonic() - earlier[1] < START_GRACE_S:
            return None  # started, not holding the lock yet: it will take the queued task
        child = proc.spawn_cocoplus(
            ["chat", "worker", "--idle-exit", "60"],
            state_dir=layout.root,
            cwd=layout.project,
            log_path=layout.chat_worker_log,
        )
        _started[layout.root] = (child, time.monotonic())
        return child.pid


def _next_task(layout: Layout) -> dict[str, Any] | None:
    oldest: dict[str, Any] | None = None
    for conv in store.conversations(layout):
        items, _ = store.tasks(layout, conv)
        for t in items:
            if t["state"] == "running":
                break  # one at a time per conversation
            if t["state"] == "queued":
                if oldest is None or t["id"] < oldest["id"]:
                    oldest = t
                break  # in order: the conversation's oldest queued task
    return oldest


def build_prompt(layout: Layout, task: dict[str, Any], kind: str | None = None) -> str:
    """The prompt for a chat task: who the master agent is, what it can do (for a controller of `kind`),
    recent conversation, the new message.  A supervision round's prompt was built when the round started."""
    if task.get("prompt"):
        return str(task["prompt"])
    msgs = store.messages(layout, task["conversation"]).records
    upto = [m for m in msgs if m.get("id") != task.get("message")]
    current = next((m for m in msgs if m.get("id") == task.get("message")), None)
    lines = [
        f"You are the main brain (master agent) of the cocoplus project at {layout.project}.",
        "Answer the user's latest message. Ask the user before irreversible actions (delete, publish, merge, "
        "external notifications).",
        *brain.how_to_act(kind, in_round=False),
        "",
    ]
    recent = upto[-HISTORY:]
    if recent:
        lines.append("Conversation so far:")
        for m in recent:
            lines.append(f"[{m.get('role')}] {m.get('text')}")
        lines.append("")
    lines.append("Latest message from the user:")
    lines.append(str((current or {}).get("text", "")))
    return "\n".join(lines)


def run_task(layout: Layout, task: dict[str, Any], cfg: Any) -> dict[str, Any]:
    conv = task["conversation"]
    settings = store.conversation(layout, conv)
    try:
        res = backends.resolve(cfg, settings)
        name, acct = backends.controller(cfg)
    except CocoplusError as exc:
        res, name, acct = {"model": None, "effort": None}, None, None
        error: str | None = str(exc)
    else:
        error = (
            None
            if acct
            else 'no controller account: add an [accounts.NAME] table and [chat] controller = "NAME" to cocoplus.toml'
        )

    def start(doc: dict[str, Any]) -> None:
        doc["state"] = "running"
        doc["started_at"] = clock.iso()
        doc["worker_pid"] = os.getpid()
        doc["attempts"] = int(doc.get("attempts") or 0) + 1
        doc["model"] = res.get("model")
        doc["effort"] = res.get("effort")
        doc["model_source"] = res.get("model_source")
        doc["effort_source"] = res.get("effort_source")
        doc["account"] = name
        doc["error"] = None

    store.update_task(layout, conv, task["id"], start)
    reply = None
    if error is None and acct is not None:
        try:
            # The brain may act while it answers; a supervision round's actions carry its number.
            round_no = task.get("round") if task.get("kind") == "supervision" else None
            reply = backends.run(
                acct,
                res["model"],
                res["effort"],
                build_prompt(layout, task, acct.get("kind")),
                timeout=float(cfg.get("chat.reply_timeout_s")),
                cwd=layout.project,
                brain=backends.context(layout.root, layout.project, round_no),
            )
            if not reply:
                error = "the backend answered with nothing"
        except CocoplusError as exc:
            error = str(exc)
    if reply and error is None:
        msg = store.append_message(
            layout, conv, "assistant", reply, task=task["id"], model=res.get("model"), kind=task.get("kind")
        )

        def done(doc: dict[str, Any]) -> None:
            doc["state"] = "succeeded"
            doc["finished_at"] = clock.iso()
            doc["reply_message"] = msg["id"]

        return store.update_task(layout, conv, task["id"], done)

    def fail(doc: dict[str, Any]) -> None:
        doc["state"] = "failed"
        doc["finished_at"] = clock.iso()
        doc["error"] = error

    return store.update_task(layout, conv, task["id"], fail)


def serve(
    layout: Layout, *, idle_exit: float | None = None, poll: float = 0.2, once: bool = False, nice: int = 0
) -> int:
    """Run the worker in this process until idle for `idle_exit` seconds (or forever), `nice` lower in priority
    (`cocoplus chat worker` passes NICE)."""
    fd = try_lock(layout.lock("chat-worker"))
    if fd is None:
        sys.stderr.write("cocoplus chat worker: another worker already runs for this project\n")
        return 0
    stop = {"now": False}

    def on_signal(signum: int, _frame: Any) -> None:
        stop["now"] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if nice > 0:
        try:
            os.nice(nice)  # the backend it runs inherits it
        except OSError:
            pass
    fsio.atomic_write_json(layout.chat_worker_pid, {"pid": os.getpid(), "started_at": clock.iso()})
    # Anything `running` now was left by a worker that died: we hold the lock.
    for conv in store.conversations(layout):
        for t in store.tasks(layout, conv)[0]:
            if t["state"] == "running":
                store.update_task(
                    layout,
                    conv,
                    t["id"],
                    lambda d, pid=t.get("worker_pid"): d.update(
                        state="failed",
                        error=f"the worker (pid {pid}) stopped while this task was running; "
                        "`cocoplus chat retry` runs it again",
                        finished_at=clock.iso(),
                    ),
                )
    idle_since = time.monotonic()
    try:
        while not stop["now"]:
            task = _next_task(layout)
            if task is None:
                if once or (idle_exit is not None and time.monotonic() - idle_since > idle_exit):
                    break
                time.sleep(poll)
                continue
            try:
                cfg = config_mod.load_for(layout)
            except CocoplusError as exc:
                store.update_task(
                    layout,
                    task["conversation"],
                    task["id"],
                    lambda d, e=str(exc): d.update(state="failed", error=e, finished_at=clock.iso()),
                )
                continue
            run_task(layout, task, cfg)
            idle_since = time.monotonic()
    finally:
        try:
            os.unlink(layout.chat_worker_pid)
        except OSError:
            pass
        os.close(fd)  # releases the worker lock
    return 0
