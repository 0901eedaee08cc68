"""A property of the rule engine: a rule allows a composed command only when it allows every part of it.

Random compositions of simple commands (some the rule names, some not) with the shell's operators, subshells,
groups, substitutions and redirections; the engine (with the real shell parser) must allow the whole exactly
when every simple command in it is one the rule names, nothing is written to a file no rule covers, and nothing
in it is one of the constructs no narrow rule allows, as Claude Code (a subshell, a `{ ...; }` group, a nested
command, a command sent to the background).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from cocoplus.rules import engine

ALLOW = engine.rules_of(["Bash(pytest *)"], "allow")
NAMED = ["pytest", "pytest -q", "pytest tests/test_x.py", "pytest -k 'a and b'"]
OTHERS = ["touch PROOF", "curl http://example.invalid", "rm -f y", "echo hi", "sh", "id", "pytestx"]


@dataclass
class Cmd:
    text: str
    ok: bool  # every simple command in it is named by the rule, and it writes no file
    sure: bool = True  # False: backticks inside backticks, which do not nest as text


leaf = st.one_of(
    st.sampled_from(NAMED).map(lambda t: Cmd(t, True)), st.sampled_from(OTHERS).map(lambda t: Cmd(t, False))
)


def _compose(children: st.SearchStrategy[Cmd]) -> st.SearchStrategy[Cmd]:
    binary = st.tuples(children, st.sampled_from([" && ", " || ", "; ", " | ", " & ", "\n"]), children).map(
        lambda t: Cmd(f"{t[0].text}{t[1]}{t[2].text}", t[0].ok and t[2].ok and t[1] != " & ", t[0].sure and t[2].sure)
    )
    subshell = children.map(lambda c: Cmd(f"( {c.text} )", False, c.sure))
    group = children.map(lambda c: Cmd(f"{{ {c.text}; }}", False, c.sure))
    substituted = st.tuples(
        st.sampled_from(NAMED), children, st.sampled_from(["$( {} )", "`{}`", "<( {} )", '"$( {} )"'])
    ).map(
        lambda t: Cmd(
            f"{t[0]} {t[2].format(t[1].text)}", False, t[1].sure and not (t[2] == "`{}`" and "`" in t[1].text)
        )
    )
    redirected = st.tuples(
        children, st.sampled_from([" > out.txt", " >> log", " 2>&1", " >/dev/null", " 2>/dev/null"])
    ).map(lambda t: Cmd(f"{t[0].text}{t[1]}", t[0].ok and t[1] in (" 2>&1", " >/dev/null", " 2>/dev/null"), t[0].sure))
    return st.one_of(binary, subshell, group, substituted, redirected)


commands = st.recursive(leaf, _compose, max_leaves=6)


@settings(max_examples=400, derandomize=True)
@given(commands)
def test_a_rule_allows_the_whole_only_when_it_allows_every_part(cmd: Cmd) -> None:
    project = str(Path("/nonexistent-project").resolve())
    d = engine.decide("Bash", {"command": cmd.text}, allow=ALLOW, deny=(), project=project, cwd=project)
    assert d.behavior != "deny", (cmd.text, d)
    if d.behavior == "allow":
        assert cmd.ok and cmd.sure, f"allowed although a part is not named: {cmd.text!r} ({d.why})"
    elif cmd.sure:
        assert not cmd.ok, f"asked although every part is named: {cmd.text!r} ({d.why})"
