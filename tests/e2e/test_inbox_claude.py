"""The decision inbox with the real Claude Code as a headless worker (`cocoplus launch claude`) against a scripted
model, a real `cocoplus inbox run` and the ntfy stand-in (tests/support/ntfy_stub.py) as the phone's server.

* a call a rule allows runs without a push; the next one no rule covers is pushed once with three buttons;
  Approve, posted to the reply topic as the ntfy app posts it, lets the tool run (the model sees its result), the
  push is followed up, and the same tap posted again changes nothing (the ledger says it was refused);
* a request nobody taps is denied at its deadline, the agent is told, and the push is followed up.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from cocoplus.core.paths import Layout
from cocoplus.session import permissions
from tests.e2e.conftest import Project
from tests.e2e.test_workers_claude import cli_json, env_for, proj, worker  # noqa: F401 - proj is a fixture
from tests.inbox.test_service import TOPIC, Service, ledger, ntfy, start, user_config  # noqa: F401 - fixtures
from tests.support.model_stubs import AnthropicStub, text, tool
from tests.support.ntfy_stub import NtfyStub
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e


def follow_ups(stub: NtfyStub, push: dict[str, object]) -> list[dict[str, object]]:
    return [m for m in stub.messages(TOPIC) if m.get("sequence_id") == push["id"]]


def test_a_rule_pushes_nothing_approve_from_the_phone_runs_the_tool_and_a_replay_is_refused(
    proj: Project, ntfy: NtfyStub, start: Callable[[], Service]
) -> None:
    p = proj
    ruled, asked = p.project / "ruled.txt", p.project / "asked.txt"
    (p.project / "cocoplus.toml").write_text("[permissions]\nwait_s = 300\n")
    user_config(ntfy)
    start()
    script = [tool("Bash", command=f"touch {ruled}"), tool("Bash", command=f"touch {asked}"), text("made both")]
    with AnthropicStub(script) as stub:
        env = env_for(p, stub)
        cli_json(p, env, "launch", "claude", "Make the files.", "--allow", f"Bash(touch {p.project}/ruled*)")
        # The first call is the rule's: it runs, and nothing waits.  The second waits and is pushed, alone.
        push = ntfy.wait_for_messages(TOPIC, 1, timeout=180)[0]
        req = permissions.requests(Layout(str(p.root)))[0]
        assert ruled.exists() and not asked.exists()
        assert req["rule"] == f"Bash(touch {asked})" and req["id"] in push["title"], (req, push)
        assert [a["label"] for a in push["actions"]] == ["Approve", "Deny", "Open"]
        assert [a["action"] for a in push["actions"]] == ["http", "http", "view"]
        assert len(ntfy.messages(TOPIC)) == 1 and len(permissions.requests(Layout(str(p.root)), state=None)) == 1
        # The phone posts Approve's body to the reply topic: the tool runs, and the model sees its result.
        status, _ = ntfy.tap(push, "Approve")
        assert status == 200
        done = wait_until(lambda: (w := worker(p, env, "w1"))["state"] in ("exited", "failed") and w, timeout=180)
        assert asked.exists(), "the approved tool did not run"
        assert done["state"] == "exited" and done["denied"] == 0, done
        assert len(stub.loop_requests) == 3  # the result of each call went back, and the model said it was done
        results = stub.tool_results()
        assert results == ["(Bash completed with no output)"], results  # both ran (the same text, kept once)
    decided = permissions.read_request(Layout(str(p.root)), req["id"])
    assert decided is not None and (decided["state"], decided["channel"], decided["by"]) == (
        "allowed", "phone:ntfy", "tester",
    )  # fmt: skip
    follow = wait_until(lambda: follow_ups(ntfy, push), timeout=60)
    assert "resolved: allowed by tester from ntfy" in str(follow[0]["message"]) and not follow[0].get("actions")
    # The same tap again: nothing changes, and the ledger says the token was used.
    ntfy.tap(push, "Approve")
    wait_until(lambda: [e for e in ledger("refused", req["id"]) if e.get("why") == "used"], timeout=60)
    assert permissions.read_request(Layout(str(p.root)), req["id"])["state"] == "allowed"  # type: ignore[index]
    assert len(ledger("answered", req["id"])) == 1 and len(ledger("accepted")) == 1
    assert len(ntfy.messages(TOPIC)) == 2  # the push and its follow-up: no second push, no second follow-up


def test_nobody_taps_the_default_denies_at_the_deadline_the_agent_is_told_and_the_push_followed_up(
    proj: Project, ntfy: NtfyStub, start: Callable[[], Service]
) -> None:
    p = proj
    side = p.project / "side_effect.txt"
    (p.project / "cocoplus.toml").write_text("[permissions]\nwait_s = 5\n")
    user_config(ntfy)
    start()
    with AnthropicStub([tool("Bash", command=f"touch {side}"), text("could not")]) as stub:
        env = env_for(p, stub)
        cli_json(p, env, "launch", "claude", "Make the file.")
        push = ntfy.wait_for_messages(TOPIC, 1, timeout=180)[0]
        assert "denies at " in push["message"] and "unless you answer" in push["message"]
        done = wait_until(lambda: (w := worker(p, env, "w1"))["state"] in ("exited", "failed") and w, timeout=180)
        told = json.dumps(stub.tool_results())
    assert not side.exists()
    assert "was denied by default: no one answered within 5 s" in told, told
    assert done["denied"] == 1, done
    follow = wait_until(lambda: follow_ups(ntfy, push), timeout=60)
    assert "denied at its deadline" in str(follow[0]["message"]) and not follow[0].get("actions")
    req = permissions.requests(Layout(str(p.root)), state=None)[0]
    assert req["state"] == "expired" and not ledger("answered")
    assert [e["channel"] for e in ledger("followed_up", req["id"])] == ["phone:ntfy"]
