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
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from cocoplus.core.shapes import SessionRecord
from cocoplus.ops import chat as chat_ops
from cocoplus.ops import permissions as permissions_ops
from cocoplus.ops import session as session_ops
from cocoplus.ops import summary as summary_ops
from cocoplus.ops import supervision as supervision_ops
from cocoplus.ops import telemetry as telemetry_ops
from cocoplus.ops import worker as worker_ops
from cocoplus.ops import workers as workers_ops
from cocoplus.session import limits, permissions, procinfo, registry
from cocoplus.session.workspace import init
from tests.cost.test_forecast import install_history
from tests.mcp.conftest import Client, serve
from tests.server.conftest import AUTH, PORT, TOKEN, stop_background
from tests.supervision.workers_support import stop_workers
from tests.support.controller import write_controller
from tests.support.trusting import trust_project
from tests.support.wired import hooks_installed

pytestmark = pytest.mark.filterwarnings("ignore:Callback with id:RuntimeWarning")

BASE = f"http://127.0.0.1:{PORT}"
CONV = "/api/v1/projects/master-agent"
AUTO = "/api/v1/session-os/main-brain/autonomous"

READS = {
    "session.status",
    "supervision.status",
    "sessions.list",
    "chat.log",
    "chat.info",
    "permissions.list",
    "permissions.log",
}

