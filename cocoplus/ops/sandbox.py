"""The sandbox operations: the probes behind `cocoplus sandbox doctor` (bubblewrap's, and srt's)."""

from __future__ import annotations

from typing import Any

from cocoplus.sandbox import probe as probe_mod
from cocoplus.sandbox import srt


def doctor(environ: dict[str, str] | None = None) -> dict[str, Any]:
    """Whether bubblewrap can sandbox a worker here: the probe's findings, its cause and its one fix; under `srt`,
    whether Anthropic's sandbox runtime can (its version, or its cause and fix)."""
    found = probe_mod.probe(environ)
    found["srt"] = srt.probe(environ) if found["ok"] else {"ok": False, "srt": srt.find_srt(environ),
                                                             "cause": "bubblewrap cannot sandbox here (above)",
                                                             "fix": found["fix"]}  # fmt: skip
    return found
