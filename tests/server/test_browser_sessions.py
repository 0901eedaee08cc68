"""What the page says about sessions and runs, in headless Chromium against a real `cocoplus serve`:
ended sessions are listed (folded under "Ended") and the page never says none exist when some do;
each row shows the state and attention the API gives; every session keeps one colour of its own on
both charts and in the list; a short run is drawn inside the chart with its points marked; and the
connection indicator says "connecting…" until the first event, "offline" only after a real failure.
Screenshots go to test-output/server/."""

from __future__ import annotations

import itertools
import math
import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from cocoplus.core import clock, fsio, jsonl
from cocoplus.core.paths import Layout
from cocoplus.core.shapes import SessionRecord
from cocoplus.session import registry
from cocoplus.supervision import signals
from tests.server.conftest import Served, start_server, stop_server, write_backend
from tests.server.test_browser import SHOTS, page, shot  # noqa: F401 - the fixture

pytestmark = pytest.mark.timeout(180)

ENDED = ("exited", "completed", "failed", "retired")


@pytest.fixture
def bare(project: Layout) -> Iterator[Served]:
    """A real server over a project with no session yet (each test records its own)."""
    write_backend(project, 0.2)
    s = start_server(project)
    yield s
    stop_server(s)


def api(served: Served, path: str) -> Any:
    return httpx.get(served.url + "/api/v1" + path).json()


def record(
    lay: Layout, n: int, *, start: float, seconds: float, calls: int, state: str, attention: str | None = None
) -> SessionRecord:
    """Session n (cc<n+1>): started at `start`, its last event `seconds` later with `calls` tool calls."""
    made, _ = registry.ensure(lay, "claude", f"00000000-aaaa-bbbb-cccc-{n:012d}", event="SessionStart")
    rec: SessionRecord = {
        **made,
        "state": state,
        "attention": attention,
        "started_at": clock.iso(start),
        "last_event_at": clock.iso(start + seconds),
        "tool_calls": calls,
    }
    fsio.atomic_write_json(lay.session_record(rec["id"]), rec)
    return rec


def spend(lay: Layout, rec: SessionRecord, at: float, usd: float) -> None:
    row = {
        "ts": clock.iso(at),
        "kind": "usage",
        "session": rec["id"],
        "alias": rec["alias"],
        "usd": usd,
        "model": "m",
        "category": "execution",
    }
    jsonl.append_jsonl(lay.spend_log, row, lay.lock("spend"))


def lab(rgb: str) -> tuple[float, float, float]:
    """CIELAB (D65) of a `#rrggbb` colour."""
    r, g, b = (int(rgb[i : i + 2], 16) / 255 for i in (1, 3, 5))
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b))
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883
    f = [t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116 for t in (x, y, z)]
    return 116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])


# Each series of a chart as uPlot holds it: label, stroke (as the canvas resolves it, #rrggbb), dash,
# whether its points are drawn as markers, and its own points (x, y) with their place on the canvas.
SERIES = """(kind) => { const u = charts[kind]; const ctx = document.createElement('canvas').getContext('2d');
  return u.series.slice(1).map((s, k) => { const i = k + 1;
    const c = typeof s.stroke === 'function' ? s.stroke(u, i) : s.stroke;
    ctx.fillStyle = '#000'; ctx.fillStyle = c;
    const pts = u.data[0].map((x, j) => [x, u.data[i][j]]).filter((p) => p[1] != null);
    return { label: s.label, stroke: ctx.fillStyle, dash: s.dash || null,
      markers: typeof s.points.show === 'function' ? s.points.show(u, i) : s.points.show,
      points: pts.map(([x, y]) => ({ x, y, left: u.valToPos(x, 'x', true), top: u.valToPos(y, 'y', true) })) }; }); }"""
PLOT = """(kind) => { const u = charts[kind];
  return { bbox: u.bbox, min: u.scales.x.min, max: u.scales.x.max,
    xs: [u.data[0][0], u.data[0][u.data[0].length - 1]] }; }"""
