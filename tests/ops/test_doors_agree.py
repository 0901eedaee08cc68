"""For the same state, every door answers an operation with the same data.

Three identical copies of one project; the same scripted sequence of
operations runs through the CLI (`cocoplus ... --json` through the CLI's
own `main`, as the console script runs it) on the first, the REST server (the real FastAPI app through its
test client) on the second and the MCP server (`cocoplus mcp` over stdio,
driven by the SDK's client) on the third.  After each step the answers of
the doors that offer the operation are compared; where a door does not
offer it, the operation is applied to that copy directly so the three
states stay the same.  At the end the three `.cocoplus/` directories hold
the same state.  Times, generated ids and the project's path differ by
construction and are normalised; nothing else is.

A coverage check keeps this honest: every REST route and every MCP tool
must be named by a step here (or listed as a one-door view).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from cocoplus.ops import chat as chat_ops
from cocoplus.ops import session as session_ops
from cocoplus.ops import supervision as supervision_ops
from cocoplus.ops import worker as worker_ops
from cocoplus.ops import workers as workers_ops
from cocoplus.session import procinfo, registry
from cocoplus.session.workspace import init
from tests.mcp.conftest import Client, serve
from tests.server.conftest import AUTH, PORT, TOKEN, stop_background
from tests.supervision.workers_support import stop_workers
from tests.support.controller import write_controller
from tests.support.trusting import trust_project

pytestmark = pytest.mark.filterwarnings("ignore:Callback with id:RuntimeWarning")

BASE = f"http://127.0.0.1:{PORT}"
CONV = "/api/v1/projects/master-agent"
AUTO = "/api/v1/session-os/main-brain/autonomous"

READS = {"session.status", "supervision.status", "sessions.list", "chat.log", "chat.info"}

# REST routes that are a view of one door only (no CLI command or tool answers with the same shape).
ONE_DOOR = {
    ("GET", "/api/v1/session-os/main-brain/rounds"),  # the page's round line
    ("GET", "/api/v1/events"),  # server-sent events
    ("GET", "/api/v1/meta"),  # the word lists and turn-cap bounds the page reads
    ("GET", "/api/v1/history"),  # the page's charts (`top` draws the same ops.view history in the terminal)
    ("GET", "/api/v1/fleet"),  # the page's fleet card: `fleet status` needs a server (tests/fleet), this project has none
}


@dataclass
class Step:
    op: str
    cli: list[str] | None = None
    rest: tuple[str, str, Any] | None = None
    mcp: tuple[str, dict[str, Any]] | None = None
    apply: Callable[[Layout], Any] | None = None  # for a copy whose door lacks the operation
    cli_codes: tuple[int, ...] = (0,)
    rest_contains_cli: bool = False  # the REST answer is a composite view holding the CLI's answer
    answers: dict[str, Any] = field(default_factory=dict)


STEPS = [
    Step("session.status", cli=["session", "status"], rest=("GET", "/api/v1/session", None)),
    Step("supervision.status", cli=["supervision", "status"], rest=("GET", AUTO, None), mcp=("supervision_status", {})),
    Step("sessions.list", cli=["sessions", "list"], rest=("GET", "/api/v1/coding-sessions", None), mcp=("list_sessions", {})),
    Step("session.steer", cli=["session", "steer", "use the staging database"], rest=("POST", "/api/v1/session/steer", {"text": "use the staging database"}), apply=lambda lay: session_ops.steer(lay, "use the staging database")),
    Step("session.steer", cli=["session", "steer", "and keep the logs"], rest=("POST", "/api/v1/session/steer", {"text": "and keep the logs"}), apply=lambda lay: session_ops.steer(lay, "and keep the logs")),
    Step(
        "session.stop",
        cli=["session", "stop", "--reason", "release freeze", "--operator", "alice"],
        rest=("POST", "/api/v1/session/stop", {"reason": "release freeze", "operator": "alice"}),
        apply=lambda lay: session_ops.stop(lay, "release freeze", "alice"),
    ),
    Step("session.status", cli=["session", "status"], rest=("GET", "/api/v1/session", None)),
    Step("session.resume", cli=["session", "resume", "--yes"], rest=("POST", "/api/v1/session/resume", {}), apply=session_ops.resume),
    # nothing stopped: nothing changes
    Step("session.resume", cli=["session", "resume", "--yes"], rest=("POST", "/api/v1/session/resume", {}), apply=session_ops.resume),
    # One session only: steer, stop, resume, dispatch (each recorded in supervision/rounds.jsonl).
    Step(
        "session.steer_session",
        cli=["session", "steer", "--session", "cc1", "only you: use the fixtures"],
        rest=("POST", "/api/v1/coding-sessions/cc1/steer", {"text": "only you: use the fixtures"}),
        mcp=("steer_session", {"session": "cc1", "text": "only you: use the fixtures"}),
    ),
    Step(
        "session.stop_session",
        cli=["session", "stop", "--session", "cc2", "--reason", "wait for the review"],
        rest=("POST", "/api/v1/coding-sessions/cc2/stop", {"reason": "wait for the review"}),
        mcp=("stop_session", {"session": "cc2", "reason": "wait for the review"}),
    ),
    Step("sessions.list", cli=["sessions", "list"], rest=("GET", "/api/v1/coding-sessions", None), mcp=("list_sessions", {})),
    Step(
        "session.resume_session",
        cli=["session", "resume", "--session", "cc2", "--yes"],
        rest=("POST", "/api/v1/coding-sessions/cc2/resume", {}),
        mcp=("resume_session", {"session": "cc2"}),
    ),
    Step(
        "dispatch",
        cli=["dispatch", "cx1", "port the parser tests"],
        rest=("POST", "/api/v1/coding-sessions/cx1/dispatch", {"instruction": "port the parser tests"}),
        mcp=("dispatch", {"session": "cx1", "instruction": "port the parser tests"}),
    ),
    Step(
        "supervision.enable",
        cli=["supervision", "enable", "--task-hint", "land PR-77", "--max-turns", "7", "--scope-mode", "except", "--session", "cx1"],
        rest=("POST", AUTO, {"enabled": True, "task_hint": "land PR-77", "max_turns": 7, "scope_mode": "except", "scope_session_ids": ["cx1"]}),
        mcp=("enable_supervision", {"task_hint": "land PR-77", "max_turns": 7, "scope_mode": "except", "scope_session_ids": ["cx1"]}),
    ),
    Step("supervision.status", cli=["supervision", "status"], rest=("GET", AUTO, None), mcp=("supervision_status", {})),
    Step(
        "supervision.scope",
        cli=["supervision", "scope", "only", "cc1", "nope"],
        rest=("POST", "/api/v1/coding-sessions/supervision-scope", {"mode": "only", "session_ids": ["cc1", "nope"]}),
        mcp=("set_supervision_scope", {"mode": "only", "session_ids": ["cc1", "nope"]}),
    ),
    Step(
        "supervision.scope",
        cli=["supervision", "scope", "all"],
        rest=("POST", "/api/v1/coding-sessions/supervision-scope", {"mode": "all", "session_ids": []}),
        mcp=("set_supervision_scope", {"mode": "all"}),
    ),
    Step(
        "supervision.exclude",
        cli=["supervision", "exclude", "cc2"],
        rest=("PATCH", "/api/v1/coding-sessions/cc2/supervision", {"excluded": True}),
        apply=lambda lay: supervision_ops.set_excluded(lay, "cc2", True),
    ),
    Step("sessions.list", cli=["sessions", "list"], rest=("GET", "/api/v1/coding-sessions", None), mcp=("list_sessions", {})),
    Step(
        "supervision.include",
        cli=["supervision", "include", "cc2"],
        rest=("PATCH", "/api/v1/coding-sessions/cc2/supervision", {"excluded": False}),
        apply=lambda lay: supervision_ops.set_excluded(lay, "cc2", False),
    ),
    Step(
        "worker.report_progress",
        cli=["report", "progress", "completed", "parser", "merged", "--session", "cc1"],
        mcp=("report_progress", {"status": "completed", "message": "parser merged", "session": "cc1"}),
        apply=lambda lay: worker_ops.report_progress(lay, "completed", "parser merged", "cc1"),
    ),
    Step(
        "worker.notify_blocked",
        cli=["report", "blocked", "CI", "is", "red", "--session", "cx1"],
        mcp=("notify_blocked", {"message": "CI is red", "session": "cx1"}),
        apply=lambda lay: worker_ops.notify_blocked(lay, "CI is red", "cx1"),
    ),
    Step(
        "worker.ask_human",
        cli=["ask-human", "may", "I", "drop", "the", "table?", "--session", "cc2"],
        mcp=("ask_human", {"question": "may I drop the table?", "session": "cc2"}),
        apply=lambda lay: worker_ops.ask_human(lay, "may I drop the table?", "cc2"),
    ),
    Step(
        "answer",
        cli=["answer", "cc2", "no, archive it"],
        rest=("POST", "/api/v1/coding-sessions/cc2/answer", {"text": "no, archive it"}),
        mcp=("answer_worker", {"session": "cc2", "text": "no, archive it"}),
    ),
    Step(
        "worker.request_context",
        cli=["request-context", "the", "handoff", "--session", "cc1"],
        mcp=("request_context", {"what": "the handoff", "session": "cc1"}),
        apply=lambda lay: worker_ops.request_context(lay, "the handoff", "cc1"),
    ),
    Step("sessions.list", cli=["sessions", "list"], rest=("GET", "/api/v1/coding-sessions", None), mcp=("list_sessions", {})),
    Step(
        "supervision.finish",
        cli=["supervision", "finish", "--summary", "PR-77 merged"],
        rest=("POST", AUTO, {"enabled": False, "summary": "PR-77 merged", "reason": supervision_ops.FINISHED_BY_BRAIN}),
        mcp=("finish_supervision", {"summary": "PR-77 merged"}),
    ),
    Step("supervision.status", cli=["supervision", "status"], rest=("GET", AUTO, None), mcp=("supervision_status", {})),
    # No controller account any more (supervision refuses to start without one; a send fails at once, with why:
    # the CLI exits 1 and still prints the answer).
    Step("config.drop_controller", apply=lambda lay: Path(lay.config).write_text(BUSY_CONFIG)),
    Step(
        "chat.send",
        cli=["chat", "send", "what is blocking the release?"],
        rest=("POST", f"{CONV}/messages", {"text": "what is blocking the release?"}),
        apply=lambda lay: chat_ops.send(lay, "what is blocking the release?"),
        cli_codes=(1,),
    ),
    Step("chat.log", cli=["chat", "log"], rest=("GET", CONV, None), rest_contains_cli=True),
    Step("chat.info", cli=["chat", "info"], rest=("GET", CONV, None), rest_contains_cli=True),
    Step(
        "chat.set",
        cli=["chat", "set", "--model", "model-b", "--effort", "high"],
        rest=("PATCH", CONV, {"modelOverride": "model-b", "reasoningEffortOverride": "high"}),
        apply=lambda lay: chat_ops.set_overrides(lay, model="model-b", effort="high"),
    ),
    Step(
        "chat.set",
        cli=["chat", "set", "--clear"],
        rest=("PATCH", CONV, {"modelOverride": None, "reasoningEffortOverride": None}),
        apply=lambda lay: chat_ops.set_overrides(lay, clear=True),
    ),
    Step(
        "chat.set",
        cli=["chat", "set", "--effort", "low"],
        rest=("PATCH", CONV, {"reasoningEffortOverride": "low"}),
        apply=lambda lay: chat_ops.set_overrides(lay, effort="low"),
    ),
    Step("chat.info", cli=["chat", "info"], rest=("GET", CONV, None), rest_contains_cli=True),
    # Managed workers: w1 (seeded) takes the one slot, so a launch stays queued (its runtime never runs here).
    Step(
        "workers.launch",
        cli=["launch", "claude", "port the parser", "--alias", "parser"],
        rest=("POST", "/api/v1/workers", {"runtime": "claude", "task": "port the parser", "alias": "parser"}),
        mcp=("launch_worker", {"runtime": "claude", "task": "port the parser", "alias": "parser"}),
    ),
    Step("workers.list", cli=["workers", "list"], rest=("GET", "/api/v1/workers", None), apply=workers_ops.list_workers),
    Step(
        "workers.kill",
        cli=["workers", "kill", "parser"],
        rest=("POST", "/api/v1/workers/parser/kill", {}),
        apply=lambda lay: workers_ops.kill(lay, "parser"),
    ),
    # Last: a retry starts the reply worker, which fails the task again in the background.
    Step("chat.retry", cli=["chat", "retry"], rest=("POST", f"{CONV}/retry", {}), apply=chat_ops.retry),
]

ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
GENERATED_ID = re.compile(r"\b([mtq]_[0-9a-fA-FTZ]+_[0-9a-f]+|st_[0-9TZ]+_\d+_[0-9a-f]+)\b")


def normalise(obj: Any, project: str) -> Any:
    """Times, generated ids and this copy's path replaced; ages (seconds since a time) and file identities dropped."""
    if isinstance(obj, dict):
        # `token` identifies one AGENT_STOP file (inode and time): equal stops in two copies differ there.
        # `runner` is the process a launch started in this copy.
        return {k: normalise(v, project) for k, v in obj.items() if k not in ("age", "age_seconds", "idle_for", "token", "runner")}
    if isinstance(obj, list):
        return [normalise(v, project) for v in obj]
    if isinstance(obj, str):
        text = obj.replace(project, "<project>")
        return GENERATED_ID.sub("<id>", ISO.sub("<time>", text))
    return obj


