"""The page's vocabulary: the allowed values of every enumerated field and the turn cap's bounds."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from cocoplus import __version__
from cocoplus import config as config_mod
from cocoplus.core import vocab
from cocoplus.core.errors import CocoplusError
from cocoplus.ops import telemetry as telemetry_ops
from cocoplus.server.bodies import TURNS
from cocoplus.server.routes.base import ERRORS, Srv

router = APIRouter(tags=["meta"])


@router.get("/api/v1/meta", responses=ERRORS)
def get_meta(srv: Srv) -> dict[str, Any]:
    """The allowed values of every enumerated field and the turn cap's bounds.

    Enumerated fields are efforts, states, scope modes, and the like."""
    try:
        turns = int(config_mod.load_for(srv.layout).get(TURNS.dotted))
    except CocoplusError:  # a broken cocoplus.toml is reported by `session status`; the page still needs a value
        turns = TURNS.default
    return {
        "version": __version__,
        "enums": vocab.as_dict(),
        "settings": {
            TURNS.dotted: {
                "value": turns,
                "default": TURNS.default,
                "minimum": TURNS.minimum,
                "maximum": TURNS.maximum,
            }
        },
    }


@router.get("/api/v1/telemetry", responses=ERRORS)
def get_telemetry(srv: Srv) -> dict[str, Any]:
    """The trace export (`cocoplus telemetry status`): where traces go (the endpoint without credentials), which
    process exports them, the last export's outcome, and `problem`: `export pending: nothing exporting`, or the
    last export's failure (an authentication failure says so), or null."""
    return telemetry_ops.status(srv.layout)
