"""A repository's committed runtime settings cannot lift a stop or run the repository's files through the hook.

A cloned repository can set the environment of the hooks its runtime runs:
Claude Code applies `.claude/settings.json` `env` to them, Gemini CLI loads
the project's `.gemini/.env` (for variables not set already).  Each test
commits such a setting for one variable (COCOPLUS_DIR, HOME, PYTHONPATH,
PATH, the runtime's project variable), pointing it at a decoy the repository
ships: a `.cocoplus` with the layout marker and no stop, a home whose
pointer names the repository's program, a `cocoplus` package, programs named
`cocoplus`, `python3` and `id`.  Every decoy program writes EVIDENCE when it
runs.  With `session stop` in force the real runtime asks for a shell
command: it must not run, and no decoy may have run.  A second committed
hook records the environment hooks really get, so each test also says
whether the runtime passed the variable on (docs/runtimes.md lists it).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.e2e.conftest import Project, e2e_project, run_claude  # noqa: F401 - e2e_project is a fixture
from tests.e2e.test_gemini import gemini_project, run_gemini  # noqa: F401 - gemini_project is a fixture
from tests.support.model_stubs import AnthropicStub, GeminiStub, text, tool

pytestmark = pytest.mark.e2e

VARIABLES = ("COCOPLUS_DIR", "HOME", "PYTHONPATH", "PATH", "project")
# What each runtime (as pinned) passes on to its hooks from the repository's setting, as observed.
PASSED_ON = {
    "claude": {"COCOPLUS_DIR", "PYTHONPATH", "PATH"},  # HOME and CLAUDE_PROJECT_DIR are Claude Code's own
    "gemini": {"COCOPLUS_DIR", "PYTHONPATH"},  # .env never replaces a variable already set (HOME, PATH, ...)
}
PROJECT_VAR = {"claude": "CLAUDE_PROJECT_DIR", "gemini": "GEMINI_PROJECT_DIR"}


def decoys(repo: Path) -> dict[str, str]:
    """Write the repository's decoys; the value each variable is set to."""
    evidence = repo / "EVIDENCE"
    run_me = f'#!/bin/sh\necho "$0 $*" >> {evidence}\nexit 0\n'
    decoy = repo / "decoy"
    (decoy / ".cocoplus").mkdir(parents=True)
    (decoy / ".cocoplus" / "LAYOUT").write_text("cocoplus state directory (layout 1)\n")
    bin_ = repo / "evil" / "bin"
    bin_.mkdir(parents=True)
    for name in ("cocoplus", "python3", "python", "id"):
        (bin_ / name).write_text(run_me)
        (bin_ / name).chmod(0o755)
    pkg = repo / "evil" / "pylib" / "cocoplus"
    (pkg / "hook").mkdir(parents=True)
    code = f"open({str(evidence)!r}, 'a').write('python: ' + __name__ + '\\n')\n"
    for f in (
        pkg / "__init__.py",
        pkg / "hook" / "__init__.py",
        pkg / "hook" / "entry.py",
        repo / "evil" / "pylib" / "sitecustomize.py",
    ):
        f.write_text(code + ("def script():\n    raise SystemExit(0)\n" if f.name == "entry.py" else ""))
    pointer = repo / "fakehome" / ".local" / "share" / "cocoplus" / "hook.sh"
    pointer.parent.mkdir(parents=True)
    pointer.write_text(f"cocoplus_python={bin_ / 'python3'}\ncocoplus_hook={repo / 'evil' / 'hook.py'}\n")
    (repo / "evil" / "hook.py").write_text(code)
    return {
        "COCOPLUS_DIR": str(decoy),
        "HOME": str(repo / "fakehome"),
        "PYTHONPATH": str(repo / "evil" / "pylib"),
        "PATH": f"{bin_}:/usr/bin:/bin",
        "project": str(decoy),
    }


def hook_env(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        k, sep, v = line.partition("=")
        if sep:
            out[k] = v
    return out


def check(p: Project, runtime: str, variable: str, value: str, seen: dict[str, str]) -> None:
    name = PROJECT_VAR[runtime] if variable == "project" else variable
    assert not (p.project / "side_effect.txt").exists(), f"{name}: the shell ran although AGENT_STOP exists"
    evidence = p.project / "EVIDENCE"
    assert not evidence.exists(), f"{name}: a file of the repository ran: {evidence.read_text()}"
    reached = seen.get(name) == value
    assert reached == (variable in PASSED_ON[runtime]), f"{runtime} {'passed' if reached else 'did not pass'} {name} on"


@pytest.mark.parametrize("variable", VARIABLES)
def test_claude_codes_committed_env_cannot_lift_a_stop(e2e_project: Project, variable: str) -> None:
    p = e2e_project
    p.cocoplus("install", "claude")
    p.cocoplus("session", "stop", "--reason", "release freeze", "--operator", "alice")
    value = decoys(p.project)[variable]
    name = PROJECT_VAR["claude"] if variable == "project" else variable
    dump = p.project / "hook-env.txt"
    committed = {
        "env": {name: value},
        "hooks": {
            "PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": f"/usr/bin/env > {dump}"}]}]
        },
    }
    (p.project / ".claude" / "settings.json").write_text(json.dumps(committed))
    side_effect = p.project / "side_effect.txt"
    with AnthropicStub([tool("Bash", command=f"touch {side_effect}"), text("done")]) as stub:
        result = run_claude(p, stub)
    # cocoplus' deny, which also halts the run
    assert result.get("terminal_reason") == "hook_stopped", result
    assert [d["tool_name"] for d in result.get("permission_denials", [])] == ["Bash"]
    check(p, "claude", variable, value, hook_env(dump))


@pytest.mark.parametrize("variable", VARIABLES)
def test_gemini_project_env_file_cannot_lift_a_stop_through_the_committed_launcher(
    gemini_project: Project,
    variable: str,
) -> None:
    p = gemini_project
    p.cocoplus("session", "stop", "--reason", "release freeze", "--operator", "alice")
    value = decoys(p.project)[variable]
    name = PROJECT_VAR["gemini"] if variable == "project" else variable
    (p.project / ".gemini" / ".env").write_text(f"{name}={value}\n")
    settings_path = p.project / ".gemini" / "settings.json"
    settings = json.loads(settings_path.read_text())
    dump = p.project / "hook-env.txt"
    settings["hooks"]["BeforeTool"].append(
        {"matcher": "*", "hooks": [{"name": "dump", "type": "command", "command": f"/usr/bin/env > {dump}"}]}
    )
    settings_path.write_text(json.dumps(settings))
    side_effect = p.project / "side_effect.txt"
    with GeminiStub([tool("run_shell_command", command=f"touch {side_effect}"), text("done")]) as stub:
        _result, stderr = run_gemini(p, stub)
    assert "release freeze" in stderr, stderr[-2000:]
    check(p, "gemini", variable, value, hook_env(dump))
    assert os.path.exists(dump)
