"""The authority model, line by line as docs/authority.md states it (each test names its line).

Principals: the operator (a person: the CLI at a terminal, the page, `top`),
the main brain (its controller, MCP role brain), workers (their hooks, MCP
role worker, a `cocoplus` command run inside an agent's session), and
cocoplus itself (budget, loop-guard, watcher).  Real processes wherever a
door is involved: the CLI as a child process, with and without an agent's
environment, and under a stand-in runtime whose process cocoplus recorded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core import seal
from cocoplus.core.errors import Refused
from cocoplus.core.paths import Layout
from cocoplus.core.shapes import PermissionRequest, SessionRecord
from cocoplus.ops import authority
from cocoplus.ops import dispatch as dispatch_ops
from cocoplus.ops import permissions as permissions_ops
from cocoplus.ops import session as session_ops
from cocoplus.ops import worker as worker_ops
from cocoplus.ops import workers as workers_ops
from cocoplus.session import killswitch, permissions, procinfo, registry, stops
from tests.conftest import run_cli_subprocess
from tests.support.typed import present
from tests.support.waiting import wait_until

BRAIN = authority.BRAIN
OPERATOR = authority.operator("alice")
WORKER = authority.worker("cc2")


def refusals(layout: Layout) -> list[dict[str, Any]]:
    path = Path(layout.authority_log)
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture
def two(project: Layout) -> dict[str, SessionRecord]:
    out = {}
    for rid in ("s-one", "s-two"):
        rec, _ = registry.ensure(
            project, "claude", rid, event="SessionStart", change=lambda r: r.update({"state": "running"})
        )
        out[rec["alias"]] = rec
    return out


# -- the operator -------------------------------------------------------------------------------------


def test_the_operator_may_take_every_action_even_with_the_kill_switch_on(project: Layout) -> None:
    killswitch.stop(project, "carol", "everything stops")
    for action in authority.RULES:
        authority.require(authority.operator("carol"), action, action, project)  # refused would raise Refused
    # ...which no other principal may: each kind lacks at least one action (the brain, for one, `configure`).
    for kind in ("brain", "worker", "watcher", "budget", "loop-guard"):
        assert any(kind not in kinds for kinds in authority.RULES.values()), kind


def test_operator_lifts_every_stop_whoever_made_it(project: Layout) -> None:
    """operator: stops and resumes the project and any session, and lifts a stop made by anyone."""
    for principal, source in (("brain", "operator"), ("budget", "iteration-budget"), ("loop-guard", "loop-guard")):
        killswitch.create_stop(project, "cocoplus", "why", source=source, principal=principal)
        out = session_ops.resume(project, principal=OPERATOR)
        assert out["resumed"] is True and out["removed"]["principal"] == principal


# -- the main brain -----------------------------------------------------------------------------------


def test_brain_lifts_only_the_stops_the_brain_made(project: Layout, two: dict[str, Any]) -> None:
    """brain: lifts only stops the brain made; an operator's or a budget's is the operator's to lift."""
    session_ops.stop_session(project, "cc1", "the brain pauses it", principal=BRAIN)
    assert session_ops.resume_session(project, "cc1", principal=BRAIN)["resumed"] is True
    session_ops.stop_session(project, "cc2", "hold on", principal=OPERATOR)
    with pytest.raises(Refused) as caught:
        session_ops.resume_session(project, "cc2", principal=BRAIN)
    assert "made by the operator: only the operator may lift it" in str(caught.value) and "ask_human" in str(
        caught.value
    )
    assert os.path.exists(project.session_stop(two["cc2"]["id"]))
    killswitch.create_stop(project, "cocoplus", "budget exhausted", source="cost-budget")
    with pytest.raises(Refused, match="made by a budget: only the operator may lift it"):
        session_ops.resume(project, principal=BRAIN)
    assert killswitch.stop_present(project)
    assert [(r["principal"], r["action"], r["outcome"]) for r in refusals(project)] == [
        ("brain", "resume", "refused")
    ] * 2


def test_brain_is_refused_what_the_kill_switch_forbids(project: Layout, two: dict[str, Any]) -> None:
    """brain: while AGENT_STOP exists (or cannot be read) it may only look, stop, deny and finish."""
    session_ops.stop(project, "freeze", principal=OPERATOR)
    with pytest.raises(Refused, match="refused to the main brain while the kill switch is on"):
        dispatch_ops.dispatch(project, "cc1", "go on", principal=BRAIN)
    with pytest.raises(Refused, match="refused to the main brain while the kill switch is on"):
        workers_ops.launch(project, "claude", "a task", principal=BRAIN)
    with pytest.raises(Refused, match="refused to the main brain"):
        session_ops.steer_session(project, "cc1", "hurry", principal=BRAIN)
    assert session_ops.stop_session(project, "cc2", "and this one", principal=BRAIN)["stopped"] is True
    assert not os.path.exists(project.session_steer(two["cc1"]["id"]))