# The box around the pixels of one colour on a chart's canvas (null: none).
INK = """([kind, rgb]) => { const c = document.querySelector(`#chart-${kind} canvas`);
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(rgb.slice(i, i + 2), 16));
  let n = 0, x0 = 1e9, x1 = -1, y0 = 1e9, y1 = -1;
  for (let i = 0; i < d.length; i += 4)
    if (Math.abs(d[i] - r) < 12 && Math.abs(d[i + 1] - g) < 12 && Math.abs(d[i + 2] - b) < 12 && d[i + 3] > 200) {
      const p = i / 4, x = p % c.width, y = Math.floor(p / c.width); n++;
      x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y); }
  return n ? { n, x0, x1, y0, y1 } : null; }"""


def test_a_project_whose_sessions_all_ended(bare: Served, page: Any) -> None:
    """Eleven sessions, all ended (the last a 20 s run): listed under "Ended", each row as the API gives
    it, eleven colours on the chart that the list's swatches repeat; then three new sessions at work."""
    from playwright.sync_api import expect

    lay = bare.layout
    now = clock.parse_iso(clock.iso()) or 0.0
    recs = []
    for n in range(11):
        start = now - (200 - n * 15) * 60
        seconds = 20 if n == 10 else 600 + n * 60
        # cc3's hooks left `pending` behind when it ended; the API says it waits for nothing.
        recs.append(
            record(
                lay,
                n,
                start=start,
                seconds=seconds,
                calls=10 + 7 * n,
                state=ENDED[n % 4],
                attention="pending" if n == 2 else None,
            )
        )
        spend(lay, recs[-1], start + seconds / 2, 0.1 + n / 10)
        spend(lay, recs[-1], start + seconds, 0.2 + n / 10)
    # cc4 asked a question, then its runtime exited: the question stays open.
    signals.ask_human(lay, "which schema, v1 or v2?", session="cc4")
    registry.update(lay, recs[3]["id"], lambda r: r.update({"state": "exited"}))
    given = {s["alias"]: s for s in api(bare, "/coding-sessions")["sessions"]}
    assert len(given) == 11 and not any(s["state"] in ("running", "paused", "idle") for s in given.values())
    assert (given["cc3"]["attention"], given["cc4"]["attention"]) == (None, "awaiting_decision")

    page.goto(f"{bare.url}/#token={bare.token}")
    expect(page.locator("#live")).to_have_text("live")
    note = page.locator("#sessions-note")
    expect(note).to_have_text("No session is at work now.")
    expect(page.locator("#show-ended")).to_have_text("▸ Ended: 11 sessions (show)")
    expect(page.locator("#show-ended")).to_have_attribute("aria-expanded", "false")
    expect(page.locator("#sessions tr[data-id]")).to_have_count(0)  # folded
    expect(page.locator("#chart-iterations canvas")).to_have_count(1)
    assert "No agent sessions recorded" not in page.locator("#sessions-card").inner_text()
    shot(page, "40-ended-sessions-folded")

    page.click("#show-ended")
    rows = page.locator("#ended-rows tr")
    expect(rows).to_have_count(11)
    expect(page.locator("#show-ended")).to_have_attribute("aria-expanded", "true")
    expect(page.locator("#active-rows tr")).to_have_count(0)
    shown = page.evaluate(
        "() => [...document.querySelectorAll('#ended-rows tr')].map((tr) => ({ alias: tr.dataset.alias, cls: "
        "tr.className, cells: [...tr.cells].slice(0, 4).map((td) => td.textContent), attn: "
        "tr.cells[3].classList.contains('attn'), swatch: "
        "getComputedStyle(tr.querySelector('.swatch')).backgroundColor }))"
    )
    assert [r["alias"] for r in shown] == list(given)
    for row in shown:
        s = given[row["alias"]]
        assert row["cells"] == [s["alias"], s["runtime"], s["state"], s["attention"] or ""], row
        assert row["attn"] == (s["attention"] is not None) and "ended" in row["cls"].split()
    assert not any("pending" in row["cells"][3] for row in shown)
    expect(page.locator('#ended-rows tr[data-alias="cc4"] td.attn')).to_have_text("awaiting_decision")
    page.locator("#sessions-card").screenshot(path=str(SHOTS / "41-ended-sessions-shown.png"))

    # Eleven series, eleven colours, each far from every other; the same on both charts and in the list.
    series = {kind: page.evaluate(SERIES, kind) for kind in ("iterations", "spend")}
    strokes = [s["stroke"] for s in series["iterations"]]
    assert [s["label"] for s in series["iterations"]] == list(given) and len(set(strokes)) == 11
    closest = min(math.dist(lab(a), lab(b)) for a, b in itertools.combinations(strokes, 2))
    assert closest >= 20, closest
    assert [s["stroke"] for s in series["spend"]] == strokes
    css = [
        page.evaluate(
            "(c) => { const x = document.createElement('canvas').getContext('2d'); x.fillStyle = c; "
            "return x.fillStyle; }",
            r["swatch"],
        )
        for r in shown
    ]
    assert css == strokes
    # Each run starts and ends where its session did; cc11's 20 s
    # run shows both its points as markers, inside the chart.
    cc11 = series["iterations"][10]
    assert [p["y"] for p in cc11["points"]] == [0, 80] and cc11["markers"] is True
    plot = page.evaluate(PLOT, "iterations")
    assert plot["min"] < plot["xs"][0] and plot["max"] > plot["xs"][1]
    right = plot["bbox"]["left"] + plot["bbox"]["width"]
    assert all(plot["bbox"]["left"] + 10 < p["left"] < right - 10 for p in cc11["points"])
    ink = page.evaluate(INK, ["iterations", cc11["stroke"]])
    assert ink is not None and ink["x1"] < right - 5 and ink["x1"] - ink["x0"] >= 6 and ink["y1"] - ink["y0"] > 40, ink
    page.locator("#charts").screenshot(path=str(SHOTS / "42-eleven-sessions-eleven-colours.png"))

    # Three sessions start: at work, listed first; the ended stay listed; the colours already given stay.
    for n in range(11, 14):
        registry.ensure(lay, "claude", f"00000000-aaaa-bbbb-cccc-{n:012d}", event="SessionStart")
    expect(page.locator("#active-rows tr")).to_have_count(3)
    expect(note).to_be_hidden()
    expect(page.locator("#show-ended")).to_have_text("▾ Ended: 11 sessions")
    page.wait_for_function("() => charts.iterations && charts.iterations.series.length === 15")
    more = [s["stroke"] for s in page.evaluate(SERIES, "iterations")]
    assert more[:11] == strokes and len(set(more)) == 14
    assert min(math.dist(lab(a), lab(b)) for a, b in itertools.combinations(more, 2)) >= 20
    shot(page, "43-three-at-work-eleven-ended")

    page.click("#show-ended")
    expect(page.locator("#ended-rows tr")).to_have_count(0)
    expect(page.locator("#show-ended")).to_have_text("▸ Ended: 11 sessions (show)")
    assert page.errors == []