# REST routes that are a view of one door only (no CLI command or tool answers with the same shape).
ONE_DOOR = {
    ("GET", "/api/v1/session-os/main-brain/rounds"),  # the page's round line
    ("GET", "/api/v1/events"),  # server-sent events
    ("GET", "/api/v1/meta"),  # the word lists and turn-cap bounds the page reads
    ("GET", "/api/v1/history"),  # the page's charts (`top` draws the same ops.view history in the terminal)
    # The page's timeline and its "what if": tests/server/test_timeline_api.py holds them to `cocoplus timeline
    # --json` and `cocoplus replay` (the route takes the policy's values as parameters, the command a file).
    ("GET", "/api/v1/timeline"),
    ("GET", "/api/v1/replay"),
    (
        "GET",
        "/api/v1/fleet",
    ),  # the page's fleet card: `fleet status` needs a server (tests/fleet), this project has none
    # The decision page's routes (every project of this user, not this one): tests/inbox/test_page.py drives them
    # from a phone; they call what `inbox`, `decide`, `session steer --session`, `workers kill` and `session stop` call.
    ("GET", "/api/v1/inbox"),
    ("GET", "/api/v1/inbox/decisions/{ident}"),
    ("POST", "/api/v1/inbox/decisions/{ident}"),
    ("POST", "/api/v1/inbox/decisions/{ident}/steer"),
    ("POST", "/api/v1/inbox/decisions/{ident}/stop"),
    ("POST", "/api/v1/inbox/workers/stop"),
    ("POST", "/api/v1/inbox/panic"),
    ("POST", "/api/v1/inbox/presence"),  # the page's presence: `top` touches the same file
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
    Step(
        "sessions.list",
        cli=["sessions", "list"],
        rest=("GET", "/api/v1/coding-sessions", None),
        mcp=("list_sessions", {}),
    ),
    Step(
        "session.steer",
        cli=["session", "steer", "use the staging database"],
        rest=("POST", "/api/v1/session/steer", {"text": "use the staging database"}),
        apply=lambda lay: session_ops.steer(lay, "use the staging database"),
    ),
    Step(
        "session.steer",
        cli=["session", "steer", "and keep the logs"],
        rest=("POST", "/api/v1/session/steer", {"text": "and keep the logs"}),
        apply=lambda lay: session_ops.steer(lay, "and keep the logs"),
    ),
    Step(
        "session.stop",
        cli=["session", "stop", "--reason", "release freeze", "--operator", "alice"],
        rest=("POST", "/api/v1/session/stop", {"reason": "release freeze", "operator": "alice"}),
        apply=lambda lay: session_ops.stop(lay, "release freeze", "alice"),
    ),
    Step("session.status", cli=["session", "status"], rest=("GET", "/api/v1/session", None)),
    Step(
        "session.resume",
        cli=["session", "resume", "--yes"],
        rest=("POST", "/api/v1/session/resume", {}),
        apply=session_ops.resume,
    ),
    # nothing stopped: nothing changes
    Step(
        "session.resume",
        cli=["session", "resume", "--yes"],
        rest=("POST", "/api/v1/session/resume", {}),
        apply=session_ops.resume,
    ),
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
    Step(
        "sessions.list",
        cli=["sessions", "list"],
        rest=("GET", "/api/v1/coding-sessions", None),
        mcp=("list_sessions", {}),
    ),
    Step(
        "session.resume_session",
        cli=["session", "resume", "--session", "cc2", "--yes"],
        rest=("POST", "/api/v1/coding-sessions/cc2/resume", {}),
        mcp=("resume_session", {"session": "cc2"}),
    ),
    # A session paused by its runtime's rate limit (as its StopFailure hook records it), resumed at a set time.
    Step("session.limited", apply=lambda lay: _limited(lay, "cc2")),
    Step(
        "session.resume_at",
        cli=["session", "resume-at", "cc2", "2099-01-02T15:00:00Z"],
        rest=("POST", "/api/v1/coding-sessions/cc2/resume-at", {"at": "2099-01-02T15:00:00Z"}),
        apply=lambda lay: session_ops.resume_at(lay, "cc2", "2099-01-02T15:00:00Z"),
    ),
    Step(
        "dispatch",
        cli=["dispatch", "cx1", "port the parser tests"],
        rest=("POST", "/api/v1/coding-sessions/cx1/dispatch", {"instruction": "port the parser tests"}),
        mcp=("dispatch", {"session": "cx1", "instruction": "port the parser tests"}),
    ),
    Step(
        "supervision.enable",
        cli=[
            "supervision",
            "enable",
            "--task-hint",
            "land PR-77",
            "--max-turns",
            "7",
            "--scope-mode",
            "except",
            "--session",
            "cx1",
        ],
        rest=(
            "POST",
            AUTO,
            {
                "enabled": True,
                "task_hint": "land PR-77",
                "max_turns": 7,
                "scope_mode": "except",
                "scope_session_ids": ["cx1"],
            },
        ),
        mcp=(
            "enable_supervision",
            {"task_hint": "land PR-77", "max_turns": 7, "scope_mode": "except", "scope_session_ids": ["cx1"]},
        ),
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
    Step(
        "sessions.list",
        cli=["sessions", "list"],
        rest=("GET", "/api/v1/coding-sessions", None),
        mcp=("list_sessions", {}),
    ),
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
    Step(
        "sessions.list",
        cli=["sessions", "list"],
        rest=("GET", "/api/v1/coding-sessions", None),
        mcp=("list_sessions", {}),
    ),
    Step(
        "supervision.finish",
        # The same reason through every door (by default each records who turned supervision off).
        cli=["supervision", "finish", "--summary", "PR-77 merged", "--reason", supervision_ops.FINISHED_BY_BRAIN],
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
    Step(
        "workers.list", cli=["workers", "list"], rest=("GET", "/api/v1/workers", None), apply=workers_ops.list_workers
    ),
    Step("summary", cli=["summary"], rest=("GET", "/api/v1/summary", None), apply=lambda lay: summary_ops.summary(lay)),
    Step(
        "telemetry.status",
        cli=["telemetry", "status"],
        rest=("GET", "/api/v1/telemetry", None),
        apply=lambda lay: telemetry_ops.status(lay),
    ),
    Step(
        "workers.kill",
        cli=["workers", "kill", "parser"],
        rest=("POST", "/api/v1/workers/parser/kill", {}),
        apply=lambda lay: workers_ops.kill(lay, "parser"),
    ),
    # A worker launched in a worktree, ended, whose branch is merged already: the operator and (with
    # [supervision] brain_may_merge) the brain merge it alike, touching nothing.
    Step("workers.worktree_worker", apply=lambda lay: _ended_worktree_worker(lay, "w3")),
    Step(
        "workers.merge",
        cli=["workers", "merge", "w3"],
        mcp=("merge_worker", {"worker": "w3"}),
        apply=lambda lay: workers_ops.merge(lay, "w3"),
    ),
    # A headless worker's permission requests: listed, approved, denied (by the brain over MCP), logged.
    Step("permissions.request", apply=lambda lay: _permission_request(lay, "make deploy")),
    Step("permissions.list", cli=["permissions", "list"], rest=("GET", "/api/v1/permissions", None)),
    Step(
        "permissions.approve",
        cli=["approve", "cc2"],
        rest=("POST", "/api/v1/permissions/cc2/approve", {}),
        apply=lambda lay: permissions_ops.approve(lay, "cc2"),
    ),
    Step("permissions.request", apply=lambda lay: _permission_request(lay, "rm -rf build")),
    Step(
        "permissions.deny",
        cli=["deny", "cc2", "--reason", "not today"],
        rest=("POST", "/api/v1/permissions/cc2/deny", {"reason": "not today"}),
        mcp=("deny_permission", {"request_id": "cc2", "reason": "not today"}),
    ),
    Step("config.brain_may_allow", apply=lambda lay: _brain_may_allow(lay, "Bash(pytest *)")),
    Step("permissions.request", apply=lambda lay: _permission_request(lay, "pytest -q")),
    Step(
        "permissions.approve_by_brain",
        cli=["approve", "cc2"],
        rest=("POST", "/api/v1/permissions/cc2/approve", {}),
        mcp=("approve_permission", {"request_id": "cc2"}),
    ),
    Step("permissions.log", cli=["permissions", "log"], rest=("GET", "/api/v1/permissions/log", None)),
    # Last: a retry starts the reply worker, which fails the task again in the background.
    Step("chat.retry", cli=["chat", "retry"], rest=("POST", f"{CONV}/retry", {}), apply=chat_ops.retry),
]

ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
GENERATED_ID = re.compile(
    r"\b([mtqp]_[0-9a-fA-FTZ]+_[0-9a-f]+|st_[0-9TZ]+_\d+_[0-9a-f]+|stop_[0-9TZ]+_[0-9a-f]+|g_\d{8}T\d{9}Z)\b"
)  # a supervised goal's id (g_) is the time it was enabled


def normalise(obj: Any, project: str) -> Any:
    """Times, generated ids and this copy's path replaced; ages (seconds since a time) and file identities dropped."""
    if isinstance(obj, dict):
        # `token` identifies one AGENT_STOP file (inode and time): equal stops in two copies differ there.
        # `runner` is the process a launch started in this copy; a `seal` covers this copy's path (core.seal).
        return {
            k: normalise(v, project)
            for k, v in obj.items()
            if k not in ("age", "age_seconds", "idle_for", "token", "runner", "seal")
        }
    if isinstance(obj, list):
        return [normalise(v, project) for v in obj]
    if isinstance(obj, str):
        text = obj.replace(project, "<project>")
        return GENERATED_ID.sub("<id>", ISO.sub("<time>", text))
    return obj


def _who_acted(obj: Any) -> list[str]:
    """Every `principal` recorded in an answer (its action record, its stop)."""
    if isinstance(obj, dict):
        return [v for k, v in obj.items() if k == "principal" and isinstance(v, str)] + [
            p for v in obj.values() for p in _who_acted(v)
        ]
    if isinstance(obj, list):
        return [p for v in obj for p in _who_acted(v)]
    return []


SENDER = re.compile(r"(Next instruction|Answer) from (the main brain|\w+),")


def neutral(obj: Any) -> Any:
    """State with who acted taken out (`_drop_who`), in files' text too."""
    if isinstance(obj, str):
        return SENDER.sub(r"\1 from <who>,", obj)
    if isinstance(obj, list):
        return [neutral(v) for v in obj]
    if isinstance(obj, dict):
        _drop_who(obj)
        return {k: neutral(v) for k, v in obj.items()}
    return obj


def _drop_who(obj: Any) -> None:
    """Who acted and the name shown for it, removed from an answer (compared separately)."""
    if isinstance(obj, dict):
        if "principal" in obj:
            if "role" in obj:  # a message of the conversation: the brain's answer is the assistant's
                assert obj.pop("role") == ("assistant" if obj["principal"] == "brain" else "user"), obj
            obj.pop("principal")
            for name in (
                "by",
                "actor",
                "operator",
                "previous_operator",
                "chars",
            ):  # names (shown), and the framed text's length
                obj.pop(name, None)
        if isinstance(obj.get("delivered_text"), str):  # the worker is told who sent it
            obj["delivered_text"] = SENDER.sub(r"\1 from <who>,", obj["delivered_text"])
        for v in obj.values():
            _drop_who(v)
    elif isinstance(obj, list):
        for v in obj:
            _drop_who(v)


def _limited(layout: Layout, alias: str) -> None:
    def change(r: SessionRecord) -> None:
        limits.pause(r, {"reason": "rate limit"}, 300, 1_900_000_000.0)

    registry.update(layout, registry.resolve(layout, alias)["id"], change)


def _brain_may_allow(layout: Layout, rule: str) -> None:
    """What the brain may allow: a key that grants authority, so it applies from a trusted file only."""
    with open(layout.config, "a") as fh:
        fh.write(f'\n[permissions]\nbrain_may_allow = ["{rule}"]\n')
    trust_project(layout)


def _ended_worktree_worker(layout: Layout, wid: str) -> None:
    """The project made a git repository whose branch `cocoplus/<wid>` is merged, and an ended worker on it."""
    import subprocess

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args], cwd=layout.project,
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip

    git("init", "-q", "-b", "main")
    git("commit", "-q", "--allow-empty", "-m", "base")
    git("branch", f"cocoplus/{wid}")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=layout.project, capture_output=True, text=True).stdout
    tree = os.path.join(layout.worktrees_dir, wid)
    os.makedirs(layout.worker_dir(wid))
    Path(layout.worker_record(wid)).write_text(json.dumps(
        {"schema_version": 1, "id": wid, "runtime": "claude", "task": "merged already", "alias": None,
         "state": "exited",
         "created_at": "2026-01-01T00:00:00.000Z",
         "worktree": {"path": tree, "cwd": tree, "branch": f"cocoplus/{wid}", "base": head.strip(), "copied": []}}
    ))  # fmt: skip
    with open(layout.config, "a") as fh:
        fh.write("\n[supervision]\nbrain_may_merge = true\n")
    trust_project(layout)


