"""The fences that keep the package's layering: ruff's per-tier import bans, mypy, explained deferred imports.

Run by the README's test command (and so by `.ci/run`): a heavy import in a
hook-path tier, the CLI imported outside `cocoplus/cli`, a type error, or an
import inside a function with no `# deferred: why` comment on its line fails
the suite.  The tier rules live in `cocoplus/{core,session,hook,runtimes}/.ruff.toml`
and `[tool.ruff.lint]` in pyproject.toml.
"""

from __future__ import annotations

import ast
import io
import os
import subprocess
import sys
import tokenize

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIERS = ("core", "session", "hook", "runtimes")
HEAVY = ("typer", "rich", "pydantic", "filelock", "watchdog", "genai_prices", "fastapi", "mcp")


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


def unexplained_deferred_imports(source: str, name: str = "<probe>") -> list[str]:
    """Imports inside a function or class (not under `if TYPE_CHECKING:`) whose lines carry no `# deferred: ...` comment."""
    comments = {
        tok.start[0]: tok.string
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    }
    found: list[str] = []

    def visit(node: ast.AST, nested: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                visit(ast.Module(body=child.orelse, type_ignores=[]), nested)  # only the else branch runs
                continue
            if nested and isinstance(child, (ast.Import, ast.ImportFrom)):
                lines = range(child.lineno, (child.end_lineno or child.lineno) + 1)
                if not any(comments.get(n, "").lstrip("# ").startswith("deferred") for n in lines):
                    found.append(f"{name}:{child.lineno}: {ast.unparse(child)}")
            inner = nested or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda))
            visit(child, inner)

    visit(ast.parse(source, name), False)
    return found


def test_every_deferred_import_says_why() -> None:
    """An import inside a function costs a reader a question; its line answers it (`# deferred: heavy (pydantic)`...)."""
    found: list[str] = []
    for folder, _dirs, names in os.walk(os.path.join(ROOT, "cocoplus")):
        for n in sorted(names):
            if n.endswith(".py"):
                path = os.path.join(folder, n)
                with open(path, encoding="utf-8") as fh:
                    found += unexplained_deferred_imports(fh.read(), os.path.relpath(path, ROOT))
    assert found == [], "move to the top of the module, or say why on the same line:\n" + "\n".join(found)


def test_the_deferred_import_check_catches_what_it_should() -> None:
    source = (
        "import os\n"
        "TYPE_CHECKING = False\n"
        "if TYPE_CHECKING:\n"
        "    from typing import Any\n"
        "try:\n"
        "    import _json\n"
        "except ImportError:\n"
        "    _json = None\n"
        "def ok():\n"
        "    import json  # deferred: a reason\n"
        "    from x import (  # deferred: another\n"
        "        a,\n"
        "    )\n"
        "def bad():\n"
        "    import re\n"
        "    if TYPE_CHECKING:\n"
        "        from typing import Any\n"
        "    else:\n"
        "        import shlex  # noqa: F401\n"
        "class C:\n"
        "    def m(self):\n"
        "        from x import y\n"
    )
    assert unexplained_deferred_imports(source) == [
        "<probe>:15: import re",
        "<probe>:19: import shlex",
        "<probe>:22: from x import y",
    ]
