"""Managed workers: `cocoplus launch RUNTIME TASK` and `cocoplus workers list|logs|kill|diff|merge|clean`."""

from __future__ import annotations

import sys
import time
from typing import Annotated, Any

import typer

from cocoplus.cli import output
from cocoplus.cli.commands import JsonFlag, layout
from cocoplus.core import inert, vocab
from cocoplus.ops import workers as ops

WorkerArg = Annotated[str, typer.Argument(help="The worker: its id (w1), its alias, or its session's alias.")]
FOLLOW_POLL_S = 0.3


def render_one(rec: dict[str, Any]) -> None:
    output.line((f"{rec['state']}: ", "bold"), rec.get("message") or f"worker {rec['id']}")


def launch(
    runtime: Annotated[str, typer.Argument(help="claude, codex or gemini.")],
    task: Annotated[str, typer.Argument(help="What the worker is to do (its first prompt).")],
    alias: Annotated[
        str | None, typer.Option("--alias", help="The session's alias (default: the runtime's next, such as cc3).")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", help="The model the runtime uses.")] = None,
    effort: Annotated[
        str | None, typer.Option("--effort", help="Reasoning effort: low, medium or high (claude, codex).")
    ] = None,
    allow: Annotated[
        list[str] | None,
        typer.Option(
            "--allow",
            metavar="RULE",
            help="A permission rule for this worker, in Claude Code's syntax (Bash(pytest *), Edit); repeatable.",
        ),
    ] = None,
    worktree: Annotated[
        bool | None,
        typer.Option(
            "--worktree/--no-worktree",
            help="Run it in a git worktree of its own, on a new branch cocoplus/<alias or id> from HEAD "
            "(default: [workers] worktree); `workers merge` brings its work back.",
        ),
    ] = None,
    unsupervised: Annotated[
        bool,
        typer.Option(
            "--unsupervised",
            help="Start it even where its runtime will not run this project's cocoplus hooks (launch refuses that "
            "otherwise): no kill switch at its tool calls, no steer, cap, rules or session record.",
        ),
    ] = False,
    sandbox: Annotated[
        str | None,
        typer.Option(
            "--sandbox",
            metavar="PROFILE",
            help="Its operating-system sandbox: none, workspace (bubblewrap) or srt (Anthropic's sandbox runtime); "
            "see `cocoplus sandbox doctor`. "
            "Default: [workers] sandbox. A profile that cannot be applied here starts nothing.",
        ),
    ] = None,
    network: Annotated[
        str | None,
        typer.Option(
            "--network",
            metavar="HOSTS",
            help="What its sandbox reaches on the network: all; none (only its model endpoint); or hosts, "
            "comma-separated (registry.npmjs.org,*.pypi.org), where another host becomes a decision in the inbox. "
            "Default: [sandbox] network.",
        ),
    ] = None,
    json_out: JsonFlag = False,
) -> None:
    """Start a headless worker (claude -p, codex exec, gemini -p) in the project, detached from this terminal;
    it is registered like any session. Beyond [workers] max_parallel it waits in the queue. It gets the permissions
    [permissions] allow and --allow give; anything else it asks for waits for `cocoplus approve` (Claude Code)."""
    output.show(
        ops.launch(
            layout(),
            runtime,
            task,
            alias=alias,
            model=model,
            effort=effort,
            allow=list(allow or []),
            worktree=worktree,
            unsupervised=unsupervised,
            sandbox=sandbox,
            network=network,
        ),
        json_out,
        render_one,
    )


def render_list(result: dict[str, Any]) -> None:
    workers = result["workers"]
    output.line(
        f"workers: {result['running']} running, {result['queued']} queued (max_parallel {result['max_parallel']})"
    )
    if workers:
        rows = []
        for w in workers:
            session = w.get("session_alias") or w.get("alias") or "-"
            pid = str(w.get("pid") or "-")
            task = (w.get("task") or "")[:60]
            runtime = ops.runtime_text(w)  # "claude → codex (rate limit until 15:00)"
            rows.append([w["id"], ops.state_text(w), session, w.get("attention") or "-", runtime, pid,
                         ops.ended_text(w) or "-", task])  # fmt: skip
        cols = [
            ("ID", True),
            ("STATE", True),
            ("SESSION", True),
            ("ATTENTION", True),
            ("RUNTIME", False),
            ("PID", False),
            ("ENDED", False),
            ("TASK", False),
        ]
        if any(w.get("sandbox") not in (None, "none") for w in workers):  # its sandbox profile, where any has one
            cols.insert(5, ("SANDBOX", False))
            for row, w in zip(rows, workers, strict=True):
                net = w.get("network")
                limited = (
                    f" (network: {', '.join(net) if isinstance(net, list) else net})"
                    if net not in (None, "all")
                    else ""
                )
                row.insert(5, (w.get("sandbox") or "none") + limited)
        if any(isinstance(w.get("worktree"), dict) for w in workers):  # launched with --worktree: its branch
            cols.insert(5, ("BRANCH", False))
            for row, w in zip(rows, workers, strict=True):
                row.insert(5, _branch(w.get("worktree")))
        for text in output.table(cols, rows, output.terminal_width()):
            output.line(text)
    output.problems(result.get("problems") or [])


def _branch(tree: Any) -> str:
    if not isinstance(tree, dict):
        return "-"
    notes = [n for n, on in (("merged", tree.get("merged")), ("removed", tree.get("removed_at"))) if on]
    return str(tree.get("branch") or "-") + (f" ({', '.join(notes)})" if notes else "")


def list_workers(json_out: JsonFlag = False) -> None:
    """Every launched worker: state, session alias and attention, runtime, pid, how it ended, task."""
    output.show(ops.list_workers(layout()), json_out, render_list)


def logs(
    worker: WorkerArg,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing new output until the worker ends (Ctrl-C stops).")
    ] = False,
    raw: Annotated[
        bool, typer.Option("--raw", help="The runtime's output as it is (its JSON event stream), not the transcript.")
    ] = False,
    json_out: JsonFlag = False,
) -> None:
    """Print the worker's transcript: the model's text, each tool call and its result on a line, errors marked
    (`--raw`: its runtime's stdout and stderr as they are, made inert; the log file keeps its bytes)."""
    lay = layout()

    def write(got: dict[str, Any]) -> None:
        if json_out:
            output.emit_json(got)
        elif raw:
            sys.stdout.write(inert.text(got["text"]))
            sys.stdout.flush()
        else:
            output.transcript(got["entries"])

    got = ops.logs(lay, worker, raw=raw)
    write(got)
    while follow and got["state"] in vocab.LIVE_WORKER_STATES:
        time.sleep(FOLLOW_POLL_S)
        got = ops.logs(lay, worker, got["offset"], raw=raw)
        if got["text"]:
            write(got)
    if follow:
        got = ops.logs(lay, worker, got["offset"], raw=raw)  # what came between the last read and the end
        if got["text"]:
            write(got)


