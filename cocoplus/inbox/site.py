"""Where the decision page is reached from outside: `cocoplus serve --public URL`, read and judged.

The URL is the address the operator's phone opens (a LAN address, a Tailscale
name, a tunnel the user runs).  It is an origin: `http` or `https`, a host,
perhaps a port, and no path, query, fragment or user.  What follows from it:

* **Host and Origin.** The server accepts the URL's host (with its port, and
  without it where the port is the scheme's own) as `Host`, and the URL's
  origin as `Origin`, beside its loopback names (`hosts`, `origin`).
* **Links that carry tokens** (direct links, pairing links) are made for it
  only when no one on the way can read them (`link_safe`): `https`, a
  loopback address, or a Tailscale name (`*.ts.net`: the tailnet encrypts
  every packet, WireGuard, even for plain http).  Plain http to any other
  address needs the operator's explicit `--insecure-http`.

Standard library only.
"""

from __future__ import annotations

import ipaddress
from typing import NamedTuple
from urllib.parse import urlsplit

from cocoplus.core.errors import UsageError

DEFAULT_PORTS = {"http": 80, "https": 443}
TAILNET_SUFFIX = ".ts.net"


class Public(NamedTuple):
    """A `--public` URL, taken apart: `url` is its normalised form (scheme://host[:port], no trailing slash)."""

    url: str
    scheme: str
    host: str  # lower case, without brackets for an IPv6 address
    port: int | None  # as written; None when the URL names none

    @property
    def netloc(self) -> str:
        name = f"[{self.host}]" if ":" in self.host else self.host
        return name if self.port is None else f"{name}:{self.port}"


def parse(url: str) -> Public:
    """Read a `--public` URL; UsageError (one line) when it is not an http(s) origin."""
    text = url.strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise UsageError(f"--public {text}: not a URL ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise UsageError(f"--public {text}: the URL must start with https:// (or http://)")
    host = (parts.hostname or "").lower()
    if not host:
        raise UsageError(f"--public {text}: the URL names no host")
    if parts.username or parts.password:
        raise UsageError(f"--public {text}: the URL must not carry a user or password")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise UsageError(f"--public {text}: give the server's origin only (scheme, host, port), no path")
    if port == DEFAULT_PORTS[scheme]:
        port = None
    p = Public("", scheme, host, port)
    return p._replace(url=f"{scheme}://{p.netloc}")


def ip_of(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def is_loopback(host: str) -> bool:
    ip = ip_of(host)
    return host == "localhost" or (ip is not None and ip.is_loopback)


def is_tailnet(host: str) -> bool:
    return host.endswith(TAILNET_SUFFIX) and len(host) > len(TAILNET_SUFFIX)


def needs_insecure_flag(p: Public) -> bool:
    """Whether links over this URL would travel readable: plain http to an address other than loopback or a
    Tailscale name."""
    return p.scheme == "http" and not is_loopback(p.host) and not is_tailnet(p.host)


def link_safe(url: str, insecure_ok: bool = False) -> bool:
    """Whether links carrying tokens may be made for `url` (`insecure_ok`: the operator said `--insecure-http`)."""
    try:
        p = parse(url)
    except UsageError:
        return False
    return insecure_ok or not needs_insecure_flag(p)


def hosts(p: Public) -> frozenset[str]:
    """The `Host` header values a request through `p` carries: the URL's host with its port, and without it where
    it is the scheme's own (browsers leave the default port out; some proxies write it)."""
    name = f"[{p.host}]" if ":" in p.host else p.host
    if p.port is None:
        return frozenset({name, f"{name}:{DEFAULT_PORTS[p.scheme]}"})
    return frozenset({f"{name}:{p.port}"})


def origin(p: Public) -> str:
    """The `Origin` a browser sends from a page of `p` (the default port left out)."""
    return p.url