def test_every_session_on_a_chart_has_a_colour_of_its_own(bare: Served, page: Any) -> None:
    """Forty sessions on one chart: forty colours; the first 36 (the palette) 20 or more apart (CIE76), the
    four past it dashed as well; and the page's colour rule gives 300 different colours in a row."""
    from playwright.sync_api import expect

    lay = bare.layout
    now = clock.parse_iso(clock.iso()) or 0.0
    for n in range(40):
        record(lay, n, start=now - 4000 + n * 60, seconds=50, calls=n + 1, state="exited")
    page.goto(f"{bare.url}/#token={bare.token}")
    expect(page.locator("#live")).to_have_text("live")
    expect(page.locator("#show-ended")).to_have_text("▸ Ended: 40 sessions (show)")
    page.wait_for_function("() => charts.iterations && charts.iterations.series.length === 41")
    series = page.evaluate(SERIES, "iterations")
    strokes = [s["stroke"] for s in series]
    assert [s["label"] for s in series] == [f"cc{n}" for n in range(1, 41)]
    assert len(set(strokes)) == 40
    closest = min(math.dist(lab(a), lab(b)) for a, b in itertools.combinations(strokes[:36], 2))
    assert closest >= 20, closest
    assert [bool(s["dash"]) for s in series] == [False] * 36 + [True] * 4
    page.locator("#charts").screenshot(path=str(SHOTS / "48-forty-sessions.png"))
    rule = page.evaluate(
        "() => { const x = document.createElement('canvas').getContext('2d');"
        " return Array.from({ length: 300 }, (_, i) => { x.fillStyle = '#000'; x.fillStyle = colourOf(i); "
        "return x.fillStyle; }); }"
    )
    assert rule[:40] == strokes and len(set(rule)) == 300
    assert page.errors == []