def kill(worker: WorkerArg, json_out: JsonFlag = False) -> None:
    """Stop the worker: its process group gets SIGTERM, then SIGKILL, and so does what it left behind; the record
    says `exited` and who killed it."""
    output.show(ops.kill(layout(), worker), json_out, render_one)


def diff(
    worker: WorkerArg,
    stat: Annotated[bool, typer.Option("--stat", help="Only the files changed and how much, not the patch.")] = False,
    json_out: JsonFlag = False,
) -> None:
    """Show what a worker launched with --worktree changed: its branch against the commit it started from."""

    def render(out: dict[str, Any]) -> None:
        output.line(out["message"])
        for c in out["commits"]:
            output.line(f"  {c}")
        if stat or not out["diff"]:
            sys.stdout.write(inert.text(out["stat"]))
        else:
            sys.stdout.write(inert.text(out["diff"]))
        sys.stdout.flush()

    output.show(ops.diff(layout(), worker), json_out, render)


def merge(worker: WorkerArg, json_out: JsonFlag = False) -> None:
    """Merge an ended worker's branch (launch --worktree) into the current branch. On a conflict the merge stops,
    the files are listed, the tree is left as git leaves it (resolve and commit, or `git merge --abort`), exit 1."""
    out = ops.merge(layout(), worker)
    output.show(out, json_out, lambda o: output.line(o["message"]))
    if out["conflicts"]:
        raise typer.Exit(1)


def clean(
    worker: Annotated[str | None, typer.Argument(help="One worker (default: every ended worker).")] = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Also delete branches not merged, and worktrees holding uncommitted work."),
    ] = False,
    json_out: JsonFlag = False,
) -> None:
    """Remove the git worktrees of ended workers (launch --worktree); a branch not merged is kept unless --force.
    A running worker is refused."""
    output.show(ops.clean(layout(), worker, force), json_out, lambda o: output.line(o["message"]))


def register(app: typer.Typer) -> None:
    app.command("launch")(launch)
    group = typer.Typer(
        help="Workers started by `cocoplus launch`: list, logs, kill; diff, merge, clean for those in worktrees.",
        no_args_is_help=True,
    )
    app.add_typer(group, name="workers")
    group.command("list")(list_workers)
    group.command("logs")(logs)
    group.command("kill")(kill)
    group.command("diff")(diff)
    group.command("merge")(merge)
    group.command("clean")(clean)
