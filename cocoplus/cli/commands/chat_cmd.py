"""`cocoplus chat send|log|retry|set|info|menu|worker`: the master-agent conversation."""

from __future__ import annotations

import sys
import time
from typing import Any

import typer

from cocoplus.cli import output
from cocoplus.cli.commands import JSON_HELP, layout
from cocoplus.core import vocab
from cocoplus.core.errors import UsageError

CONV_HELP = "Conversation id (default: master-agent)."


def _line(m: dict[str, Any]) -> str:
    who = {"user": "you", "assistant": "master agent", "system": "system", "worker": f"worker {m.get('session_alias') or ''}".strip()}.get(m.get("role", ""), m.get("role", "?"))
    ts = (m.get("ts") or "")[11:19]
    return f"[{ts}] {who}: {m.get('text', '')}"


def _render_log(view: dict[str, Any], shown: int = 0) -> int:
    con = output.out()
    for m in view["messages"][shown:]:
        con.print(_line(m), markup=False)
    return len(view["messages"])


def _render_status(view: dict[str, Any]) -> None:
    con = output.out()
    if view["pending"]:
        con.print("... master agent is thinking" + (" (queued)" if all(p["state"] == "queued" for p in view["pending"]) else ""), markup=False)
    elif view["failed"]:
        f = view["failed"]
        con.print(f"!! the master agent's reply failed: {f['error']}. Retry with `{f['retry']}`", markup=False)


def register(app: typer.Typer) -> None:
    chat = typer.Typer(help="Talk to the master agent: send returns at once, the reply lands in the ledger.", no_args_is_help=True)
    app.add_typer(chat, name="chat")

    @chat.command("send")
    def send(
        message: str = typer.Argument(..., help="The message."),
        conversation: str = typer.Option("master-agent", "--conversation", "-c", help=CONV_HELP),
        wait: bool = typer.Option(False, "--wait", help="Wait for the reply and print it."),
        timeout: float = typer.Option(600.0, "--timeout", help="With --wait: give up after this many seconds."),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """Send a message; returns at once with queued, running or failed."""
        from cocoplus.chat import api

        lay = layout()
        result = api.send(lay, message, conversation)
        if wait and result["masterReplyState"] in vocab.UNFINISHED_TASK_STATES:
            done = api.wait(lay, conversation, result["task"]["id"], timeout)
            result["task"] = done["task"]
            result["masterReplyState"] = done["task"]["state"] if done["task"]["state"] != "succeeded" else "succeeded"
            if done.get("reply"):
                result["reply"] = done["reply"]
        if json_out:
            output.emit_json(result)
        else:
            con = output.out()
            state = result["masterReplyState"]
            if result.get("reply"):
                con.print(result["reply"]["text"], markup=False)
            elif state == "failed":
                output.error_line(f"the master agent cannot reply: {result['task'].get('error')}", "`cocoplus chat retry` once it is fixed")
            else:
                con.print(f"sent; the master agent's reply is {state} (task {result['task']['id']}); see `cocoplus chat log`", markup=False)
        if result["masterReplyState"] == "failed":
            raise typer.Exit(1)

    @chat.command("log")
    def log(
        conversation: str = typer.Option("master-agent", "--conversation", "-c", help=CONV_HELP),
        follow: bool = typer.Option(False, "--follow", "-f", help="Keep printing new messages."),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """Messages in order, a thinking line while a reply is pending, a failure line with the retry command."""
        from cocoplus.chat import api

        lay = layout()
        view = api.conversation_view(lay, conversation)
        if json_out and not follow:
            output.emit_json(view)
            return
        shown = _render_log(view)
        _render_status(view)
        last_state = (view["masterReplyState"], view["failed"] and view["failed"]["id"])
        while follow:
            time.sleep(0.5)
            view = api.conversation_view(lay, conversation)
            if len(view["messages"]) > shown:
                shown = _render_log(view, shown)
            state = (view["masterReplyState"], view["failed"] and view["failed"]["id"])
            if state != last_state:
                _render_status(view)
                last_state = state
            sys.stdout.flush()

    @chat.command("retry")
    def retry(
        task: str = typer.Argument(None, help="The failed task (default: the last failed one)."),
        conversation: str = typer.Option("master-agent", "--conversation", "-c", help=CONV_HELP),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """Queue a failed reply task again."""
        from cocoplus.chat import api

        result = api.retry(layout(), conversation, task)
        if json_out:
            output.emit_json(result)
            return
        output.out().print(f"task {result['task']['id']} queued again", markup=False)

    @chat.command("set")
    def set_cmd(
        model: str = typer.Option(None, "--model", help="Model for this conversation."),
        effort: str = typer.Option(None, "--effort", help="Reasoning effort: low, medium or high."),
        clear: bool = typer.Option(False, "--clear", help="Remove this conversation's overrides."),
        conversation: str = typer.Option("master-agent", "--conversation", "-c", help=CONV_HELP),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """Save a model and/or reasoning effort for this conversation only."""
        from cocoplus.chat import api

        if model is None and effort is None and not clear:
            raise UsageError("chat set: give --model, --effort or --clear")
        doc = api.set_overrides(layout(), conversation, model=model, effort=effort, clear=clear)
        if json_out:
            output.emit_json(doc)
            return
        output.out().print(
            f"{conversation}: model {doc.get('modelOverride') or '(no override)'}, effort {doc.get('reasoningEffortOverride') or '(no override)'}",
            markup=False,
        )

    @chat.command("info")
    def info(
        conversation: str = typer.Option("master-agent", "--conversation", "-c", help=CONV_HELP),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """The controller, the effective model and effort and where each came from, and the conversation's files."""
        from cocoplus.chat import api

        rep = api.info(layout(), conversation)
        if json_out:
            output.emit_json(rep)
            return
        _print_info(rep)

    @chat.command("menu")
    def menu(conversation: str = typer.Option("master-agent", "--conversation", "-c", help=CONV_HELP)) -> None:
        """The "..." menu: Model, Reasoning effort, Session info, Refresh."""
        from cocoplus.cli import chat_menu

        chat_menu.run(layout(), conversation)

    @chat.command("worker")
    def worker_cmd(
        idle_exit: float = typer.Option(None, "--idle-exit", help="Exit after this many idle seconds (default: run until stopped)."),
        once: bool = typer.Option(False, "--once", help="Run what is queued now, then exit."),
    ) -> None:
        """Run the reply worker in the foreground (send starts one in the background when none runs)."""
        from cocoplus.chat import worker

        raise typer.Exit(worker.serve(layout(), idle_exit=idle_exit, once=once))


def _print_info(rep: dict[str, Any]) -> None:
    con = output.out()
    con.print(f"conversation   {rep['conversation']}", markup=False)
    con.print(f"controller     {rep['controller'] or '(none configured)'}" + (f" ({rep['controllerKind']})" if rep.get("controllerKind") else ""), markup=False)
    con.print(f"model          {rep['model'] or '(backend default)'}  [{rep['modelSource']}]", markup=False)
    con.print(f"effort         {rep['effort']}  [{rep['effortSource']}]", markup=False)
    con.print(f"overrides      model={rep['modelOverride'] or '-'} effort={rep['reasoningEffortOverride'] or '-'}", markup=False)
    con.print(f"worker         {'running' if rep['workerRunning'] else 'not running'}", markup=False)
    con.print("tasks          " + ", ".join(f"{k} {v}" for k, v in rep["tasks"].items()), markup=False)
    for k, v in rep["files"].items():
        con.print(f"{k:<14} {v}", markup=False)
    for p in rep["problems"]:
        output.note(f"cocoplus: problem: {p}")
