"""Reading a runtime's recorded command line, to start it again the same way (`cocoplus dispatch` resumes).

A session's command line is recorded at SessionStart
(`cocoplus.session.procinfo`).  To resume it headless, an adapter keeps the
options that are the session's settings (model, permission mode, allowed
tools, sandbox, output format) and drops the rest: the prompt, the session
selection, anything it does not know.  Nothing here runs a shell; the
result is an argv list.  No imports: adapters import this module only when
they build a resume command.
"""

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Iterable

# Interpreters a CLI script may run under: the program is the interpreter and the script.
INTERPRETERS = ("node", "nodejs", "bun", "deno")


def program(argv: "list[str] | None") -> "list[str]":
    """The part of a recorded command line that names the program (`[claude]`, or `[node, .../gemini]`)."""
    if not argv:
        return []
    base = argv[0].rsplit("/", 1)[-1]
    if base in INTERPRETERS:
        for i, word in enumerate(argv[1:], 1):
            if not word.startswith("-"):
                return argv[: i + 1]  # the interpreter, its own options, the script
    return argv[:1]


def keep(
    args: "Iterable[str]",
    *,
    values: "Iterable[str]" = (),
    many: "Iterable[str]" = (),
    flags: "Iterable[str]" = (),
) -> "list[tuple[str, list[str]]]":
    """The options among `args` that are listed: (option, its values), in order.

    `values`: options taking one value (`--model M` or `--model=M`);
    `many`: options taking every following word up to the next option
    (`--allowedTools Bash Edit`); `flags`: options taking none.  Anything
    else (the prompt, unknown options) is skipped.
    """
    one, several, bare = set(values), set(many), set(flags)
    out: list[tuple[str, list[str]]] = []
    words = list(args)
    i = 0
    while i < len(words):
        w = words[i]
        i += 1
        name, eq, inline = w.partition("=")
        if eq and (name in one or name in several):
            out.append((name, [inline]))
        elif w in bare:
            out.append((w, []))
        elif w in one and i < len(words):
            out.append((w, [words[i]]))
            i += 1
        elif w in several:
            got = []
            while i < len(words) and not words[i].startswith("-"):
                got.append(words[i])
                i += 1
            out.append((w, got))
    return out


def flatten(options: "list[tuple[str, list[str]]]") -> "list[str]":
    return [word for name, vals in options for word in (name, *vals)]


def has(options: "list[tuple[str, list[str]]]", *names: str) -> bool:
    return any(name in names for name, _v in options)
