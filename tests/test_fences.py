"""The fences that keep the package's layering: ruff's per-tier import bans, mypy, explained deferred imports.

Run by the README's test command (and so by `.ci/run`): a heavy import in a
hook-path tier, the CLI imported outside `cocoplus/cli`, a type error, or an
import inside a function with no `# deferred: why` comment on its line fails
the suite.  The tiers are declared in pyproject.toml (`[tool.cocoplus.tiers]`): tests/test_tiers.py holds
the import graph to them and generates the hook-path tiers' `.ruff.toml` files this module exercises.
"""

from __future__ import annotations

import ast
import io
import os
import shlex
import subprocess
import sys
import tokenize
import tomllib

import pytest

from tests.test_tiers import declaration

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIERS = tuple(declaration()["hook_path"])
HEAVY = tuple(m for m in declaration()["banned"] if not m.startswith("cocoplus."))
# The fences as commands run from the project's root with the .venv's tools: the tests below run the first
# three, the suite runs the tiers test, and .pre-commit-config.yaml runs all four before a commit.
FENCES = {
    "ruff-check": ("ruff", "check", "--no-cache", "."),
    "ruff-format": ("ruff", "format", "--check", "--no-cache", "."),
    "mypy": ("mypy",),  # [tool.mypy] in pyproject.toml names what it checks: the package and tests/
    "tiers": ("python", "-m", "pytest", "-q", "-n", "0", "tests/test_tiers.py"),
}


def tool(name: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    exe = os.path.join(os.path.dirname(sys.executable), name)
    return subprocess.run([exe, *args], cwd=ROOT, input=stdin, capture_output=True, text=True, timeout=600)


def ruff_on(path: str, source: str) -> subprocess.CompletedProcess[str]:
    """Lint `source` as if it were the file at `path` (its directory's rules apply); nothing is written."""
    return tool("ruff", "check", "--no-cache", "--stdin-filename", path, "-", stdin=source)


def test_ruff_passes_on_the_whole_tree() -> None:
    r = tool(*FENCES["ruff-check"])
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_tree_is_formatted() -> None:
    """`ruff format` is the formatter; the line length is pyproject.toml's."""
    r = tool(*FENCES["ruff-format"])
    assert r.returncode == 0, r.stdout + r.stderr + "\nrun `ruff format .`"


@pytest.mark.parametrize(
    "where", ["cocoplus/core/probe.py", "cocoplus/ops/probe.py", "tests/probe.py", "bench/probe.py"]
)
def test_a_line_over_the_length_is_refused(where: str) -> None:
    """pyproject.toml's line length (120) holds in every directory, tiers with their own `.ruff.toml` included."""
    assert ruff_on(where, "X = " + repr("x" * 114) + "\n").returncode == 0  # 120 columns
    r = ruff_on(where, "X = " + repr("x" * 115) + "\n")
    assert r.returncode != 0 and "E501" in r.stdout, r.stdout


def test_mypy_passes_on_the_package_and_the_tests() -> None:
    """One run over both (`files` in pyproject.toml's [tool.mypy]): every definition of the package typed, the
    tests' bodies checked too (their signatures may stay unannotated: see the `tests.*` override)."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        conf = tomllib.load(fh)["tool"]["mypy"]
    assert set(conf["files"]) == {"cocoplus", "tests"} and conf["disallow_untyped_defs"] is True
    r = tool(*FENCES["mypy"])
    assert r.returncode == 0, r.stdout + r.stderr


def test_pre_commit_runs_the_fences_and_fetches_nothing() -> None:
    """.pre-commit-config.yaml: local hooks only (no network), each running one of FENCES with the .venv's tool."""
    import yaml  # deferred: only this test reads YAML (PyYAML comes with mkdocs, in the test extra)

    with open(os.path.join(ROOT, ".pre-commit-config.yaml"), encoding="utf-8") as fh:
        conf = yaml.safe_load(fh)
    hooks: dict[str, tuple[str, ...]] = {}
    for repo in conf["repos"]:
        assert repo["repo"] == "local", repo  # a hook from anywhere else is fetched
        for hook in repo["hooks"]:
            assert hook["language"] == "system", hook  # any other language builds an environment
            assert hook["pass_filenames"] is False and hook["always_run"] is True, hook  # the whole tree, always
            argv = shlex.split(hook["entry"])
            assert argv[0].startswith(".venv/bin/"), hook
            assert hook["id"] not in hooks, hook
            hooks[hook["id"]] = (argv[0].removeprefix(".venv/bin/"), *argv[1:])
    assert hooks == FENCES
    assert os.path.isfile(os.path.join(ROOT, FENCES["tiers"][-1]))
    # .ci/run runs the suite, which holds the same fences.
    with open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8") as fh:
        assert ".venv/bin/python -m pytest" in fh.read()


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("module", HEAVY)
def test_a_heavy_import_in_a_hook_tier_is_refused(tier: str, module: str) -> None:
    r = ruff_on(f"cocoplus/{tier}/probe.py", f"import {module}\n\n\ndef f() -> object:\n    return {module}\n")
    assert r.returncode != 0 and "TID251" in r.stdout, r.stdout


def test_a_deferred_heavy_import_in_a_hook_tier_is_refused_too() -> None:
    r = ruff_on("cocoplus/core/probe.py", "def f() -> object:\n    import rich\n\n    return rich\n")
    assert r.returncode != 0 and "TID251" in r.stdout, r.stdout


@pytest.mark.parametrize(
    "where", ["cocoplus/server/probe.py", "cocoplus/mcp/probe.py", "cocoplus/ops/probe.py", "cocoplus/core/probe.py"]
)
def test_only_the_cli_imports_the_cli(where: str) -> None:
    r = ruff_on(where, "from cocoplus.cli import output\n\n\ndef f() -> object:\n    return output\n")
    assert r.returncode != 0 and "TID251" in r.stdout, r.stdout


def test_the_cli_and_the_doors_may_import_what_they_need() -> None:
    ok = "import rich\n\nfrom cocoplus.cli import output\n\n\ndef f() -> object:\n    return rich, output\n"
    assert ruff_on("cocoplus/cli/probe.py", ok).returncode == 0
    assert (
        ruff_on("cocoplus/server/probe.py", "import fastapi\n\n\ndef f() -> object:\n    return fastapi\n").returncode
        == 0
    )


def unexplained_deferred_imports(source: str, name: str = "<probe>") -> list[str]:
    """Imports inside a function or class (not under `if TYPE_CHECKING:`)
    whose lines carry no `# deferred: ...` comment."""
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
    """An import inside a function costs a reader a question; its line answers it.

    For example `# deferred: heavy (pydantic)`."""
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