def test_no_session_at_all_is_said_plainly(bare: Served, page: Any) -> None:
    from playwright.sync_api import expect

    page.goto(f"{bare.url}/#token={bare.token}")
    expect(page.locator("#live")).to_have_text("live")
    expect(page.locator("#sessions-note")).to_have_text("No agent sessions recorded yet (the hooks record them).")
    expect(page.locator("#sessions")).to_be_hidden()
    expect(page.locator("#chart-iterations")).to_have_text("Tool calls per session: no data yet")
    expect(page.locator("#invert")).to_be_disabled()
    assert page.errors == []


def test_short_runs_are_drawn_inside_the_chart_with_their_points_marked(bare: Served, page: Any) -> None:
    """The only session ran for 20 s (two points) and spent once (one point): a segment across a good part of
    the chart and a marker in its middle, not a stroke on the edge."""
    from playwright.sync_api import expect

    lay = bare.layout
    now = clock.parse_iso(clock.iso()) or 0.0
    rec = record(lay, 0, start=now - 600, seconds=20, calls=12, state="exited")
    spend(lay, rec, now - 590, 0.05)

    page.goto(f"{bare.url}/#token={bare.token}")
    expect(page.locator("#live")).to_have_text("live")
    expect(page.locator("#chart-spend canvas")).to_have_count(1)
    runs = page.evaluate(SERIES, "iterations")
    assert len(runs) == 1 and runs[0]["markers"] is True and [p["y"] for p in runs[0]["points"]] == [0, 12]
    plot = page.evaluate(PLOT, "iterations")
    left, width = plot["bbox"]["left"], plot["bbox"]["width"]
    a, b = (p["left"] for p in runs[0]["points"])
    assert b - a >= 0.2 * width, (a, b, plot)
    assert left + 0.05 * width < a and b < left + 0.95 * width
    ink = page.evaluate(INK, ["iterations", runs[0]["stroke"]])
    assert ink is not None and ink["x1"] - ink["x0"] >= 0.2 * width, ink

    once = page.evaluate(SERIES, "spend")
    assert len(once) == 1 and once[0]["markers"] is True and len(once[0]["points"]) == 1
    plot = page.evaluate(PLOT, "spend")
    assert plot["min"] < plot["xs"][0] < plot["max"]
    mid = plot["bbox"]["left"] + plot["bbox"]["width"] / 2
    assert abs(once[0]["points"][0]["left"] - mid) < 2, (once, plot)
    ink = page.evaluate(INK, ["spend", once[0]["stroke"]])
    assert ink is not None and ink["n"] >= 20 and abs((ink["x0"] + ink["x1"]) / 2 - mid) < 3, ink  # a marker, drawn
    page.locator("#charts").screenshot(path=str(SHOTS / "44-short-runs.png"))
    assert page.errors == []


def test_the_indicator_says_connecting_before_the_first_event_and_offline_only_on_a_failure(
    bare: Served, page: Any
) -> None:
    from playwright.sync_api import expect

    record(bare.layout, 0, start=(clock.parse_iso(clock.iso()) or 0.0) - 300, seconds=60, calls=3, state="running")
    held: list[Any] = []
    released = False

    def hold(route: Any) -> None:  # the API answers nothing until released
        if released:
            route.continue_()
        else:
            held.append(route)

    page.route("**/api/v1/**", hold)
    page.goto(f"{bare.url}/#token={bare.token}")
    deadline = time.monotonic() + 15
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(50)  # Playwright hands the page's requests to `hold` while it waits
    assert held, "the page asked the API nothing"
    live = page.locator("#live")
    expect(live).to_have_text("connecting…")
    expect(live).to_have_class("pill wait")
    expect(page.locator("#sessions-note")).to_have_text("Loading the sessions…")
    expect(page.locator("#chart-iterations")).to_have_text("Tool calls per session: loading…")
    shot(page, "45-connecting")
    released = True
    for route in held:
        route.continue_()
    expect(live).to_have_text("live")
    expect(page.locator("#active-rows tr")).to_have_count(1)

    # The server goes away: the page lost a live stream, and says so.
    stop_server(bare)
    expect(live).to_have_text("reconnecting")
    expect(live).to_have_class("pill off")
    shot(page, "46-reconnecting")