def test_brain_allows_a_permission_only_within_brain_may_allow(project: Layout, two: dict[str, Any]) -> None:
    """brain: answers a permission request with allow only within [permissions] brain_may_allow (a trusted key);
    never adds a standing rule; may deny."""
    from tests.support.trusting import trust_project

    def request(command: str) -> PermissionRequest:
        return permissions.open_request(
            project, two["cc1"], runtime="claude", tool="Bash", tool_input={"command": command}, wait_s=60, worker=None
        )

    Path(project.config).write_text('[permissions]\nbrain_may_allow = ["Bash(pytest *)"]\n')
    trust_project(project)
    ok = request("pytest -q tests")
    assert permissions_ops.approve(project, ok["id"], principal=BRAIN)["state"] == "allowed"
    no = request("rm -rf build")
    with pytest.raises(Refused, match="brain_may_allow does not cover it; the operator may allow it"):
        permissions_ops.approve(project, no["id"], principal=BRAIN)
    with pytest.raises(Refused, match="a standing rule is for the operator"):
        permissions_ops.approve(project, request("pytest -x")["id"], always=True, principal=BRAIN)
    assert permissions_ops.deny(project, no["id"], "not now", principal=BRAIN)["state"] == "denied"
    log = [(d["request"], d["behavior"], d["principal"]) for d in permissions_ops.log(project)["decisions"]]
    assert log == [(ok["id"], "allowed", "brain"), (no["id"], "denied", "brain")]


def test_brain_may_allow_from_an_untrusted_file_covers_nothing(project: Layout, two: dict[str, Any]) -> None:
    """repository: keys that grant authority take effect only from a trusted file."""
    Path(project.config).write_text('[permissions]\nbrain_may_allow = ["Bash"]\n')
    req = permissions.open_request(
        project, two["cc1"], runtime="claude", tool="Bash", tool_input={"command": "ls"}, wait_s=60, worker=None
    )
    with pytest.raises(Refused, match="brain_may_allow does not cover it"):
        permissions_ops.approve(project, req["id"], principal=BRAIN)


def test_only_the_operator_grants_a_worker_permissions_at_launch(project: Layout) -> None:
    """operator: `launch --allow`; the brain launches workers but grants them nothing."""
    with pytest.raises(Refused, match="granting a worker permissions is for the operator"):
        workers_ops.launch(project, "claude", "a task", allow=["Bash"], principal=BRAIN)


# -- workers ------------------------------------------------------------------------------------------


def test_workers_report_and_do_nothing_else(project: Layout, two: dict[str, Any]) -> None:
    """worker: report_progress, notify_blocked, ask_human, request_context; nothing else."""
    assert worker_ops.report_progress(project, "working", "on it", session="cc2", principal=WORKER)["alias"] == "cc2"
    assert worker_ops.request_context(project, "the plan", session="cc2", principal=WORKER)["alias"] == "cc2"
    session_ops.stop_session(project, "cc1", "hold on", principal=OPERATOR)
    refused = {
        "session stop": lambda: session_ops.stop_session(project, "cc1", "x", principal=WORKER),
        "session resume": lambda: session_ops.resume_session(project, "cc1", principal=WORKER),
        "dispatch": lambda: dispatch_ops.dispatch(project, "cc1", "x", principal=WORKER),
        "launch": lambda: workers_ops.launch(project, "claude", "x", principal=WORKER),
    }
    for name, act in refused.items():
        with pytest.raises(Refused) as caught:
            act()
        assert "is for the operator" in str(caught.value) and "not the worker session cc2" in str(caught.value), name
    assert len(refusals(project)) == len(refused)


@pytest.mark.parametrize("marker", ["CLAUDECODE", "CODEX_THREAD_ID", "GEMINI_SESSION_ID", "COCOPLUS_WORKER"])
def test_a_command_run_inside_an_agents_session_acts_as_that_worker(
    project: Layout, two: dict[str, Any], marker: str
) -> None:
    """worker: a `cocoplus` command with a runtime's markers in its environment acts as a worker."""
    run_cli_subprocess("session", "stop", "--session", "cc1", "--reason", "hold on", cwd=project.project)
    r = run_cli_subprocess("session", "resume", "--session", "cc1", "--yes", cwd=project.project, env={marker: "1"})
    assert r.code == 1 and r.err.startswith("cocoplus: error: refused: cocoplus session resume is for the operator"), (
        r.err
    )
    assert len(r.err.strip().splitlines()) == 1 and "Traceback" not in r.err
    assert os.path.exists(project.session_stop(two["cc1"]["id"]))
    assert refusals(project)[-1]["recognised_by"].startswith("environment:")
    # Reading is everyone's.
    assert run_cli_subprocess("sessions", "list", cwd=project.project, env={marker: "1"}).code == 0


