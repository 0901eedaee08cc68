"""`cocoplus chat send|log|retry|set|info|menu|worker`: the master-agent conversation."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Annotated, Any

import typer

from cocoplus.chat import worker as chat_worker
from cocoplus.cli import chat_menu, output
from cocoplus.cli.commands import JsonFlag, layout
from cocoplus.core import inert
from cocoplus.core.errors import UsageError
from cocoplus.ops import chat as ops

Conversation = Annotated[str, typer.Option("--conversation", "-c", help="Conversation id (default: master-agent).")]


def message_line(m: dict[str, Any]) -> str:
    """One message; each field made inert on its own (core.inert), the text keeping its lines."""
    alias = inert.line(m.get("session_alias") or "")
    who = {"user": "you", "assistant": "master agent", "system": "system", "worker": f"worker {alias}".strip()}.get(
        m.get("role", ""), inert.line(m.get("role", "?"))
    )
    ts = inert.line((m.get("ts") or "")[11:19])
    return f"[{ts}] {who}: {inert.text(m.get('text', ''))}"


def action_line(a: dict[str, Any]) -> str:
    where = f"round {inert.line(a['round'])}" if a.get("round") is not None else "outside a round"
    when = inert.line((a.get("ts") or "")[11:19])
    by = inert.line(a.get("actor") or a.get("by") or "?")
    return f"[{when}] action ({where}, by {by}): {inert.text(a.get('text'))}"


def entries(view: dict[str, Any]) -> list[tuple[str, str]]:
    """Messages and actions in time order, each as (key, line)."""
    items = [(m.get("ts") or "", f"m:{m.get('id')}", message_line(m)) for m in view["messages"]]
    items += [
        (a.get("ts") or "", f"a:{a.get('ts')}:{a.get('action')}:{a.get('session')}", action_line(a))
        for a in view.get("actions") or []
    ]
    items.sort(key=lambda e: e[0])
    return [(key, text) for _ts, key, text in items]


def render_messages(view: dict[str, Any], shown: set[str] | None = None) -> set[str]:
    """Print what is not in `shown` yet; returns the keys shown now."""
    seen = set(shown or ())
    for key, text in entries(view):
        if key not in seen:
            output.line(text)
            seen.add(key)
    return seen


def render_reply_state(view: dict[str, Any]) -> None:
    if view["pending"]:
        output.line(
            "... master agent is thinking"
            + (" (queued)" if all(p["state"] == "queued" for p in view["pending"]) else "")
        )
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
        output.error_line(
            f"the master agent cannot reply: {result['task'].get('error')}", "`cocoplus chat retry` once it is fixed"
        )
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
    output.show(
        ops.retry(layout(), conversation, task), json_out, lambda r: output.line(f"task {r['task']['id']} queued again")
    )


def render_overrides(doc: dict[str, Any]) -> None:
    output.line(
        f"{doc['conversation']}: model {doc.get('modelOverride') or '(no override)'}, "
        f"effort {doc.get('reasoningEffortOverride') or '(no override)'}; a reply now uses "
        f"{doc.get('model') or '(backend default)'} at {doc.get('effort')} effort"
    )


def set_overrides(
    model: Annotated[str | None, typer.Option("--model", help="Model for this conversation.")] = None,
    effort: Annotated[str | None, typer.Option("--effort", help="Reasoning effort: low, medium or high.")] = None,
    clear: Annotated[
        bool,
        typer.Option("--clear", help="Remove this conversation's overrides (then --model/--effort, if given, apply)."),
    ] = False,
    conversation: Conversation = "master-agent",
    json_out: JsonFlag = False,
) -> None:
    """Save a model and/or reasoning effort for this conversation only."""
    if model is None and effort is None and not clear:
        raise UsageError("chat set: give --model, --effort or --clear")
    output.show(
        ops.set_overrides(layout(), conversation, model=model, effort=effort, clear=clear), json_out, render_overrides
    )


def render_info(rep: dict[str, Any]) -> None:
    pairs: list[tuple[str, str]] = [
        ("conversation", rep["conversation"]),
        (
            "controller",
            f"{rep['controller'] or '(none configured)'}"
            + (f" ({rep['controllerKind']})" if rep.get("controllerKind") else ""),
        ),
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
    lay = layout()

    def recent() -> None:
        view = ops.log(lay, conversation)
        for m in view["messages"][-10:]:
            output.line(message_line(m))
        render_reply_state(view)

    chat_menu.run(lay, conversation, info=lambda: render_info(ops.info(lay, conversation)), recent=recent)


def render_setup(out: dict[str, Any]) -> None:
    output.line(f"{'created' if out['created_file'] else 'updated'} {out['file']}:")
    for w in out["written"]:
        output.line(f"  {w}")
    if out["replaced_account"]:
        output.line(f"the previous [accounts.{out['account']}] table was replaced")
    if out["previous_controller"]:
        output.line(f"the controller was {out['previous_controller']}; it is now {out['account']}")
    if out.get("trust") and out["trust"] != "nothing to trust":
        output.line(f"trust: {out['trust']}")
    output.line("`cocoplus chat info` shows the controller; `cocoplus supervise GOAL` can now run supervision rounds")


def setup(
    kind: Annotated[str, typer.Argument(help="claude, codex, openai or command.")],
    program: Annotated[
        list[str] | None, typer.Argument(help="For command: the program and its arguments, after `--`.")
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help="The account's name (default: the kind).")] = None,
    binary: Annotated[
        str | None, typer.Option("--binary", help="claude, codex: the path of the CLI (default: found on PATH).")
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="The account's default model (required for openai).")
    ] = None,
    effort: Annotated[
        str | None, typer.Option("--effort", help="The account's default reasoning effort: low, medium or high.")
    ] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="openai: an OpenAI-compatible endpoint.")] = None,
    api_key_env: Annotated[
        str | None,
        typer.Option(
            "--api-key-env", help="openai: the environment variable holding the key (default OPENAI_API_KEY)."
        ),
    ] = None,
    json_out: JsonFlag = False,
) -> None:
    """Add a controller account to cocoplus.toml and make it the controller (the rest of the file is kept)."""
    out = ops.setup(layout(), kind, name, binary, model, effort, base_url, api_key_env, list(program or []) or None)
    output.show(out, json_out, render_setup)


def worker(
    idle_exit: Annotated[
        float | None,
        typer.Option("--idle-exit", help="Exit after this many idle seconds (default: run until stopped)."),
    ] = None,
    once: Annotated[bool, typer.Option("--once", help="Run what is queued now, then exit.")] = False,
) -> None:
    """Run the reply worker in the foreground, at a lower scheduling priority (send starts one in the background
    when none runs)."""
    raise typer.Exit(chat_worker.serve(layout(), idle_exit=idle_exit, once=once, nice=chat_worker.NICE))


def register(app: typer.Typer) -> None:
    chat = typer.Typer(
        help="Talk to the master agent: send returns at once, the reply lands in the ledger.", no_args_is_help=True
    )
    app.add_typer(chat, name="chat")
    commands: tuple[tuple[str, Callable[..., None]], ...] = (
        ("send", send),
        ("log", log),
        ("retry", retry),
        ("set", set_overrides),
        ("info", info),
        ("menu", menu),
        ("worker", worker),
        ("setup", setup),
    )
    for name, fn in commands:
        chat.command(name)(fn)