def _permission_request(layout: Layout, command: str) -> None:
    """A pending request of cc2's, as its permission hook writes one (ids differ per copy: cc2 names it)."""
    rec = registry.resolve(layout, "cc2")
    permissions.open_request(
        layout, rec, runtime="claude", tool="Bash", tool_input={"command": command}, wait_s=600, worker=None
    )


def project_copy(base: Layout, where: Path) -> Layout:
    shutil.copytree(base.project, where, symlinks=True)
    return Layout(str(where / ".cocoplus"))


FORECAST: dict[str, str] = {}  # the forecast's times for the history the copies hold


@pytest.fixture
def three(tmp_path: Path) -> Any:
    base_dir = tmp_path / "base"
    base_dir.mkdir()
    init(str(base_dir / ".cocoplus"))
    base = Layout(str(base_dir / ".cocoplus"))
    for runtime, rid in (
        ("claude", "11111111-aaaa-0001"),
        ("codex", "22222222-bbbb-0002"),
        ("claude", "33333333-cccc-0003"),
    ):
        registry.ensure(base, runtime, rid, event="SessionStart", change=lambda r: r.update({"state": "running"}))
    seed_busy_worker(base)  # writes cocoplus.toml: first
    write_controller(base)
    hooks_installed(base)  # `launch` refuses a runtime that would run no cocoplus hook
    FORECAST.update(install_history(base, time.time()))  # spend and tool calls at a known rate: the forecasts
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
    rec = {
        "schema_version": 1, "id": "w1", "runtime": "claude", "task": "the busy one", "alias": None,
        "state": "running", "runner": me, "created_at": "2026-01-01T00:00:00.000Z",
    }  # fmt: skip
    Path(layout.worker_record("w1")).write_text(json.dumps(rec))


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


