"""The decision page's files, and the two kinds of link a phone opens without a login.

* `/inbox` and `/inbox/d/<id>`: the decision page (static/inbox.html; its script reads `/api/v1/inbox`, with a
  paired device's cookie or the server's token).
* `/inbox/t/<token>`: a direct link (inbox/tokens.py).  A GET never acts (link previewers fetch what a chat
  shows): it names the decision and the one action, with a button that POSTs.  The POST applies it
  (`answer.tap(token, "page")`): 200, 409 ("already resolved by … via … at …", or the link used), 403 (not a
  link cocoplus signed for you) or 410 (expired); a short page, or JSON for `Accept: application/json`.  An
  `open` link leads to the decision page.
* `/inbox/pair/<code>`: a pairing link (`cocoplus inbox pair`).  The GET says what pairing gives; its button
  POSTs, which uses the code (once) and gives this browser its device cookie (HttpOnly, SameSite=Strict, Secure
  over https).

The token or the code is the authority here, for exactly the one thing it names.  A refused one says nothing
about any decision; and past `FAILURES_PER_MINUTE` refused links (changed tokens, dead pairing codes) in a
minute, links are answered 429 until the minute has passed.
"""

from __future__ import annotations

import html
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response

from cocoplus.core import clock, inert
from cocoplus.core.paths import Layout
from cocoplus.inbox import decisions, devices, store, tokens
from cocoplus.ops import answer
from cocoplus.server.security import HTTPS

STATIC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "static")
FAILURES_PER_MINUTE = 30
COOKIE_MAX_AGE_S = 400 * 24 * 3600  # the longest a browser keeps a cookie
LINK_CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
LABELS = {"approve": "Approve", "deny": "Deny", "resume": "Resume", "leave": "Leave it as it is",
          "later": "Resume at the reset", "answer": "Answer", "stop": "Stop", "nudge": "Nudge"}  # fmt: skip

router = APIRouter()


class Limiter:
    """At most `most` refused links a minute, server-wide (every request through a proxy has the same address)."""

    def __init__(self, most: int = FAILURES_PER_MINUTE, window_s: float = 60.0) -> None:
        self.most = most
        self.window_s = window_s
        self.times: deque[float] = deque()
        self.lock = threading.Lock()

    def _purge(self, now: float) -> None:
        while self.times and now - self.times[0] > self.window_s:
            self.times.popleft()

    def blocked(self) -> bool:
        with self.lock:
            self._purge(time.monotonic())
            return len(self.times) >= self.most

    def note(self) -> None:
        with self.lock:
            self.times.append(time.monotonic())


LIMITER = Limiter()


def _static(name: str, media: str) -> Callable[[], FileResponse]:
    def handler() -> FileResponse:
        return FileResponse(os.path.join(STATIC, name), media_type=media)

    return handler


router.get("/inbox.js", include_in_schema=False)(_static("inbox.js", "text/javascript; charset=utf-8"))
router.get("/inbox.css", include_in_schema=False)(_static("inbox.css", "text/css; charset=utf-8"))


@router.get("/inbox", include_in_schema=False)
def inbox_page() -> FileResponse:
    """The decision page: every open decision of your projects, the workers, the panic button."""
    return FileResponse(os.path.join(STATIC, "inbox.html"), media_type="text/html; charset=utf-8")


@router.get("/inbox/d/{ident}", include_in_schema=False)
def decision_page(ident: str) -> FileResponse:
    """One decision on the decision page (its script reads the id from the address)."""
    return FileResponse(os.path.join(STATIC, "inbox.html"), media_type="text/html; charset=utf-8")


# -- the short pages ---------------------------------------------------------------------------------------------


def _e(value: Any) -> str:
    return html.escape(inert.text(value), quote=True)


def page(title: str, body: str, status: int = 200) -> HTMLResponse:
    """A short page of its own (no script): the link's answer, or its button.  Its referrer policy is
    `same-origin`, not the server's `no-referrer`: under that a browser posts the button's form with `Origin: null`,
    which the Origin check refuses; the address (with its token) still goes to no other site."""
    doc = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="referrer" content="same-origin"><title>{_e(title)} · cocoplus</title>'
        '<link rel="stylesheet" href="/inbox.css"></head>'
        f'<body class="link"><main class="card"><h1>{_e(title)}</h1>{body}</main></body></html>'
    )
    headers = {"content-security-policy": LINK_CSP, "referrer-policy": "same-origin"}
    return HTMLResponse(doc, status_code=status, headers=headers)


def _p(text: str, cls: str | None = None) -> str:
    return f'<p class="{cls}">{_e(text)}</p>' if cls else f"<p>{_e(text)}</p>"


def _when(iso: Any) -> str:
    at = clock.parse_iso(iso)
    return time.strftime("%H:%M %Z, %a %d %b", time.localtime(at)) if at is not None else ""


def _describe(d: dict[str, Any]) -> str:
    """The decision, as a link's page names it: project, summary, the full detail, and its default."""
    parts = [
        f'<p class="muted">{_e(decisions.project_name(d))} · {_e(d["kind"])} · <code>{_e(d["id"])}</code></p>',
        f'<p class="summary">{_e(d["summary"])}</p>',
    ]
    if d.get("detail"):
        parts.append(f"<pre>{_e(d['detail'])}</pre>")
    if d.get("deadline"):
        parts.append(_p(f"Unless you answer: {d['default']} at {_when(d['deadline'])}", "muted"))
    return "".join(parts)


