"""Pairing the operator's phone with the decision page: `cocoplus inbox pair` and `cocoplus inbox devices
[--revoke ID]` (inbox/devices.py says how a device is paired, kept and checked).

Only the operator at a terminal pairs and revokes (`configure`,
docs/authority.md): a device may answer every decision of every project of
this user, steer, stop workers and stop projects.
"""

from __future__ import annotations

from typing import Any

from cocoplus.core import clock
from cocoplus.core.errors import CocoplusError
from cocoplus.inbox import devices, store
from cocoplus.ops import authority
from cocoplus.ops.authority import Principal

NO_PAGE = (
    "no decision page is served for your phone: start `cocoplus serve --public https://…` (a Tailscale name or a "
    "TLS tunnel; docs/guides/phone.md), then pair again"
)


def pair(name: str = "phone", principal: Principal | None = None) -> dict[str, Any]:
    """A one-time pairing link (`<page>/inbox/pair/<code>`, valid `devices.PAIR_TTL_S` seconds) for a device
    called `name`; opening it on the phone gives the phone its device token."""
    authority.acting(principal, "configure", "inbox pair", None)
    base = store.page_url()
    if base is None:
        raise CocoplusError(NO_PAGE)
    code, expires = devices.new_pairing(name)
    return {
        "link": f"{base}/inbox/pair/{code}", "page": base, "name": devices.clean_name(name),
        "expires_at": clock.iso(expires), "expires_in_s": devices.PAIR_TTL_S,
    }  # fmt: skip


def listing(principal: Principal | None = None) -> dict[str, Any]:
    """Every paired device (id, name, when paired, when revoked), never its token."""
    authority.acting(principal, "configure", "inbox devices", None)
    return {"devices": devices.listing()}


def revoke(ident: str, principal: Principal | None = None) -> dict[str, Any]:
    """Revoke device `ident`: its cookie is refused from its next request on."""
    _who, by = authority.acting(principal, "configure", f"inbox devices --revoke {ident}", None)
    device = devices.revoke(ident, by)
    return {"device": device, "message": f"{device['id']} ({device['name']}) revoked: it can no longer reach the page"}
