"""Paired devices: the operator's phone, given a device token through a one-time pairing link.

* **Pairing.** `cocoplus inbox pair` makes a one-time code (`new_pairing`:
  128 random bits, URL-safe) and prints `<page>/inbox/pair/<code>` and its QR
  code.  The code is kept only as its SHA-256 (`pairing/<hash>.json`, with the
  device's name and the expiry: `PAIR_TTL_S`); opening the link shows what it
  does, and its button (a POST: link previewers only GET) redeems it
  (`redeem`): the file is removed first, so a code works once whatever races
  it, and an expired one never.
* **Devices.** A redeemed code makes a device: an id (`dv_…`), the name, when
  it was paired, and the SHA-256 of its device token (`devices.json`; the
  token itself goes only to the browser, as an HttpOnly cookie `COOKIE`).
  `check(token)` finds the device a cookie names; a revoked one (`revoke`) is
  refused from the next request on: the file is read on every request.

Per user, outside every project (`store.directory()`); no file holds a live
token or code.  Standard library only.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import time
from typing import Any

from cocoplus.core import clock, fsio
from cocoplus.core.errors import CocoplusError, NotFound, UsageError
from cocoplus.inbox import store

COOKIE = "cocoplus_device"
PAIR_TTL_S = 600
NAME_MAX = 60
_CODE = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{32,128}$")


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def _lock() -> str:
    return store.devices_file() + ".lock"


def clean_name(name: str | None) -> str:
    """A device's name as it is kept and shown: one printable line, at most NAME_MAX characters."""
    text = " ".join("".join(c for c in (name or "") if c.isprintable()).split())
    if not text:
        raise UsageError("a device needs a name (--name)")
    return text[:NAME_MAX]


# -- pairing codes ---------------------------------------------------------------------------------------------


def _code_file(code: str) -> str | None:
    return os.path.join(store.pairing_dir(), _digest(code) + ".json") if _CODE.match(code) else None


def new_pairing(name: str, ttl_s: float = PAIR_TTL_S) -> tuple[str, float]:
    """A one-time pairing code for a device called `name`, and when it expires (unix seconds)."""
    prune_pairings()
    code = secrets.token_urlsafe(16)
    expires = time.time() + ttl_s
    path = _code_file(code)
    assert path is not None
    fsio.ensure_dir(store.pairing_dir())
    doc = {"name": clean_name(name), "expires": expires, "created_at": clock.iso()}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fsio.write_all(fd, fsio.dumps(doc).encode(), path)
        os.fsync(fd)
    finally:
        os.close(fd)
    return code, expires


def pairing(code: str, now: float | None = None) -> dict[str, Any] | None:
    """What a pairing code is for ({"name", "expires"}), without using it; None when it is not a live code."""
    path = _code_file(code)
    if path is None:
        return None
    try:
        doc = fsio.read_json(path)
    except CocoplusError:
        return None
    if not isinstance(doc, dict) or float(doc.get("expires") or 0) <= (time.time() if now is None else now):
        return None
    return doc


def redeem(code: str) -> tuple[dict[str, Any], str] | None:
    """Use a pairing code: (the new device, its token), or None when the code is not live (used, expired, never
    made).  The code's file is removed before anything else: of two uses, one finds it gone."""
    doc = pairing(code)
    path = _code_file(code)
    if doc is None or path is None:
        return None
    try:
        os.unlink(path)
    except FileNotFoundError:
        return None  # the other use came first
    token = secrets.token_urlsafe(32)
    device = {"id": "dv_" + secrets.token_hex(4), "name": str(doc.get("name") or "a device"),
              "paired_at": clock.iso(), "revoked_at": None, "hash": _digest(token)}  # fmt: skip

    def add(current: dict[str, Any] | None) -> dict[str, Any]:
        found = list((current or {}).get("devices") or [])
        return {"devices": [*found, device]}

    fsio.ensure_dir(store.directory())
    fsio.locked_update(store.devices_file(), _lock(), add)
    return shown(device), token


def prune_pairings(now: float | None = None) -> int:
    """Remove codes that expired; how many."""
    folder = store.pairing_dir()
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    n = 0
    for name in names:
        path = os.path.join(folder, name)
        try:
            doc = fsio.read_json(path)
        except CocoplusError:
            continue
        if isinstance(doc, dict) and float(doc.get("expires") or 0) <= (time.time() if now is None else now):
            try:
                os.unlink(path)
                n += 1
            except OSError:
                pass
    return n


# -- devices ---------------------------------------------------------------------------------------------------


def shown(device: dict[str, Any]) -> dict[str, Any]:
    """A device as it is listed: never its token's hash."""
    return {k: device.get(k) for k in ("id", "name", "paired_at", "revoked_at", "revoked_by")}


def _all() -> list[dict[str, Any]]:
    doc = fsio.read_json(store.devices_file())
    found = (doc or {}).get("devices") if isinstance(doc, dict) else None
    return [d for d in found or [] if isinstance(d, dict)]


def listing() -> list[dict[str, Any]]:
    """Every device paired so far, the revoked ones too, oldest first."""
    return [shown(d) for d in _all()]


def revoke(ident: str, by: str) -> dict[str, Any]:
    """Revoke the device `ident`: its cookie is refused from the next request on."""
    hit: dict[str, Any] = {}

    def change(current: dict[str, Any] | None) -> dict[str, Any]:
        found = [d for d in (current or {}).get("devices") or [] if isinstance(d, dict)]
        for d in found:
            if d.get("id") == ident:
                if not d.get("revoked_at"):
                    d.update(revoked_at=clock.iso(), revoked_by=by)
                hit.update(d)
        return {"devices": found}

    if not os.path.exists(store.devices_file()):
        raise NotFound(f"no device {ident!r} (`cocoplus inbox devices` lists them)")
    fsio.locked_update(store.devices_file(), _lock(), change)
    if not hit:
        raise NotFound(f"no device {ident!r} (`cocoplus inbox devices` lists them)")
    return shown(hit)


def check(token: str | None) -> dict[str, Any] | None:
    """The paired, unrevoked device whose token this is, or None."""
    if not token or not _TOKEN.match(token):
        return None
    want = _digest(token)
    try:
        found = _all()
    except CocoplusError:
        return None
    for d in found:
        if hmac.compare_digest(str(d.get("hash") or ""), want) and not d.get("revoked_at"):
            return shown(d)
    return None
