"""Pin what the hook path imports: the standard library and cocoplus' own stdlib-only modules.

A slow import creeping onto the path that runs before every tool call
shows up here as a failure, not as a timing wobble.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cocoplus.core.paths import Layout
from cocoplus.runtimes import hook_script
from tests.hook.helpers import fixture, hook_env

HEAVY = {"typer", "rich", "pydantic", "pydantic_core", "filelock", "watchdog", "tomllib", "tomli_w", "click", "genai_prices", "httpx", "fastapi", "mcp"}
# cocoplus modules that must never load in a hook process
NOT_IN_HOOK = {"cocoplus.cli", "cocoplus.report", "cocoplus.supervision", "cocoplus.chat", "cocoplus.server", "cocoplus.mcp", "cocoplus.runtimes"}

PROBE = """
import os, sys
script = sys.argv[1]
sys.argv = [script] + sys.argv[2:]
sys.path.append(os.path.dirname(os.path.dirname(os.path.dirname(script))))
before = set(sys.modules)
from cocoplus.hook.__main__ import main
rc = main()
sys.stderr.write("\\nMODULES " + " ".join(sorted(set(sys.modules) - before)) + "\\n")
"""


def loaded(layout: Layout, event: str, payload: dict, runtime: str = "claude") -> set[str]:
    r = subprocess.run(
        [sys.executable, "-S", "-c", PROBE, hook_script(), event, "--runtime", runtime],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=hook_env(layout),
        timeout=30,
    )
    assert r.returncode == 0, r.stderr
    line = [x for x in r.stderr.decode().splitlines() if x.startswith("MODULES ")][-1]
    return set(line.split()[1:])


def _top(mods: set[str]) -> set[str]:
    return {m.split(".")[0] for m in mods}


def test_pre_tool_use_without_stop_imports_nothing(project: Layout) -> None:
    mods = loaded(project, "PreToolUse", fixture("claude-pretooluse-bash.json"))
    # Only the entry module itself (imported here as a module, run as a script by runtimes):
    # not even json, since this runs before every tool call.
    assert mods == {"cocoplus", "cocoplus.hook", "cocoplus.hook.__main__"}, mods


@pytest.mark.parametrize(
    ("event", "payload"),
    [
        ("PreToolUse", "claude-pretooluse-bash.json"),
        ("PostToolUse", "claude-posttooluse-bash.json"),
        ("UserPromptSubmit", "claude-userpromptsubmit.json"),
        ("SessionStart", "claude-sessionstart-startup.json"),
        ("Stop", "claude-stop.json"),
    ],
)
def test_hook_path_is_stdlib_only(project: Layout, event: str, payload: str) -> None:
    from cocoplus import config

    config.compile_for_hook(project)  # the common case: compiled config is current
    if event == "PreToolUse":
        from cocoplus.session import control

        control.stop(project, "t", "imports")
    mods = loaded(project, event, fixture(payload))
    assert not (_top(mods) & HEAVY), sorted(_top(mods) & HEAVY)
    assert not {m for m in mods if any(m == b or m.startswith(b + ".") for b in NOT_IN_HOOK)}
    stdlib = set(sys.stdlib_module_names)
    outside = {m for m in _top(mods) if m not in stdlib and m != "cocoplus"}
    assert outside == set(), outside
    # The json package (and the `re`/`enum` it drags in) stays off the hot events.
    if event in ("PreToolUse", "PostToolUse", "UserPromptSubmit"):
        assert not ({"json", "re", "typing", "enum"} & mods), sorted({"json", "re", "typing", "enum"} & mods)
