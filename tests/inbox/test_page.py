"""The decision page of a real `cocoplus serve --public URL`: direct links, pairing, paired devices, and the page in
headless Chromium with a phone's viewport (Playwright's "Pixel 7"), answering real waiting requests.

The public URL is a Tailscale name (`*.ts.net`) that Chromium resolves to loopback (`--host-resolver-rules`), so
every request carries the public Host and Origin, as through `tailscale serve`.  Screenshots go to docs/images/.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cocoplus.core import jsonl
from cocoplus.core.paths import Layout
from cocoplus.inbox import devices, store, tokens
from cocoplus.ops import worker as worker_ops
from cocoplus.session import killswitch, permissions, registry
from tests.conftest import PASSWD_ENV
from tests.inbox.test_decisions import two_projects, waiting_request  # noqa: F401 - fixtures
from tests.server.conftest import Served, start_server, stop_server
from tests.supervision.test_dispatch import live_process, session
from tests.support.waiting import wait_until

CHROMIUM = "/usr/bin/chromium"
HOST = "pixel-box.tail1234.ts.net"
SHOTS = Path(__file__).resolve().parents[2] / "test-output" / "inbox"
DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"  # with COCOPLUS_DOCS_IMAGES=1 only

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]  # a real Chromium and a real server in each
ENV: dict[str, str] = {}  # the environment of this user's cocoplus commands, as the server has it


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def public(two_projects: tuple[Layout, Layout]) -> Iterator[tuple[Served, str]]:
    """`cocoplus serve --public http://<tailnet name>:<port>` in project alpha; (the server, its public URL)."""
    port = free_port()
    url = f"http://{HOST}:{port}"
    ENV.clear()
    ENV.update(os.environ)  # the test's user (the phone fixture takes the password database away from Chromium)
    served = start_server(two_projects[0], "--port", str(port), "--public", url)
    wait_until(lambda: store.page_url() == url, timeout=30)
    yield served, url
    stop_server(served)


def via(url: str) -> httpx.Client:
    """An HTTP client that reaches the public URL on loopback, with the public Host header."""
    port = int(url.rsplit(":", 1)[1])
    return httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Host": url.split("//", 1)[1]}, timeout=30)


def pair(name: str = "pixel") -> tuple[str, str]:
    """`cocoplus inbox pair` as a process: (its output, the link it prints)."""
    r = subprocess.run([sys.executable, "-m", "cocoplus", "inbox", "pair", "--name", name], capture_output=True,
                       text=True, timeout=60, env=ENV)  # fmt: skip
    assert r.returncode == 0, r.stderr
    link = next(w for w in r.stdout.split() if "/inbox/pair/" in w)
    return r.stdout, link


def read_qr(terminal: str) -> list[str]:
    """Decode the QR code segno printed in half blocks (a space is two dark modules: it is drawn for a dark
    terminal) by redrawing it as pixels for zxing-cpp."""
    import zxingcpp

    halves = {" ": (1, 1), "\u2580": (0, 1), "\u2584": (1, 0), "\u2588": (0, 0)}
    lines = [ln for ln in terminal.split("\n") if ln and set(ln) <= set(halves)]
    rows: list[list[int]] = []
    for ln in lines:
        rows += [[halves[c][0] for c in ln], [halves[c][1] for c in ln]]
    scale, margin = 6, 4
    w, h = (len(rows[0]) + 2 * margin) * scale, (len(rows) + 2 * margin) * scale
    px = bytearray(b"\xff") * (w * h)
    for y, row in enumerate(rows):
        for x, dark in enumerate(row):
            if dark:
                for dy in range(scale):
                    at = ((y + margin) * scale + dy) * w + (x + margin) * scale
                    px[at : at + scale] = bytes(scale)
    return [r.text for r in zxingcpp.read_barcodes(memoryview(bytes(px)).cast("B", shape=[h, w]))]


@pytest.fixture
def phone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A function that opens a new phone (Pixel 7 emulation, its own cookies) in headless Chromium."""
    for name in PASSWD_ENV:
        monkeypatch.delenv(name, raising=False)
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is missing (sh tests/e2e/runtimes/install.sh installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", f"--host-resolver-rules=MAP {HOST} 127.0.0.1"],
        )  # fmt: skip
        device = {k: v for k, v in pw.devices["Pixel 7"].items() if k != "default_browser_type"}
        errors: list[str] = []

        def new(desktop: bool = False) -> Any:
            ctx = (
                browser.new_context(viewport={"width": 1280, "height": 900})
                if desktop
                else browser.new_context(**device)
            )
            pg = ctx.new_page()
            pg.set_default_timeout(20000)
            pg.on("pageerror", lambda exc: errors.append(str(exc)))
            return pg

        try:
            yield new
        finally:
            browser.close()
        assert errors == [], errors


