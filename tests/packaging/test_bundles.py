"""The agent plugins and extensions are generated from the declarations `cocoplus install` uses: rebuilt, they
are byte for byte what ships, and nothing in them names a path of one machine."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from cocoplus.install import bundles, wiring
from cocoplus.install import hooks as runtimes
from cocoplus.runtimes import registry


def test_the_shipped_trees_are_what_the_source_builds(tmp_path: Path) -> None:
    assert bundles.differences(bundles.shipped()) == [], "run `cocoplus plugin build cocoplus/plugins` and commit"
    written = bundles.build(str(tmp_path))
    assert bundles.differences(str(tmp_path)) == []
    shipped = sorted(
        os.path.relpath(os.path.join(d, f), bundles.shipped()).replace(os.sep, "/")
        for d, dirs, files in os.walk(bundles.shipped())
        for f in files
        if "__pycache__" not in d
    )
    assert shipped == sorted(written)
    (tmp_path / "claude" / "cocoplus" / "hooks" / "hooks.json").write_text("{}")
    (tmp_path / "stray.txt").write_text("x")
    assert bundles.differences(str(tmp_path)) == [
        "claude/cocoplus/hooks/hooks.json: differs",
        "stray.txt: not generated",
    ]


def test_plugins_and_committed_installs_carry_the_same_hooks(tmp_path: Path) -> None:
    root = Path(bundles.shipped())
    plugin_hooks = {
        "claude": json.loads((root / "claude/cocoplus/hooks/hooks.json").read_text())["hooks"],
        "codex": json.loads((root / "codex/cocoplus/hooks/hooks.json").read_text())["hooks"],
        "gemini": json.loads((root / "gemini/hooks/hooks.json").read_text())["hooks"],
        "cortex": json.loads((root / "cortex/.cortex-plugin/plugin.json").read_text())["hooks"],
    }
    for runtime, hooks in plugin_hooks.items():
        adapter = registry.get(runtime)
        assert set(hooks) == {e for e, _k, _m in wiring.events(adapter)}
        assert hooks == wiring.hooks(adapter, "launcher", 10, 120, 600)
    # What install writes into a committed file is exactly the plugin's hooks.
    for runtime in ("codex", "gemini"):
        runtimes.install(runtime, str(tmp_path))
        written = json.loads((tmp_path / Path(*registry.get(runtime).HOOKS_FILE)).read_text())["hooks"]
        assert written == plugin_hooks[runtime]


def test_no_shipped_file_names_a_path_of_this_machine_or_a_project() -> None:
    here = os.path.dirname(os.path.dirname(os.path.abspath(bundles.__file__)))
    for dirpath, _dirs, files in os.walk(bundles.shipped()):
        for name in files:
            text = Path(dirpath, name).read_text()
            for bad in (sys.executable, here, os.path.expanduser("~") + "/", "--dir"):
                assert bad not in text, f"{name} names {bad}"


def test_manifests_name_the_package_version() -> None:
    from cocoplus import __version__

    root = Path(bundles.shipped())
    for rel in (
        "claude/cocoplus/.claude-plugin/plugin.json",
        "codex/cocoplus/.codex-plugin/plugin.json",
        "gemini/gemini-extension.json",
        "cortex/.cortex-plugin/plugin.json",
    ):
        assert json.loads((root / rel).read_text())["version"] == __version__, rel
