"""cocoplus' side of the differential corpus, without any runtime CLI: the engine's decision for every pair is
pinned, and the corpus itself is held to what the e2e run needs (enough pairs, every form, harmless commands).

tests/rules/test_differential_claude.py compares the same pairs with the real Claude Code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cocoplus.rules import commands, engine, shell
from tests.rules.corpus import ABSENT, HARMLESS, PAIRS, SHIMMED, Pair


def _params() -> list[Any]:
    out = []
    for p in PAIRS:
        marks = [pytest.mark.xfail(strict=True, reason=f"the engine allows it: {p.wider}")] if p.wider else []
        out.append(pytest.param(p, id=f"{p.rule} :: {p.command!r}", marks=marks))
    return out


@pytest.mark.parametrize("pair", _params())
def test_the_engine_decides_each_pair_as_pinned(pair: Pair, tmp_path: Path) -> None:
    got = engine.decide(
        "Bash", {"command": pair.command},
        allow=engine.rules_of([pair.rule], "allow"), deny=engine.rules_of([], "deny"),
        project=str(tmp_path), cwd=str(tmp_path),
    )  # fmt: skip
    assert got.behavior == pair.cocoplus, f"{pair.form}: {got.behavior} ({got.why})"
    if got.behavior == "allow":
        assert got.rule == pair.rule


def test_the_corpus_has_every_form() -> None:
    assert len(PAIRS) >= 100
    assert len({(p.rule, p.command) for p in PAIRS}) == len(PAIRS), "a pair is listed twice"
    assert all(p.cocoplus in ("allow", "ask", "deny") for p in PAIRS)
    rules = {p.rule for p in PAIRS}
    for rule in ("Bash(pytest *)", "Bash(pytest:*)", "Bash(npm run test)", "Bash(git status)", "Bash(ls *)",
                 "Bash(rm -rf *)", "Bash(git * main)"):  # fmt: skip
        assert rule in rules
    cmds = [p.command for p in PAIRS]
    for exact in (
        "pytest -q --co >/dev/null 2>&1 || touch PROOF1",  # the examples
        "pytest $(touch PROOF2)",
        "lsof",
        "timeout 5 pytest -q", "nice pytest -q", "env FOO=1 pytest -q", "FOO=1 pytest -q", "command pytest -q",
        "\\pytest -q", "/usr/bin/pytest -q", "pytest  -q", "pytest\t-q",
    ):  # fmt: skip
        assert exact in cmds, exact
    assert any(c.startswith("pytest -q && curl") and c.endswith("| sh") for c in cmds)
    for piece in ("&&", "||", "; ", " | ", " & ", "\n", "(pytest", "{ ", "$(", "`", "<(", "<<EOF\n$(", "() {", " > ",
                  ">>", "2>&1", ">/dev/null", "> .bashrc", "'", '"', "sh -c", "eval ", "xargs", "-exec"):  # fmt: skip
        assert any(piece in c for c in cmds), piece
    # Each side of the comparison occurs: pairs cocoplus allows (which Claude Code must allow too) and asks.
    assert {"allow", "ask"} <= {p.cocoplus for p in PAIRS}


def unsafe(command: str) -> list[str]:
    """What in `command` could act for real when it runs in the e2e test: a program that is neither a stand-in
    (SHIMMED), harmless (HARMLESS) nor absent (ABSENT), one named by its path (PATH's stand-ins do not shadow
    it), or a file outside the throwaway tree (an absolute path other than a device)."""
    script = shell.parse(command)
    if script is None:
        return ["the parser cannot read it"]
    problems = []
    for part in script.parts:
        for inv in commands.effective(part):  # wrappers, `sh -c`, `eval`, `xargs` and `find -exec` looked into
            word = inv.raw[0] if inv.raw else ""
            if inv.name is None:  # a computed name (`$t`): none is used as a program here
                continue
            if "/" in word:
                if word not in ABSENT:
                    problems.append(f"runs {word} by its path")
            elif inv.name not in SHIMMED and inv.name not in HARMLESS:
                problems.append(f"runs {inv.name}, which is not a stand-in")
        targets = [w.value or "" for w in part.words[1:]]
        targets += [(r.target.value or "") for r in part.redirects if r.target is not None]
        problems += [f"names {t}" for t in targets if t.startswith("/") and not t.startswith("/dev/")]
    return problems


def test_every_command_is_harmless_when_it_runs() -> None:
    """The e2e run really executes what Claude Code allows, as root: nothing in the corpus may act for real."""
    assert not set(SHIMMED) & set(HARMLESS)
    found = {p.command: unsafe(p.command) for p in PAIRS}
    assert {c: why for c, why in found.items() if why} == {}


def test_the_harmlessness_check_catches_what_would_act() -> None:
    assert unsafe("ls && /bin/rm -rf build") == ["runs /bin/rm by its path"]  # `rm` is a stand-in, /bin/rm not
    assert unsafe("sh -c 'shred x'") == ["runs shred, which is not a stand-in"]
    assert unsafe("timeout 5 dd if=x of=y") == ["runs dd, which is not a stand-in"]
    assert unsafe("pytest -q > /etc/motd") == ["names /etc/motd"]
    assert unsafe("rm -rf /srv") == ["names /srv"]
    assert unsafe("pytest -q >/dev/null && touch PROOF") == []
