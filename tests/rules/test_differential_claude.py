"""The differential corpus against the real Claude Code: cocoplus allows nothing Claude Code's own rules would not.

Each rule of tests/rules/corpus.py is given to the real Claude Code (the pinned CLI) as its `--allowedTools`, in
print mode with `--output-format json` and no hook of any kind, in a throwaway project and HOME; the scripted
model asks for every command paired with that rule, one Bash call per turn, in one run.  One more run with no
rule at all gives each command's baseline (Claude Code allows some read-only commands by itself).  A command
Claude Code decided is one that ran without a permission request or is listed in the result's
`permission_denials`; a few are refused before any permission check (the tool's input validation: a command with
control characters), which is not running them either.  cocoplus' engine decides the same pair with the same
single allow rule.

Everything runs harmlessly: the project is a throwaway directory, and every program that could change anything
is a stand-in on PATH that records its call instead of acting (corpus.SHIMMED; test_corpus.py holds each
command to them).  Claude Code runs each command with `/bin/bash -c` (its `SHELL`, named by absolute path), so
the shell itself is not shadowed.  The stand-ins pass Claude Code's own calls (`git`, `id`, marked
`AI_AGENT=..._harness`) on to the real program, so its behaviour is not changed by them.

The agreement table (command, rule, Claude Code with the rule, its baseline, cocoplus) is printed by
`test_agreement_table` (`-rP` shows it; it is also written beside the session's temporary files).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

from cocoplus.rules import engine
from tests.rules.corpus import PAIRS, SHIMMED, Pair
from tests.support.model_stubs import AnthropicStub, text, tool
from tests.support.runtimes import runtime_bin

pytestmark = pytest.mark.e2e

MARKER = "DIFFERENTIAL-CORPUS"
BASELINE = "(no rule)"
SHIM = """#!/bin/sh
# A stand-in for {name}: records the call instead of acting. Claude Code's own calls (not its Bash tool's)
# reach the real program, so the CLI under test behaves as it would.
case "${{AI_AGENT:-}}" in
*_harness) {passthrough} ;;
esac
printf '%s\\0' "{name} $*" >> "{log}"
exit 0
"""


@dataclass
class Verdict:
    """What Claude Code did with one command in one run."""

    ran: bool  # it ran without a permission request
    denied: bool  # it is listed in the result's permission_denials
    refused: bool  # the tool refused its input before any permission check (`<tool_use_error>`)
    said: str  # the tool result the model got (on one line, shortened)
    calls: list[str]  # what the stand-ins recorded while it was the current call


def _shims(bindir: Path, log: Path) -> None:
    bindir.mkdir()
    search = os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep) if d and d != str(bindir))
    for name in SHIMMED:
        real = shutil.which(name, path=search)
        passthrough = f'exec "{real}" "$@"' if real else "exit 127"
        path = bindir / name
        path.write_text(SHIM.format(name=name, log=log, passthrough=passthrough))
        path.chmod(0o755)


def _no_hooks(where: Path) -> None:
    """No settings file a run reads may hold a hook (the decision must be Claude Code's own)."""
    for f in (where / ".claude" / "settings.json", where / ".claude" / "settings.local.json"):
        if f.exists():
            assert "hooks" not in json.loads(f.read_text() or "{}"), f"{f} holds hooks"


def _records(log: Path, start: int, end: int) -> list[str]:
    if not log.exists():
        return []
    data = log.read_bytes()[start:end]
    return [r.decode("utf-8", "replace") for r in data.split(b"\0") if r]


def run_claude(rule: str | None, commands: list[str], base: Path) -> dict[str, Verdict]:
    """One run of the real Claude Code with `rule` as its only allowed tool (None: no rule), whose scripted model
    asks for each of `commands` in turn; what it did with each."""
    base.mkdir(parents=True)
    project, home, log = base / "project", base / "home", base / "calls.log"
    project.mkdir()
    home.mkdir()
    _shims(base / "bin", log)
    _no_hooks(home)
    assert not os.path.exists("/etc/claude-code/managed-settings.json"), "managed settings would change the rules"
    offsets: list[int] = []  # the log's size when each loop request arrived

    def turn(body: dict[str, Any]) -> dict[str, Any]:
        offsets.append(log.stat().st_size if log.exists() else 0)
        i = len(offsets) - 1
        return tool("Bash", command=commands[i]) if i < len(commands) else text("done")

    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "ANTHROPIC_", "COCOPLUS_"))}
    with AnthropicStub(routes={MARKER: turn}) as stub:
        env.update(
            HOME=str(home),
            PATH=f"{base / 'bin'}{os.pathsep}{env.get('PATH', '')}",
            SHELL="/bin/bash",
            ANTHROPIC_BASE_URL=stub.url,
            ANTHROPIC_API_KEY="sk-test-local",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_AUTOUPDATER="1",
        )
        argv = [runtime_bin("claude"), "-p", f"{MARKER}: run each command.", "--output-format", "json"]
        if rule is not None:
            argv += ["--allowedTools", rule]
        r = subprocess.run(
            argv, cwd=project, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=240
        )
        requests = list(stub.routed[MARKER])
    assert r.stdout.strip(), f"claude printed nothing (rc {r.returncode}): {r.stderr[-2000:]}"
    result = json.loads(r.stdout)
    assert result.get("subtype") == "success" and not result.get("is_error"), result
    assert len(requests) == len(commands) + 1, f"{len(requests)} model requests for {len(commands)} commands"
    offsets.append(log.stat().st_size if log.exists() else 0)
    _no_hooks(project)
    _no_hooks(home)
    denied = {d["tool_input"].get("command") for d in result.get("permission_denials", []) if d["tool_name"] == "Bash"}
    # What the model got back for each call, from the last request (it holds the whole conversation).
    asked: dict[str, str] = {}  # tool_use id -> command
    answered: dict[str, str] = {}  # tool_use id -> the tool result's text
    for m in requests[-1].get("messages", []):
        for block in m.get("content") if isinstance(m.get("content"), list) else []:
            if block.get("type") == "tool_use":
                asked[block["id"]] = block["input"]["command"]
            elif block.get("type") == "tool_result":
                c = block.get("content")
                c = "".join(x.get("text", "") for x in c) if isinstance(c, list) else str(c or "")
                answered[block["tool_use_id"]] = c
    said = {cmd: answered.get(uid) for uid, cmd in asked.items()}
    out: dict[str, Verdict] = {}
    for i, cmd in enumerate(commands):
        reply = said.get(cmd)
        assert reply is not None, f"no tool result for {cmd!r}"
        calls = _records(log, offsets[i], offsets[i + 1])
        is_denied = cmd in denied
        refused = not is_denied and reply.startswith("<tool_use_error>")
        said_here = " ".join(reply.replace("<tool_use_error>", "").split())
        out[cmd] = Verdict(not (is_denied or refused), is_denied, refused, said_here[:200], calls)
        if is_denied or refused:
            assert not calls, f"{cmd!r} did not run ({said_here[:200]}), yet the stand-ins recorded {calls}"
    # The stand-ins held: no `touch` really made its file (only a redirection that ran could have).
    made = sorted(p.name for p in project.glob("PROOF*"))
    assert not made or any(c.startswith("> ") and out[c].ran for c in commands), f"{made} were made"
    return out


