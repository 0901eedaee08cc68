"""What a sandboxed worker may reach on the network: `[sandbox] network`, or `launch --network`.

* `all` (the default): the network as it is outside; the sandbox does not limit it.
* `none`: no host but the runtime's model endpoint (its adapter's `MODEL_ENDPOINTS`: the base URL variable it
  reads, such as ANTHROPIC_BASE_URL, else its vendor's address), reached through the worker's proxy.
* a list of hosts (`registry.npmjs.org`, `*.pypi.org`, `example.com:8443`): those and the model endpoint, through
  the proxy.  A host that is not on it becomes a decision in the inbox ("allow HOST for w3?"), with a deadline and
  a default of deny; approving it widens this worker's list for its run only.

Under a limited network the worker's sandbox has a network namespace of its own (`--unshare-net`): its loopback
is its own, and the only way out is its proxy (cocoplus/sandbox/netproxy.py, outside, run by its runner), through
a Unix socket mounted in.  The operator chooses, as for the profile: the command line decides, else the stronger
of the user's configuration and the project's (a project file may narrow the network, never widen it).
"""

from __future__ import annotations

import os
import urllib.parse
from typing import Any

from cocoplus import config as config_mod
from cocoplus.core.errors import UsageError
from cocoplus.core.paths import Layout
from cocoplus.runtimes import registry as runtimes

ALL = "all"
NONE = "none"
MAX_HOST = 253

Setting = str | list[str]  # ALL, NONE, or the hosts of an allow list


def _host_ok(entry: str) -> bool:
    host, _, port = entry.rpartition(":") if entry.count(":") == 1 else (entry, "", "")
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        return False
    name = host[2:] if host.startswith("*.") else host
    return 0 < len(name) <= MAX_HOST and all(c.isalnum() or c in "-._" for c in name) and not name.startswith(".")


def parse(value: Any, where: str) -> Setting:
    """A setting as given (`all`, `none`, a list of hosts, or a comma-separated text of them), checked; UsageError
    (one line, naming `where`) when it is none of those."""
    items = [x.strip() for x in value.split(",")] if isinstance(value, str) else value
    if not isinstance(items, list) or not items or not all(isinstance(x, str) and x.strip() for x in items):
        raise UsageError(f"{where}: expected all, none, or a list of hosts, got {value!r}")
    items = [x.strip().lower() for x in items]
    if items in ([ALL], [NONE]):
        return items[0]
    bad = [x for x in items if x in (ALL, NONE) or not _host_ok(x)]
    if bad:
        raise UsageError(
            f"{where}: {bad[0]!r} is not a host (a name such as registry.npmjs.org, *.pypi.org or example.com:8443; "
            "all or none alone)"
        )
    return list(dict.fromkeys(items))


def stronger(a: Setting, b: Setting) -> Setting:
    """The narrower of two settings: none, then a list (two lists: the hosts on both), then all."""
    if NONE in (a, b):
        return NONE
    if a == ALL:
        return b
    if b == ALL:
        return a
    both = [h for h in a if h in b]
    return both or NONE


def effective(layout: Layout, given: str | None = None, environ: dict[str, str] | None = None) -> Setting:
    """The network a worker launched now gets: `given` (the command line), else the stronger of the user's
    `[sandbox] network` and the project's."""
    if given is not None:
        return parse(given, "--network")
    user = parse(config_mod.load_user().get("sandbox.network"), "[sandbox] network (your configuration)")
    merged = parse(config_mod.load_for(layout, environ).get("sandbox.network"), "[sandbox] network")
    return stronger(user, merged)


def limited(setting: Any) -> bool:
    """Whether a worker's recorded setting limits its network (a record without one: all)."""
    return setting not in (None, ALL)


def shown(setting: Any) -> str:
    if isinstance(setting, list):
        return ", ".join(str(h) for h in setting)
    return str(setting or ALL)


def split(hostport: str, default_port: int) -> tuple[str, int]:
    """`host:port` (or `[v6]:port`, or a bare host) as (host, port)."""
    text = hostport.strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:
        host, _, port = text.partition(":")
    else:
        host, port = text, ""
    return host.lower().rstrip("."), int(port) if port.isdigit() else default_port


def model_urls(runtime: str, environ: dict[str, str]) -> list[str]:
    """The runtime's model addresses (its adapter's `MODEL_ENDPOINTS`): where a base URL variable it declares is set
    in `environ`, those it sets alone; else the vendor's (the API's, and the sign-in backends an entry without a
    variable names).  The one table both the proxy and srt allow."""
    declared = runtimes.get(runtime).MODEL_ENDPOINTS
    named = [environ[var] for var, _default in declared if var and environ.get(var)]
    return list(dict.fromkeys(named or [default for _var, default in declared]))


def endpoints(runtime: str, environ: dict[str, str]) -> list[tuple[str, int]]:
    """The runtime's model endpoints (host, port), from `model_urls`."""
    out = []
    for text in model_urls(runtime, environ):
        url = urllib.parse.urlsplit(text)
        if not url.hostname:
            continue
        port = url.port or (443 if url.scheme == "https" else 80)
        out.append((url.hostname.lower(), port))
    return list(dict.fromkeys(out))


def matches(entry: str, host: str, port: int) -> bool:
    """Whether an allow-list entry (`name`, `*.domain`, `name:port`) covers `host:port`."""
    name, _, want = entry.rpartition(":") if entry.count(":") == 1 else (entry, "", "")
    if want and int(want) != port:
        return False
    if name.startswith("*."):
        return host.endswith(name[1:]) and host != name[2:]
    return host == name


def well_formed(host: str) -> bool:
    """Whether `host` (as a request names it) is a host name, an IPv4 address or an IPv6 literal, and nothing else
    that a resolver might read otherwise (`evil.example@x.pypi.org`, spaces, control characters)."""
    if ":" in host:
        return all(c in "0123456789abcdef:." for c in host)
    return 0 < len(host) <= MAX_HOST and all(c.isascii() and (c.isalnum() or c in "-.") for c in host)


def allows(hosts: list[str], host: str, port: int) -> bool:
    return any(matches(h, host, port) for h in hosts)


def loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


FORWARD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "forward.py")
