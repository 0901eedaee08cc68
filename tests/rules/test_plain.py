"""A plain command read without the parser (`shell.plain`) is exactly what the parser makes of it.

`shell.parse` reads a command that is only plain words without loading the
parser (what the permission hook saves most by).  The property: over
generated commands, of plain words and of everything the shell reads as more
than a character (quotes, expansions, operators, globs, comments, reserved
words, assignments), whenever `plain` reads a command, the real parser
(`shell.parsed`, tree-sitter's bash grammar) reads the same script, word for
word; and a command with any such character is left to the parser.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cocoplus.rules import engine, shell

PLAIN = "".join(sorted(shell.PLAIN_CHARS))
# What the shell reads as more than the character, and whitespace other than a space or a tab.
SPECIAL = "$'\"\\*?[]#~!{}()<>;&|`\n\r\x0b\x0c\x00\x7f\u00a0é"
TOKENS = [
    "pytest", "-q", "git", "status", "ls", "-la", "src/app.py", "--maxfail=1", "a=b", "FOO=1", "=x", "1", "42",
    "-", "--", ":", "%1", "^x", "x,y", "+x", "@x", "./run.sh", "../up", "/bin/rm", *sorted(shell.NOT_A_PROGRAM),
    "[[", "]]", "[", "]", "{", "}", "test", "true", "time", "exec", "eval", "coproc", "then", "fi", "#", "#x", "x#y",
    "~", "~/x", "a~b",
]  # fmt: skip


def shape(script: shell.Script | None) -> Any:
    """Everything the rule engine reads of a script."""
    if script is None:
        return None

    def words(ws: list[shell.Word]) -> list[tuple[str, str | None, bool]]:
        return [(w.text, w.value, w.glob) for w in ws]

    return (
        script.source,
        script.unchecked,
        [
            (
                p.kind, p.via, words(p.assigns), words(p.words), p.span, p.written, p.text,
                [(r.op, r.fd, None if r.target is None else words([r.target])) for r in p.redirects],
            )
            for p in script.parts
        ],
    )  # fmt: skip


spaces = st.sampled_from([" ", "  ", "\t", " \t "])
word = st.one_of(
    st.sampled_from(TOKENS),
    st.text(alphabet=PLAIN, min_size=1, max_size=8),
    st.text(alphabet="".join(sorted(shell.PROGRAM_CHARS)), min_size=1, max_size=8),
)
plain_commands = st.builds(
    lambda lead, ws, seps, trail: lead + "".join(w + s for w, s in zip(ws, seps, strict=False)).rstrip(" \t") + trail,
    st.sampled_from(["", " ", "\t"]),
    st.lists(word, min_size=1, max_size=6),
    st.lists(spaces, min_size=6, max_size=6),
    st.sampled_from(["", " ", "\t "]),
)
any_commands = st.one_of(
    plain_commands,
    st.text(alphabet=PLAIN + " \t" + SPECIAL, max_size=24),
    st.builds(lambda c, i, x: c[:i] + x + c[i:], plain_commands, st.integers(0, 30), st.sampled_from(list(SPECIAL))),
)


@settings(max_examples=1000, derandomize=True)
@given(any_commands)
def test_a_command_read_without_the_parser_is_what_the_parser_reads(command: str) -> None:
    fast = shell.plain(command)
    if fast is not None:
        assert shape(fast) == shape(shell.parsed(command)), command
        assert not (set(command) - shell.PLAIN_CHARS - {" ", "\t"})
    elif not (set(command) - shell.PLAIN_CHARS - {" ", "\t"}) and command.split():
        words = command.split()
        # Nothing else made of plain characters is left to the parser.
        assert (
            set(words[0]) - shell.PROGRAM_CHARS or words[0][0] == "-" or words[0] in shell.NOT_A_PROGRAM
            or any(w[0] == "=" for w in words)
        ), command  # fmt: skip


def test_plain_commands_are_read_without_the_parser() -> None:
    for command in ("pytest -q", "git status", "  ls\t-la src/ ", "pytest --maxfail=1 tests/unit", "make -j4 all"):
        assert shell.plain(command) is not None, command
        assert shape(shell.parse(command)) == shape(shell.parsed(command)), command
    for command in ("FOO=1 pytest", "export X", "time make", "if", "ls *.py", "echo ~", "", "  ", "a\nb", "ls #x",
                    "-x y", "echo ==", "x@ y"):  # fmt: skip
        assert shell.plain(command) is None, command


def test_a_plain_command_is_decided_without_loading_the_parser() -> None:
    """The permission hook's rule check of a plain command loads neither the parser's module nor its extension
    modules; one that is more than words loads them, and both are decided as before."""
    import cocoplus

    root = os.path.dirname(os.path.dirname(cocoplus.__file__))
    code = (
        f"import sys; sys.path.insert(0, {root!r})\n"
        "from cocoplus.rules import engine\n"
        "allow = engine.rules_of(['Bash(pytest *)'], 'a')\n"
        "d = engine.decide('Bash', {'command': sys.argv[1]}, allow=allow, project='/tmp')\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(('tree_sitter', 'cocoplus.rules.parser')))\n"
        "print(d.behavior, ','.join(loaded) or '-')\n"
    )
    plain = subprocess.run([sys.executable, "-E", "-S", "-c", code, "pytest -q tests/unit"], capture_output=True,
                           text=True, timeout=60)  # fmt: skip
    assert plain.stdout.split() == ["allow", "-"], plain
    chain = subprocess.run([sys.executable, "-E", "-S", "-c", code, "pytest -q && pytest --lf"], capture_output=True,
                           text=True, timeout=60)  # fmt: skip
    assert chain.stdout.split() == ["allow", "cocoplus.rules.parser,tree_sitter._binding"], chain
    assert engine.decide(
        "Bash", {"command": "pytest -q tests/unit"}, allow=engine.rules_of(["Bash(pytest *)"], "a"), project="/tmp"
    ).behavior == "allow"  # fmt: skip