def shot(pg: Any, name: str) -> None:
    """The phone's screen, as seen, under test-output/; the docs' copies are written again only when asked
    (`COCOPLUS_DOCS_IMAGES=1`), so a test run leaves the checkout as it was."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(SHOTS / f"inbox-{name}.png"))
    if os.environ.get("COCOPLUS_DOCS_IMAGES") == "1":
        pg.screenshot(path=str(DOCS_IMAGES / f"inbox-{name}.png"))


def test_a_paired_phone_answers_a_question_approves_always_and_stops_a_worker(
    public: tuple[Served, str],
    two_projects: tuple[Layout, Layout],
    waiting_request: tuple[Layout, subprocess.Popen[bytes]],
    phone: Any,
) -> None:
    from playwright.sync_api import expect

    served, url = public
    alpha, beta = two_projects
    _beta, hook = waiting_request
    req = permissions.requests(beta)[0]
    session(alpha, state="running", attention=None, process=live_process())
    asked = worker_ops.ask_human(alpha, "which database may I migrate?", session="cc1")
    question = f"q_{asked['message']['id']}"

    pg = phone()
    pg.goto(f"{url}/inbox")
    expect(pg.locator("#unpaired")).to_be_visible()  # nothing is shown before pairing
    expect(pg.locator("#decisions li")).to_have_count(0)

    # Pairing: the QR code encodes the printed link; opening it asks first (a GET pairs nothing), the button pairs.
    printed, link = pair("pixel")
    assert read_qr(printed) == [link] and link.startswith(f"{url}/inbox/pair/")
    pg.goto(link)
    expect(pg.locator("h1")).to_have_text("Pair this device")
    assert devices.listing() == []
    shot(pg, "pair")
    pg.click("button[type=submit]")
    expect(pg.locator(f'#decisions li[data-id="{req["id"]}"]')).to_be_visible()
    expect(pg.locator("#unpaired")).to_be_hidden()
    cookie = next(c for c in pg.context.cookies() if c["name"] == devices.COOKIE)
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    (device,) = devices.listing()
    assert device["name"] == "pixel" and device["revoked_at"] is None
    expect(pg.locator(f'#decisions li[data-id="{question}"]')).to_be_visible()
    expect(pg.locator('#workers li[data-worker="w1"]')).to_contain_text("running")
    expect(pg.locator("#service")).to_have_text("delivery off")
    shot(pg, "list")

    # The same pairing link, used again (another phone): refused.
    other = phone()
    other.goto(link)
    expect(other.locator("h1")).to_have_text("Not a pairing link")

    # A question answered with text: it reaches the worker (a steer for its next turn) and the decision resolves.
    pg.goto(f"{url}/inbox/d/{question}")
    expect(pg.locator("#d-summary")).to_contain_text("which database")
    pg.fill("#d-answer-text", "the staging one, never prod")
    shot(pg, "question")
    pg.click("#d-answer-btn")
    expect(pg.locator("#d-resolved")).to_contain_text("via page")
    assert registry.resolve(alpha, "cc1")["attention"] is None
    said = [m for m in jsonl.read_jsonl(alpha.ledger("master-agent")).records if m.get("answer_to")]
    assert [(m["answer_to"], m["text"]) for m in said] == [(asked["message"]["id"], "the staging one, never prod")]
    mtime = os.stat(store.presence_file()).st_mtime  # a key pressed on the page: the operator is at a screen
    assert time.time() - mtime < 120

    # A permission approved always: the waiting hook allows, and the rule is remembered (the operator's, via page).
    pg.goto(f"{url}/inbox/d/{req['id']}")
    expect(pg.locator("#d-summary")).to_contain_text("make deploy")
    shot(pg, "permission")
    pg.click('button[data-action="approve-always"]')
    expect(pg.locator("#d-resolved")).to_contain_text("via page")
    hook.wait(timeout=60)
    assert hook.stdout is not None
    assert json.loads(hook.stdout.read())["hookSpecificOutput"]["decision"]["behavior"] == "allow"
    decided = permissions.read_request(beta, req["id"])
    assert decided is not None and (decided["channel"], decided["principal"]) == ("page", "operator")
    assert any("make" in r for r in permissions.user_rules(beta.project)["allow"]), permissions.user_rules(beta.project)

    # Revoked: the phone's next request is refused.
    r = subprocess.run([sys.executable, "-m", "cocoplus", "inbox", "devices", "--revoke", device["id"]],
                       capture_output=True, text=True, timeout=60, env=ENV)  # fmt: skip
    assert r.returncode == 0 and "revoked" in r.stdout, r
    pg.reload()
    expect(pg.locator("#unpaired")).to_be_visible()
    with via(url) as c:
        assert c.get("/api/v1/inbox", headers={"Cookie": f"{devices.COOKIE}={cookie['value']}"}).status_code == 401


def test_a_paired_phone_stops_a_worker_and_the_whole_project(
    public: tuple[Served, str],
    two_projects: tuple[Layout, Layout],
    waiting_request: tuple[Layout, subprocess.Popen[bytes]],
    phone: Any,
) -> None:
    from playwright.sync_api import expect

    served, url = public
    alpha, beta = two_projects
    _beta, hook = waiting_request  # w1's runner waits in the permission hook
    req = permissions.requests(beta)[0]
    _printed, link = pair("tablet")
    pg = phone()
    pg.goto(link)
    pg.click("button[type=submit]")
    pg.goto(f"{url}/inbox/d/{req['id']}")
    expect(pg.locator("#d-stop")).to_have_text("Stop worker w1")
    pg.click("#d-stop")
    expect(pg.locator("#d-stop")).to_contain_text("Tap again")
    pg.click("#d-stop")
    expect(pg.locator("#notice")).to_be_visible()
    hook.wait(timeout=60)  # the worker's runner, and the hook below it, ended
    rec = json.loads(Path(beta.worker_record("w1")).read_text())
    assert rec["killed_by"] and rec["state"] != "running", rec
    shot(pg, "worker-stopped")

    # The panic button: two taps stop the whole project.
    pg.goto(f"{url}/inbox")
    button = pg.locator('button[data-panic="alpha"]')
    button.click()
    assert killswitch.read_stop(alpha) is None  # one tap arms it only
    button.click()
    wait_until(lambda: killswitch.read_stop(alpha) is not None, timeout=30)
    assert "panic button" in json.dumps(killswitch.read_stop(alpha))


@pytest.fixture
def local(two_projects: tuple[Layout, Layout]) -> Iterator[Served]:
    """`cocoplus serve` (loopback only) in project alpha, started before the phone fixture changes the environment."""
    served = start_server(two_projects[0])
    yield served
    stop_server(served)


def test_the_local_page_allows_a_waiting_request_and_lists_the_workers(
    local: Served,
    two_projects: tuple[Layout, Layout],
    waiting_request: tuple[Layout, subprocess.Popen[bytes]],
    phone: Any,
) -> None:
    """The server's main page (loopback, with its token) shows every project's open decisions with allow and deny,
    and the workers as `workers list` shows them."""
    from playwright.sync_api import expect

    beta = two_projects[1]  # the server runs in alpha: beta's request and worker are listed as well
    _beta, hook = waiting_request
    req = permissions.requests(beta)[0]
    served = local
    pg = phone(desktop=True)
    pg.goto(f"{served.url}/#token={served.token}")
    row = pg.locator(f'#inbox-rows li[data-id="{req["id"]}"]')
    expect(row).to_contain_text("make deploy")
    expect(pg.locator('#worker-rows tr[data-worker="w1"]')).to_contain_text("running")
    row.locator('button[data-action="approve"]').click()
    hook.wait(timeout=60)
    assert hook.stdout is not None
    assert json.loads(hook.stdout.read())["hookSpecificOutput"]["decision"]["behavior"] == "allow"
    decided = permissions.read_request(beta, req["id"])
    assert decided is not None and (decided["channel"], decided["principal"]) == ("page", "operator")
    expect(pg.locator("#inbox-rows")).to_contain_text("nothing waits for you")


def test_direct_links_act_once_on_post_only(
    public: tuple[Served, str],
    waiting_request: tuple[Layout, subprocess.Popen[bytes]],
    two_projects: tuple[Layout, Layout],
) -> None:
    served, url = public
    beta, hook = waiting_request
    alpha = two_projects[0]
    req = permissions.requests(beta)[0]
    handle = store.handle_of(beta.root, req["id"])
    approve = tokens.make(handle, "approve", time.time() + 600)
    flipped = approve[:-3] + ("A" if approve[-3] != "A" else "B") + approve[-2:]
    killswitch.auto_stop(alpha, "the cost budget is exhausted", source="cost-budget")
    stop_id = next(d["id"] for d in __import__("cocoplus.ops.inbox", fromlist=["x"]).inbox()["decisions"]
                   if d["kind"] == "stop")  # fmt: skip
    js = {"Accept": "application/json"}
    with via(url) as c:
        # A GET (a chat app's link preview) shows the decision and its button, and does nothing.
        for _ in range(3):
            page = c.get(f"/inbox/t/{approve}")
            assert page.status_code == 200 and "make deploy" in page.text and '<form method="post">' in page.text
        assert permissions.read_request(beta, req["id"])["state"] == "pending"  # type: ignore[index]
        # A token for decision A used as a credential for decision B: refused, B untouched.
        assert c.post(f"/api/v1/inbox/decisions/{stop_id}", json={"action": "resume"},
                      headers={"Authorization": f"Bearer {approve}"}).status_code == 401  # fmt: skip
        assert killswitch.read_stop(alpha) is not None
        assert c.post(f"/inbox/t/{flipped}", headers=js).status_code == 403
        expired = tokens.make(handle, "approve", time.time() - 1)
        assert c.post(f"/inbox/t/{expired}", headers=js).status_code == 410
        # A cross-origin form post: refused before the token is read.
        assert c.post(f"/inbox/t/{approve}", headers={"Origin": "https://evil.example"}).status_code == 403
        first = c.post(f"/inbox/t/{approve}", headers={**js, "Origin": url})
        assert first.status_code == 200 and first.json()["status"] == "ok", first.text
        hook.wait(timeout=60)
        assert hook.stdout is not None
        assert json.loads(hook.stdout.read())["hookSpecificOutput"]["decision"]["behavior"] == "allow"
        again = c.post(f"/inbox/t/{approve}")
        assert again.status_code == 409 and "already used via page" in again.text
        assert c.get(f"/inbox/t/{approve}").status_code == 409
        # An `open` link leads to the decision page, which needs a device or the token to read anything.
        opened = c.post(f"/inbox/t/{tokens.make(handle, 'open', time.time() + 600)}")
        assert opened.status_code == 303 and opened.headers["location"] == f"/inbox/d/{req['id']}"
        assert c.get(f"/inbox/d/{req['id']}").status_code == 200  # the page's file, no data in it
        assert c.get(f"/api/v1/inbox/decisions/{req['id']}").status_code == 401
        assert c.get("/api/v1/inbox").status_code == 401
        assert c.get("/api/v1/inbox", headers=served.auth).status_code == 200
        # Public mode: no MCP; a foreign Host is refused.
        assert c.post("/mcp", json={}, headers=served.auth).status_code in (403, 404)
        assert c.get("/inbox", headers={"Host": "evil.example"}).status_code == 403
        # A paired device's change needs the page's Origin (CSRF).
        _out, link = pair("laptop")
        paired = c.post("/inbox/pair/" + link.rsplit("/", 1)[1], headers={**js, "Origin": url})
        assert paired.status_code == 200
        device_cookie = {"Cookie": f"{devices.COOKIE}={paired.cookies[devices.COOKIE]}"}
        c.cookies.clear()  # each request below says what it carries
        assert c.post("/inbox/pair/" + link.rsplit("/", 1)[1], headers=js).status_code == 410  # used twice
        assert c.get("/api/v1/inbox", headers=device_cookie).status_code == 200
        body = {"action": "leave"}
        assert c.post(f"/api/v1/inbox/decisions/{stop_id}", json=body, headers=device_cookie).status_code == 403
        assert c.post(f"/api/v1/inbox/decisions/{stop_id}", json=body,
                      headers={**device_cookie, "Origin": "https://evil.example"}).status_code == 403  # fmt: skip
        ok = c.post(f"/api/v1/inbox/decisions/{stop_id}", json=body, headers={**device_cookie, "Origin": url})
        assert ok.status_code == 200, ok.text
        late = c.post(f"/api/v1/inbox/decisions/{stop_id}", json=body, headers={**device_cookie, "Origin": url})
        assert late.status_code == 409 and "via page" in late.json()["error"]


def test_public_plain_http_to_a_lan_address_needs_the_explicit_flag(two_projects: tuple[Layout, Layout]) -> None:
    r = subprocess.run([sys.executable, "-m", "cocoplus", "serve", "--public", "http://192.168.7.23:8080"],
                       cwd=two_projects[0].project, capture_output=True, text=True, timeout=60,
                       env={**os.environ, "COCOPLUS_DIR": two_projects[0].root})  # fmt: skip
    err = r.stderr.strip()
    assert r.returncode != 0 and "--insecure-http" in err and len(err.splitlines()) == 1, r
    assert "Traceback" not in r.stderr and store.page_url() is None


def waiting_hooks(beta: Layout, first: int, n: int) -> list[tuple[str, subprocess.Popen[bytes]]]:
    """`n` headless workers' permission requests in project beta, each one's real hook waiting (as the
    `waiting_request` fixture's): [(request id, hook)]."""
    from tests.hook.helpers import hook_argv, hook_env
    from tests.support import vouched

    hooks = []
    for i in range(first, first + n):
        wid = f"w{i}"
        vouched.sealed_worker(beta, wid, allow=[])
        hook = hook_argv("PermissionRequest", "claude", "--timeout", "120")
        argv = [*vouched.prefix("worker", beta.root, wid), *hook]
        payload = {
            "session_id": f"s-{wid}", "hook_event_name": "PermissionRequest", "cwd": beta.project,
            "permission_mode": "default", "tool_name": "Bash", "tool_input": {"command": f"make deploy-{i}"},
        }  # fmt: skip
        child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 cwd=beta.project, env=hook_env(beta, COCOPLUS_WORKER=wid))  # fmt: skip
        assert child.stdin is not None
        child.stdin.write(json.dumps(payload).encode())
        child.stdin.close()
        hooks.append((wid, child))

    def ids() -> list[str] | None:
        found = {r.get("worker"): r["id"] for r in permissions.requests(beta)}
        got = [found.get(wid) for wid, _ in hooks]
        return [str(g) for g in got] if all(got) else None

    got = wait_until(ids, timeout=120)
    return [(rid, child) for rid, (_cmd, child) in zip(got, hooks)]