def _observe(base: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """{rule or BASELINE: {command: Verdict as a dict}} for the whole corpus."""
    by_rule: dict[str, list[str]] = {}
    for p in PAIRS:
        by_rule.setdefault(p.rule, [])
        if p.command not in by_rule[p.rule]:
            by_rule[p.rule].append(p.command)
    everything = list(dict.fromkeys(p.command for p in PAIRS))
    seen: dict[str, dict[str, dict[str, Any]]] = {}
    for n, (rule, commands) in enumerate([(None, everything), *by_rule.items()]):
        got = run_claude(rule, commands, base / f"run{n}")
        seen[rule or BASELINE] = {c: asdict(v) for c, v in got.items()}
    return seen


_CACHE: dict[str, Any] = {}


@pytest.fixture
def claude_saw(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> dict[str, dict[str, dict[str, Any]]]:
    """What the real Claude Code decided for every pair, observed once per test session (the first test to ask
    runs Claude Code; under xdist the workers share one observation through a file)."""
    if "seen" not in _CACHE:
        if worker_id == "master":
            _CACHE["seen"] = _observe(tmp_path_factory.mktemp("differential"))
        else:
            shared = tmp_path_factory.getbasetemp().parent / "differential-claude.json"
            with FileLock(str(shared) + ".lock"):
                if not shared.exists():
                    shared.write_text(json.dumps(_observe(tmp_path_factory.mktemp("differential"))))
                _CACHE["seen"] = json.loads(shared.read_text())
    seen: dict[str, dict[str, dict[str, Any]]] = _CACHE["seen"]
    return seen


def cocoplus_decides(pair: Pair, project: Path) -> engine.Decision:
    return engine.decide(
        "Bash", {"command": pair.command},
        allow=engine.rules_of([pair.rule], "allow"), deny=engine.rules_of([], "deny"),
        project=str(project), cwd=str(project),
    )  # fmt: skip


def _params() -> list[Any]:
    out = []
    for p in PAIRS:
        marks = [pytest.mark.xfail(strict=True, reason=p.wider)] if p.wider else []
        out.append(pytest.param(p, id=f"{p.rule} :: {p.command!r}", marks=marks))
    return out


@pytest.mark.parametrize("pair", _params())
def test_cocoplus_allows_nothing_claude_code_does_not(pair: Pair, claude_saw, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    ours = cocoplus_decides(pair, project)
    theirs = Verdict(**claude_saw[pair.rule][pair.command])
    assert [theirs.ran, theirs.denied, theirs.refused].count(True) == 1
    if ours.behavior == "allow":
        assert theirs.ran, (
            f"cocoplus allows {pair.command!r} under {pair.rule} ({ours.why}); Claude Code did not run it: "
            f"{theirs.said}"
        )


def _cell(v: dict[str, Any]) -> str:
    return "ran" if v["ran"] else "denied" if v["denied"] else "refused"


def _shown(command: str) -> str:
    """A command on one line of the table: control characters escaped, spaces kept."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in command)


def test_agreement_table(claude_saw, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Every pair decided both ways, printed as one table, with the pairs where cocoplus is stricter."""
    project = tmp_path_factory.mktemp("table-project")
    rows = []
    for p in PAIRS:
        with_rule, alone = claude_saw[p.rule][p.command], claude_saw[BASELINE][p.command]
        ours = cocoplus_decides(p, project).behavior
        if ours == "allow":
            agree = "agree" if with_rule["ran"] else "COCOPLUS WIDER"
        else:
            agree = "agree" if not with_rule["ran"] else "cocoplus stricter"
        rows.append((p.command, p.rule, _cell(with_rule), _cell(alone), ours, agree, with_rule["said"]))
    shown = [(_shown(c), *rest) for c, *rest in rows]
    head = ("command", "rule", "Claude", "baseline", "cocoplus", "", "Claude Code said")
    widths = [max(len(str(r[i])) for r in [head, *shown]) for i in range(5)] + [17]
    lines = ["  ".join(str(v).ljust(widths[i]) for i, v in enumerate(r[:6])) + "  " + r[6][:90] for r in [head, *shown]]
    counts = {k: sum(1 for r in rows if r[5] == k) for k in ("agree", "cocoplus stricter", "COCOPLUS WIDER")}
    lines.append(
        f"{len(rows)} pairs, {len({p.rule for p in PAIRS})} rules: " + ", ".join(f"{n} {k}" for k, n in counts.items())
    )
    table = "\n".join(lines)
    (tmp_path_factory.getbasetemp() / "differential-claude-table.txt").write_text(table + "\n")
    print(table)
    assert len(rows) >= 100
    assert all([claude_saw[p.rule][p.command][k] for k in ("ran", "denied", "refused")].count(True) == 1 for p in PAIRS)
    # Both outcomes occur on both sides: the run really asks Claude Code, and the corpus is not one-sided.
    assert {"ran", "denied"} <= {r[2] for r in rows} and {"allow", "ask"} <= {r[4] for r in rows}
    # What ran went through the stand-ins, which recorded it and did nothing else.
    assert claude_saw["Bash(pytest *)"]["pytest -q"]["calls"] == ["pytest -q"]
    assert claude_saw["Bash(sh -c *)"]["sh -c 'touch PROOF'"]["calls"] == ["touch PROOF"]
    wider = sorted((r[1], r[0]) for r in rows if r[5] == "COCOPLUS WIDER")
    assert wider == sorted((p.rule, p.command) for p in PAIRS if p.wider), "pairs where cocoplus is wider changed"