@pytest.mark.slow
def test_the_cli_rest_and_mcp_doors_answer_alike(three: list[Layout], cli: Any) -> None:
    from fastapi.testclient import TestClient

    from cocoplus.server.app import create_app

    cli_lay, rest_lay, mcp_lay = three
    raw_forecast: dict[tuple[str, str], Any] = {}  # the first answer of each door with a forecast, before normalising

    async def scenario(c: Client) -> list[Step]:
        with TestClient(
            create_app(rest_lay, token=TOKEN, port=PORT), base_url=BASE, raise_server_exceptions=False
        ) as client:
            for step in STEPS:
                if step.cli:
                    raw = cli_door(cli, cli_lay, step)
                    raw_forecast.setdefault(("cli", step.op), raw.get("forecast"))
                    step.answers["cli"] = normalise(raw, cli_lay.project)
                else:
                    step.answers["cli"] = _apply(step, cli_lay)
                if step.rest:
                    raw = rest_door(client, step)
                    raw_forecast.setdefault(("rest", step.op), raw.get("forecast"))
                    step.answers["rest"] = normalise(raw, rest_lay.project)
                else:
                    step.answers["rest"] = _apply(step, rest_lay)
                if step.mcp:
                    name, args = step.mcp
                    step.answers["mcp"] = normalise(await c.call(name, **args), mcp_lay.project)
                else:
                    _apply(step, mcp_lay)
        return STEPS

    steps = serve(scenario, cwd=mcp_lay.project)
    compared = set()
    principals: dict[str, set[str]] = {"cli": set(), "rest": set(), "mcp": set()}
    for step in steps:
        for door, answer in step.answers.items():
            principals[door] |= set(_who_acted(answer))
            if step.op == "session.stop" and door == "cli":
                assert answer["stop"]["operator"] == "alice"  # the name given, kept beside the principal
            _drop_who(answer)
    # The same operation through three doors by two principals: the CLI and the page are the operator,
    # the MCP door is the main brain; apart from who acted (and its name) the answers agree.
    assert principals["cli"] == principals["rest"] == {"operator"}, principals
    assert principals["mcp"] == {"brain"}, principals
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
                assert {k: got.get(k) for k in first if k != "problems"} == {
                    k: v for k, v in first.items() if k != "problems"
                }, (n, step.op)
            else:
                assert got == first, f"step {n} {step.op}: {doors[0]} and {other} differ"
    # Every operation offered by more than one door was compared.
    assert compared == {s.op for s in STEPS if sum(bool(getattr(s, d)) for d in ("cli", "rest", "mcp")) > 1}
    # Spot checks that the sequence did what it says (so an empty answer cannot agree with another).
    by_op = {s.op: s for s in steps}
    assert steps[8].answers["cli"]["resumed"] is False and steps[7].answers["cli"]["resumed"] is True
    assert by_op["session.stop_session"].answers["mcp"]["stop"]["reason"] == "wait for the review"
    # `session status` carries the forecasts through both its doors (times normalised, so compared here too).
    for door in ("cli", "rest"):
        fc = raw_forecast[(door, "session.status")]
        assert fc["cost"]["exhausted"] == {"at": FORECAST["exhausted"], "reached": False}, door
        assert fc["lines"][0].startswith("cost budget: reserve from "), door
        assert fc["lines"][1].startswith("iteration cap: 200 tool calls reached at "), door
    assert by_op["session.resume_session"].answers["rest"]["resumed"] is True
    at = by_op["session.resume_at"].answers["cli"]
    assert at["alias"] == "cc2" and at["limit"]["estimate"] is True and at["limit"]["resume"] == "operator"
    assert "; resume at " in at["paused"] and at["watcher_running"] is False and "supervision watcher run" in at["note"]
    assert by_op["dispatch"].answers["mcp"]["route"] == "steer" and by_op["dispatch"].answers["cli"]["alias"] == "cx1"
    assert by_op["answer"].answers["rest"]["question"]["text"] == "may I drop the table?"
    stopped = [s for s in steps if s.op == "sessions.list"][1].answers["mcp"]["sessions"]
    assert [(s["alias"], s["stopped"]["reason"]) for s in stopped if s["stopped"]] == [("cc2", "wait for the review")]
    assert by_op["supervision.finish"].answers["mcp"]["autonomous"]["finish_summary"] == "PR-77 merged"
    assert by_op["chat.send"].answers["rest"]["masterReplyState"] == "failed"
    assert by_op["chat.retry"].answers["cli"]["masterReplyState"] == "queued"
    assert (
        by_op["workers.launch"].answers["mcp"]["state"] == "queued"
        and by_op["workers.launch"].answers["rest"]["id"] == "w2"
    )
    assert (
        by_op["workers.kill"].answers["cli"]["state"] == "exited" and by_op["workers.kill"].answers["rest"]["killed_by"]
    )
    assert [w["state"] for w in by_op["workers.list"].answers["cli"]["workers"]] == ["running", "queued"]
    merged = by_op["workers.merge"].answers["mcp"]
    assert (merged["merged"], merged["already"], merged["branch"]) == (True, True, "cocoplus/w3"), merged
    assert [
        s["alias"] for s in [s for s in steps if s.op == "sessions.list"][2].answers["mcp"]["sessions"] if s["excluded"]
    ] == ["cc2"]

    # And the three projects hold the same state (but for who acted: the operator, or the brain over MCP).
    assert neutral(same_state(cli_lay)) == neutral(same_state(rest_lay)) == neutral(same_state(mcp_lay))


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
    templated = {
        (
            m,
            re.sub(r"/(cc|cx)\d/", "/{session_id}/", p.replace("/permissions/cc2/", "/permissions/{request_id}/"))
            .replace("/master-agent", "/{conversation}")
            .replace("/workers/parser/", "/workers/{worker_id}/")
            .replace("/permissions/cc2/", "/permissions/{request_id}/"),
        )
        for m, p in named
    }
    assert routes - templated - ONE_DOOR == set(), "REST routes no step covers"
    tools = {s.mcp[0] for s in STEPS if s.mcp}
    assert tools == set(BRAIN_TOOLS) | set(WORKER_TOOLS)
