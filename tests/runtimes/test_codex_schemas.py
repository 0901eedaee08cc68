"""Every answer the codex adapter gives is one Codex CLI 0.169.0 accepts for the event it answers.

The hook is driven as Codex drives it (the installed command, a Codex
payload on stdin) into every situation it can be in, and each answer is
checked against that event's output schema as Codex 0.169.0 publishes it
(tests/fixtures/codex-schemas/0.169.0) and against its output parser's
rules (tests/runtimes/codex_schemas.py).  A few situations need cocoplus
itself to fail (a handler raising while AGENT_STOP exists): those run the
same hook entry point in a child process with that one function replaced.
Every payload sent, and every Codex payload fixture, is checked against the
event's input schema.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.lock import Lock
from cocoplus.core.paths import Layout
from cocoplus.cost import spend
from cocoplus.ops import dispatch as dispatch_ops
from cocoplus.runtimes import registry as runtimes
from cocoplus.session import holds, killswitch, registry, steering, stops
from cocoplus.session.workspace import init
from cocoplus.supervision import autonomy
from tests.hook.helpers import (
    FIXTURES,
    fixture,
    hook_argv,
    hook_env,
    raising,
    raising_handler,
    run_hook,
    run_hook_failing,
)
from tests.runtimes import codex_schemas
from tests.support.waiting import wait_until

CODEX = runtimes.get("codex")
SID = fixture("codex-pretooluse-bash.json")["session_id"]
CS = registry.cs_id_for(SID)


@dataclass
class Answer:
    situation: str
    event: str
    payload: Any
    code: int
    out: str
    err: str
    want: str  # nothing | deny | permission-deny | halt | context | continue | exit-2

    @property
    def json(self) -> dict[str, Any] | None:
        return json.loads(self.out) if self.out.strip() else None


@dataclass
class Driver:
    """Fresh projects under `base`, and every answer the hook gave in them."""

    base: Path
    answers: list[Answer] = field(default_factory=list)
    n: int = 0

    def project(self, config: str = "") -> Layout:
        self.n += 1
        proj = self.base / f"p{self.n}"
        proj.mkdir()
        init(str(proj / ".cocoplus"))
        layout = Layout(str(proj / ".cocoplus"))
        if config:
            Path(layout.config).write_text(config)
        return layout

    def hook(self, layout: Layout, situation: str, event: str, payload: Any, want: str, **env: str) -> Answer:
        r = run_hook(layout, event, payload, "codex", env=hook_env(layout, **env))
        return self.keep(Answer(situation, event, payload, r.code, r.out, r.err, want))

    def failing(self, layout: Layout, situation: str, event: str, payload: Any, want: str, patch: str) -> Answer:
        """The hook with `patch` making a part of cocoplus fail (helpers.run_hook_failing)."""
        r = run_hook_failing(layout, event, payload, "codex", patch)
        return self.keep(Answer(situation, event, payload, r.code, r.out, r.err, want))

    def keep(self, a: Answer) -> Answer:
        self.answers.append(a)
        return a


def payload(event: str, **changes: Any) -> dict[str, Any]:
    name = {
        "PreToolUse": "codex-pretooluse-bash.json",
        "PermissionRequest": "codex-permissionrequest-bash.json",
        "PostToolUse": "codex-posttooluse-bash.json",
        "UserPromptSubmit": "codex-userpromptsubmit.json",
        "SessionStart": "codex-sessionstart.json",
        "Stop": "codex-stop.json",
        "SessionEnd": "codex-sessionend.json",
    }[event]
    return {**fixture(name), **changes}


def tool(command: str, event: str = "PostToolUse") -> dict[str, Any]:
    return payload(event, tool_input={"command": command})


def started(d: Driver, layout: Layout, situation: str) -> None:
    d.hook(layout, situation, "SessionStart", payload("SessionStart"), "context")


def stop_this_session(layout: Layout) -> None:
    stops.stop(layout, registry.resolve(layout, "cx1"), "alice", "look at the diff first")


def drive(d: Driver) -> None:
    """Every situation, in the order a session meets them."""
    # -- the kill switch off and on, before a tool --------------------------------------------
    free = d.project()
    d.hook(free, "no stop: the tool runs", "PreToolUse", payload("PreToolUse"), "nothing")
    d.hook(
        free,
        "no stop: the permission request is not answered",
        "PermissionRequest",
        payload("PermissionRequest"),
        "nothing",
    )
    stopped = d.project()
    killswitch.stop(stopped, "alice", "release freeze")
    d.hook(stopped, "AGENT_STOP: the tool is denied", "PreToolUse", payload("PreToolUse"), "deny")
    d.hook(
        stopped,
        "AGENT_STOP: the permission request is denied",
        "PermissionRequest",
        payload("PermissionRequest"),
        "permission-deny",
    )
    d.hook(stopped, "AGENT_STOP, garbage on stdin: the tool is denied", "PreToolUse", b"{not json", "deny")
    d.hook(
        stopped,
        "AGENT_STOP, garbage on stdin: the request is denied",
        "PermissionRequest",
        b"{not json",
        "permission-deny",
    )
    r = run_hook(stopped, "PreToolUse", payload("PreToolUse"), None)
    d.keep(
        Answer(
            "AGENT_STOP, a command without --runtime: detected as Codex, denied",
            "PreToolUse",
            payload("PreToolUse"),
            r.code,
            r.out,
            r.err,
            "deny",
        )
    )
    r = run_hook(stopped, "PreToolUse", b"[1, 2]", None)
    d.keep(
        Answer(
            "AGENT_STOP, no --runtime and no readable payload: exit 2",
            "PreToolUse",
            b"[1, 2]",
            r.code,
            r.out,
            r.err,
            "exit-2",
        )
    )
    d.hook(stopped, "AGENT_STOP: the session start is told", "SessionStart", payload("SessionStart"), "context")
    d.hook(stopped, "AGENT_STOP: the prompt is told", "UserPromptSubmit", payload("UserPromptSubmit"), "context")
    d.hook(stopped, "AGENT_STOP: a tool that ran anyway halts", "PostToolUse", payload("PostToolUse"), "halt")
    d.hook(stopped, "AGENT_STOP at turn end: no continuation", "Stop", payload("Stop"), "nothing")
    # -- cocoplus itself failing while AGENT_STOP exists ---------------------------------------
    d.failing(stopped, "AGENT_STOP, the permission handler fails", "PermissionRequest", payload("PermissionRequest"),
              "permission-deny", raising_handler("permission", "CocoplusError"))  # fmt: skip
    d.failing(stopped, "AGENT_STOP, the permission handler crashes", "PermissionRequest", payload("PermissionRequest"),
              "permission-deny", raising_handler("permission"))  # fmt: skip
    d.failing(stopped, "AGENT_STOP, reading it crashes before a tool", "PreToolUse", payload("PreToolUse"), "deny",
              raising("killswitch.kill_switch_sentence"))  # fmt: skip
    d.failing(stopped, "AGENT_STOP, the adapter's own answer fails: exit 2", "PermissionRequest",
              payload("PermissionRequest"), "exit-2",
              raising_handler("permission") + "\n" + raising("runner.block"))  # fmt: skip
    # -- one session stopped -----------------------------------------------------------------
    own = d.project()
    started(d, own, "a new session: the handoff")
    stop_this_session(own)
    d.hook(own, "this session stopped: the tool is denied", "PreToolUse", payload("PreToolUse"), "deny")
    d.hook(
        own,
        "this session stopped: the request is denied",
        "PermissionRequest",
        payload("PermissionRequest"),
        "permission-deny",
    )
    d.hook(own, "this session stopped: a tool that ran halts", "PostToolUse", payload("PostToolUse"), "halt")
    d.hook(own, "this session stopped: the prompt is told", "UserPromptSubmit", payload("UserPromptSubmit"), "context")
    other = payload("PreToolUse", session_id="0000aaaa-1111-2222-3333-444455556666")
    d.hook(own, "another session stopped: this one's tool runs", "PreToolUse", other, "nothing")
    d.failing(own, "a session stop exists, the pre-tool handler fails", "PreToolUse", other, "nothing",
              raising_handler("pre_tool", "CocoplusError"))  # fmt: skip
    # -- the iteration budget: warn, cap, after the cap, damaged -------------------------------
    budget = d.project("[session]\nmax_iterations = 3\niteration_warn_at = 2\nloop_guard_repeats = 0\n")
    d.hook(budget, "a tool call counted", "PostToolUse", tool("echo 1"), "nothing")
    d.hook(budget, "the warn threshold: checkpoint request", "PostToolUse", tool("echo 2"), "context")
    d.hook(budget, "the cap: the agent is stopped", "PostToolUse", tool("echo 3"), "halt")
    d.hook(budget, "past the cap: stopped again", "PostToolUse", tool("echo 4"), "halt")
    d.hook(budget, "past the cap: the next tool is denied", "PreToolUse", payload("PreToolUse"), "deny")
    damaged = d.project()
    Path(damaged.iteration_budget).write_bytes(b"{not json")
    d.hook(damaged, "a damaged iteration budget: stopped", "PostToolUse", tool("echo 1"), "halt")
    d.hook(damaged, "after the damage: the tool is denied", "PreToolUse", payload("PreToolUse"), "deny")
    # -- the runaway-loop guard, alone and together with the warn threshold -----------------------
    loop = d.project("[session]\nloop_guard_repeats = 2\n")
    d.hook(loop, "a call once", "PostToolUse", tool("make"), "nothing")
    d.hook(loop, "the same call twice: checkpoint request", "PostToolUse", tool("make"), "context")
    d.hook(loop, "three times", "PostToolUse", tool("make"), "nothing")
    d.hook(loop, "four times: the loop guard stops the agent", "PostToolUse", tool("make"), "halt")
    both = d.project("[session]\nmax_iterations = 50\niteration_warn_at = 2\nloop_guard_repeats = 2\n")
    d.hook(both, "a call once (warn and loop together)", "PostToolUse", tool("make"), "nothing")
    d.hook(both, "warn threshold and loop guard at once: both requests", "PostToolUse", tool("make"), "context")
    # -- damaged files at session start and prompt ------------------------------------------------
    broken = d.project()
    os.makedirs(broken.sessions_dir, exist_ok=True)
    Path(broken.session_record(CS)).write_bytes(b"\x00garbage")
    Path(broken.progress).write_bytes(b"\xff\xfe not utf-8")
    d.hook(
        broken,
        "a damaged session record and PROGRESS.md at session start",
        "SessionStart",
        payload("SessionStart"),
        "context",
    )
    Path(broken.steer).write_bytes(b"\xff\xfe not utf-8")
    d.hook(broken, "a damaged STEER.md at the prompt", "UserPromptSubmit", payload("UserPromptSubmit"), "nothing")
    Path(broken.config).write_text("[session\nnot toml")
    d.hook(broken, "an invalid cocoplus.toml: a tool call counted", "PostToolUse", tool("echo 1"), "nothing")
    # -- steering --------------------------------------------------------------------------------
    steer = d.project()
    started(d, steer, "a new session: the handoff (steering)")
    d.hook(steer, "a plain prompt: nothing to add", "UserPromptSubmit", payload("UserPromptSubmit"), "nothing")
    steering.steer(steer, "use the staging database", "alice")
    d.hook(steer, "a steer: delivered with the prompt", "UserPromptSubmit", payload("UserPromptSubmit"), "context")
    steering.steer(steer, "STEER-own: only for cx1", "alice", session=CS)
    d.hook(steer, "a steer for this session at its turn end: the turn goes on", "Stop", payload("Stop"), "continue")
    d.hook(steer, "the continuation's turn end: released", "Stop", payload("Stop", stop_hook_active=True), "nothing")
    d.hook(steer, "a tool call clears the run of continuations", "PostToolUse", payload("PostToolUse"), "nothing")
    steering.steer(steer, "STEER-prompt: only for cx1", "alice", session=CS)
    steering.steer(steer, "and everyone", "alice")
    d.hook(
        steer,
        "this session's steer and the project's at a prompt",
        "UserPromptSubmit",
        payload("UserPromptSubmit"),
        "context",
    )
    d.hook(steer, "the session ends", "SessionEnd", payload("SessionEnd"), "nothing")
    d.hook(
        steer,
        "an ended session starts again (resume)",
        "SessionStart",
        payload("SessionStart", source="resume"),
        "context",
    )
    # -- cost notices ----------------------------------------------------------------------------
    cost = d.project("[session]\nbudget_limit = 1.00\nbudget_reserve_fraction = 0.10\n")
    started(d, cost, "a new session: the handoff (cost)")
    spend.add_cost(cost, 0.95)
    d.hook(
        cost,
        "spend enters the reserve at turn end (notice for the next prompt)",
        "Stop",
        payload("Stop", transcript_path=None),
        "nothing",
    )
    d.hook(
        cost,
        "the reserve notice at the next prompt",
        "UserPromptSubmit",
        payload("UserPromptSubmit", transcript_path=None),
        "context",
    )
    spend.add_cost(cost, 0.10)
    d.hook(
        cost,
        "the budget exhausted at turn end: stopped (Codex has no notice channel)",
        "Stop",
        payload("Stop", transcript_path=None),
        "nothing",
    )
    d.hook(cost, "after the budget stop: the tool is denied", "PreToolUse", payload("PreToolUse"), "deny")
    # -- the turn-end hold, released with an instruction ------------------------------------------
    held = d.project()
    started(d, held, "a new session: the handoff (held)")
    autonomy.enable(held, task_hint="keep going")
    with Lock(held.lock("supervisor")):  # the watcher's lock: someone is there to wake the brain
        stop = payload("Stop")
        proc = subprocess.Popen(
            hook_argv("Stop", "codex"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=hook_env(held),
        )
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.write(json.dumps(stop).encode())
        proc.stdin.close()
        wait_until(lambda: holds.current(held, CS) is not None or proc.poll() is not None, timeout=30)
        assert proc.poll() is None, "the turn end was not held"
        assert dispatch_ops.dispatch(held, "cx1", "run the integration tests next", by="alice")["route"] == "held"
        proc.wait(timeout=30)
        d.keep(
            Answer(
                "a held turn end released by a dispatch: the turn goes on",
                "Stop",
                stop,
                proc.returncode,
                proc.stdout.read().decode(),
                proc.stderr.read().decode(),
                "continue",
            )
        )
    d.hook(held, "the session ends (held)", "SessionEnd", payload("SessionEnd"), "nothing")


WANT: dict[str, Callable[[Answer], bool]] = {
    "nothing": lambda a: a.code == 0 and a.out == "",
    "deny": lambda a: a.code == 0 and (a.json or {}).get("hookSpecificOutput", {}).get("permissionDecision") == "deny",
    "permission-deny": lambda a: (
        a.code == 0 and (a.json or {}).get("hookSpecificOutput", {}).get("decision", {}).get("behavior") == "deny"
    ),
    "halt": lambda a: a.code == 0 and (a.json or {}).get("continue") is False,
    "context": lambda a: a.code == 0 and bool((a.json or {}).get("hookSpecificOutput", {}).get("additionalContext")),
    "continue": lambda a: a.code == 0 and (a.json or {}).get("decision") == "block",
    "exit-2": lambda a: a.code == 2 and a.out == "" and bool(a.err.strip()),
}

# Every distinct answer the drive above gets, its free text blanked (codex_schemas.shape): one JSON shape
# per event that answers at all, besides nothing (exit 0, empty stdout) and exit 2 with a reason on stderr.
SHAPES = {
    (
        "PreToolUse",
        '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", '
        '"permissionDecisionReason": "<text>"}}',
    ),
    (
        "PermissionRequest",
        '{"hookSpecificOutput": {"decision": {"behavior": "deny", "message": "<text>"}, "hookEventName": '
        '"PermissionRequest"}}',
    ),
    ("PostToolUse", '{"continue": false, "reason": "<text>", "stopReason": "<text>"}'),
    ("PostToolUse", '{"hookSpecificOutput": {"additionalContext": "<text>", "hookEventName": "PostToolUse"}}'),
    (
        "UserPromptSubmit",
        '{"hookSpecificOutput": {"additionalContext": "<text>", "hookEventName": "UserPromptSubmit"}}',
    ),
    ("SessionStart", '{"hookSpecificOutput": {"additionalContext": "<text>", "hookEventName": "SessionStart"}}'),
    ("Stop", '{"decision": "block", "reason": "<text>"}'),
}


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> list[Answer]:
    d = Driver(tmp_path_factory.mktemp("codex-answers"))
    drive(d)
    return d.answers


@pytest.mark.slow
def test_every_answer_is_one_codex_accepts_for_its_event(answers: list[Answer]) -> None:
    refused = [
        (
            a.situation,
            a.event,
            a.out or f"exit {a.code}: {a.err[:200]}",
            codex_schemas.problems(a.event, a.code, a.out, a.err),
        )
        for a in answers
    ]
    refused = [r for r in refused if r[3]]
    assert not refused, "Codex 0.169.0 would refuse:\n" + "\n".join(
        f"- {s} ({e}): {o}\n    {p}" for s, e, o, p in refused
    )


def test_every_situation_gave_the_answer_it_needs(answers: list[Answer]) -> None:
    wrong = [(a.situation, a.want, a.code, a.out[:300], a.err[:300]) for a in answers if not WANT[a.want](a)]
    assert not wrong, "\n".join(map(repr, wrong))
    assert {a.event for a in answers} == {e for e, _k, m in CODEX.EVENTS if m is not None}, (
        "every installed event is driven"
    )
    assert {a.want for a in answers} == set(WANT)


def test_no_traceback_and_no_reported_problem_reaches_codex(answers: list[Answer]) -> None:
    for a in answers:
        assert "Traceback" not in a.out + a.err, a
        if a.want != "exit-2":
            assert a.err == "", a


def test_the_distinct_answers_are_these(answers: list[Answer]) -> None:
    """The different answers the codex adapter gives (the report counts them)."""
    shapes = {
        (a.event, json.dumps(codex_schemas.shape(a.json), sort_keys=True)) for a in answers if a.code == 0 and a.out
    }
    assert shapes == SHAPES
    texts = {(a.event, a.out) for a in answers if a.out}
    assert len(texts) > 2 * len(SHAPES)  # the same shapes, saying many different things
    # Exit 2 only where no dialect can be had: no --runtime and no readable payload, or the adapter failing too.
    exit_2 = [(a.event, a.situation) for a in answers if a.code == 2]
    assert exit_2 == [
        ("PreToolUse", "AGENT_STOP, no --runtime and no readable payload: exit 2"),
        ("PermissionRequest", "AGENT_STOP, the adapter's own answer fails: exit 2"),
    ]
    assert all(a.err.count("\n") == 1 and "cocoplus" in a.err and "stopped" in a.err for a in answers if a.code == 2)


def test_every_payload_sent_is_one_codex_sends(answers: list[Answer]) -> None:
    sent = [a for a in answers if isinstance(a.payload, dict)]
    assert len(sent) > 40
    for a in sent:
        assert codex_schemas.schema_errors(a.payload, a.event, "input") == [], a.situation


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("codex-*.json")))
def test_codex_payload_fixtures_fit_the_input_schemas(name: str) -> None:
    p = fixture(name)
    if "hook_event_name" not in p:
        assert p.get("type") == "agent-turn-complete"  # the legacy notify program's payload: no hook, no schema
        return
    assert codex_schemas.schema_errors(p, p["hook_event_name"], "input") == []


def test_the_old_permission_fallback_is_refused() -> None:
    """What the failing permission handler answered before: Codex refuses it (and so the request went on)."""
    old = CODEX.deny_tool("PermissionRequest", "cocoplus: stopped by alice")
    got = codex_schemas.problems("PermissionRequest", 0, json.dumps(old), "")
    assert any("hookEventName" in p or "permissionDecision" in p for p in got), got
    assert (
        codex_schemas.problems(
            "PermissionRequest", 0, json.dumps(CODEX.deny_permission("cocoplus: stopped by alice")), ""
        )
        == []
    )


@pytest.mark.parametrize(
    ("event", "answer", "why"),
    [
        (
            "PreToolUse",
            {
                "continue": False,
                "stopReason": "x",
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": "x",
                },
            },
            "continue:false",
        ),
        (
            "PreToolUse",
            {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": " ",
                }
            },
            "non-empty",
        ),
        ("PostToolUse", {"reason": "x"}, "reason without decision"),
        ("Stop", {"hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": "x"}}, "Additional properties"),
        ("Stop", {"decision": "block", "reason": ""}, "non-empty reason"),
        ("SessionEnd", {"systemMessage": "bye"}, "no output"),
        (
            "SessionStart",
            {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "x"}},
            "was expected",
        ),
    ],
)
def test_the_checker_refuses_what_codex_refuses(event: str, answer: dict[str, Any], why: str) -> None:
    """The check above can fail: answers Codex 0.169.0 refuses
    (docs/runtimes.md records the first and the Stop ones live)."""
    got = codex_schemas.problems(event, 0, json.dumps(answer), "")
    assert any(why in p for p in got), got


def test_the_installed_events_are_events_codex_has() -> None:
    """Each event `install codex` wires has a schema in Codex
    0.169.0; SessionEnd is one (input only: it answers nothing)."""
    for event, _matcher in runtimes.installed_events(CODEX):
        assert codex_schemas.schema(event, "input") is not None, event
    assert codex_schemas.schema("SessionEnd", "output") is None


def test_the_session_end_hook_is_installed_within_codexs_limit() -> None:
    """Codex 0.169.0 clamps a longer SessionEnd timeout to 3 s and reports it as an error on every run."""
    assert CODEX.hook_entry("x", "SessionEnd", 10)["timeout"] == 3
    assert CODEX.hook_entry("x", "Stop", 10)["timeout"] == 10