def test_a_command_whose_ancestor_is_a_recorded_runtime_acts_as_a_worker(
    project: Layout, two: dict[str, Any], tmp_path: Path
) -> None:
    """worker: recognised from the process ancestry cocoplus recorded for its sessions, with every marker removed."""
    go, out = tmp_path / "go", tmp_path / "out.json"
    runtime = tmp_path / "bin" / "claude"  # a stand-in runtime: its command line runs `claude`, as a real one's does
    runtime.parent.mkdir()
    runtime.write_text(
        textwrap.dedent(f"""\
        import json, os, subprocess, sys, time
        while not os.path.exists({str(go)!r}):
            time.sleep(0.02)
        env = {{k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "COCOPLUS_"))}}
        r = subprocess.run([sys.executable, "-m", "cocoplus", "session", "resume", "--session", "cc1", "--yes"],
                           cwd={project.project!r}, env=env, capture_output=True, text=True)
        open({str(out)!r}, "w").write(json.dumps([r.returncode, r.stderr]))
    """)
    )
    run_cli_subprocess("session", "stop", "--session", "cc1", "--reason", "hold on", cwd=project.project)
    child = subprocess.Popen([sys.executable, str(runtime)], env=dict(os.environ))
    try:
        argv = wait_until(lambda: procinfo.argv_of(child.pid))  # its command line, once the kernel shows it
        proc = {"pid": child.pid, "start_ticks": procinfo.start_ticks(child.pid), "argv": argv}
        registry.update(project, two["cc2"]["id"], lambda r: r.update({"process": proc}))
        go.write_text("")
        code, err = json.loads(wait_until(lambda: out.exists() and out.read_text()))
    finally:
        child.wait(30)
    assert (
        code == 1
        and "refused: cocoplus session resume is for the operator or the main brain, not the worker session cc2" in err
    ), err
    assert refusals(project)[-1]["recognised_by"] == "process ancestry: session cc2"
    assert os.path.exists(project.session_stop(two["cc1"]["id"]))
    # The same command from the operator's terminal lifts it.
    assert run_cli_subprocess("session", "resume", "--session", "cc1", "--yes", cwd=project.project).code == 0


def test_the_capability_is_printed_for_the_operator_only(project: Layout) -> None:
    """operator: `cocoplus mcp token` prints this user's capability; a worker is refused it."""
    r = run_cli_subprocess("mcp", "token", cwd=project.project)
    assert r.code == 0 and r.out.strip() == seal.capability()
    w = run_cli_subprocess("mcp", "token", cwd=project.project, env={"CLAUDECODE": "1"})
    assert w.code == 1 and "refused: cocoplus mcp token is for the operator at a terminal" in w.err and not w.out


def test_a_command_holding_the_capability_acts_as_the_brain(project: Layout, two: dict[str, Any]) -> None:
    """brain: a `cocoplus` command whose environment holds the capability (the controller's) acts as the brain,
    even inside an agent's environment; a wrong token grants nothing."""
    token = seal.capability() or ""
    run_cli_subprocess("session", "stop", "--session", "cc1", "--reason", "hold on", cwd=project.project)
    r = run_cli_subprocess(
        "session",
        "resume",
        "--session",
        "cc1",
        "--yes",
        cwd=project.project,
        env={"CLAUDECODE": "1", "COCOPLUS_MCP_TOKEN": token},
    )
    assert r.code == 1 and "made by the operator: only the operator may lift it" in r.err, r.err
    wrong = run_cli_subprocess(
        "session",
        "stop",
        "--session",
        "cc2",
        cwd=project.project,
        env={"CLAUDECODE": "1", "COCOPLUS_MCP_TOKEN": "0" * 64},
    )
    assert wrong.code == 1 and "not the worker session" in wrong.err or "not a worker session" in wrong.err
    ok = run_cli_subprocess(
        "session", "stop", "--session", "cc2", "--json", cwd=project.project, env={"COCOPLUS_MCP_TOKEN": token}
    )
    assert ok.code == 0 and json.loads(ok.out)["stop"]["principal"] == "brain"


# -- cocoplus itself ----------------------------------------------------------------------------------


def test_cocoplus_own_stops_name_their_principal(project: Layout) -> None:
    """budget, loop-guard: cocoplus' own stops are recorded with their principal; only the operator lifts them."""
    killswitch.auto_stop(project, "iteration budget exhausted (5/5)", source="iteration-budget")
    assert present(killswitch.read_stop(project))["principal"] == "budget"
    killswitch.resume(project, "alice")
    killswitch.auto_stop(project, "runaway loop", source="loop-guard")
    assert present(killswitch.read_stop(project))["principal"] == "loop-guard"
    assert authority.lift_refusal(authority.WATCHER, killswitch.read_stop(project)) is not None
    assert authority.lift_refusal(OPERATOR, killswitch.read_stop(project)) is None


