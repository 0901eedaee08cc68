"""One-tap answers: a token that performs exactly one action on one decision, signed, single-use, with an expiry.

A token is `<payload>.<mac>` in URL-safe base64, 42 characters (Telegram's
button data holds at most 64 bytes):

* payload (14 bytes): a version byte, the decision's handle (8 random bytes
  the inbox gave the decision, `store.handle_of`), the action's code (one
  byte: `ACTIONS`), and the expiry (unix seconds, 4 bytes);
* mac: the first 16 bytes of HMAC-SHA256 of the payload under this user's
  inbox key (`~/.config/cocoplus/inbox.key`, 32 random bytes, 0600, made on
  first use, never inside a project; `core.seal` reads and makes it as it
  does the seal key).

`check` answers what the direct link answers: `ok` (the decision and the
action), `tampered` (403: a flipped byte, a token of another user), `expired`
(410) or `used` (409: single-use: the first use of a token is recorded under
its hash, `store.spend`, until it expires, across restarts).  A token carries
no authority beyond its one action: "approve always" and a free-text answer
need a paired device on the decision page.  No file holds a live token: the
used ones are kept as hashes.  Standard library only.
"""

from __future__ import annotations

import base64
import hmac
import os
import time

from cocoplus.core import seal, userfiles

VERSION = 1
KEY_NAME = "inbox.key"
MAC_BYTES = 16
# The actions a token may name, and their one-byte codes (a decision's own actions are a subset).
ACTIONS = {
    "approve": b"a", "deny": b"d", "open": b"o", "resume": b"r", "leave": b"l", "stop": b"s", "later": b"t",
    "answer": b"q", "nudge": b"n", "raise": b"c", "failover": b"f",
}  # fmt: skip
_BY_CODE = {v: k for k, v in ACTIONS.items()}
MAX_TTL_S = 7 * 24 * 3600


class Checked:
    """What a presented token says: `status` (`ok`, `tampered`, `expired`, `used`), and for a well-signed one the
    decision's handle, the action and the expiry."""

    __slots__ = ("status", "handle", "action", "expires")

    def __init__(self, status: str, handle: str | None = None, action: str | None = None, expires: int = 0) -> None:
        self.status = status
        self.handle = handle
        self.action = action
        self.expires = expires

    @property
    def http_status(self) -> int:
        return {"ok": 200, "tampered": 403, "expired": 410, "used": 409}[self.status]


def key_file() -> str:
    return os.path.join(userfiles.directory(), KEY_NAME)


def _key(create: bool) -> bytes:
    return seal.secret(key_file(), "the inbox key", create=create)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def make(handle: str, action: str, expires: float) -> str:
    """The token for `action` on the decision whose handle is `handle` (16 hex digits), valid until `expires`."""
    if action not in ACTIONS:
        raise ValueError(f"no such action {action!r}")
    raw_handle = bytes.fromhex(handle)
    if len(raw_handle) != 8:
        raise ValueError("a handle is 8 bytes")
    until = int(min(expires, time.time() + MAX_TTL_S))
    payload = bytes([VERSION]) + raw_handle + ACTIONS[action] + until.to_bytes(4, "big")
    mac = hmac.new(_key(create=True), payload, "sha256").digest()[:MAC_BYTES]
    return f"{_b64(payload)}.{_b64(mac)}"


def read(token: str, now: float | None = None) -> Checked:
    """What `token` says, its signature and expiry checked (not yet whether it was used: `store.spend`)."""
    try:
        head, _, tail = token.strip().partition(".")
        payload, mac = _unb64(head), _unb64(tail)
    except (ValueError, UnicodeError):
        return Checked("tampered")
    if len(payload) != 14 or payload[0] != VERSION or len(mac) != MAC_BYTES:
        return Checked("tampered")
    try:
        secret = _key(create=False)
    except seal.KeyUnusable:
        return Checked("tampered")
    if not hmac.compare_digest(hmac.new(secret, payload, "sha256").digest()[:MAC_BYTES], mac):
        return Checked("tampered")
    action = _BY_CODE.get(payload[9:10])
    if action is None:
        return Checked("tampered")
    expires = int.from_bytes(payload[10:14], "big")
    handle = payload[1:9].hex()
    if (time.time() if now is None else now) >= expires:
        return Checked("expired", handle, action, expires)
    return Checked("ok", handle, action, expires)


def digest(token: str) -> str:
    """How a used token is remembered: its SHA-256, never the token."""
    import hashlib  # deferred: only a spent token is hashed

    return hashlib.sha256(token.strip().encode("utf-8", "surrogatepass")).hexdigest()
