"""Trusting a test project's cocoplus.toml, as `cocoplus trust --yes` does.

A test that configures an account or a ctx command in the project file is
about what that program does, so it trusts the file after writing it
(docs/guides/configuration.md, "Trust"); tests/trust/ is where untrusted files are tested.
"""

from __future__ import annotations

import os

from cocoplus.core.paths import Layout


def trust_project(where: Layout | str | os.PathLike[str]) -> None:
    """Trust the project's cocoplus.toml as it is now (the project directory, or its Layout)."""
    from cocoplus.ops import trust

    if isinstance(where, Layout):
        trust.trust(where.project, layout=where)
    else:
        trust.trust(os.fspath(where))
