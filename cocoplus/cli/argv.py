"""Reading a command line before any command runs: the root's `--dir`, and the command's words.

Nothing but cocoplus' errors imported: the fast path (cli/fast.py) reads every command line with these before
it knows whether it will answer it.
"""

from __future__ import annotations

from cocoplus.core.errors import UsageError

# The options that ask for help, the version or completion: a command line with one runs no command.
HELP_WORDS = ("-h", "--help", "--version", "--show-completion", "--install-completion")


def take_dir(args: list[str]) -> tuple[list[str], str | None]:
    """(the command line without the root's `--dir PATH` / `--dir=PATH`, that PATH) — only before the command."""
    for i, a in enumerate(args):
        if a == "--dir":
            if i + 1 >= len(args):
                raise UsageError("option '--dir' requires an argument", hint="`cocoplus --help` shows the usage")
            return args[:i] + args[i + 2 :], args[i + 1]
        if a.startswith("--dir="):
            return args[:i] + args[i + 1 :], a.split("=", 1)[1]
        if not a.startswith("-"):
            break
    return args, None


def command_words(args: list[str]) -> list[str]:
    """The command's leading words of a command line (the root's `--dir` already taken off by `take_dir`); none
    when it asks for help."""
    words: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in HELP_WORDS:
            return []
        if a.startswith("-"):
            if words:
                break
        else:
            words.append(a)
        i += 1
    if any(a in ("-h", "--help") for a in args[i:]):
        return []
    return words