def project_copy(base: Layout, where: Path) -> Layout:
    shutil.copytree(base.project, where, symlinks=True)
    return Layout(str(where / ".cocoplus"))


@pytest.fixture
def three(tmp_path: Path) -> Any:
    base_dir = tmp_path / "base"
    base_dir.mkdir()
    init(str(base_dir / ".cocoplus"))
    base = Layout(str(base_dir / ".cocoplus"))
    for runtime, rid in (("claude", "11111111-aaaa-0001"), ("codex", "22222222-bbbb-0002"), ("claude", "33333333-cccc-0003")):
        registry.ensure(base, runtime, rid, event="SessionStart", change=lambda r: r.update(state="running"))
    seed_busy_worker(base)  # writes cocoplus.toml: first
    write_controller(base)
    copies = [project_copy(base, tmp_path / name / "shop") for name in ("cli", "rest", "mcp")]
    for lay in copies:
        trust_project(lay)  # trust is per project path: each copy is trusted as the base was
    yield copies
    for lay in copies:
        stop_background(lay)
        stop_workers(lay)


BUSY_CONFIG = "[workers]\nmax_parallel = 1\n"


def seed_busy_worker(layout: Layout) -> None:
    """One slot, taken by a worker whose runner is this test process: every launch stays queued."""
    (Path(layout.project) / "cocoplus.toml").write_text(BUSY_CONFIG)
    os.makedirs(layout.worker_dir("w1"))
    me = {"pid": os.getpid(), "start_ticks": procinfo.start_ticks(os.getpid())}
    Path(layout.worker_record("w1")).write_text(json.dumps(
        {"schema_version": 1, "id": "w1", "runtime": "claude", "task": "the busy one", "alias": None, "state": "running", "runner": me, "created_at": "2026-01-01T00:00:00.000Z"}
    ))  # fmt: skip


