"""The sandbox operations: the probe behind `cocoplus sandbox doctor`."""

from __future__ import annotations

from typing import Any

from cocoplus.sandbox import probe as probe_mod


def doctor(environ: dict[str, str] | None = None) -> dict[str, Any]:
    """Whether bubblewrap can sandbox a worker here: the probe's findings, its cause and its one fix."""
    return probe_mod.probe(environ)
