"""The command lines the `cocoplus` console script answers without building the typer app: `cocoplus --help`
(`-h`), `session status`, `session list` and `sessions list` (each with `--json`, any of them after the root's
`--dir PATH`).

These are the lines typed most, and typer and Rich would cost more than the rest of each command together
(bench/cli.py), so `cocoplus/__main__.py` tries here first.  Any other line (another option, `--help` after a
command, a `--dir` with no value, shell completion) is `None`: the typer app (cli/app.py) takes the whole line,
and answers it as always, usage errors included.  What runs here is what the typer commands run: the same
commands (cli/session_views.py), the same steps around them (cli/guard.py), and the root's `--help` is the one
typer prints, from the same command table (cli/table.py) with the same wrapping (click's help formatter's, to the
terminal's width less 2, between 50 and 78).  tests/cli/test_fast_path.py holds the two to the same output, byte
for byte.
"""

from __future__ import annotations

import os
import sys
import textwrap

from cocoplus.cli import table, terminal
from cocoplus.cli.argv import take_dir
from cocoplus.core.errors import UsageError

# The command lines answered here: their words, and which command of cli/session_views.py runs them.
COMMANDS = {("session", "status"): "status", ("session", "list"): "list", ("sessions", "list"): "list"}
HELP = (["--help"], ["-h"])
# The root's options as `--help` lists them: its own, `--dir`, typer's completion options and click's help.
ROOT_OPTIONS = (
    ("--version", table.VERSION_HELP),
    table.ROOT_DIR_OPTION,
    ("--install-completion", "Install completion for the current shell."),
    ("--show-completion", "Show completion for the current shell, to copy it or customize the installation."),
    ("-h, --help", "Show this message and exit."),
)
# Set in the environment, these make the typer app answer differently (shell completion; typer's completion
# options without shell detection): such a command line goes to the typer app.
TYPER_ENVIRONMENT = ("_COCOPLUS_COMPLETE", "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION")


def run(argv: list[str]) -> int | None:
    """Answer `argv` (the words after `cocoplus`) here: its exit code, or None when the typer app must."""
    if any(name in os.environ for name in TYPER_ENVIRONMENT):
        return None
    try:
        args, _directory = take_dir(argv)
    except UsageError:
        return None
    if args in HELP:
        return _help()  # nothing to find, check or say before it: no project, no authority, no trust notes
    command = COMMANDS.get((args[0], args[1])) if len(args) >= 2 else None
    if command is None or any(a != "--json" for a in args[2:]):
        return None
    from cocoplus.cli import guard, session_views  # deferred: --help needs neither

    guard.start()
    try:
        guard.prepare(argv)
        view = {"status": session_views.status, "list": session_views.sessions_list}[command]
        return view("--json" in args)
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - one line for any surprise, as the typer path
        return guard.failure(exc)
    finally:
        guard.finish()


def _help() -> int:
    sys.stdout.write(root_help() + "\n")
    sys.stdout.flush()
    return 0


def help_width() -> int:
    """The width click's help formatter fills: the terminal's, at most 80, less 2, at least 50."""
    return max(min(terminal.columns(), 80) - 2, 50)


class _Wrapper(textwrap.TextWrapper):
    """Click's wrapper: a word longer than the line is cut where the line ends, hyphens or not."""

    def _handle_long_word(self, chunks: list[str], cur_line: list[str], cur_len: int, width: int) -> None:
        space_left = max(width - cur_len, 1)
        cur_line.append(chunks[-1][:space_left])
        chunks[-1] = chunks[-1][space_left:]


def _wrap(text: str, width: int, indent: str = "") -> str:
    """`text` filled to `width`, each paragraph (lines joined) on its own, every line indented by `indent`."""
    wrapper = _Wrapper(width, initial_indent=indent, subsequent_indent=indent, replace_whitespace=False)
    paragraphs = [" ".join(p.split("\n")) for p in text.expandtabs().split("\n\n") if p.strip()]
    return "\n\n".join(wrapper.fill(p) for p in paragraphs)


def _definitions(rows: list[tuple[str, str]], width: int, indent: int = 2) -> str:
    """A two-column list as click's `write_dl` writes it: names, then their descriptions wrapped beside them."""
    first_col = min(max(len(name) for name, _ in rows), 30) + 2
    text_width = max(width - first_col - 2, 10)
    out = []
    for name, text in rows:
        out.append(" " * indent + name)
        if not text:
            out.append("\n")
            continue
        if len(name) <= first_col - 2:
            out.append(" " * (first_col - len(name)))
        else:
            out.append("\n" + " " * (first_col + indent))
        lines = _wrap(text, text_width).splitlines()
        out.append(lines[0] + "\n")
        out.extend(" " * (first_col + indent) + ln + "\n" for ln in lines[1:])
    return "".join(out)


def root_help(width: int | None = None) -> str:
    """`cocoplus --help`, as the typer app prints it (without the last newline)."""
    width = help_width() if width is None else width
    parts = [
        "Usage: cocoplus [OPTIONS] COMMAND [ARGS]...\n",
        "\n" + _wrap(table.ROOT_HELP, width, "  ") + "\n",
        "\nOptions:\n" + _definitions(list(ROOT_OPTIONS), width),
    ]
    for key, heading in table.GROUPS:
        rows = [(e.name, e.summary) for e in table.ENTRIES if e.group == key and not e.hidden]
        if rows:
            parts.append(f"\n{heading}:\n" + _definitions(rows, width))
    return "".join(parts).rstrip("\n")
