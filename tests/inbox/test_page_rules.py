"""The decision page's limits without a browser: where `serve --public` listens and which links it allows, a
protected path never approved "always" from the page, refused links rate-limited without naming anything, and
pairing with no public page."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from cocoplus.core.errors import UsageError
from cocoplus.core.paths import Layout
from cocoplus.inbox import site, store, tokens
from cocoplus.server import run
from cocoplus.session import permissions
from tests.hook.helpers import hook_argv, hook_env
from tests.inbox.test_decisions import two_projects  # noqa: F401 - the fixture
from tests.server.conftest import Served, start_server, stop_server
from tests.support import vouched
from tests.support.waiting import wait_until


@pytest.mark.parametrize(
    ("url", "flag", "bind", "port", "listens"),
    [
        ("https://box.tail1234.ts.net", False, None, None, ("127.0.0.1", 8765)),  # behind `tailscale serve`
        ("https://box.tail1234.ts.net", False, None, 9000, ("127.0.0.1", 9000)),
        ("http://box.tail1234.ts.net:8765", False, None, None, ("127.0.0.1", 8765)),  # the tailnet encrypts
        ("http://127.0.0.1:8123", False, None, 8123, ("127.0.0.1", 8123)),
        ("http://192.168.7.23:8080", True, None, None, ("192.168.7.23", 8080)),  # a LAN address: its own
        ("http://192.168.7.23:8080", True, "0.0.0.0", 8080, ("0.0.0.0", 8080)),
        ("https://tunnel.example.com", False, "::1", 0, ("::1", 0)),
    ],
)
def test_where_a_public_server_listens(
    url: str, flag: bool, bind: str | None, port: int | None, listens: tuple[str, int]
) -> None:
    pub = run.public_site(url, flag)
    assert pub is not None and run.bind_address(pub, bind, port) == listens
    assert site.link_safe(pub.url, insecure_ok=flag)


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://192.168.7.23:8080", "--insecure-http"),
        ("http://phone.example.com", "--insecure-http"),
        ("ftp://box.tail1234.ts.net", "https://"),
        ("https://box.tail1234.ts.net/inbox", "no path"),
        ("https://me:pw@box.tail1234.ts.net", "user or password"),
        ("https://", "no host"),
    ],
)
def test_a_public_url_that_would_leak_links_or_is_no_origin_is_refused_in_one_line(url: str, says: str) -> None:
    with pytest.raises(UsageError) as exc:
        run.public_site(url, False)
    assert says in exc.value.message and "\n" not in exc.value.message
    assert not site.link_safe(url)


def test_the_public_hosts_and_origin() -> None:
    pub = site.parse("https://Box.Tail1234.ts.net:443/")
    assert pub.url == "https://box.tail1234.ts.net"
    assert site.hosts(pub) == {"box.tail1234.ts.net", "box.tail1234.ts.net:443"}
    assert site.origin(pub) == "https://box.tail1234.ts.net"
    assert site.hosts(site.parse("http://[fd7a::1]:8080")) == {"[fd7a::1]:8080"}
    with pytest.raises(UsageError, match="its port"):
        run.bind_address(site.parse("http://192.168.7.23:8080"), None, 9000)


def test_pairing_needs_a_running_public_page_and_a_stale_one_is_not_used(
    two_projects: tuple[Layout, Layout],
) -> None:
    r = subprocess.run([sys.executable, "-m", "cocoplus", "inbox", "pair"], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "cocoplus serve --public" in r.stderr and "Traceback" not in r.stderr, r
    # A page recorded by a server that is gone (its process ended) gives no links.
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    store.write_page("https://box.tail1234.ts.net", False, "p")
    doc = json.loads(open(store.page_file()).read())
    doc.update(pid=dead.pid, start_ticks=None)
    with open(store.page_file(), "w") as fh:
        json.dump(doc, fh)
    assert store.page_url() is None
    # A plain-http LAN page recorded without --insecure-http (a file written by hand): no links either.
    store.write_page("http://192.168.7.23:8080", False, "p")
    assert store.page_url() is None
    store.write_page("http://192.168.7.23:8080", True, "p")
    assert store.page_url() == "http://192.168.7.23:8080"


@pytest.fixture
def protected_request(two_projects: tuple[Layout, Layout]) -> Iterator[tuple[Layout, subprocess.Popen[bytes]]]:
    """A headless worker asks to write the project's cocoplus.toml (a protected path): its real hook waits."""
    beta = two_projects[1]
    with open(os.path.join(beta.project, "cocoplus.toml"), "w") as fh:
        fh.write("[permissions]\nwait_s = 60\n")
    vouched.sealed_worker(beta, "w1", allow=[])
    argv = [*vouched.prefix("worker", beta.root, "w1"), *hook_argv("PermissionRequest", "claude", "--timeout", "90")]
    payload = {
        "session_id": "s-beta", "hook_event_name": "PermissionRequest", "cwd": beta.project,
        "permission_mode": "default", "tool_name": "Write",
        "tool_input": {"file_path": os.path.join(beta.project, "cocoplus.toml"), "content": "[permissions]\n"},
    }  # fmt: skip
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             cwd=beta.project, env=hook_env(beta, COCOPLUS_WORKER="w1"))  # fmt: skip
    assert child.stdin is not None
    child.stdin.write(json.dumps(payload).encode())
    child.stdin.close()
    wait_until(lambda: permissions.requests(beta), timeout=30)
    yield beta, child
    if child.poll() is None:
        child.kill()
        child.wait()


