"""The decision inbox's core: every record that waits for a person read as a decision of one shape, listed across
all this user's projects, and answered with `cocoplus decide` (the same operation every door of the inbox calls).

The permission request is written and waited for by the real permission hook, below a process cocoplus vouches for
as the worker's runner (tests/support/vouched.py); the rest by the operations that write them.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from cocoplus.ops import inbox as inbox_ops
from cocoplus.ops import worker as worker_ops
from cocoplus.session import agents, killswitch, permissions
from cocoplus.session.workspace import init
from tests.conftest import Result
from tests.hook.helpers import hook_argv, hook_env
from tests.supervision.test_dispatch import live_process, session
from tests.support import vouched
from tests.support.waiting import wait_until


@pytest.fixture
def two_projects(tmp_path: Path) -> tuple[Layout, Layout]:
    out = []
    for name in ("alpha", "beta"):
        d = tmp_path / name
        d.mkdir()
        init(str(d / ".cocoplus"))
        agents.register_project(str(d / ".cocoplus"))
        out.append(Layout(str(d / ".cocoplus")))
    return out[0], out[1]


@pytest.fixture
def waiting_request(two_projects: tuple[Layout, Layout]) -> Iterator[tuple[Layout, subprocess.Popen[bytes]]]:
    """A headless worker's permission request in project beta, its real hook waiting for the answer."""
    beta = two_projects[1]
    child = ask_permission(beta, {})
    yield beta, child
    if child.poll() is None:
        child.kill()
        child.wait()


def ask_permission(beta: Layout, extra: dict[str, Any]) -> subprocess.Popen[bytes]:
    """Worker w1's real PermissionRequest hook in `beta` (payload fields `extra` added), waiting for an answer."""
    with open(os.path.join(beta.project, "cocoplus.toml"), "w") as fh:
        fh.write("[permissions]\nwait_s = 60\n")
    vouched.sealed_worker(beta, "w1", allow=[])
    argv = [*vouched.prefix("worker", beta.root, "w1"), *hook_argv("PermissionRequest", "claude", "--timeout", "90")]
    payload = {
        "session_id": "s-beta", "hook_event_name": "PermissionRequest", "cwd": beta.project,
        "permission_mode": "default", "tool_name": "Bash", "tool_input": {"command": "make deploy"}, **extra,
    }  # fmt: skip
    child = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=beta.project,
        env=hook_env(beta, COCOPLUS_WORKER="w1"),
    )  # fmt: skip
    assert child.stdin is not None
    child.stdin.write(json.dumps(payload).encode())
    child.stdin.close()
    wait_until(lambda: permissions.requests(beta), timeout=30)
    return child


def test_a_request_from_a_workers_own_subagent_shows_under_its_worker(
    two_projects: tuple[Layout, Layout], cli: Callable[..., Result]
) -> None:
    """Claude Code's payload names the subagent that asks (`agent_id`, `agent_type`): the request is its worker's."""
    beta = two_projects[1]
    child = ask_permission(beta, {"agent_id": "a7f3", "agent_type": "Explore"})
    try:
        (req,) = [d for d in inbox_ops.inbox()["decisions"] if d["kind"] == "permission"]
        assert (req["worker"], req["agent"]) == ("w1", "Explore"), req
        shown = cli("inbox", cwd=beta.project).out
        line = next(ln for ln in shown.splitlines() if req["id"] in ln)
        assert "cc1 w1/Explore" in line, shown
    finally:
        child.kill()
        child.wait()


def test_the_inbox_lists_what_waits_in_every_project(
    two_projects: tuple[Layout, Layout],
    waiting_request: tuple[Layout, subprocess.Popen[bytes]],
    cli: Callable[..., Result],
) -> None:
    alpha, beta = two_projects
    session(alpha, state="running", process=live_process())
    asked = worker_ops.ask_human(alpha, "may I drop the staging table?", session="cc1")
    killswitch.auto_stop(alpha, "the iteration cap (5 tool calls) is reached", source="iteration-budget")
    listed = inbox_ops.inbox()["decisions"]
    kinds = sorted((d["kind"], os.path.basename(d["project"])) for d in listed)
    assert kinds == [("permission", "beta"), ("question", "alpha"), ("stop", "alpha")], listed
    req = next(d for d in listed if d["kind"] == "permission")
    assert req["actions"] == ["approve", "deny"] and req["default"] == "deny" and req["deadline"]
    assert "make deploy" in req["summary"] and req["worker"] == "w1" and req["state"] == "open"
    q = next(d for d in listed if d["kind"] == "question")
    assert q["id"] == f"q_{asked['message']['id']}" and "staging table" in q["summary"]
    # The terminal's view, run from neither project.
    r = cli("inbox", cwd=str(Path(alpha.project).parent))
    code, out = r.code, r.out
    assert code == 0 and req["id"] in out and q["id"] in out and "beta" in out and "alpha" in out, out


