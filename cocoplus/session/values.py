"""The configuration values a hook (or anything that must agree with the hooks) uses: the compiled copy
(`core.hookconfig`), compiled again from `cocoplus.toml` when it is stale.

Standard library only; `cocoplus.config` (TOML, the key table, the trust
record) is imported only when the copy must be compiled again.
"""

from __future__ import annotations

from cocoplus.core import hookconfig
from cocoplus.core.paths import Layout

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Mapping
    from typing import Any


def _compile(layout: Layout) -> dict[str, Any]:
    from cocoplus import config  # deferred: compiling (TOML, the trust record) only when the copy is stale

    return config.compile_for_hook(layout)


def for_hook(layout: Layout, environ: Mapping[str, str]) -> tuple[dict[str, Any], str | None]:
    """(the values the hooks use now, a problem to log or None)."""
    return hookconfig.for_hook(layout, environ, _compile)
