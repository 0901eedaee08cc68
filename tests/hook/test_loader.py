"""The hook's own importer (cocoplus/hook/loader.py): what it imports is what the standard import would have made,
and anything it cannot vouch for is left to the standard import.

The real thing throughout: the hook script run as a runtime runs it, from the
working tree and from a copy of the package whose sources are changed after
they were compiled; and the finder asked about real files beside the
standard path finder.
"""

from __future__ import annotations

import ast
import compileall
import gc
import importlib.machinery
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from cocoplus.hook import loader, timeouts
from cocoplus.install.hooks import hook_script
from tests.hook.helpers import hook_env
from tests.support import vouched

# Runs the hook script as `python -S script` would (its `script()` included), then reports, for every cocoplus
# module, who loaded it and from where, whether the collector is on, and a marker a test may plant in the runner.
PROBE = """
import json, posix, sys

def _exit(code):
    raise SystemExit(code)

posix._exit = _exit
script = sys.argv[1]
sys.argv = sys.argv[1:]
code = 0
try:
    exec(compile(open(script, "rb").read(), script, "exec"), {"__name__": "__main__", "__file__": script})
except SystemExit as exc:
    code = exc.code
import gc
mods = {}
for name, m in sorted(sys.modules.items()):
    if name == "cocoplus" or name.startswith("cocoplus."):
        spec = m.__spec__
        mods[name] = {
            "loader": type(m.__loader__).__name__, "file": m.__file__, "cached": getattr(m, "__cached__", None),
            "path": list(getattr(m, "__path__", []) or []) or None, "package": m.__package__,
            "origin": spec.origin, "spec_cached": spec.cached, "loader_state": spec.loader_state is not None,
        }
    elif name in ("_json", "fcntl", "_sha256", "__future__"):
        spec = vars(m).get("__spec__")
        mods[name] = {
            "loader": type(m.__loader__).__name__ if spec else None, "file": vars(m).get("__file__"),
            "origin": spec.origin if spec else None, "real": "all_feature_names" in vars(m),
        }
runner = sys.modules.get("cocoplus.hook.runner")
sys.stderr.write("\\nPROBE " + json.dumps({
    "code": code, "gc": gc.isenabled(), "modules": mods, "marker": getattr(runner, "MARKER_FOR_TEST", None),
}) + "\\n")
"""

POST_TOOL = {
    "session_id": "s-loader",
    "hook_event_name": "PostToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "pytest -q"},
    "tool_response": {"stdout": "ok\n", "stderr": "", "interrupted": False, "isImage": False},
}


def probe(
    layout: Layout,
    script: str,
    event: str = "PostToolUse",
    payload: dict[str, Any] | None = None,
    below: list[str] | None = None,
    **env: str,
) -> Any:
    """Run the hook script under PROBE (below `below`, as tests/support/vouched.py's), and what PROBE saw; its
    answer on stdout is `out`."""
    r = subprocess.run(
        [
            *(below or []),
            sys.executable,
            "-E",
            "-S",
            "-c",
            PROBE,
            script,
            event,
            "--runtime",
            "claude",
            "--timeout",
            "30",
        ],
        input=json.dumps({**(payload or POST_TOOL), "cwd": layout.project}).encode(),
        capture_output=True,
        env=hook_env(None, CLAUDE_PROJECT_DIR=layout.project, **env),
        cwd=layout.project,
        timeout=60,
    )
    lines = [x for x in r.stderr.decode().splitlines() if x.startswith("PROBE ")]
    assert lines, r.stderr.decode()
    got = json.loads(lines[-1][len("PROBE ") :])
    assert got["code"] == 0, r.stderr.decode()
    got["out"] = r.stdout.decode()
    return got


# What the fast path imports, before the hook's own importer is installed (for a Claude Code hook).
FAST = {
    "cocoplus", "cocoplus.hook", "cocoplus.hook.entry", "cocoplus.runtimes", "cocoplus.runtimes.registry",
    "cocoplus.runtimes.adapters", "cocoplus.runtimes.answers", "cocoplus.runtimes.adapters.claude",
}  # fmt: skip


