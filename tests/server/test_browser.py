"""The page in headless Chromium (Debian's /usr/bin/chromium driven by Playwright) against a real
`cocoplus serve`: supervision switch, exclude and invert, kill switch and steer, the master-agent
conversation with its thinking line, failure and retry, and the "..." menu's pickers.
Screenshots go to test-output/server/."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cocoplus.core.paths import Layout
from cocoplus.core.shapes import SessionRecord
from tests.conftest import PASSWD_ENV
from tests.server.conftest import Served, wait_until, write_backend
from tests.support.trusting import trust_project

CHROMIUM = "/usr/bin/chromium"
SHOTS = Path(__file__).resolve().parents[2] / "test-output" / "server"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    # The browser and Playwright's driver need no password database of the test's (tests/conftest.py), and
    # Chromium does not start with nss_wrapper preloaded.
    for name in PASSWD_ENV:
        monkeypatch.delenv(name, raising=False)
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing: tests/e2e/runtimes/install.sh installs it")
        pytest.skip(f"{CHROMIUM} is missing (sh tests/e2e/runtimes/install.sh installs it)")
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    profile = tmp_path / "chromium-profile"  # a fresh --user-data-dir
    with sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=ARGS, viewport={"width": 1280, "height": 900}
        )
        try:
            pg = ctx.new_page()
            pg.set_default_timeout(15000)
            errors: list[str] = []
            pg.errors = errors  # type: ignore[attr-defined]
            pg.on("pageerror", lambda exc: errors.append(str(exc)))
            accept = lambda d: d.accept()  # noqa: E731 - the resume confirmation
            pg.on("dialog", accept)
            # A test that answers a prompt itself takes this one off.
            pg.accept_dialogs = accept  # type: ignore[attr-defined]
            yield pg
        finally:
            ctx.close()


def api(served: Served, path: str) -> Any:
    return httpx.get(served.url + "/api/v1" + path).json()


def shot(page: Any, name: str) -> None:
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def test_page_end_to_end(served: Served, page: Any) -> None:
    from playwright.sync_api import expect

    lay: Layout = served.layout
    cfg = Path(lay.config)
    cfg.write_text(cfg.read_text().replace('controller = "x"\n', 'controller = "x"\ndefault_model = "model-z"\n'))
    trust_project(lay)  # a changed file is trusted again (docs/guides/configuration.md, "Trust")

    page.goto(f"{served.url}/#token={served.token}")
    expect(page.locator("#live")).to_have_text("live")
    assert "token" not in page.url  # the fragment is taken off the address bar
    expect(page.locator("#token-banner")).to_be_hidden()
    expect(page.locator("#sessions tr[data-id]")).to_have_count(3)

    # The turn cap's default and bounds come from GET /api/v1/meta (the page writes none of them).
    expect(page.locator("#max-turns")).to_have_value("60")
    expect(page.locator("#max-turns")).to_have_attribute("max", "10000")

    # -- supervision on, with a goal and a turn cap
    page.fill("#task-hint", "keep the PR green until it merges")
    page.fill("#max-turns", "5")
    page.uncheck("#start-watcher")  # the API tests cover starting the watcher
    page.click("#supervision .switch")
    expect(page.locator("#turns")).to_have_text("0 / 5")
    expect(page.locator("#sup-switch")).to_be_checked()
    auto = api(served, "/session-os/main-brain/autonomous")["autonomous"]
    assert (auto["enabled"], auto["max_turns"], auto["task_hint"]) == (True, 5, "keep the PR green until it merges")

    # -- exclude cx1
    page.check('#sessions tr[data-alias="cx1"] input.exclude')
    expect(page.locator('#sessions tr[data-alias="cx1"]')).to_have_class("excluded")
    rows = {s["alias"]: s["excluded"] for s in api(served, "/coding-sessions")["sessions"]}
    assert rows == {"cc1": False, "cx1": True, "cc2": False}
    expect(page.locator("#scope")).to_contain_text("excluded: cx1")
    shot(page, "01-supervision-on-cx1-excluded")

    # -- a message: the thinking line at once, then the reply
    page.fill("#chat-input", "what is the state of the build?")
    page.click("#chat-send")
    expect(page.locator("#messages .msg.user")).to_contain_text("what is the state of the build?")
    expect(page.locator("#thinking")).to_be_visible()
    expect(page.locator("#thinking")).to_contain_text("thinking")
    shot(page, "02-thinking")
    reply = page.locator("#messages .msg.assistant").last
    expect(reply).to_contain_text("echo model=model-a effort=medium: what is the state of the build?", timeout=30000)
    expect(page.locator("#thinking")).to_be_hidden()
    shot(page, "03-reply")

    # -- the "..." menu: four items; pick a model, then an effort
    page.click("#menu-btn")
    expect(page.locator("#menu li")).to_have_text(["Model", "Reasoning effort", "Session info", "Refresh"])
    shot(page, "04-menu")
    page.click('#menu li[data-item="model"]')
    expect(page.locator("#picker")).to_be_visible()
    expect(page.locator("#picker-options label")).to_have_count(4)  # model-a, model-z, Other..., Use the default
    expect(page.locator('#picker-options input[value="__default__"]')).to_be_checked()
    page.check('#picker-options input[value="model-z"]')
    shot(page, "05-model-picker")
    page.click("#picker-save")
    expect(page.locator("#picker")).to_be_hidden()
    conv = api(served, "/projects/master-agent")
    assert conv["modelOverride"] == "model-z" and conv["reasoningEffortOverride"] is None
    assert json.loads(Path(lay.conversation_file("master-agent")).read_text())["modelOverride"] == "model-z"
    expect(page.locator("#chat-model")).to_contain_text("model-z")

    page.click("#menu-btn")
    page.click('#menu li[data-item="effort"]')
    expect(page.locator("#picker-options label")).to_have_count(4)  # low, medium, high, Use the default
    page.check('#picker-options input[value="high"]')
    page.click("#picker-save")
    expect(page.locator("#picker")).to_be_hidden()
    assert api(served, "/projects/master-agent")["reasoningEffortOverride"] == "high"
    # the picker shows the saved choice next time
    page.click("#menu-btn")
    page.click('#menu li[data-item="model"]')
    expect(page.locator('#picker-options input[value="model-z"]')).to_be_checked()
    page.click("#picker-cancel")

    page.click("#menu-btn")
    page.click('#menu li[data-item="info"]')
    expect(page.locator("#info")).to_be_visible()
    expect(page.locator("#info-list")).to_contain_text("model-z [conversation]")
    expect(page.locator("#info-list")).to_contain_text("high [conversation]")
    shot(page, "06-session-info")
    page.click("#info-close")
    page.click("#menu-btn")
    page.click('#menu li[data-item="refresh"]')
    expect(page.locator("#menu")).to_be_hidden()

    page.fill("#chat-input", "and now?")
    page.keyboard.press("Enter")
    expect(page.locator("#messages .msg.assistant").last).to_contain_text(
        "echo model=model-z effort=high: and now?", timeout=30000
    )

    # -- a failing backend: the failure line, then retry
    write_backend(lay, 0.2, fail=True)
    page.fill("#chat-input", "this one fails")
    page.click("#chat-send")
    expect(page.locator("#failed")).to_be_visible(timeout=30000)
    expect(page.locator("#failed-text")).to_contain_text("exited 3")
    shot(page, "07-failed")
    write_backend(lay, 0.2)
    page.click("#retry")
    expect(page.locator("#messages .msg.assistant").last).to_contain_text("this one fails", timeout=30000)
    expect(page.locator("#failed")).to_be_hidden()

    # -- kill switch and steer
    page.fill("#stop-reason", "release freeze")
    page.click("#stop-btn")
    expect(page.locator("#run-state")).to_have_text("STOPPED")
    expect(page.locator("#kill-state")).to_contain_text("release freeze")
    assert os.path.exists(lay.agent_stop)
    shot(page, "08-stopped")
    page.click("#resume-btn")
    expect(page.locator("#run-state")).to_have_text("running")
    assert not os.path.exists(lay.agent_stop)
    page.fill("#steer-text", "use the staging database")
    page.click("#steer-btn")
    expect(page.locator("#steer-state")).to_contain_text("use the staging database")
    assert Path(lay.steer).read_text() == "use the staging database\n"

    # -- invert the visible sessions
    page.click("#invert")
    expect(page.locator('#sessions tr[data-alias="cc1"]')).to_have_class("excluded")
    rows = {s["alias"]: s["excluded"] for s in api(served, "/coding-sessions")["sessions"]}
    assert rows == {"cc1": True, "cx1": False, "cc2": True}

    # -- live updates from changes made elsewhere (CLI and hooks), without reloading
    env = dict(os.environ, COCOPLUS_DIR=lay.root)
    subprocess.run(
        [sys.executable, "-m", "cocoplus", "session", "stop", "--reason", "stopped from a terminal"],
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    expect(page.locator("#kill-state")).to_contain_text("stopped from a terminal")
    from cocoplus.session import registry

    registry.ensure(lay, "gemini", "gemini-session-1", event="SessionStart")
    expect(page.locator('#sessions tr[data-alias="gm1"]')).to_have_count(1)
    # An ended session is folded under "Ended" (the active states come from the API), shown when unfolded.
    gm1 = registry.resolve(lay, "gm1")
    registry.update(lay, gm1["id"], lambda r: r.update({"state": "exited"}))
    expect(page.locator('#sessions tr[data-alias="gm1"]')).to_have_count(0)
    expect(page.locator("#show-ended")).to_have_text("▸ Ended: 1 session (show)")
    page.click("#show-ended")
    expect(page.locator('#ended-rows tr[data-alias="gm1"]')).to_have_count(1)
    expect(page.locator('#ended-rows tr[data-alias="gm1"]')).to_have_class(re.compile(r"\bended\b"))
    page.click("#show-ended")
    expect(page.locator('#sessions tr[data-alias="gm1"]')).to_have_count(0)
    subprocess.run(
        [sys.executable, "-m", "cocoplus", "supervision", "finish", "--summary", "done"],
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    expect(page.locator("#sup-switch")).not_to_be_checked()
    shot(page, "09-live-updates")

    # -- on again, then off, from the page
    page.click("#supervision .switch")
    expect(page.locator("#sup-switch")).to_be_checked()
    expect(page.locator("#sup-switch")).to_be_enabled()
    assert api(served, "/session-os/main-brain/autonomous")["autonomous"]["enabled"] is True
    page.click("#supervision .switch")
    expect(page.locator("#sup-state")).to_contain_text("off")
    expect(page.locator("#sup-switch")).not_to_be_checked()
    wait_until(lambda: api(served, "/session-os/main-brain/autonomous")["autonomous"]["enabled"] is False)

    assert page.errors == []


def test_page_without_the_token_is_read_only(served: Served, page: Any) -> None:
    from playwright.sync_api import expect

    page.goto(served.url + "/")
    expect(page.locator("#token-banner")).to_be_visible()
    expect(page.locator("#sessions tr[data-id]")).to_have_count(3)  # reads work
    page.click("#supervision .switch")
    expect(page.locator("#error-text")).to_contain_text("token")
    assert api(served, "/session-os/main-brain/autonomous")["autonomous"] is None
    expect(page.locator("#sup-switch")).not_to_be_checked()
    shot(page, "10-no-token")
    # pasting the token enables writes
    page.fill("#token-input", served.token)
    page.click("#token-form button")
    expect(page.locator("#token-banner")).to_be_hidden()
    page.click("#error-close")
    page.click("#supervision .switch")
    expect(page.locator("#sup-switch")).to_be_checked()
    wait_until(lambda: (api(served, "/session-os/main-brain/autonomous")["autonomous"] or {}).get("enabled"))
    assert page.errors == []


def test_charts_of_iterations_and_spend(served: Served, page: Any) -> None:
    """The page's charts (uPlot, served from the package) draw each session's iterations and spend,
    and take in new spend as it is recorded."""
    from playwright.sync_api import expect

    from cocoplus.core import clock, fsio, jsonl
    from cocoplus.session import registry

    lay: Layout = served.layout
    now = clock.parse_iso(clock.iso()) or 0.0
    recs = {r["alias"]: r for r in registry.list_sessions(lay)[0]}
    for alias, started, calls in (("cc1", 50, 64), ("cx1", 40, 23)):
        rec: SessionRecord = {
            **recs[alias], "started_at": clock.iso(now - started * 60), "last_event_at": clock.iso(now - 60),
            "tool_calls": calls,
        }  # fmt: skip
        fsio.atomic_write_json(lay.session_record(rec["id"]), rec)
    spend = [("cc1", 45, 0.42), ("cx1", 35, 0.2), ("cc1", 30, 0.9), ("cx1", 20, 0.3), ("cc1", 10, 1.6)]
    for alias, ago, usd in spend:
        jsonl.append_jsonl(
            lay.spend_log,
            {
                "ts": clock.iso(now - ago * 60),
                "kind": "usage",
                "session": recs[alias]["id"],
                "alias": alias,
                "usd": usd,
                "model": "m",
                "category": "execution",
            },
            lay.lock("spend"),
        )
    hist = api(served, "/history")
    cc1 = next(s for s in hist["sessions"] if s["alias"] == "cc1")
    assert [p[1] for p in cc1["spend"]] == [0.42, 1.32, 2.92] and [p[1] for p in cc1["iterations"]] == [0, 64]

    page.goto(f"{served.url}/#token={served.token}")
    expect(page.locator("#live")).to_have_text("live")
    for box in ("#chart-iterations", "#chart-spend"):
        expect(page.locator(f"{box} canvas")).to_have_count(1)
        expect(page.locator(f"{box} .u-legend")).to_contain_text("cc1")
        expect(page.locator(f"{box} .u-legend")).to_contain_text("cx1")
    # The lines are drawn: the canvas holds pixels in cc1's colour (the palette's first).
    drawn = page.evaluate(
        """() => { const c = document.querySelector('#chart-spend canvas');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 0; i < d.length; i += 4)
          if (Math.abs(d[i] - 0x2f) < 30 && Math.abs(d[i + 1] - 0x6f) < 30 && Math.abs(d[i + 2] - 0xdf) < 30
              && d[i + 3] > 200) n++;
        return n; }"""
    )
    assert drawn > 50, drawn
    page.locator("#charts").screenshot(path=str(SHOTS / "20-charts.png"))
    before = page.evaluate("() => charts.spend.data[0].length")
    jsonl.append_jsonl(
        lay.spend_log,
        {
            "ts": clock.iso(),
            "kind": "usage",
            "session": recs["cx1"]["id"],
            "alias": "cx1",
            "usd": 0.5,
            "model": "m",
            "category": "execution",
        },
        lay.lock("spend"),
    )
    page.wait_for_function(f"() => charts.spend && charts.spend.data[0].length > {before}")
    shot(page, "21-page-with-charts")
    assert page.errors == []


def test_page_shows_the_last_rounds_outcome_what_the_brain_did_and_how_to_undo_it(
    served: Served, page: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A round in which the brain stopped cc1, then failed: the page says so, with the reason and the undo."""
    from playwright.sync_api import expect

    from cocoplus.chat import worker
    from cocoplus.ops import authority
    from cocoplus.ops import session as session_ops
    from cocoplus.session import registry
    from cocoplus.supervision import autonomy, rounds
    from tests.server.conftest import write_backend

    lay: Layout = served.layout
    write_backend(lay, seconds=0, fail=True)
    autonomy.enable(lay, task_hint="keep the PR green")
    cc1 = registry.resolve(lay, "cc1")
    started = rounds.start_round(
        lay, [{"session": cc1["id"], "alias": "cc1", "kind": "attention", "value": "pending"}], start_worker=False
    )
    assert started["started"]
    monkeypatch.setenv("COCOPLUS_ROUND", str(started["round"]))  # as the round's backend runs with it
    # as the brain's MCP door does
    session_ops.stop_session(lay, "cc1", "the schema review first", principal=authority.BRAIN)
    monkeypatch.delenv("COCOPLUS_ROUND")
    worker.serve(lay, once=True)
    assert rounds.poll(lay, start_worker=False) == {"closed": started["round"]}

    page.goto(f"{served.url}/#token={served.token}")
    expect(page.locator("#live")).to_have_text("live")
    expect(page.locator("#round")).to_contain_text(f"last round: supervision round {started['round']} failed:")
    expect(page.locator("#round")).to_contain_text("backend exploded")
    expect(page.locator("#round")).to_have_class(re.compile(r"\bfailed\b"))
    action = page.locator("#round-actions li")
    expect(action).to_have_count(1)
    expect(action).to_contain_text("stop_session cc1")
    expect(action).to_contain_text(f"by the main brain, round {started['round']}")  # not the name of its user
    expect(action.locator("code")).to_have_text("cocoplus session resume --session cc1 --yes")
    expect(page.locator("#watcher")).to_have_text(
        "watcher NOT running: no round runs (`cocoplus supervision watcher run`)"
    )
    shot(page, "10-last-round-failed-with-its-action")
    assert page.errors == []
