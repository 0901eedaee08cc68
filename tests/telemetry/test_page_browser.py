"""The page (headless Chromium against a real `cocoplus serve`) says a failed trace export.  The server exports
itself (a thread of `cocoplus serve` when traces are configured) to a loopback receiver that answers 401, with a
batch interval of 0.5 s (COCOPLUS_TELEMETRY_INTERVAL_S, short for the test); the page polls GET /api/v1/telemetry
and shows the failure.  `top`'s supervision line says the same (its render, from the same snapshot).  The
screenshot goes to test-output/server/."""

from __future__ import annotations

import os
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from cocoplus.ops import view
from cocoplus.tui import render
from tests.server.conftest import start_server, stop_server, write_backend
from tests.server.test_browser import SHOTS, page  # noqa: F401 - the fixture
from tests.support.otlp import Receiver
from tests.telemetry.test_export import env_for, supervised_night

pytestmark = pytest.mark.timeout(180)


def test_the_page_and_top_say_the_export_failed_with_a_401(project: Layout, page: Any) -> None:
    from playwright.sync_api import expect

    supervised_night(project)
    write_backend(project, 0.2)
    with Receiver(status=401) as rx:
        env = {**os.environ, **env_for(rx), "COCOPLUS_TELEMETRY_INTERVAL_S": "0.5"}
        served = start_server(project, env=env)
        try:
            page.goto(f"{served.url}/#token={served.token}")
            expect(page.locator("#live")).to_have_text("live")
            traces = page.locator("#traces")
            expect(traces).to_contain_text("authentication failed (HTTP 401)", timeout=60_000)
            expect(traces).to_contain_text("traces: trace export failing since ")
            expect(traces).to_have_class("muted failed")
            assert rx.requests and {r.headers.get("authorization") for r in rx.requests} == {"Bearer otlp-test-0123"}
            page.locator("#traces").screenshot(path=str(SHOTS / "60-traces-401.png"))
            line = render.supervision_line(view.snapshot(project))
            assert "traces: trace export failing since " in line and "(HTTP 401)" in line, line
            assert page.errors == []
        finally:
            stop_server(served)