def permission(layout: Layout, command: str) -> Any:
    """A launched worker's permission request for `command`, decided by its `launch --allow` rule, under PROBE."""
    vouched.sealed_worker(layout, "w1", allow=["Bash(echo *)"])
    payload = {
        "session_id": "s-loader", "hook_event_name": "PermissionRequest", "tool_name": "Bash",
        "tool_input": {"command": command},
    }  # fmt: skip
    below = vouched.prefix("worker", layout.root, "w1")
    got = probe(layout, hook_script(), "PermissionRequest", payload, below, COCOPLUS_WORKER="w1")
    assert json.loads(got["out"])["hookSpecificOutput"]["decision"]["behavior"] == "allow", got["out"]
    return got


# The standard library's modules PROBE reports besides cocoplus' own (the lists preload the extension modules).
STANDARD = {"_json", "fcntl", "_sha256", "__future__"}


def ours_of(names: tuple[str, ...]) -> set[str]:
    return {n for n in names if n == "cocoplus" or n.startswith("cocoplus.")}


def as_the_standard_import_would(mods: dict[str, Any]) -> dict[str, Any]:
    """The modules the hook's importer made, each checked against the standard path finder's spec for it."""
    ours = {n: m for n, m in mods.items() if m["loader"] == "Finder"}
    for name in ("_json", "fcntl", "_sha256"):  # the standard library's extension modules the lists preload
        if name in mods:
            standard = importlib.machinery.PathFinder.find_spec(name)
            assert standard is not None, name
            assert mods[name]["loader"] == "ExtensionFileLoader", name
            assert mods[name]["file"] == mods[name]["origin"] == standard.origin, name
    for name, m in ours.items():
        where = os.path.dirname(m["file"])
        if m["path"] is not None:  # a package: found in the directory above its own
            where = os.path.dirname(where)
        standard = importlib.machinery.PathFinder.find_spec(name, [where])
        assert standard is not None, name
        assert m["file"] == m["origin"] == standard.origin, name
        assert m["cached"] == m["spec_cached"] == standard.cached, name
        assert m["path"] == standard.submodule_search_locations, name
        assert m["package"] == standard.parent, name
        assert not m["loader_state"], name  # the byte code read is not kept once the module ran
    return ours


def test_the_hook_imports_cocoplus_past_the_fast_path_as_the_standard_import_would(project: Layout) -> None:
    """Every module the hook's importer imported (found, or preloaded) has the attributes the standard path finder
    and source loader give it, and the collector is off in the hook's own process."""
    got = probe(project, hook_script())
    mods = got["modules"]
    ours = as_the_standard_import_would(mods)
    assert {"cocoplus.hook.runner", "cocoplus.core", "cocoplus.session.iteration"} <= set(ours), sorted(mods)
    assert ours_of(loader.RUNNER) <= set(ours)
    # The fast path's own modules came before the finder: the standard loader's.
    assert {n for n, m in mods.items() if m["loader"] != "Finder"} - STANDARD == FAST | {"cocoplus.hook.loader"}
    assert {"_json", "fcntl"} <= set(mods)
    assert got["gc"] is False
    # `from __future__ import annotations` found the stand-in: the standard library's module never ran.
    assert mods["__future__"]["real"] is False and mods["__future__"]["file"] is None
    got = permission(project, "echo 1 && echo 2")
    assert ours_of(loader.IDENTITY) | ours_of(loader.RULES) <= set(as_the_standard_import_would(got["modules"]))
    assert "_sha256" in got["modules"] or sys.version_info >= (3, 12)


@pytest.mark.parametrize("command", ["echo 1", "echo 1 && echo 2"])
def test_the_preloaded_modules_are_what_a_permission_request_decided_by_a_rule_imports(
    project: Layout, command: str
) -> None:
    """No more and no fewer: the shell parser besides only for a command that needs it."""
    got = permission(project, command)
    loaded = set(got["modules"]) - STANDARD
    expected = FAST | {"cocoplus.hook.loader", "cocoplus.hook.permission"}
    expected |= ours_of(loader.RUNNER) | ours_of(loader.IDENTITY) | ours_of(loader.RULES)
    expected |= {"cocoplus.rules.parser"} if "&&" in command else set()
    assert loaded == expected, (sorted(loaded - expected), sorted(expected - loaded))