RACER = """
import json, sys
from cocoplus.ops import answer
for line in sys.stdin:
    print(json.dumps(answer.tap(line.strip(), "phone:ntfy"), default=str), flush=True)
"""


def test_a_hundred_races_of_a_phone_approve_and_a_page_deny_resolve_each_once(
    public: tuple[Served, str],
    two_projects: tuple[Layout, Layout],
) -> None:
    """Each race: a waiting permission request, approved by the phone (its token, tapped in another process) and
    denied on the page (POST with the server's token) at once.  Exactly one wins, the hook gets that answer, and
    the other is told it was already resolved."""
    import threading

    served, url = public
    beta = two_projects[1]
    with open(os.path.join(beta.project, "cocoplus.toml"), "w") as fh:
        fh.write("[permissions]\nwait_s = 120\n")
    racer = subprocess.Popen([sys.executable, "-c", RACER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert racer.stdin is not None and racer.stdout is not None
    wins = {"phone": 0, "page": 0}
    try:
        with via(url) as c:
            for batch in range(10):
                for rid, hook in waiting_hooks(beta, 1 + batch * 10, 10):
                    token = tokens.make(store.handle_of(beta.root, rid), "approve", time.time() + 600)
                    box: dict[str, Any] = {}
                    go = threading.Event()

                    def page_deny(ident: str = rid) -> None:
                        go.wait()
                        box["page"] = c.post(f"/api/v1/inbox/decisions/{ident}", json={"action": "deny"},
                                             headers={**served.auth, "Origin": url})  # fmt: skip

                    t = threading.Thread(target=page_deny)
                    t.start()
                    go.set()
                    racer.stdin.write(token + "\n")
                    racer.stdin.flush()
                    phone_out = json.loads(racer.stdout.readline())
                    t.join(timeout=60)
                    page_resp = box["page"]
                    phone_won, page_won = phone_out["http"] == 200, page_resp.status_code == 200
                    assert phone_won != page_won, (rid, phone_out, page_resp.status_code, page_resp.text)
                    hook.wait(timeout=60)
                    assert hook.stdout is not None
                    behavior = json.loads(hook.stdout.read())["hookSpecificOutput"]["decision"]["behavior"]
                    decided = permissions.read_request(beta, rid)
                    assert decided is not None
                    if phone_won:
                        wins["phone"] += 1
                        assert page_resp.status_code == 409 and "via phone:ntfy" in page_resp.json()["error"]
                        assert (behavior, decided["channel"]) == ("allow", "phone:ntfy"), decided
                    else:
                        wins["page"] += 1
                        assert phone_out["http"] == 409 and "via page" in phone_out["message"], phone_out
                        assert (behavior, decided["channel"]) == ("deny", "page"), decided
    finally:
        racer.stdin.close()
        racer.wait(timeout=30)
    print(f"races won: {wins}")
    assert sum(wins.values()) == 100
