"""Permissions for workers no one is watching, with the real Claude Code CLI against a scripted model.

A worker `cocoplus launch` started runs `claude -p`: its permission prompts
reach cocoplus' PermissionRequest hook (they fire under `-p` too), which
decides by the operator's rules or waits for an answer:

* a request nobody's rule covers waits; `cocoplus approve` lets the tool run;
* one nobody answers is denied at `[permissions] wait_s`, the agent is told
  why, and the worker's record says how many calls were denied;
* `[permissions] allow` and `launch --allow` decide up front, `deny` refuses;
* a worker that runs `cocoplus session resume` in its own shell acts as that
  worker: the operator's stop stays.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core import clock
from cocoplus.core.paths import Layout
from cocoplus.session import registry
from tests.e2e.conftest import Project, cocoplus, trust_everywhere
from tests.e2e.test_workers_claude import cli_json, env_for, proj, worker  # noqa: F401 - proj is a fixture
from tests.support.model_stubs import AnthropicStub, text, tool
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e


def pending(p: Project, env: dict[str, str]) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = cli_json(p, env, "permissions", "list")["requests"]
    return got


def decisions(p: Project) -> list[dict[str, Any]]:
    path = p.root / "permissions" / "decisions.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def signals(p: Project) -> list[dict[str, Any]]:
    path = p.root / "supervision" / "signals.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


@pytest.fixture
def worker_proj(proj: Project) -> Iterator[Project]:
    yield proj


def test_a_worker_asks_the_operator_approves_and_the_tool_runs(worker_proj: Project) -> None:
    p = worker_proj
    side = p.project / "side_effect.txt"
    with AnthropicStub([tool("Bash", command=f"touch {side}"), text("made the file")]) as stub:
        env = env_for(p, stub)
        launched = cli_json(p, env, "launch", "claude", "Make the file.")
        assert launched["id"] == "w1"
        req = wait_until(lambda: pending(p, env), timeout=120)[0]
        assert req["tool"] == "Bash" and req["rule"] == f"Bash(touch {side})" and req["worker"] == "w1"
        assert not side.exists()  # it waits
        # The session awaits authorization, and said so (the brain is woken, the operator notified).
        sess = next(s for s in cli_json(p, env, "sessions", "list")["sessions"] if s["id"] == req["session"])
        assert sess["attention"] == "awaiting_authorization"
        assert any(s.get("kind") == "attention" and s.get("value") == "awaiting_authorization" for s in signals(p))
        out = cli_json(p, env, "approve", req["id"])
        assert out["state"] == "allowed" and out["principal"] == "operator" and "goes ahead" in out["message"]
        done = wait_until(lambda: (w := worker(p, env, "w1"))["state"] == "exited" and w, timeout=120)
        assert side.exists(), "the approved tool did not run"
        assert done["denied"] == 0
        # The tool's result reached the model after the approval.
        assert len(stub.loop_requests) == 2
    logged = decisions(p)
    assert [(d["request"], d["behavior"], d["how"], d["principal"]) for d in logged] == [
        (req["id"], "allowed", "answer", "operator")
    ]
    assert pending(p, env) == []
    # The log shows the call as the list did (its rule form), not the tool's input as JSON.
    assert logged[0]["call"] == req["rule"]
    shown = cocoplus(p.project, "permissions", "log", env=env).stdout
    assert req["rule"] in shown and '"command"' not in shown, shown


def test_a_request_answered_after_the_hooks_own_timeout_still_lets_the_tool_run(worker_proj: Project) -> None:
    """Claude Code kills a hook at the timeout install wrote: for the permission hook that is `[hooks] timeout_s`
    plus `[permissions] wait_s`, so an answer that takes longer than a usual hook still decides (before, the call
    was denied at timeout_s while `permissions list` still showed the request waiting)."""
    p = worker_proj
    (p.project / "cocoplus.toml").write_text("[hooks]\ntimeout_s = 4\n[permissions]\nwait_s = 120\n")
    p.cocoplus("install", "claude")
    side = p.project / "side_effect.txt"
    with AnthropicStub([tool("Bash", command=f"touch {side}"), text("made the file")]) as stub:
        env = env_for(p, stub)
        cli_json(p, env, "launch", "claude", "Make the file.")
        req = wait_until(lambda: pending(p, env), timeout=120)[0]
        asked = clock.parse_iso(req["created_at"])
        assert asked is not None
        wait_until(lambda: time.time() > asked + 4 + 3, timeout=30)  # the hook has outlived [hooks] timeout_s
        assert [r["id"] for r in pending(p, env)] == [req["id"]] and len(stub.loop_requests) == 1  # it still waits
        assert cli_json(p, env, "approve", req["id"])["state"] == "allowed"
        done = wait_until(lambda: (w := worker(p, env, "w1"))["state"] == "exited" and w, timeout=120)
        assert side.exists(), "the approved tool did not run"
        assert done["denied"] == 0 and len(stub.loop_requests) == 2


def test_an_unanswered_request_is_denied_at_its_deadline_and_the_agent_is_told(worker_proj: Project) -> None:
    p = worker_proj
    (p.project / "cocoplus.toml").write_text("[permissions]\nwait_s = 3\n")
    side = p.project / "side_effect.txt"
    with AnthropicStub([tool("Bash", command=f"touch {side}"), text("could not")]) as stub:
        env = env_for(p, stub)
        cli_json(p, env, "launch", "claude", "Make the file.")
        done = wait_until(lambda: (w := worker(p, env, "w1"))["state"] in ("exited", "failed") and w, timeout=180)
        told = json.dumps(stub.tool_results())
    assert not side.exists()
    assert "was denied by default: no one answered within 3 s" in told, told
    assert (
        done["state"] == "exited" and done["denied"] == 1 and "1 tool call(s) were denied permission" in done["reason"]
    )
    listing = cocoplus(p.project, "workers", "list", env=env).stdout
    assert "1 denied" in listing, listing
    assert [(d["behavior"], d["how"]) for d in decisions(p)] == [("expired", "deadline")]


def test_the_operators_rules_decide_without_asking(worker_proj: Project) -> None:
    p = worker_proj
    allowed, refused, for_worker = (p.project / n for n in ("allowed.txt", "refused.txt", "worker.txt"))
    (p.project / "cocoplus.toml").write_text(
        f'[permissions]\nallow = ["Bash(touch {allowed})"]\ndeny = ["Bash(touch {refused})"]\nwait_s = 60\n'
    )
    trust_everywhere(p)  # rules that grant authority apply only from a trusted file
    script = [
        tool("Bash", command=f"touch {allowed}"),
        tool("Bash", command=f"touch {refused}"),
        tool("Bash", command=f"touch {for_worker}"),
        text("done"),
    ]
    with AnthropicStub(script) as stub:
        env = env_for(p, stub)
        cli_json(p, env, "launch", "claude", "Make the files.", "--allow", f"Bash(touch {p.project}/worker*)")
        wait_until(lambda: (w := worker(p, env, "w1"))["state"] in ("exited", "failed") and w, timeout=180)
    assert allowed.exists() and for_worker.exists() and not refused.exists()
    assert pending(p, env) == [] and not any(d.get("how") == "answer" for d in decisions(p))


def test_an_untrusted_files_allow_rule_grants_nothing(worker_proj: Project) -> None:
    p = worker_proj
    side = p.project / "side_effect.txt"
    (p.project / "cocoplus.toml").write_text('[permissions]\nallow = ["Bash"]\nwait_s = 2\n')
    with AnthropicStub([tool("Bash", command=f"touch {side}"), text("no")]) as stub:
        env = env_for(p, stub)
        note = cocoplus(p.project, "launch", "claude", "Make the file.", env=env).stderr
        assert "[permissions] allow" in note and "not trusted" in note, note
        wait_until(lambda: (w := worker(p, env, "w1"))["state"] in ("exited", "failed") and w, timeout=180)
    assert not side.exists()


def test_a_worker_cannot_lift_a_stop_from_its_own_shell(worker_proj: Project) -> None:
    p = worker_proj
    layout = Layout(str(p.root))
    sibling, _ = registry.ensure(
        layout, "claude", "sibling-1", event="SessionStart", change=lambda r: r.update({"state": "running"})
    )
    command = f"{sys.executable} -m cocoplus session resume --session {sibling['alias']} --yes"
    with AnthropicStub([tool("Bash", command=command), text("tried")]) as stub:
        env = env_for(p, stub)
        cocoplus(p.project, "session", "stop", "--session", sibling["alias"], "--reason", "hold on", env=env)
        cli_json(p, env, "launch", "claude", "Carry on.", "--allow", "Bash")
        wait_until(lambda: (w := worker(p, env, "w1"))["state"] in ("exited", "failed") and w, timeout=180)
        told = json.dumps(stub.tool_results())
    assert "refused:" in told and "for the operator" in told, told
    assert Path(layout.session_stop(sibling["id"])).exists(), "the worker lifted the operator's stop"
    refusals = [json.loads(x) for x in Path(layout.authority_log).read_text().splitlines()]
    assert any(r["principal"] == "worker" and r["action"] == "resume" for r in refusals), refusals