def _module_imports(name: str) -> set[str]:
    """The cocoplus modules `name` imports when it runs (its module-level imports, not those for type checking)."""
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text())
    out: set[str] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
                continue
            if isinstance(node, ast.Import):
                out.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                out.add(node.module)
                found = importlib.util.find_spec(node.module) if node.module.startswith("cocoplus") else None
                if found is not None and found.submodule_search_locations is not None:  # a package's modules
                    out.update(
                        f"{node.module}.{a.name}"
                        for a in node.names
                        if importlib.util.find_spec(f"{node.module}.{a.name}") is not None
                    )
            elif isinstance(node, ast.If):
                visit(node.body + node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body])

    visit(tree.body)
    parents = {".".join(m.split(".")[:i]) for m in out for i in range(1, m.count(".") + 1)}
    return {m for m in out | parents if m == "cocoplus" or m.startswith("cocoplus.")}


def test_each_preloaded_module_comes_after_the_modules_it_imports() -> None:
    """The lists are preloaded in turn (the runner's; past the permission handler's import, who the request is for;
    then the rules'): every cocoplus module one imports at its top is loaded by then, so it is found loaded rather
    than imported through the machinery the preload saves."""
    ready = set(FAST) | {"cocoplus.hook.loader"}
    for names in (loader.RUNNER, ("cocoplus.hook.permission",), loader.IDENTITY, loader.RULES):
        for name in names:
            if not name.startswith("cocoplus"):  # a standard-library extension module: imports nothing of ours
                assert name in sys.builtin_module_names or importlib.util.find_spec(name) is not None, name
                ready.add(name)
                continue
            missing = _module_imports(name) - ready - {name}
            assert not missing, f"{name} imports {sorted(missing)} before they are preloaded"
            ready.add(name)


def _copy_of_the_package(tmp_path: Path) -> Path:
    """The package copied, its runner marked, and compiled as an install compiles it (timestamp-based caches); the
    copy's root."""
    root = tmp_path / "site"
    shutil.copytree(
        Path(loader.__file__).resolve().parents[1], root / "cocoplus", ignore=shutil.ignore_patterns("__pycache__")
    )
    runner = root / "cocoplus" / "hook" / "runner.py"
    runner.write_text(runner.read_text() + '\nMARKER_FOR_TEST = "as compiled"\n')
    assert compileall.compile_dir(str(root / "cocoplus"), quiet=2)
    return root


def _change_the_runner(root: Path) -> Path:
    """The runner's source changed after it was compiled, to the same size: only its time tells the cache is old."""
    runner = root / "cocoplus" / "hook" / "runner.py"
    st = runner.stat()
    runner.write_text(runner.read_text().replace('"as compiled"', '"as changed!"'))
    assert runner.stat().st_size == st.st_size
    os.utime(runner, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))  # another second, whatever the fs
    return runner


def test_a_source_changed_after_it_was_compiled_runs_as_changed(project: Layout, tmp_path: Path) -> None:
    """A cache older than its source (an edit in place, an upgrade that kept old caches) is not used: the standard
    import reads the source and writes a new cache, which the next hook then uses."""
    root = _copy_of_the_package(tmp_path)
    script = str(root / "cocoplus" / "hook" / "__main__.py")
    before = probe(project, script)
    assert before["marker"] == "as compiled"
    assert before["modules"]["cocoplus.hook.runner"]["loader"] == "Finder"
    _change_the_runner(root)
    first = probe(project, script)
    assert first["marker"] == "as changed!"
    assert first["modules"]["cocoplus.hook.runner"]["loader"] == "SourceFileLoader"
    again = probe(project, script)  # the standard import wrote a current cache
    assert again["marker"] == "as changed!"
    assert again["modules"]["cocoplus.hook.runner"]["loader"] == "Finder"


@pytest.mark.parametrize("damage", ["hash-based", "another interpreter's"])
def test_a_cache_the_standard_loader_checks_otherwise_is_left_to_it(
    project: Layout, tmp_path: Path, damage: str
) -> None:
    """A hash-based cache (a reproducible build's), or one another interpreter wrote (its magic number), is not read
    by the finder, even when its header reads as the source's time and size: the standard loader checks it its own
    way, so a changed source runs as changed."""
    root = _copy_of_the_package(tmp_path)
    runner = _change_the_runner(root)
    cached = Path(importlib.util.cache_from_source(str(runner)))
    data = bytearray(cached.read_bytes())  # the code as compiled, before the change
    st = runner.stat()
    if damage == "hash-based":
        data[4:8] = (0b11).to_bytes(4, "little")  # checked against the source
    else:
        data[0:2] = ((int.from_bytes(data[0:2], "little") + 1) % 65536).to_bytes(2, "little")
    data[8:16] = (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little") + st.st_size.to_bytes(4, "little")
    cached.write_bytes(bytes(data))
    got = probe(project, str(root / "cocoplus" / "hook" / "__main__.py"))
    assert got["marker"] == "as changed!"
    assert got["modules"]["cocoplus.hook.runner"]["loader"] == "SourceFileLoader"
    assert got["modules"]["cocoplus.core"]["loader"] == "Finder"  # the others, compiled as usual, are read here


def _tree(tmp_path: Path, files: dict[str, str]) -> str:
    base = tmp_path / "pkg"
    for rel, text in files.items():
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / rel).write_text(text)
    compileall.compile_dir(str(base), quiet=2)
    return str(base)