@pytest.fixture
def served(two_projects: tuple[Layout, Layout]) -> Iterator[Served]:
    s = start_server(two_projects[0])
    yield s
    stop_server(s)


def test_a_protected_path_is_never_approved_always_from_the_page(
    served: Served, protected_request: tuple[Layout, subprocess.Popen[bytes]]
) -> None:
    beta, hook = protected_request
    req = permissions.requests(beta)[0]
    url = f"{served.url}/api/v1/inbox/decisions/{req['id']}"
    shown = httpx.get(url, headers=served.auth).json()
    assert shown["decision"]["protected"] and shown["always"] is False  # the page offers no "Approve always"
    refused = httpx.post(url, json={"action": "approve", "always": True}, headers=served.auth)
    assert refused.status_code == 400 and "without --always" in refused.json()["error"], refused.text
    assert permissions.read_request(beta, req["id"])["state"] == "pending"  # type: ignore[index]
    once = httpx.post(url, json={"action": "approve"}, headers=served.auth)
    assert once.status_code == 200, once.text
    hook.wait(timeout=60)
    assert hook.stdout is not None
    assert json.loads(hook.stdout.read())["hookSpecificOutput"]["decision"]["behavior"] == "allow"
    assert permissions.user_rules(beta.project)["allow"] == []


def test_refused_links_say_nothing_and_are_rate_limited(
    served: Served, protected_request: tuple[Layout, subprocess.Popen[bytes]]
) -> None:
    beta, _hook = protected_request
    req = permissions.requests(beta)[0]
    good = tokens.make(store.handle_of(beta.root, req["id"]), "deny", time.time() + 600)
    bad = good[:-3] + ("A" if good[-3] != "A" else "B") + good[-2:]
    first = httpx.get(f"{served.url}/inbox/t/{bad}")
    assert first.status_code == 403 and req["id"] not in first.text and "cocoplus.toml" not in first.text
    codes = [httpx.post(f"{served.url}/inbox/t/{bad}x{i}", headers={"Accept": "application/json"}).status_code
             for i in range(40)]  # fmt: skip
    assert set(codes) <= {403, 429} and codes[-1] == 429, codes
    # Limited, even the good link waits (a guesser cannot use the minute); nothing was answered.
    assert httpx.post(f"{served.url}/inbox/t/{good}").status_code == 429
    assert permissions.read_request(beta, req["id"])["state"] == "pending"  # type: ignore[index]
    dead_pairing = httpx.get(f"{served.url}/inbox/pair/{'A' * 22}")
    assert dead_pairing.status_code == 429