def cli_door(cli: Any, layout: Layout, step: Step) -> Any:
    assert step.cli is not None
    r = cli(*step.cli, "--json", cwd=layout.project)
    assert r.code in step.cli_codes, (step.op, r.code, r.err)
    return json.loads(r.out)


def rest_door(client: Any, step: Step) -> Any:
    assert step.rest is not None
    method, path, body = step.rest
    r = client.request(method, path, json=body, headers=AUTH if method != "GET" else {})
    assert r.status_code == 200, (step.op, r.status_code, r.text)
    return r.json()


def test_the_cli_rest_and_mcp_doors_answer_alike(three: list[Layout], cli: Any) -> None:
    from fastapi.testclient import TestClient

    from cocoplus.server.app import create_app

    cli_lay, rest_lay, mcp_lay = three

    async def scenario(c: Client) -> list[Step]:
        with TestClient(create_app(rest_lay, token=TOKEN, port=PORT), base_url=BASE, raise_server_exceptions=False) as client:
            for step in STEPS:
                step.answers["cli"] = normalise(cli_door(cli, cli_lay, step), cli_lay.project) if step.cli else _apply(step, cli_lay)
                step.answers["rest"] = normalise(rest_door(client, step), rest_lay.project) if step.rest else _apply(step, rest_lay)
                if step.mcp:
                    name, args = step.mcp
                    step.answers["mcp"] = normalise(await c.call(name, **args), mcp_lay.project)
                else:
                    _apply(step, mcp_lay)
        return STEPS

    steps = serve(scenario, cwd=mcp_lay.project, args=["-m", "cocoplus", "mcp"])
    compared = set()
    for n, step in enumerate(steps):
        doors = [d for d in ("cli", "rest", "mcp") if getattr(step, d)]
        if len(doors) < 2:
            continue
        compared.add(step.op)
        first = step.answers[doors[0]]
        for other in doors[1:]:
            got = step.answers[other]
            if step.rest_contains_cli and other == "rest":
                problems = set(got.pop("problems", [])) >= set(first.get("problems", []))
                assert problems, (n, step.op)
                assert {k: got.get(k) for k in first if k != "problems"} == {k: v for k, v in first.items() if k != "problems"}, (n, step.op)
            else:
                assert got == first, f"step {n} {step.op}: {doors[0]} and {other} differ"
    # Every operation offered by more than one door was compared.
    assert compared == {s.op for s in STEPS if sum(bool(getattr(s, d)) for d in ("cli", "rest", "mcp")) > 1}
    # Spot checks that the sequence did what it says (so an empty answer cannot agree with another).
    by_op = {s.op: s for s in steps}
    assert by_op["session.stop"].answers["cli"]["stop"]["operator"] == "alice"
    assert steps[8].answers["cli"]["resumed"] is False and steps[7].answers["cli"]["resumed"] is True
    assert by_op["session.stop_session"].answers["mcp"]["stop"]["reason"] == "wait for the review"
    assert by_op["session.resume_session"].answers["rest"]["resumed"] is True
    assert by_op["dispatch"].answers["mcp"]["route"] == "steer" and by_op["dispatch"].answers["cli"]["alias"] == "cx1"
    assert by_op["answer"].answers["rest"]["question"]["text"] == "may I drop the table?"
    stopped = [s for s in steps if s.op == "sessions.list"][1].answers["mcp"]["sessions"]
    assert [(s["alias"], s["stopped"]["reason"]) for s in stopped if s["stopped"]] == [("cc2", "wait for the review")]
    assert by_op["supervision.finish"].answers["mcp"]["autonomous"]["finish_summary"] == "PR-77 merged"
    assert by_op["chat.send"].answers["rest"]["masterReplyState"] == "failed"
    assert by_op["chat.retry"].answers["cli"]["masterReplyState"] == "queued"
    assert by_op["workers.launch"].answers["mcp"]["state"] == "queued" and by_op["workers.launch"].answers["rest"]["id"] == "w2"
    assert by_op["workers.kill"].answers["cli"]["state"] == "exited" and by_op["workers.kill"].answers["rest"]["killed_by"]
    assert [w["state"] for w in by_op["workers.list"].answers["cli"]["workers"]] == ["running", "queued"]
    assert [s["alias"] for s in [s for s in steps if s.op == "sessions.list"][2].answers["mcp"]["sessions"] if s["excluded"]] == ["cc2"]

    # And the three projects hold the same state.
    assert same_state(cli_lay) == same_state(rest_lay) == same_state(mcp_lay)