@pytest.mark.parametrize(
    ("files", "name", "ours"),
    [
        ({"mod.py": "X = 1\n"}, "cocoplus.mod", True),
        ({"sub/__init__.py": "X = 1\n"}, "cocoplus.sub", True),
        # A package directory wins over a module of the same name, for the standard finder too.
        ({"both.py": "X = 1\n", "both/__init__.py": "X = 2\n"}, "cocoplus.both", True),
        # A directory with no __init__.py (a namespace portion), an extension module beside the source, no source
        # (a cache alone): the standard finders decide.
        ({"ns/x.py": "X = 1\n"}, "cocoplus.ns", False),
        ({"ext.py": "X = 1\n", "ext.abi3.so": ""}, "cocoplus.ext", False),
        ({"gone.py": "X = 1\n"}, "cocoplus.gone", False),
        ({"mod.py": "X = 1\n"}, "elsewhere.mod", False),
    ],
)
def test_the_finder_takes_only_what_the_standard_finder_would_find_as_source(
    tmp_path: Path, files: dict[str, str], name: str, ours: bool
) -> None:
    base = _tree(tmp_path, files)
    if name == "cocoplus.gone":
        os.unlink(os.path.join(base, "gone.py"))  # its cache stays, with no source
    spec = loader.Finder().find_spec(name, [base])
    standard = importlib.machinery.PathFinder.find_spec(name, [base])
    if not ours:
        assert spec is None
        return
    assert spec is not None and standard is not None
    assert (spec.origin, spec.cached, spec.submodule_search_locations, spec.parent, spec.has_location) == (
        standard.origin, standard.cached, standard.submodule_search_locations, standard.parent, True
    )  # fmt: skip
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    assert module.X == (2 if name == "cocoplus.both" else 1)


def test_the_finder_reads_nothing_for_a_caller_that_names_no_single_directory(tmp_path: Path) -> None:
    base = _tree(tmp_path, {"mod.py": "X = 1\n"})
    finder = loader.Finder()
    assert finder.find_spec("cocoplus.mod", None) is None
    assert finder.find_spec("cocoplus.mod", [base, base]) is None
    assert finder.listed == {}


def test_a_wait_turns_the_collector_back_on(project: Layout) -> None:
    """The hook's own process starts with the collector off; a hook about to wait (a permission request, the
    turn-end hold) turns it on: the wait may last minutes."""

    class Waiting:
        after: list[Any] = []

    gc.disable()
    try:
        timeouts.before_wait(Waiting())  # type: ignore[arg-type]
        assert gc.isenabled()
    finally:
        gc.enable()


def test_the_future_stand_in_gives_the_real_module_for_anything_more_than_the_name() -> None:
    """In the hook's own process `__future__` is a stand-in with `annotations`; reading anything more of it (another
    feature, or an attribute of that one) loads the standard library's module in its place, once."""
    code = """
import sys
sys.modules.pop("__future__", None)
from cocoplus.hook import loader
loader.install()
stand_in = sys.modules["__future__"]
exec("from __future__ import annotations\\nx: undefined_name = 1")
assert sys.modules["__future__"] is stand_in and not hasattr(stand_in, "__file__")
assert stand_in.annotations.compiler_flag == 0x1000000
real = sys.modules["__future__"]
assert real is not stand_in and real.__file__.endswith("__future__.py")
assert stand_in.division is real.division and sys.modules["__future__"] is real
print("ok")
"""
    r = subprocess.run([sys.executable, "-E", "-S", "-c", code], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "PYTHONPATH": str(Path(loader.__file__).resolve().parents[2])})  # fmt: skip
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