def test_decide_approves_a_waiting_request_and_the_tool_goes_ahead(
    waiting_request: tuple[Layout, subprocess.Popen[bytes]], cli: Callable[..., Result]
) -> None:
    beta, child = waiting_request
    req = permissions.requests(beta)[0]
    r = cli("decide", req["id"], "approve", cwd=beta.project)
    assert r.code == 0 and "goes ahead" in r.out, r
    assert child.stdout is not None
    child.wait(timeout=30)
    answer = child.stdout.read()
    assert json.loads(answer)["hookSpecificOutput"]["decision"]["behavior"] == "allow"
    decided = permissions.read_request(beta, req["id"])
    assert decided is not None and (decided["state"], decided["channel"], decided["principal"]) == (
        "allowed", "cli", "operator",
    )  # fmt: skip
    # Asked again: already resolved, by whom, through which channel.
    again = inbox_ops.decide(req["id"], "deny")
    assert again["already_decided"] and "already resolved" in again["message"] and "via cli" in again["message"]


def test_a_question_is_answered_and_leaving_a_stop_resolves_it(two_projects: tuple[Layout, Layout]) -> None:
    alpha = two_projects[0]
    session(alpha, state="running", process=live_process())
    asked = worker_ops.ask_human(alpha, "which database?", session="cc1")
    out = inbox_ops.decide(f"q_{asked['message']['id']}", "answer", text="the staging one", layout=alpha,
                           channel="page")  # fmt: skip
    assert out["route"] and "reaches cc1" in out["message"]
    answered = inbox_ops.find(f"q_{asked['message']['id']}", alpha)[1]
    assert (answered["state"], answered["channel"]) == ("resolved", "page")  # the door it came through is kept
    killswitch.auto_stop(alpha, "the runaway-loop guard saw the same call 6 times", source="loop-guard")
    stop = next(d for d in inbox_ops.inbox()["decisions"] if d["kind"] == "stop")
    assert stop["stopped_by"] == "loop-guard"
    inbox_ops.decide(stop["id"], "leave", channel="top")
    assert killswitch.read_stop(alpha) is not None  # left as it is
    assert all(d["id"] != stop["id"] for d in inbox_ops.inbox()["decisions"])
    resolved = [d for d in inbox_ops.inbox(state="resolved")["decisions"] if d["id"] == stop["id"]]
    assert resolved and resolved[0]["channel"] == "top"


def test_a_stop_a_person_made_is_not_a_question_and_a_worker_may_not_decide(
    two_projects: tuple[Layout, Layout],
) -> None:
    from cocoplus.core.errors import Refused
    from cocoplus.ops import authority

    alpha = two_projects[0]
    killswitch.stop(alpha, "alice", "release freeze")
    assert [d for d in inbox_ops.inbox()["decisions"] if d["kind"] == "stop"] == []
    killswitch.resume(alpha, "alice")
    killswitch.auto_stop(alpha, "the cost budget is exhausted", source="cost-budget")
    stop = next(d for d in inbox_ops.inbox()["decisions"] if d["kind"] == "stop")
    with pytest.raises(Refused, match="for the operator"):
        inbox_ops.decide(stop["id"], "resume", principal=authority.worker("cc1"))
    out = inbox_ops.decide(stop["id"], "resume")
    assert killswitch.read_stop(alpha) is None and "lifted" in out["message"]


def test_a_token_answers_once_and_a_changed_or_expired_one_is_refused(
    waiting_request: tuple[Layout, subprocess.Popen[bytes]],
) -> None:
    import time

    from cocoplus.inbox import store, tokens
    from cocoplus.ops import answer

    beta, child = waiting_request
    req = permissions.requests(beta)[0]
    handle = store.handle_of(beta.root, req["id"])
    approve = tokens.make(handle, "approve", time.time() + 600)
    deny = tokens.make(handle, "deny", time.time() + 600)
    flipped = approve[:-3] + ("A" if approve[-3] != "A" else "B") + approve[-2:]
    assert answer.tap(flipped, "phone:ntfy")["http"] == 403
    assert answer.tap(tokens.make(handle, "approve", time.time() - 1), "phone:ntfy")["http"] == 410
    assert answer.tap(tokens.make(handle, "open", time.time() + 600), "phone:ntfy")["status"] == "open"
    first = answer.tap(approve, "phone:ntfy")
    assert (first["status"], first["http"]) == ("ok", 200), first
    child.wait(timeout=30)
    assert child.stdout is not None
    assert json.loads(child.stdout.read())["hookSpecificOutput"]["decision"]["behavior"] == "allow"
    decided = permissions.read_request(beta, req["id"])
    assert decided is not None and (decided["channel"], decided["principal"]) == ("phone:ntfy", "operator")
    again = answer.tap(approve, "phone:telegram")
    assert (again["status"], again["http"]) == ("used", 409) and "via phone:ntfy" in again["message"], again
    late = answer.tap(deny, "page")
    assert (late["status"], late["http"]) == ("already", 409) and "via phone:ntfy" in late["message"], late
    events = [(e["channel"], e["event"], e.get("why")) for e in store.ledger() if e["decision"] == req["id"]]
    assert ("phone:ntfy", "answered", None) in events and ("phone:telegram", "refused", "used") in events
