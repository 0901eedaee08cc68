"""Managed workers: `cocoplus launch RUNTIME TASK` and `cocoplus workers list|logs|kill`."""

from __future__ import annotations

import sys
import time
from typing import Annotated, Any

import typer

from cocoplus.cli import output
from cocoplus.cli.commands import JsonFlag, layout
from cocoplus.core import vocab
from cocoplus.ops import workers as ops

WorkerArg = Annotated[str, typer.Argument(help="The worker: its id (w1), its alias, or its session's alias.")]
FOLLOW_POLL_S = 0.3


def render_one(rec: dict[str, Any]) -> None:
    output.line((f"{rec['state']}: ", "bold"), rec.get("message") or f"worker {rec['id']}")


def launch(
    runtime: Annotated[str, typer.Argument(help="claude, codex or gemini.")],
    task: Annotated[str, typer.Argument(help="What the worker is to do (its first prompt).")],
    alias: Annotated[str | None, typer.Option("--alias", help="The session's alias (default: the runtime's next, such as cc3).")] = None,
    model: Annotated[str | None, typer.Option("--model", help="The model the runtime uses.")] = None,
    effort: Annotated[str | None, typer.Option("--effort", help="Reasoning effort: low, medium or high (claude, codex).")] = None,
    json_out: JsonFlag = False,
) -> None:
    """Start a headless worker (claude -p, codex exec, gemini -p) in the project, detached from this terminal;
    it is registered like any session. Beyond [workers] max_parallel it waits in the queue."""
    output.show(ops.launch(layout(), runtime, task, alias=alias, model=model, effort=effort), json_out, render_one)


def render_list(result: dict[str, Any]) -> None:
    workers = result["workers"]
    output.line(f"workers: {result['running']} running, {result['queued']} queued (max_parallel {result['max_parallel']})")
    if workers:
        rows = []
        for w in workers:
            ended = (w.get("exit") or {}).get("status") or ""
            if w.get("killed_by"):
                ended = f"killed by {w['killed_by']}"
            rows.append([
                w["id"], w["state"] + (" (stale)" if w.get("stale") else ""), w.get("session_alias") or w.get("alias") or "-",
                w.get("attention") or "-", w["runtime"], str(w.get("pid") or "-"), ended or "-", (w.get("task") or "")[:60],
            ])  # fmt: skip
        cols = [("ID", True), ("STATE", True), ("SESSION", True), ("ATTENTION", True), ("RUNTIME", False), ("PID", False), ("ENDED", False), ("TASK", False)]
        for text in output.table(cols, rows, output.terminal_width()):
            output.line(text)
    output.problems(result.get("problems") or [])


def list_workers(json_out: JsonFlag = False) -> None:
    """Every launched worker: state, session alias and attention, runtime, pid, how it ended, task."""
    output.show(ops.list_workers(layout()), json_out, render_list)


def logs(
    worker: WorkerArg,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep printing new output until the worker ends (Ctrl-C stops).")] = False,
) -> None:
    """Print the worker's output (its runtime's stdout and stderr)."""
    lay = layout()
    got = ops.logs(lay, worker)
    sys.stdout.write(got["text"])
    sys.stdout.flush()
    while follow and got["state"] in vocab.LIVE_WORKER_STATES:
        time.sleep(FOLLOW_POLL_S)
        got = ops.logs(lay, worker, got["offset"])
        sys.stdout.write(got["text"])
        sys.stdout.flush()
    if follow:
        got = ops.logs(lay, worker, got["offset"])  # what came between the last read and the end
        sys.stdout.write(got["text"])
        sys.stdout.flush()


def kill(worker: WorkerArg, json_out: JsonFlag = False) -> None:
    """Stop the worker: its process group gets SIGTERM, then SIGKILL; the record says `exited` and who killed it."""
    output.show(ops.kill(layout(), worker), json_out, render_one)


def register(app: typer.Typer) -> None:
    app.command("launch")(launch)
    group = typer.Typer(help="Workers started by `cocoplus launch`: list, logs, kill.", no_args_is_help=True)
    app.add_typer(group, name="workers")
    group.command("list")(list_workers)
    group.command("logs")(logs)
    group.command("kill")(kill)
