"""The page shows what workers, steers and records say as inert text, in headless Chromium against a
real `cocoplus serve`: never as HTML, and with no control character or bidi control in the page's text
(the page's `inert` is held equal to cocoplus/core/inert.py here)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cocoplus.core import fsio, inert, vocab
from cocoplus.core.paths import Layout
from cocoplus.ops import session as session_ops
from cocoplus.session import killswitch, registry
from cocoplus.supervision import signals
from tests.core.test_inert import CASES, READABLE
from tests.server.conftest import Served
from tests.server.test_browser import page, shot  # noqa: F401 - the fixture

pytestmark = pytest.mark.timeout(180)

NASTY = (
    "\x1b]8;;https://evil.example/\x1b\\link\x1b]8;;\x1b\\ \x1b[31mred\x1b[0m bel\x07 del\x7f nel\x85 "
    "\u202eevil\u202c \u2066iso\u2069 end\x1b["
)
HTML = "<img src=x onerror=\"window.pwned=1\"><b>bold</b><a href='https://evil.example/a'>a</a>"
FORBIDDEN = {chr(c) for c in (*range(0x00, 0x20), *range(0x7F, 0xA0))} | set(vocab.BIDI_CONTROLS) | {"\u2028", "\u2029"}
SHOWN = "link red bel␇ del␡ nel\\x85 \\u202eevil\\u202c \\u2066iso\\u2069 end␛["


def test_untrusted_text_on_the_page_is_text_and_inert(served: Served, page: Any) -> None:
    from playwright.sync_api import expect

    lay: Layout = served.layout
    signals.ask_human(lay, f"Q {READABLE} {HTML} {NASTY}", session="cc1")
    session_ops.steer(lay, f"S {NASTY}")
    killswitch.stop(lay, "tester", f"R {HTML} {NASTY}")
    rec = registry.resolve(lay, "cx1")
    fsio.atomic_write_json(lay.session_record(rec["id"]), rec | {"alias": f"X{NASTY}"})

    page.goto(f"{served.url}/#token={served.token}")
    expect(page.locator("#live")).to_have_text("live")
    expect(page.locator("#messages .msg.worker")).to_contain_text(f"Q {READABLE}")
    expect(page.locator("#kill-state")).to_contain_text("kill switch ON")
    expect(page.locator("#steer-state")).to_contain_text("pending steer: S")
    expect(page.locator("#sessions tr[data-id]")).to_have_count(3)  # all three at work
    shot(page, "30-inert-text")

    worker = page.locator("#messages .msg.worker").inner_text()
    assert f"Q {READABLE} {HTML} {SHOWN}" in worker
    assert f"R {HTML} {SHOWN}" in page.locator("#kill-state").inner_text()
    assert f"pending steer: S {SHOWN}" in page.locator("#steer-state").inner_text()
    assert page.locator("#sessions").inner_text().count(f"X{SHOWN}") == 1
    # Markup stayed text: no element came of it, no script ran.
    assert page.locator("#messages img, #messages b, #messages a, #kill-state img").count() == 0
    assert page.evaluate("() => window.pwned") is None
    text = page.evaluate("() => document.body.textContent")
    assert sorted({c for c in text if c in FORBIDDEN and c not in "\n\t"}) == []
    titles = page.evaluate(
        "() => [...document.querySelectorAll('[title], [aria-label]')].map((n) => (n.title || '') + "
        "(n.getAttribute('aria-label') || ''))"
    )
    assert all(not (set(t) & FORBIDDEN) for t in titles) and any(f"X{SHOWN}" in t for t in titles)
    assert page.errors == []


def test_the_pages_rule_is_the_rule_of_core_inert(served: Served, page: Any) -> None:
    page.goto(served.url + "/")
    page.wait_for_function("() => typeof inert === 'function'")
    samples = [raw for _name, raw, _want in CASES] + [
        READABLE,
        "\x1b\x1b[31mx",
        "\x9b\x9b1m",
        "\x1b]0;a\x1bb\x07c",
        "a\udcffb \U0001f680",
        "x\r\ny\u2028z",
    ]
    got = page.evaluate("(s) => s.map(inert)", json.loads(json.dumps(samples)))
    assert got == [inert.text(s) for s in samples]


def test_the_summary_card_tells_a_workers_story_as_inert_text(served: Served, page: Any) -> None:
    """The page's summary card (GET /api/v1/summary, `cocoplus summary`): a worker's task, end and cost."""
    from playwright.sync_api import expect

    from cocoplus.core import clock

    lay: Layout = served.layout
    fsio.ensure_dir(lay.worker_dir("w1"))
    fsio.atomic_write_json(lay.worker_record("w1"), {
        "schema_version": 1, "id": "w1", "runtime": "claude", "task": f"T {HTML} {NASTY}", "alias": "parser",
        "state": "exited", "created_at": clock.iso(), "ended_at": clock.iso(), "exit": {"code": 0},
        "reason": "ended", "command": ["claude"], "runs": 1,
    })  # fmt: skip
    page.goto(f"{served.url}/#token={served.token}")
    row = page.locator('#summary-rows tr[data-worker="w1"]')
    expect(row).to_contain_text("w1 (parser)")
    expect(page.locator("#summary-total")).to_contain_text("1 worker(s), $")
    assert f"T {HTML} {SHOWN}"[:100] in row.inner_text() and "exited" in row.inner_text()  # (cut at 160)
    assert page.locator("#summary-rows img").count() == 0 and page.evaluate("() => window.pwned") is None
    shot(page, "31-summary-card")
    assert page.errors == []
