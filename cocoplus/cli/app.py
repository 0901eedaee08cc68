"""The `cocoplus` command: a thin layer over cocoplus' functions.

`main()` owns error handling (cli/guard.py): a CocoplusError is one line on
stderr and its exit code (1, or 2 for usage); anything unexpected is one
line plus a traceback in `.cocoplus/logs/cocoplus.log`, never a traceback
on screen.  `cocoplus hook ...` goes straight to the hook's entry, not
through typer's parsing; the hooks `cocoplus install` writes never load
this module at all (they run `cocoplus/hook/__main__.py` with `python -S`,
since importing typer would cost every tool call).  The console script
answers `--help`, `session status` and `session list` without this module
(cli/fast.py); everything else comes here.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import typer
from typer.core import TyperGroup
from typer.main import get_command

from cocoplus import __version__
from cocoplus.cli import guard, output, table
from cocoplus.cli.table import ROOT_DIR_OPTION as ROOT_DIR_OPTION
from cocoplus.hook.entry import command as hook_main

# click's exception classes, from the public `typer.BadParameter` (typer keeps click private): BadParameter is a
# UsageError, which is a ClickException.
UsageError: type[Exception] = typer.BadParameter.__mro__[1]
ClickException: type[Exception] = UsageError.__mro__[1]
assert (UsageError.__name__, ClickException.__name__) == ("UsageError", "ClickException")


def _no_args_is_help(exc: BaseException) -> bool:
    """A group given no command (click's NoArgsIsHelpError, a UsageError): its help is the answer."""
    return type(exc).__name__ == "NoArgsIsHelpError"


def _whole_descriptions(cmd: Any) -> None:
    """Every command under `cmd` described in a group's listing by its help's whole first paragraph (click would
    cut it at about 45 characters with "...")."""
    for sub in getattr(cmd, "commands", {}).values():
        if not sub.short_help and sub.help:
            sub.short_help = " ".join(sub.help.split("\n\n", 1)[0].split())
        _whole_descriptions(sub)


class LazyGroup(TyperGroup):  # click's classes are typer's private business: the signatures say Any
    """The root command: its commands come from `cli/table.py`, and only the module of the command a command
    line names is imported (`--help` imports none)."""

    _loaded: dict[str, Any] = {}

    def list_commands(self, ctx: Any) -> list[str]:
        return [e.name for e in table.ENTRIES]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        entry = table.BY_NAME.get(cmd_name)
        if entry is None:
            return None
        group: Any = self._loaded.get(entry.module)
        if group is None:
            module = importlib.import_module(f"cocoplus.cli.commands.{entry.module}")
            sub = typer.Typer(**SETTINGS)
            module.register(sub)

            @sub.callback()
            def _group() -> None:  # a callback makes typer build a group even for a module of one command
                pass

            group = get_command(sub)
            self._loaded[entry.module] = group
            _whole_descriptions(group)
            _plain_flags(group)
        cmd = group.commands.get(cmd_name)
        if cmd is not None:
            cmd.short_help = entry.summary
            cmd.hidden = entry.hidden
        return cmd

    def format_options(self, ctx: Any, formatter: Any) -> None:
        """The root's options: its own, and `--dir`, which `main()` takes off the command line before parsing."""
        rows = [p.get_help_record(ctx) for p in self.get_params(ctx)]
        rows.insert(1, ROOT_DIR_OPTION)
        with formatter.section("Options"):
            formatter.write_dl([r for r in rows if r is not None])
        self.format_commands(ctx, formatter)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """The commands by group, each with its whole description from the table."""
        for key, heading in table.GROUPS:
            rows = [(e.name, e.summary) for e in table.ENTRIES if e.group == key and not e.hidden]
            if rows:
                with formatter.section(heading):
                    formatter.write_dl(rows)


def _plain_flags(cmd: Any) -> None:
    """Every flag of `cmd` and the commands under it defaults to False, not None, help included.

    typer coerces any value that is not a bool through a pydantic adapter, and an absent flag's None is not one:
    with False, a command line that gives no flag never imports pydantic for it (bench/cli.py)."""
    help_option = cmd.get_help_option(typer.Context(cmd, help_option_names=["-h", "--help"]))
    for param in [*cmd.params, help_option]:
        if param is not None and getattr(param, "is_flag", False) and param.default is None:
            param.default = False
    for sub in getattr(cmd, "commands", {}).values():
        _plain_flags(sub)


def command_tree() -> dict[str, Any]:
    """Every top-level command of the table, loaded (its module imported): for tests and documentation."""
    root = get_command(app)
    return {name: root.get_command(None, name) for name in root.list_commands(None)}  # type: ignore[attr-defined]


# What the root and every command module's commands share: plain help (no rich panels), no pretty tracebacks
# (main() turns errors into one line), -h as --help.
SETTINGS: dict[str, Any] = {
    "pretty_exceptions_enable": False,
    "rich_markup_mode": None,
    "context_settings": {"help_option_names": ["-h", "--help"]},
}

app = typer.Typer(
    name="cocoplus",
    cls=LazyGroup,
    help=table.ROOT_HELP,
    no_args_is_help=True,
    add_completion=True,
    **SETTINGS,
)


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"cocoplus {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help=table.VERSION_HELP),
) -> None:
    pass


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
    _plain_flags(command)
    guard.start()
    try:
        args = guard.prepare(args)  # the root's --dir taken off, the authority check passed
        rv = command.main(args=args, prog_name="cocoplus", standalone_mode=False)
    except UsageError as exc:
        if _no_args_is_help(exc):
            exc.show()  # type: ignore[attr-defined]  # a group given no command: its help is the answer
            return 2
        output.error_line(*usage_line(exc))
        return 2
    except ClickException as exc:
        exc.show()  # type: ignore[attr-defined]
        return int(exc.exit_code)  # type: ignore[attr-defined]
    except typer.Abort:
        output.note("cocoplus: aborted")
        return 130
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - the one place that turns surprises into one line
        return guard.failure(exc)
    finally:
        guard.finish()
    return rv if isinstance(rv, int) else 0


if __name__ == "__main__":
    sys.exit(main())
