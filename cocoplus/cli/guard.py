"""What every command line goes through around its command, with typer (cli/app.py) or without it (the fast
path, cli/fast.py): the root's `--dir`, the authority check, values an untrusted cocoplus.toml sets said once
on stderr, and a failure as one line.

A CocoplusError is one line on stderr and its exit code (1, or 2 for usage); anything unexpected is one line
plus a traceback in `.cocoplus/logs/cocoplus.log`, never a traceback on screen.
"""

from __future__ import annotations

import os
import sys

from cocoplus import trust
from cocoplus.cli import output, project
from cocoplus.cli.argv import command_words, take_dir
from cocoplus.core.errors import CocoplusError


def authorise(args: list[str]) -> None:
    """The authority check of the command about to run (docs/authority.md), before it does anything; a `--dir`
    the command line gave is in COCOPLUS_DIR by now."""
    if os.environ.get("COCOPLUS_VOUCHED"):
        from cocoplus.session import agents  # deferred: only a process cocoplus started for itself has a token

        agents.claim()  # it acts as what its starter vouched for (the watcher), sealed in this user's registry
    words = command_words(args)
    if not words:  # help, the version, completion
        return
    from cocoplus.core.paths import discover  # deferred: only a command that acts is checked
    from cocoplus.ops import authority  # deferred: likewise

    if authority.command_action(words) == "read":
        return
    try:
        layout = discover(check=False)
    except CocoplusError:
        layout = None
    authority.check_command(words, layout)


def start() -> None:
    """Before a command line: no `--dir` yet, and trust notes go to stderr."""
    project.dir_flag = None
    trust.speak_to(output.note)  # values an untrusted cocoplus.toml sets are ignored: said once, on stderr


def prepare(args: list[str]) -> list[str]:
    """The command line without the root's `--dir` (which becomes COCOPLUS_DIR), once its command may run."""
    args, directory = take_dir(args)
    if directory:
        project.dir_flag = directory
        os.environ["COCOPLUS_DIR"] = os.path.abspath(directory)
    authorise(args)
    return args


def finish() -> None:
    trust.speak_to(None)


def failure(exc: BaseException) -> int:
    """A command's failure said in one line on stderr (a traceback only in the log): its exit code.  A
    KeyboardInterrupt or any Exception; anything else is raised again."""
    if isinstance(exc, CocoplusError):
        output.error_line(exc.message, exc.hint)
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        output.note("cocoplus: interrupted")
        return 130
    if isinstance(exc, BrokenPipeError):
        return 1
    if not isinstance(exc, Exception):
        raise exc
    from cocoplus.core.crashlog import log_exception  # deferred: only an unexpected failure loads the traceback

    where = log_exception(f"argv={sys.argv[1:]!r}", exc)
    detail = f"; details in {where}" if where else ""
    output.error_line(f"internal error: {type(exc).__name__}: {exc}{detail}")
    return 1
