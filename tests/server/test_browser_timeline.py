"""The page's timeline in headless Chromium against a real `cocoplus serve` (issue 34, "See it"; issue 35, "Seen
everywhere"): one lane per worker with its runtimes and sandbox profile, zoom (the buttons, the mouse wheel, a drag,
Fit), an event's detail on a click, "what if the cap had been N?" answered by the replay route and drawn where the
run would have stopped, and no secret anywhere on the page.  The project is tests/server/timeline_project.py's.
Screenshots go to test-output/server/ (and, with COCOPLUS_DOCS_IMAGES=1, the timeline's to docs/images/)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from tests.report import recorded
from tests.server import timeline_project
from tests.server.conftest import Served, start_server, stop_server
from tests.server.test_browser import SHOTS, page  # noqa: F401 - the fixture

pytestmark = pytest.mark.timeout(240)
DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
# Read at import: every test runs without COCOPLUS_* variables (tests/conftest.py's isolated_env).
WRITE_DOCS_IMAGES = os.environ.get("COCOPLUS_DOCS_IMAGES") == "1"

SPAN = (  # the time the lanes show, in ms
    "() => { const s = document.querySelector('#tl-lanes svg'); return Date.parse(s.dataset.to) - "
    "Date.parse(s.dataset.from); }"
)


@pytest.fixture
def recorded_server(project: Layout) -> Iterator[Served]:
    timeline_project.build(project)
    s = start_server(project)
    yield s
    stop_server(s)


def test_the_timeline_lanes_zoom_detail_and_what_if(recorded_server: Served, page: Any) -> None:
    from playwright.sync_api import expect

    page.goto(f"{recorded_server.url}/#token={recorded_server.token}")
    expect(page.locator("#live")).to_have_text("live")
    card = page.locator("#timeline-card")
    card.scroll_into_view_if_needed()
    lanes = page.locator("#tl-lanes g.lane")
    # One lane per worker (cc1 was w1's session: its calls, costs and signals are in w1's lane).
    expect(lanes).to_have_count(2)
    assert [lanes.nth(i).get_attribute("data-lane") for i in range(2)] == ["w:w1", "w:w2"]
    expect(lanes.nth(0).locator("text.lane-sub")).to_have_text("claude → codex · sandbox workspace")
    expect(lanes.nth(1).locator("text.lane-sub")).to_have_text("gemini · sandbox none")
    expect(page.locator('g[data-lane="w:w1"] circle[data-kind="tool"]')).to_have_count(40)
    expect(page.locator('g[data-lane="w:w2"] circle[data-kind="worker"]')).to_have_count(3)
    expect(page.locator("#tl-note")).to_contain_text("event(s)")
    expect(page.locator("#tl-worker option")).to_have_text(
        ["every worker", "w1 (sandbox workspace)", "w2 (sandbox none)"]
    )

    # Zoom: in halves the span shown (fewer events in it), out doubles it, Fit shows every event again.
    full = page.evaluate(SPAN)
    page.locator("#tl-zoom-in").click()
    assert page.evaluate(SPAN) == pytest.approx(full / 2, rel=0.01)
    page.locator("#tl-zoom-in").click()
    quarter = page.evaluate(SPAN)
    assert quarter == pytest.approx(full / 4, rel=0.01)
    expect(page.locator("#tl-range")).to_contain_text("(zoomed)")
    assert page.locator("#tl-lanes circle.ev").count() < 46
    page.locator("#tl-zoom-out").click()
    assert page.evaluate(SPAN) == pytest.approx(full / 2, rel=0.01)
    box = page.locator("#tl-lanes").bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] * 0.7, box["y"] + 10)
    page.mouse.wheel(0, -100)  # the wheel zooms in, around the pointer
    wait_for_span(page, lambda s: s < full / 2 * 0.9)
    before = page.evaluate("() => document.querySelector('#tl-lanes svg').dataset.from")
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.4, box["y"] + 10, steps=5)  # a drag pans
    page.mouse.up()
    assert page.evaluate("() => document.querySelector('#tl-lanes svg').dataset.from") > before
    page.locator("#tl-fit").click()
    assert page.evaluate(SPAN) == pytest.approx(full, rel=0.001)
    expect(page.locator("#tl-range")).not_to_contain_text("zoomed")
    expect(page.locator("#tl-lanes circle.ev")).to_have_count(page.locator("#tl-lanes circle").count())

    # A click on an event shows its detail: the failover, with its lane's sandbox.
    page.locator('g[data-lane="w:w1"] circle[data-kind="failover"]').click()
    detail = page.locator("#tl-detail")
    expect(detail.locator(".headline")).to_have_text("failover: claude -> codex (usage limit)")
    expect(detail).to_contain_text("sandboxworkspace")
    expect(detail).to_contain_text("from_session" + timeline_project.CS)
    # Tool call 24 by the keyboard: its tool-use id, outcome and duration from the transcript.
    tool = page.locator('g[data-lane="w:w1"] circle[data-kind="tool"]').nth(23)
    tool.focus()
    tool_24 = tool.get_attribute("aria-label")
    page.keyboard.press("Enter")
    expect(detail.locator(".headline")).to_have_text(
        "tool call 24: Bash pytest -x failed in 5.0s (the same call, 3 in a row)"
    )
    expect(detail).to_contain_text("tool_use_idtoolu_rec024")
    expect(detail).to_contain_text("duration_s5")
    assert tool.get_attribute("class") == "ev picked"
    # The calls came fast: zoomed in around the event picked, they are apart, and one is clicked with the mouse.
    zoom_until_apart(page)
    assert page.locator('circle[data-kind="tool"].picked').get_attribute("aria-label") == tool_24  # still in view
    page.locator('g[data-lane="w:w1"] circle[data-kind="tool"][aria-label^="tool: tool call 25:"]').click()
    expect(detail.locator(".headline")).to_have_text(
        "tool call 25: Bash pytest -x failed in 5.0s (the same call, 4 in a row)"
    )
    page.locator("#tl-fit").click()
    # Tool call 5 held a secret: redacted in its detail, its label and its tooltip, and nowhere on the page.
    page.locator('g[data-lane="w:w1"] circle[data-kind="tool"]').nth(4).focus()
    page.keyboard.press("Enter")
    expect(detail).to_contain_text("OPENAI_API_KEY=[redacted] python tools/fetch.py")
    for secret in (recorded.SECRET, timeline_project.GH_TOKEN):
        assert secret not in page.content()

    # What if the cap had been 20? The replay route answers; the stop is drawn at call 20's time in w1's lane.
    expect(page.locator("#tl-run")).to_have_value("w1")  # the lane of the event picked
    page.locator("#tl-cap").fill("20")
    page.locator("#tl-replay-btn").click()
    expect(page.locator("#tl-replay-stop")).to_contain_text(
        "It would have stopped at tool call 20 (cc1) by the iteration cap (20, max_iterations); cost up to there $"
    )
    mark = page.locator("#tl-stop-mark")
    expect(mark).to_have_text("stops at call 20")
    twentieth = page.locator('g[data-lane="w:w1"] circle[data-kind="tool"]').nth(19)
    line_x = float(page.locator("#tl-lanes line.stopline").get_attribute("x1") or "nan")
    assert line_x == pytest.approx(float(twentieth.get_attribute("cx") or "nan"), abs=0.2)
    # And a loop guard of 3 on cc1's run: the checkpoint at 24, the stop at 27, naming the call.
    page.locator("#tl-cap").fill("1000")
    page.locator("#tl-guard").fill("3")
    page.locator("#tl-replay-btn").click()
    expect(page.locator("#tl-replay-stop")).to_contain_text(
        "It would have stopped at tool call 27 (cc1) by the loop guard: the same call (Bash pytest -x) 6 times in a "
        "row from call 22"
    )
    expect(page.locator("#tl-replay li")).to_have_text(["call 24: checkpoint (repeated tool call)"])
    expect(mark).to_have_text("stops at call 27")
    # And a budget of a cent: spent at the first stage boundary (a turn end that priced the run's usage).
    page.locator("#tl-guard").fill("")
    page.locator("#tl-budget").fill("0.01")
    page.locator("#tl-replay-btn").click()
    expect(page.locator("#tl-replay-stop")).to_contain_text("by the cost budget ($0.01, $0.")
    page.locator("#tl-budget").fill("")
    page.locator("#tl-guard").fill("3")
    page.locator("#tl-replay-btn").click()
    expect(mark).to_have_text("stops at call 27")

    # w2's task, as its agent wrote it, is text: no element made of it, nothing run, its escape and override inert.
    page.locator('g[data-lane="w:w2"] circle[data-kind="worker"]').first.focus()
    page.keyboard.press("Enter")
    expect(detail.locator(".headline")).to_have_text(
        'launched (sandbox none): <img src=x onerror="window.pwned=1"> red \\u202egnp.exe'
    )
    assert page.locator("#timeline-card img").count() == 0 and page.evaluate("() => window.pwned") is None

    # One worker's events only.
    page.locator("#tl-worker").select_option("w2")
    expect(lanes).to_have_count(1)
    expect(page.locator("#tl-lanes circle.ev")).to_have_count(3)
    page.locator("#tl-worker").select_option("")
    expect(lanes).to_have_count(2)
    page.locator('g[data-lane="w:w1"] circle[data-kind="tool"]').nth(26).focus()
    page.keyboard.press("Enter")
    page.locator("#tl-replay-btn").click()
    expect(mark).to_have_text("stops at call 27")
    zoom_until_apart(page)
    expect(mark).to_be_visible()
    card.screenshot(path=str(SHOTS / "60-timeline.png"))
    if WRITE_DOCS_IMAGES:
        card.screenshot(path=str(DOCS_IMAGES / "timeline.png"))
    assert page.errors == []


def wait_for_span(page: Any, ok: Any) -> None:
    from tests.support.waiting import wait_until

    wait_until(lambda: ok(page.evaluate(SPAN)), timeout=15)


def zoom_until_apart(page: Any) -> None:
    """Zoom in (around the event picked) until the tool calls in view are more than 10 pixels apart (those asked for
    in the same millisecond, as the hook driven in-process can, are one point at any zoom)."""
    calls = page.locator('g[data-lane="w:w1"] circle[data-kind="tool"]')
    for _ in range(20):
        xs = sorted({float(calls.nth(i).get_attribute("cx") or "nan") for i in range(calls.count())})
        if len(xs) < 2 or min(b - a for a, b in zip(xs, xs[1:])) > 10:
            return
        page.locator("#tl-zoom-in").click()
    raise AssertionError(f"the calls are still closer than 10 pixels: {xs}")
