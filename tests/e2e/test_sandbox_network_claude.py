"""A real Claude Code worker under the `workspace` sandbox with a limited network, against the scripted model
stand-in on the loopback (reached through the worker's proxy, at the URL it was given).

Under `none`, its shell cannot reach a loopback "registry" outside, directly or through the proxy, and the model
is told in the tool result. Under an allow list, a host off the list becomes an inbox decision; approved through
the inbox (`cocoplus decide`), the shell's retry gets through. Skipped with the doctor's reason where a sandbox
cannot be applied (tests/support/sandbox.py); on CI it must run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from cocoplus.core import jsonl
from cocoplus.core.paths import Layout
from cocoplus.session import permissions
from tests.e2e.conftest import Project, cocoplus, sandboxed
from tests.e2e.test_sandbox_claude import tool_results, worker_state
from tests.e2e.test_workers_claude import env_for
from tests.sandbox.test_network import Server
from tests.support.model_stubs import AnthropicStub, text, tool
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture
def proj(e2e_project: Project) -> Iterator[Project]:
    yield from sandboxed(e2e_project, "claude")


@pytest.fixture
def registry() -> Iterator[Server]:
    server = Server("registry-ok")
    yield server
    server.close()


def ended(p: Project, env: dict[str, str]) -> dict[str, Any]:
    return dict(wait_until(lambda: (x := worker_state(p, env))["state"] in ("exited", "failed") and x, timeout=180))


def test_under_none_its_shell_cannot_reach_a_loopback_registry_and_the_model_is_told(
    proj: Project, registry: Server
) -> None:
    p = proj
    url = f"http://127.0.0.1:{registry.port}/pkg"
    command = (
        f"curl -sS -m 10 {url}; echo DIRECT=$?; curl -sS -m 10 --noproxy '' -x \"$HTTP_PROXY\" {url}; echo PROXIED=$?"
    )
    with AnthropicStub([tool("Bash", command=command), text("done")]) as stub:
        env = env_for(p, stub)
        out = cocoplus(p.project, "launch", "claude", "Fetch the package.", "--sandbox", "workspace", "--network",
                       "none", "--allow", "Bash", "--json", env=env)  # fmt: skip
        assert json.loads(out.stdout)["network"] == "none"
        w = ended(p, env)
        results = tool_results(stub)
        listing = cocoplus(p.project, "workers", "list", env=env).stdout
    assert "workspace (network: none)" in listing, listing
    log = (p.root / "workers" / "w1" / "output.log").read_text()
    assert w["state"] == "exited", log  # the model endpoint was reached, through the proxy, at its own URL
    assert "DIRECT=7" in results, results  # its loopback is its own: nothing listens there
    assert "network is none" in results and "PROXIED=0" in results, results  # the proxy's 403, told to the model
    assert "registry-ok" not in results and registry.hits == 0
    assert permissions.requests(Layout(str(p.root)), state=None) == []


def test_under_an_allow_list_a_host_off_it_is_a_decision_and_the_retry_goes_through_once_approved(
    proj: Project, registry: Server
) -> None:
    p = proj
    layout = Layout(str(p.root))
    url = f"http://127.0.0.1:{registry.port}/pkg"
    # A client that gives up after 3 s and tries again, as package managers do.
    command = (
        "for i in $(seq 60); do "
        f"if curl -sSf -m 3 --noproxy '' -x \"$HTTP_PROXY\" {url}; then echo; echo FETCHED; break; fi; sleep 0.5; "
        "done"
    )
    with AnthropicStub([tool("Bash", command=command), text("done")]) as stub:
        env = env_for(p, stub)
        cocoplus(p.project, "launch", "claude", "Fetch the package.", "--sandbox", "workspace", "--network",
                 "pypi.org,*.npmjs.org", "--allow", "Bash", env=env)  # fmt: skip
        (req,) = wait_until(lambda: permissions.requests(layout), timeout=120)
        inbox = json.loads(cocoplus(p.project, "inbox", "--json", env=env).stdout)
        (d,) = [x for x in inbox["decisions"] if x["id"] == req["id"]]
        assert d["summary"] == "allow 127.0.0.1 for w1?" and d["default"] == "deny", d
        cocoplus(p.project, "decide", req["id"], "approve", env=env)
        w = ended(p, env)
        results = tool_results(stub)
    log = (p.root / "workers" / "w1" / "output.log").read_text()
    assert w["state"] == "exited", log
    assert "registry-ok" in results and "FETCHED" in results, results
    assert len(permissions.requests(layout, state=None)) == 1  # one decision for every try
    steps = [(r.get("state"), r.get("behavior"), r.get("principal"))
             for r in jsonl.read_jsonl(layout.permission_log).records if r.get("tool") == "Network"]  # fmt: skip
    assert steps == [("held", None, None), (None, "allowed", "operator")], steps
    timeline = cocoplus(p.project, "timeline", "--json", env=env).stdout
    assert "Network(127.0.0.1)" in timeline
