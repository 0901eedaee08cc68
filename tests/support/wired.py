"""A project whose runtimes run cocoplus' hooks, as `launch` requires (install/doctor.py `launch_problem`).

`cocoplus install RUNTIME` for each runtime a test launches, as the operator
runs it; for Codex, which loads a project's hooks only in a project its
configuration trusts, that trust too, in this test's Codex configuration
(`CODEX_HOME`, else `~/.codex` of the test's home).
"""

from __future__ import annotations

import os

from cocoplus.core.paths import Layout
from cocoplus.ops import project as project_ops


def hooks_installed(layout: Layout, *runtimes: str) -> None:
    for runtime in runtimes or ("claude",):
        project_ops.install(layout, runtime)
        if runtime == "codex":
            home = os.environ.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex")
            os.makedirs(home, exist_ok=True)
            with open(os.path.join(home, "config.toml"), "a", encoding="utf-8") as fh:
                fh.write(f'\n[projects."{layout.project}"]\ntrust_level = "trusted"\n')
