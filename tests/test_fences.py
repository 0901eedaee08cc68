"""The fences that keep the package's layering: ruff's per-tier import bans and mypy.

Run by the README's test command (and so by `.ci/run`): a heavy import in a
hook-path tier, the CLI imported outside `cocoplus/cli`, or a type error
fails the suite.  The tier rules live in `cocoplus/{core,session,hook,runtimes}/.ruff.toml`
and `[tool.ruff.lint]` in pyproject.toml.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIERS = ("core", "session", "hook", "runtimes")
HEAVY = ("typer", "rich", "pydantic", "filelock", "watchdog", "genai_prices", "fastapi", "mcp", "nats")


def tool(name: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    exe = os.path.join(os.path.dirname(sys.executable), name)
    return subprocess.run([exe, *args], cwd=ROOT, input=stdin, capture_output=True, text=True, timeout=600)


def ruff_on(path: str, source: str) -> subprocess.CompletedProcess[str]:
    """Lint `source` as if it were the file at `path` (its directory's rules apply); nothing is written."""
    return tool("ruff", "check", "--no-cache", "--stdin-filename", path, "-", stdin=source)


def test_ruff_passes_on_the_whole_tree() -> None:
    r = tool("ruff", "check", "--no-cache", ".")
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_passes_on_the_package() -> None:
    r = tool("mypy", "--cache-dir", os.path.join(ROOT, ".mypy_cache"))
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("module", HEAVY)
def test_a_heavy_import_in_a_hook_tier_is_refused(tier: str, module: str) -> None:
    r = ruff_on(f"cocoplus/{tier}/probe.py", f"import {module}\n\n\ndef f() -> object:\n    return {module}\n")
    assert r.returncode != 0 and "TID251" in r.stdout, r.stdout


def test_a_deferred_heavy_import_in_a_hook_tier_is_refused_too() -> None:
    r = ruff_on("cocoplus/core/probe.py", "def f() -> object:\n    import rich\n\n    return rich\n")
    assert r.returncode != 0 and "TID251" in r.stdout, r.stdout


@pytest.mark.parametrize("where", ["cocoplus/server/probe.py", "cocoplus/mcp/probe.py", "cocoplus/ops/probe.py", "cocoplus/core/probe.py"])
def test_only_the_cli_imports_the_cli(where: str) -> None:
    r = ruff_on(where, "from cocoplus.cli import output\n\n\ndef f() -> object:\n    return output\n")
    assert r.returncode != 0 and "TID251" in r.stdout, r.stdout


def test_the_cli_and_the_doors_may_import_what_they_need() -> None:
    ok = "import rich\n\nfrom cocoplus.cli import output\n\n\ndef f() -> object:\n    return rich, output\n"
    assert ruff_on("cocoplus/cli/probe.py", ok).returncode == 0
    assert ruff_on("cocoplus/server/probe.py", "import fastapi\n\n\ndef f() -> object:\n    return fastapi\n").returncode == 0
