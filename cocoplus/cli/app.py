"""The `cocoplus` command: a thin layer over cocoplus' functions.

`main()` owns error handling: a CocoplusError is one line on stderr and
its exit code (1, or 2 for usage); anything unexpected is one line plus a
traceback in `.cocoplus/logs/cocoplus.log`, never a traceback on screen.
`cocoplus hook ...` goes straight to the hook's entry, not through typer's
parsing; the hooks `cocoplus install` writes never load this module at all
(they run `cocoplus/hook/__main__.py` with `python -S`, since importing
typer would cost every tool call).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import typer
from typer._click import exceptions as cx
from typer.main import get_command

from cocoplus import __version__, trust
from cocoplus.cli import commands, output
from cocoplus.cli.commands import (
    budget_cmd,
    chat_cmd,
    config_cmd,
    dispatch_cmd,
    fleet_cmd,
    hooks_cmd,
    init_cmd,
    mcp_cmd,
    notify_cmd,
    server_cmd,
    session_cmd,
    shell_cmd,
    supervision_cmd,
    top_cmd,
    trust_cmd,
    workers_cmd,
)
from cocoplus.core.crashlog import log_exception
from cocoplus.core.errors import CocoplusError
from cocoplus.hook.entry import main as hook_main

app = typer.Typer(
    name="cocoplus",
    help="Continuity and operator control for long-running AI coding agents.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"cocoplus {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
    directory: str = typer.Option(
        None, "--dir", metavar="PATH", help="Use this .cocoplus directory (or project) instead of searching; same as COCOPLUS_DIR."
    ),
) -> None:
    commands.dir_flag = directory or None
    if directory:
        os.environ["COCOPLUS_DIR"] = os.path.abspath(directory)


def _register() -> None:
    for mod in (init_cmd, session_cmd, config_cmd, shell_cmd, hooks_cmd, budget_cmd, chat_cmd, supervision_cmd, dispatch_cmd, server_cmd, mcp_cmd, notify_cmd, top_cmd, trust_cmd, fleet_cmd, workers_cmd):
        mod.register(app)


_register()


def usage_line(exc: Any) -> tuple[str, str | None]:
    """A click usage error as cocoplus' one line (and a hint), instead of click's usage block."""
    message = " ".join(exc.format_message().split()).rstrip(".")
    if message[:1].isupper() and not message[1:2].isupper():
        message = message[0].lower() + message[1:]
    ctx = getattr(exc, "ctx", None)
    path = ctx.command_path if ctx is not None else "cocoplus"
    where = path.split(" ", 1)[1] + ": " if " " in path else ""
    return where + message, f"`{path} --help` shows the usage"


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "hook":
        return hook_main(args[1:])
    command = get_command(app)
    commands.dir_flag = None  # set again by the root callback when this command line gives --dir
    trust.speak_to(output.note)  # values an untrusted cocoplus.toml sets are ignored: said once, on stderr
    try:
        rv = command.main(args=args, prog_name="cocoplus", standalone_mode=False)
    except cx.NoArgsIsHelpError as exc:
        exc.show()  # a group given no command: its help is the answer
        return 2
    except cx.UsageError as exc:
        output.error_line(*usage_line(exc))
        return 2
    except cx.ClickException as exc:
        exc.show()
        return exc.exit_code
    except typer.Abort:
        output.note("cocoplus: aborted")
        return 130
    except CocoplusError as exc:
        output.error_line(exc.message, exc.hint)
        return exc.exit_code
    except KeyboardInterrupt:
        output.note("cocoplus: interrupted")
        return 130
    except BrokenPipeError:
        return 1
    except Exception as exc:  # noqa: BLE001 - the CLI's one place that turns surprises into one line
        where = log_exception(f"argv={sys.argv[1:]!r}", exc)
        detail = f"; details in {where}" if where else ""
        output.error_line(f"internal error: {type(exc).__name__}: {exc}{detail}")
        return 1
    finally:
        trust.speak_to(None)
    return rv if isinstance(rv, int) else 0


if __name__ == "__main__":
    sys.exit(main())
