"""`cocoplus chat send|log|retry|set|info|menu|worker`: the master-agent conversation."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Annotated, Any

import typer

from cocoplus.chat import worker as chat_worker
from cocoplus.cli import output
from cocoplus.cli.commands import JsonFlag, layout
from cocoplus.core.errors import UsageError
from cocoplus.ops import chat as ops

Conversation = Annotated[str, typer.Option("--conversation", "-c", help="Conversation id (default: master-agent).")]


def message_line(m: dict[str, Any]) -> str:
    who = {"user": "you", "assistant": "master agent", "system": "system", "worker": f"worker {m.get('session_alias') or ''}".strip()}.get(
        m.get("role", ""), m.get("role", "?")
    )
    ts = (m.get("ts") or "")[11:19]
    return f"[{ts}] {who}: {m.get('text', '')}"


def render_messages(view: dict[str, Any], shown: int = 0) -> int:
    for m in view["messages"][shown:]:
        output.line(message_line(m))
    return len(view["messages"])


def render_reply_state(view: dict[str, Any]) -> None:
    if view["pending"]:
        output.line("... master agent is thinking" + (" (queued)" if all(p["state"] == "queued" for p in view["pending"]) else ""))
    elif view["failed"]:
        f = view["failed"]
        output.line(("!!", output.ALERT), f" the master agent's reply failed: {f['error']}. Retry with `{f['retry']}`")


def render_log(view: dict[str, Any]) -> None:
    render_messages(view)
    render_reply_state(view)


def render_sent(result: dict[str, Any]) -> None:
    state = result["masterReplyState"]
    if result.get("reply"):
        output.line(result["reply"]["text"])
    elif state == "failed":
        output.error_line(f"the master agent cannot reply: {result['task'].get('error')}", "`cocoplus chat retry` once it is fixed")
    else:
        output.line(f"sent; the master agent's reply is {state} (task {result['task']['id']}); see `cocoplus chat log`")


def send(
    message: Annotated[str, typer.Argument(help="The message.")],
    conversation: Conversation = "master-agent",
    wait: Annotated[bool, typer.Option("--wait", help="Wait for the reply and print it.")] = False,
    timeout: Annotated[float, typer.Option("--timeout", help="With --wait: give up after this many seconds.")] = 600.0,
    json_out: JsonFlag = False,
) -> None:
    """Send a message; returns at once with queued, running or failed."""
    result = ops.send(layout(), message, conversation, wait=wait, timeout=timeout)
    output.show(result, json_out, render_sent)
    if result["masterReplyState"] == "failed":
        raise typer.Exit(1)


def log(
    conversation: Conversation = "master-agent",
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep printing new messages.")] = False,
    json_out: JsonFlag = False,
) -> None:
    """Messages in order, a thinking line while a reply is pending, a failure line with the retry command."""
    lay = layout()
    view = ops.log(lay, conversation)
    if not follow:
        output.show(view, json_out, render_log)
        return
    shown = render_messages(view)
    render_reply_state(view)
    last_state = (view["masterReplyState"], view["failed"] and view["failed"]["id"])
    while True:
        time.sleep(0.5)
        view = ops.log(lay, conversation)
        if len(view["messages"]) > shown:
            shown = render_messages(view, shown)
        state = (view["masterReplyState"], view["failed"] and view["failed"]["id"])
        if state != last_state:
            render_reply_state(view)
            last_state = state
        sys.stdout.flush()


def retry(
    task: Annotated[str | None, typer.Argument(help="The failed task (default: the last failed one).")] = None,
    conversation: Conversation = "master-agent",
    json_out: JsonFlag = False,
) -> None:
    """Queue a failed reply task again."""
    output.show(ops.retry(layout(), conversation, task), json_out, lambda r: output.line(f"task {r['task']['id']} queued again"))


def render_overrides(doc: dict[str, Any]) -> None:
    output.line(
        f"{doc['conversation']}: model {doc.get('modelOverride') or '(no override)'}, "
        f"effort {doc.get('reasoningEffortOverride') or '(no override)'}; a reply now uses "
        f"{doc.get('model') or '(backend default)'} at {doc.get('effort')} effort"
    )


def set_overrides(
    model: Annotated[str | None, typer.Option("--model", help="Model for this conversation.")] = None,
    effort: Annotated[str | None, typer.Option("--effort", help="Reasoning effort: low, medium or high.")] = None,
    clear: Annotated[bool, typer.Option("--clear", help="Remove this conversation's overrides (then --model/--effort, if given, apply).")] = False,
    conversation: Conversation = "master-agent",
    json_out: JsonFlag = False,
) -> None:
    """Save a model and/or reasoning effort for this conversation only."""
    if model is None and effort is None and not clear:
        raise UsageError("chat set: give --model, --effort or --clear")
    output.show(ops.set_overrides(layout(), conversation, model=model, effort=effort, clear=clear), json_out, render_overrides)


def render_info(rep: dict[str, Any]) -> None:
    pairs: list[tuple[str, str]] = [
        ("conversation", rep["conversation"]),
        ("controller", f"{rep['controller'] or '(none configured)'}" + (f" ({rep['controllerKind']})" if rep.get("controllerKind") else "")),
        ("model", f"{rep['model'] or '(backend default)'}  [{rep['modelSource']}]"),
        ("effort", f"{rep['effort']}  [{rep['effortSource']}]"),
        ("overrides", f"model={rep['modelOverride'] or '-'} effort={rep['reasoningEffortOverride'] or '-'}"),
        ("worker", "running" if rep["workerRunning"] else "not running"),
        ("tasks", ", ".join(f"{k} {v}" for k, v in rep["tasks"].items())),
        *((k, v) for k, v in rep["files"].items()),
    ]
    for label, value in pairs:
        output.line(f"{label:<14} ", value)
    output.problems(rep["problems"])


def info(conversation: Conversation = "master-agent", json_out: JsonFlag = False) -> None:
    """The controller, the effective model and effort and where each came from, and the conversation's files."""
    output.show(ops.info(layout(), conversation), json_out, render_info)


def menu(conversation: Conversation = "master-agent") -> None:
    """The "..." menu: Model, Reasoning effort, Session info, Refresh."""
    from cocoplus.cli import chat_menu  # deferred: import cycle (chat_menu imports this module for its renderers)

    chat_menu.run(layout(), conversation)


def worker(
    idle_exit: Annotated[float | None, typer.Option("--idle-exit", help="Exit after this many idle seconds (default: run until stopped).")] = None,
    once: Annotated[bool, typer.Option("--once", help="Run what is queued now, then exit.")] = False,
) -> None:
    """Run the reply worker in the foreground (send starts one in the background when none runs)."""
    raise typer.Exit(chat_worker.serve(layout(), idle_exit=idle_exit, once=once))


def register(app: typer.Typer) -> None:
    chat = typer.Typer(help="Talk to the master agent: send returns at once, the reply lands in the ledger.", no_args_is_help=True)
    app.add_typer(chat, name="chat")
    commands: tuple[tuple[str, Callable[..., None]], ...] = (
        ("send", send), ("log", log), ("retry", retry), ("set", set_overrides), ("info", info), ("menu", menu), ("worker", worker)
    )
    for name, fn in commands:
        chat.command(name)(fn)
