"""The package's tiers, declared once in pyproject.toml (`[tool.cocoplus.tiers]`), held by its import graph.

Every `import` and `from ... import` in cocoplus/, deferred ones included, is an arrow from the importing
module to the imported one (an import under `if TYPE_CHECKING:` is not: it never runs).  The suite fails on
an arrow from a lower tier to a higher one and on any cycle among the package's modules.  The `.ruff.toml` of
each hook-path tier (its third-party bans) is generated from the same declaration:
`python tests/test_tiers.py --write` writes them, and a test compares.
"""

from __future__ import annotations

import ast
import os
import sys
import tomllib
from collections.abc import Callable
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(ROOT, "cocoplus")


def declaration() -> dict[str, Any]:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        tiers: dict[str, Any] = tomllib.load(fh)["tool"]["cocoplus"]["tiers"]
    return tiers


def rank() -> dict[str, int]:
    """Each declared name -> its tier's position (0 is the lowest)."""
    return {name: i for i, tier in enumerate(declaration()["order"]) for name in tier}


def modules(pkg: str = PKG) -> dict[str, str]:
    """Every module of the package: dotted name -> file."""
    found = {}
    for d, dirs, files in os.walk(pkg):
        dirs[:] = [x for x in dirs if x not in ("__pycache__", "plugins", "static")]
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(d, f)
                rel = os.path.relpath(path, os.path.dirname(pkg))[:-3].replace(os.sep, ".")
                found[rel.removesuffix(".__init__")] = path
    return found


def _type_checking(node: ast.If) -> bool:
    return isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def imports(mods: dict[str, str], source_of: Callable[[str], str] | None = None) -> dict[str, set[str]]:
    """module -> the package's modules it imports (`from pkg import name` is the submodule when there is one)."""
    read = source_of or (lambda path: open(path, encoding="utf-8").read())
    graph: dict[str, set[str]] = {m: set() for m in mods}

    def visit(node: ast.AST, mod: str, is_pkg: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                for other in child.orelse:
                    visit(other, mod, is_pkg)
                continue
            names: list[str] = []
            if isinstance(child, ast.Import):
                names = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = mod.split(".")
                    base = base[: len(base) - child.level + (1 if is_pkg else 0)]
                    target = ".".join([*base, *([child.module] if child.module else [])])
                else:
                    target = child.module or ""
                names = [f"{target}.{a.name}" if f"{target}.{a.name}" in mods else target for a in child.names]
            for n in names:
                while n and n not in mods:
                    n = n.rpartition(".")[0]
                if n and n != mod and not mod.startswith(n + "."):
                    graph[mod].add(n)
            visit(child, mod, is_pkg)

    for mod, path in mods.items():
        visit(ast.parse(read(path)), mod, path.endswith("__init__.py"))
    return graph


def part(module: str) -> str | None:
    """The declared name a module belongs to (`cocoplus.session.killswitch` -> `session`); None for the package root."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def upward(graph: dict[str, set[str]], ranks: dict[str, int]) -> list[str]:
    out = []
    for mod, targets in sorted(graph.items()):
        for t in sorted(targets):
            a, b = part(mod), part(t)
            if a is None or b is None or a == b:
                continue
            if ranks[b] > ranks[a]:
                out.append(f"{mod} imports {t}: {b} is above {a} (pyproject.toml [tool.cocoplus.tiers])")
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            strong(v)
    return found


def ruff_file(name: str) -> str:
    """The `.ruff.toml` of a hook-path tier, as generated from the declaration."""
    lines = [
        "# Generated from [tool.cocoplus.tiers] in pyproject.toml by `python tests/test_tiers.py --write`; "
        "do not edit.",
        "# This package is on the hook path, which runs before every tool call: the standard library and the",
        "# lower stdlib-only tiers only (tests/hook/test_imports.py pins what a hook process loads).",
        'extend = "../../pyproject.toml"',
        "",
        "[lint.flake8-tidy-imports.banned-api]",
    ]
    for module, why in declaration()["banned"].items():
        lines.append(f'"{module}".msg = "{why}"')
    return "\n".join(lines) + "\n"


# -- the tests ---------------------------------------------------------------------------------------


def test_every_part_of_the_package_has_a_tier() -> None:
    ranks = rank()
    parts = {p for m in modules() if (p := part(m)) is not None}
    assert sorted(parts - set(ranks)) == [], "declare them in pyproject.toml [tool.cocoplus.tiers]"
    assert sorted(set(ranks) - parts) == [], "declared but not in the package"


def test_no_import_runs_up_the_tiers() -> None:
    assert upward(imports(modules()), rank()) == []


def test_the_package_has_no_import_cycle() -> None:
    assert cycles(imports(modules())) == []


def test_an_upward_import_or_a_cycle_is_caught() -> None:
    """The checks themselves: a probe module under core/ importing supervision is an arrow up; two modules
    importing each other (one of them deferred, inside a function) are a cycle; a type-checking import is
    neither."""
    mods = modules()
    probe = os.path.join(PKG, "core", "probe.py")
    mods = {**mods, "cocoplus.core.probe": probe}
    sources = {probe: "def f():\n    from cocoplus.supervision import rounds  # deferred\n    return rounds\n"}

    def source_of(path: str) -> str:
        return sources.get(path) or open(path, encoding="utf-8").read()

    found = upward(imports(mods, source_of), rank())
    assert found == [
        "cocoplus.core.probe imports cocoplus.supervision.rounds: "
        "supervision is above core (pyproject.toml [tool.cocoplus.tiers])"
    ]
    sources[probe] = "from cocoplus.core import clock\n"
    clock = mods["cocoplus.core.clock"]
    sources[clock] = (
        open(clock, encoding="utf-8").read() + "\n\ndef g():\n    from cocoplus.core import probe\n    return probe\n"
    )
    assert cycles(imports(mods, source_of)) == [["cocoplus.core.clock", "cocoplus.core.probe"]]
    sources[clock] = "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from cocoplus.core import probe\n"
    assert cycles(imports(mods, source_of)) == []


def test_the_hook_path_tiers_ruff_files_are_generated_from_the_declaration() -> None:
    for name in declaration()["hook_path"]:
        with open(os.path.join(PKG, name, ".ruff.toml"), encoding="utf-8") as fh:
            assert fh.read() == ruff_file(name), f"cocoplus/{name}/.ruff.toml: run `python tests/test_tiers.py --write`"
    generated = {
        os.path.dirname(os.path.relpath(os.path.join(d, ".ruff.toml"), PKG))
        for d, _dirs, files in os.walk(PKG)
        if ".ruff.toml" in files
    }
    assert generated - {"cli"} == set(declaration()["hook_path"])


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    for tier in declaration()["hook_path"]:
        with open(os.path.join(PKG, tier, ".ruff.toml"), "w", encoding="utf-8") as out:
            out.write(ruff_file(tier))
        print(f"cocoplus/{tier}/.ruff.toml")