def _apply(step: Step, layout: Layout) -> Any:
    if step.apply is None:
        assert step.op in READS, f"{step.op}: a door lacks it and there is nothing to apply"
        return None
    return normalise(step.apply(layout), layout.project)


def same_state(layout: Layout) -> dict[str, Any]:
    """The state files the operations write, normalised (task files are left out: the reply worker may be at them)."""
    out: dict[str, Any] = {}
    for path in (
        layout.status,
        layout.pod_state,
        layout.steps,
        layout.supervision_state,
        layout.signals,
        layout.conversation_file("master-agent"),
        layout.ledger("master-agent"),
        layout.steer,
        layout.agent_stop,
        layout.rounds,
        *(layout.session_steer(r["id"]) for r in registry.list_sessions(layout)[0]),
    ):
        rel = layout.rel(path)
        if not os.path.exists(path):
            out[rel] = None
            continue
        text = Path(path).read_text()
        if path.endswith(".jsonl"):
            out[rel] = [normalise(json.loads(ln), layout.project) for ln in text.splitlines() if ln.strip()]
        elif path.endswith(".json"):
            out[rel] = normalise(json.loads(text), layout.project)
        else:
            out[rel] = normalise(text, layout.project)
    for rec in registry.list_sessions(layout)[0]:
        out[rec["alias"]] = normalise(rec, layout.project)
    return out


def test_every_rest_route_and_mcp_tool_is_covered() -> None:
    from cocoplus.mcp.server import BRAIN_TOOLS, WORKER_TOOLS
    from cocoplus.server.app import create_app

    app = create_app(Layout("/nonexistent/.cocoplus"), token=TOKEN, port=PORT).app  # the FastAPI app behind the guard
    routes = {
        (m, r.path)
        for r in app.routes
        if getattr(r, "include_in_schema", False) and r.path.startswith("/api/")
        for m in r.methods - {"HEAD"}
    }
    named = {(s.rest[0], s.rest[1]) for s in STEPS if s.rest}
    templated = {(m, re.sub(r"/(cc|cx)\d/", "/{session_id}/", p).replace("/master-agent", "/{conversation}").replace("/workers/parser/", "/workers/{worker_id}/")) for m, p in named}
    assert routes - templated - ONE_DOOR == set(), "REST routes no step covers"
    tools = {s.mcp[0] for s in STEPS if s.mcp}
    assert tools == set(BRAIN_TOOLS) | set(WORKER_TOOLS)