def test_a_stream_that_cannot_be_opened_is_offline_until_it_opens(bare: Served, page: Any) -> None:
    from playwright.sync_api import expect

    page.route("**/api/v1/events", lambda route: route.abort())
    page.goto(f"{bare.url}/#token={bare.token}")
    live = page.locator("#live")
    expect(live).to_have_text("offline")
    expect(page.locator("#sessions-note")).to_have_text(
        "No agent sessions recorded yet (the hooks record them)."
    )  # the reads worked
    shot(page, "47-offline")
    page.unroute("**/api/v1/events")
    expect(live).to_have_text("live", timeout=30000)  # the browser tries again by itself


def test_a_collision_is_listed_and_marks_both_rows_while_both_sessions_live(bare: Served, page: Any) -> None:
    """cc1 and cc2 (running) change src/app.py: the API and the page list one collision and mark both rows; an
    edit arriving later (cc3's) shows without a reload; once cc1 has ended, only cc2 and cc3 collide."""
    from playwright.sync_api import expect

    from cocoplus.session import edits

    lay = bare.layout
    now = clock.parse_iso(clock.iso()) or 0.0
    recs = [record(lay, n, start=now - 600, seconds=60, calls=3, state="running") for n in range(3)]
    for rec in recs[:2]:
        edits.record(lay, rec["id"], [f"{lay.project}/src/app.py"], lay.project, lay.project)
    given = api(bare, "/coding-sessions")
    assert [c["message"] for c in given["collisions"]] == ["cc1 and cc2 both changed src/app.py"]
    assert {s["alias"]: [c["with"] for c in s["collides"]] for s in given["sessions"]} == {
        "cc1": ["cc2"], "cc2": ["cc1"], "cc3": [],
    }  # fmt: skip

    page.goto(f"{bare.url}/#token={bare.token}")
    expect(page.locator("#live")).to_have_text("live")
    listed = page.locator("#collisions li")
    expect(listed).to_have_text(["collision: cc1 and cc2 both changed src/app.py"])
    expect(page.locator("#sessions tr.collides")).to_have_count(2)
    expect(page.locator('#sessions tr[data-alias="cc1"]')).to_have_attribute("title", "collides: src/app.py (with cc2)")
    shot(page, "sessions-collision")
    # A third session changes the file: the page follows (the sessions' files changed) without a reload.
    edits.record(lay, recs[2]["id"], ["src/app.py"], lay.project, lay.project)
    expect(listed).to_have_count(3)
    # cc1 ends: it collides with nobody any more.
    registry.update(lay, recs[0]["id"], lambda r: r.update({"state": "exited"}))
    expect(listed).to_have_text(["collision: cc2 and cc3 both changed src/app.py"])
    expect(page.locator("#sessions tr.collides")).to_have_count(2)


def test_a_session_paused_by_a_limit_is_given_a_resume_time_from_the_page(bare: Served, page: Any) -> None:
    """An interactive session paused by its runtime's limit is never resumed by itself: the page's "resume at…"
    (the `session resume-at` route) schedules it, and the row then says when and by whom."""
    from playwright.sync_api import expect

    from cocoplus.session import limits

    lay = bare.layout
    now = time.time()
    rec = record(lay, 0, start=now - 600, seconds=60, calls=12, state="running")
    registry.update(lay, rec["id"], lambda r: limits.pause(r, {"reason": "usage limit", "resets_at": now + 7200}, 300))
    given = api(bare, "/coding-sessions")["sessions"][0]
    assert given["state"] == "paused" and given["limit"]["resume"] is None  # interactive: nothing scheduled
    asked: list[str] = []

    def answer(dialog: Any) -> None:
        asked.append(dialog.message)
        dialog.accept("+30m")

    page.remove_listener("dialog", page.accept_dialogs)
    page.on("dialog", answer)
    page.goto(f"{bare.url}/#token={bare.token}")
    row = page.locator("#active-rows tr", has_text="cc1")
    expect(row).to_contain_text("paused: usage limit, resets")
    row.get_by_role("button", name="resume at").click()
    expect(row.get_by_role("button", name="resume at")).to_be_enabled()
    limit = registry.read_record(lay, rec["id"])["limit"]  # type: ignore[index]
    assert limit["resume"] == "operator" and asked and "Resume cc1 at" in asked[0], (limit, asked)
    at = clock.parse_iso(limit["resume_at"])
    assert at is not None and now + 30 * 60 - 5 <= at <= time.time() + 30 * 60 + 5
    expect(row.locator("td").nth(2)).to_have_attribute("title", re.compile(r"resume at \d\d:\d\d \(operator\)"))
    shot(page, "resume-at")
    assert page.errors == []