def test_cocoplus_own_guards_may_stop_one_session(project: Layout) -> None:
    """loop-guard, budget: they may make a session stop (the session that trips them); the stop names them; the
    brain may not lift it, the operator may, and the project is not stopped by it."""
    for kind in ("loop-guard", "budget"):
        assert authority.allowed(authority.Principal(kind), "stop_session")
        assert authority.allowed(authority.Principal(kind), "stop")  # the seed's contract: one live session's cap
        assert not authority.allowed(authority.Principal(kind), "resume_session")
    rec, _ = registry.ensure(project, "claude", "loop-1", event="SessionStart")
    made = present(stops.auto_stop(project, rec, "runaway loop", principal="loop-guard", source="loop-guard"))
    assert made["principal"] == "loop-guard" and made["operator"] == "cocoplus"
    assert (
        stops.auto_stop(project, rec, "again", principal="budget", source="iteration-budget") is None
    )  # the first stop is kept
    assert not os.path.lexists(project.agent_stop)
    with pytest.raises(Refused, match="runaway-loop guard: only the operator"):
        session_ops.resume_session(project, str(rec["alias"]), principal=authority.BRAIN)
    out = session_ops.resume_session(project, str(rec["alias"]), principal=OPERATOR)
    assert out["resumed"] is True and out["removed"]["principal"] == "loop-guard"


def test_every_cli_command_has_an_action() -> None:
    """Every command the CLI offers is in the authority table (an unlisted one would be the operator's alone)."""
    from cocoplus.cli.app import command_tree

    def walk(cmd: Any, prefix: list[str]) -> list[list[str]]:
        subs = getattr(cmd, "commands", None)
        if not subs:
            return [prefix]
        return [p for name, sub in subs.items() for p in walk(sub, [*prefix, name])]

    every = [p for name, cmd in command_tree().items() for p in walk(cmd, [name])]
    assert len(every) > 60, every  # the whole tree, not the table's names alone
    missing = [
        " ".join(w)
        for w in every
        if authority.command_action(w) == "configure"
        and " ".join(w) not in authority.COMMANDS
        and " ".join(w[:1]) not in authority.COMMANDS
    ]
    assert missing == []


def test_a_fleet_command_its_sender_s_brain_made_has_the_brain_s_authority(
    project: Layout, two: dict[str, Any]
) -> None:
    """fleet:<machine>: with the operator's authority there, or (`acting` brain) with the brain's: it lifts no stop
    here, and while the kill switch is on it may only stop and look.  What a sender says it is acting as comes
    from who calls it (tests/fleet/test_senders.py drives it through a real NATS server)."""
    brain_m1, operator_m1 = authority.fleet("m1", "brain"), authority.fleet("m1")
    assert (authority.acting_as(BRAIN), authority.acting_as(OPERATOR), authority.acting_as(brain_m1)) == (
        "brain", "operator", "brain",
    )  # fmt: skip
    assert brain_m1.word == operator_m1.word == "fleet:m1"
    assert brain_m1.shown() == "the main brain of machine m1 of the fleet"
    made = session_ops.stop_session(project, "cc1", "paused by m1's brain", principal=brain_m1)
    stop_id = (stops.read(project, two["cc1"]["id"]) or {})["id"]
    assert made["stopped"] is True
    with pytest.raises(Refused, match="made by fleet:m1: only the operator may lift it"):
        session_ops.resume_session(project, "cc1", principal=brain_m1, stop_id=stop_id)
    assert authority.lift_refusal(operator_m1, {"principal": "operator"}) is None
    session_ops.stop(project, "freeze", principal=OPERATOR)
    with pytest.raises(Refused, match="refused to the main brain while the kill switch is on"):
        dispatch_ops.dispatch(project, "cc2", "go on", principal=brain_m1)
    assert session_ops.stop_session(project, "cc2", "and this one", principal=brain_m1)["stopped"] is True


def test_the_watcher_may_start_what_runs_its_rounds_and_serves_the_phone_but_not_the_server() -> None:
    """A watcher cocoplus started (a paused worker's runner, vouched for) starts the chat worker that runs the
    brain's rounds and this user's `inbox run`; the server, the relay and the notifier stay the operator's."""
    for words in (["chat", "worker"], ["inbox", "run"], ["supervisor", "run"]):
        assert authority.allowed(authority.WATCHER, authority.command_action(words)), words
    for words in (["serve"], ["relay", "run"], ["notify", "run"]):
        assert not authority.allowed(authority.WATCHER, authority.command_action(words)), words
