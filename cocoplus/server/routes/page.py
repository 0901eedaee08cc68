"""The web page: its HTML, script, style sheet and chart library, from `server/static/`."""

from __future__ import annotations

import os
from collections.abc import Callable

from fastapi import APIRouter
from fastapi.responses import FileResponse

STATIC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "static")

router = APIRouter()


def _static(name: str, media: str) -> Callable[[], FileResponse]:
    def handler() -> FileResponse:
        return FileResponse(os.path.join(STATIC, name), media_type=media)

    return handler


router.get("/", include_in_schema=False)(_static("index.html", "text/html; charset=utf-8"))
router.get("/app.js", include_in_schema=False)(_static("app.js", "text/javascript; charset=utf-8"))
router.get("/app.css", include_in_schema=False)(_static("app.css", "text/css; charset=utf-8"))
router.get("/uplot.min.js", include_in_schema=False)(_static("uplot.min.js", "text/javascript; charset=utf-8"))
router.get("/inert.js", include_in_schema=False)(_static("inert.js", "text/javascript; charset=utf-8"))