def _refused(status: int) -> HTMLResponse:
    if status == 429:
        return page("Too many refused links", _p("Too many links were refused in the last minute: try again soon."),
                    429)  # fmt: skip
    return page("Not a valid link", _p("This link is not one cocoplus signed for you (changed, or another's)."), 403)


def _where(handle: str | None) -> tuple[Layout, dict[str, Any]] | None:
    where = store.decision_of(handle) if handle else None
    if where is None:
        return None
    lay = Layout(str(where["state_dir"]))
    d = decisions.find(lay, str(where["decision"]))
    return (lay, d) if d is not None else None


@router.get("/inbox/t/{token}", include_in_schema=False)
def get_link(token: str) -> Response:
    """A direct link's page: the decision and its one action, with a button; nothing is done."""
    if LIMITER.blocked():
        return _refused(429)
    checked = tokens.read(token)
    if checked.status == "tampered":
        LIMITER.note()
        return _refused(403)
    found = _where(checked.handle)
    if checked.status == "expired":
        return page("This link has expired", _p("Open the decision page to answer, if it still waits."), 410)
    if found is None:
        return page("Nothing to answer", _p("The decision this link answers is no longer known."), 410)
    _lay, d = found
    if checked.action == "open":
        return RedirectResponse(f"/inbox/d/{quote(d['id'])}", status_code=303)
    label = LABELS.get(str(checked.action), str(checked.action))
    if d["state"] != "open":
        from cocoplus.ops import inbox as inbox_ops  # deferred: the message of a decision already resolved

        return page("Already resolved", _describe(d) + _p(inbox_ops.already(d)["message"], "done"), 409)
    first = store.spent(tokens.digest(token))
    if first is not None:
        via = f" via {first['channel']}" if first.get("channel") else ""
        return page("Link used", _describe(d) + _p(f"This link was already used{via} at {first.get('at')}."), 409)
    form = f'<form method="post"><button type="submit" class="act {_e(checked.action)}">{_e(label)}</button></form>'
    return page(f"{label}?", _describe(d) + form)


@router.post("/inbox/t/{token}", include_in_schema=False)
def post_link(token: str, request: Request) -> Response:
    """A direct link's button: the one action, once (`answer.tap`, channel `page`)."""
    if LIMITER.blocked():
        return _json_or(request, {"status": "limited", "http": 429, "message": "too many refused links"},
                        _refused(429))  # fmt: skip
    got = answer.tap(token, "page")
    if got["status"] == "tampered":
        LIMITER.note()
    if got["status"] == "open":
        return RedirectResponse(f"/inbox/d/{quote(str(got['decision']))}", status_code=303)
    shown: dict[str, Any] = {k: got[k] for k in ("status", "http", "message", "decision", "action") if k in got}
    if got["status"] == "tampered":
        return _json_or(request, shown, _refused(403))
    title = {"ok": "Done", "used": "Link used", "already": "Already resolved", "expired": "This link has expired"}
    return _json_or(request, shown, page(title.get(got["status"], "Not done"), _p(got["message"]), got["http"]))


def _json_or(request: Request, body: dict[str, Any], html_page: HTMLResponse) -> Response:
    if "application/json" in request.headers.get("accept", ""):
        return JSONResponse(body, status_code=html_page.status_code)
    return html_page


# -- pairing -------------------------------------------------------------------------------------------------------


def _dead_pairing() -> HTMLResponse:
    return page("Not a pairing link",
                _p("This pairing link was used, has expired, or was never made: run `cocoplus inbox pair` again."),
                410)  # fmt: skip


@router.get("/inbox/pair/{code}", include_in_schema=False)
def get_pairing(code: str) -> Response:
    """A pairing link's page: what pairing gives, and its button; the code is not used yet."""
    if LIMITER.blocked():
        return _refused(429)
    doc = devices.pairing(code)
    if doc is None:
        LIMITER.note()
        return _dead_pairing()
    body = (
        _p(f"Pair this browser as \u201c{doc.get('name')}\u201d with cocoplus on {os.uname().nodename}?")
        + _p(
            "It will answer every decision of your projects, steer and stop workers, and stop a whole project. "
            "`cocoplus inbox devices --revoke ID` takes that back.",
            "muted",
        )  # fmt: skip
        + _p(f"This link works once, until {_when(clock.iso(float(doc['expires'])))}.", "muted")
        + '<form method="post"><button type="submit" class="act approve">Pair this device</button></form>'
    )
    return page("Pair this device", body)


@router.post("/inbox/pair/{code}", include_in_schema=False)
def post_pairing(code: str, request: Request) -> Response:
    """A pairing link's button: use the code (once) and give this browser its device cookie."""
    if LIMITER.blocked():
        return _json_or(request, {"error": "too many refused links"}, _refused(429))
    got = devices.redeem(code)
    if got is None:
        LIMITER.note()
        return _json_or(request, {"error": "this pairing link was used, has expired, or was never made"},
                        _dead_pairing())  # fmt: skip
    device, secret = got
    resp: Response
    if "application/json" in request.headers.get("accept", ""):
        resp = JSONResponse({"device": device})
    else:
        resp = RedirectResponse("/inbox", status_code=303)
    resp.set_cookie(devices.COOKIE, secret, max_age=COOKIE_MAX_AGE_S, path="/", httponly=True, samesite="strict",
                    secure=bool(request.scope.get(HTTPS)))  # fmt: skip
    return resp
