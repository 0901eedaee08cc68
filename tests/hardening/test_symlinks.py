"""No write follows a symbolic link: every path the store names (core/paths.py Layout), with a link
planted at it, is written by the operation that writes it, and the link's target is unchanged."""

from __future__ import annotations

import inspect
import os
import stat
import sys
import threading
import time

import pytest

from cocoplus import config
from cocoplus.core import crashlog, fsio, proc
from cocoplus.core.errors import CocoplusError
from cocoplus.core.lock import Lock
from cocoplus.core.paths import Layout, discover
from cocoplus.session import events, holds, iteration, killswitch, procinfo, queue, registry, status, steering, stops
from cocoplus.session import values as hook_values
from cocoplus.session.workspace import init
from cocoplus.supervision import headless, watcher
from tests.hook.helpers import fixture, run_hook

VICTIM = b"the operator's own file; cocoplus must never write here\n"
CONV = "master-agent"
SESSION = "sess-1"


def _values(layout: Layout):
    return hook_values.for_hook(layout, {})[0]


def _count(layout):
    iteration.count(layout, 100, 80)


def _init_and_count(layout):
    init(layout.root)  # creates PROGRESS.md if missing; the count then rewrites its budget lines
    iteration.count(layout, 100, 80)


def _spool(layout):
    held = threading.Event()
    done = threading.Event()

    def hold():
        with Lock(layout.lock("iteration-budget")):
            held.set()
            done.wait(30)

    t = threading.Thread(target=hold)
    t.start()
    held.wait(30)
    try:
        iteration.count(layout, 100, 80, timeout=0)
    finally:
        done.set()
        t.join()


def _claim(layout):
    steering.steer(layout, "look here")
    steering.claim_steer(layout)


def _budget_state(layout):
    from cocoplus.cost import enforce

    enforce.boundary(layout, _values(layout), source="test")


def _stage(layout):
    from cocoplus.cost import enforce

    enforce.stage_start(layout, "build", _values(layout))


def _spend(layout):
    from cocoplus.cost import spend

    spend.add_cost(layout, 1.5, note="test")


def _measure(layout):
    from cocoplus.cost import spend

    spend.measure(layout, {})


def _session(layout):
    registry.ensure(layout, "claude", SESSION, event="SessionStart")


def _call(layout):
    registry.record_call(layout, registry.cs_id_for(SESSION), "0" * 24)


def _record(layout):
    rec, _ = registry.ensure(layout, "claude", SESSION, event="SessionStart")
    return rec


def _session_stop(layout):
    stops.stop(layout, _record(layout), "ann", "test")


def _session_steer(layout):
    steering.steer(layout, "look here", session=_record(layout)["id"])


def _session_steer_claim(layout):
    cs = _record(layout)["id"]
    steering.steer(layout, "look here", session=cs)
    steering.claim_steer(layout, session=cs)


def _hold(layout):
    cs = _record(layout)["id"]
    holds.begin(
        layout,
        {
            "id": "h_1",
            "session": cs,
            "pid": os.getpid(),
            "start_ticks": procinfo.start_ticks(os.getpid()),
            "started_at": "2026-01-01T00:00:00Z",
            "until": "2099-01-01T00:00:00Z",
        },
    )
    return cs


def _hold_decision(layout):
    cs = _hold(layout)
    holds.decide(layout, cs, "go on", instruction="go on", action="dispatch", by="ann")


def _resume_log(layout):
    headless.spawn(layout, _record(layout), [sys.executable, "-c", "print('resumed')"], "ann")


def _stall_cooldowns(layout):
    watcher.Supervisor(layout)._save_stall_fired(time.time())


def _edit(layout, sid=SESSION):
    """The real hook records a Write of the session's (sessions/<cs>.edits)."""
    payload = fixture("claude-posttooluse-edit.json") | {"session_id": sid, "cwd": layout.project, "tool_name": "Write"}
    payload["tool_input"] = {"file_path": os.path.join(layout.project, "a.py"), "content": "x"}
    assert run_hook(layout, "PostToolUse", payload, cwd=layout.project).code == 0


def _collision(layout):
    from cocoplus.session import edits
    from cocoplus.supervision import collisions

    for sid in (SESSION, "sess-2"):
        registry.ensure(layout, "claude", sid, event="SessionStart")
        edits.record(layout, registry.cs_id_for(sid), ["a.py"], layout.project, layout.project)
    collisions.check(layout, edits.Reader())


def _signal(layout):
    rec, _ = registry.ensure(layout, "claude", SESSION, event="Stop")
    registry.append_signal(layout, rec, "attention", "pending")


def _autonomy(layout):
    from cocoplus.supervision import autonomy

    autonomy.enable(layout, task_hint="watch")


def _round(layout):
    from cocoplus.supervision import autonomy, rounds

    autonomy.enable(layout, task_hint="watch")
    rounds.start_round(layout, [{"kind": "attention", "session": "cs_x", "value": "pending"}], start_worker=False)


def _supervisor(layout):
    sup = watcher.Supervisor(layout, {}, polling=True)
    sup.stopping = True  # write the pid file, then leave at once (it is removed on the way out)
    sup.run()


def _supervisor_cursor(layout):
    _signal(layout)
    watcher.Supervisor(layout, {}, polling=True).read_signals()  # saves how far it has read


def _workflow(layout):
    from cocoplus.supervision import workflow

    workflow.start(layout, "run-1", auto_supervise=False)


def _conversation(layout):
    from cocoplus.chat import store

    store.set_overrides(layout, CONV, model="m")


def _ledger(layout):
    from cocoplus.chat import store

    store.append_message(layout, CONV, "user", "hello")


def _task(layout):
    from cocoplus.chat import store

    store.new_task(layout, CONV, "reply", None, prompt="hi")


def _chat_worker(layout):
    from cocoplus.chat import worker

    worker.serve(layout, once=True)


def _token(layout):
    from cocoplus.server import security

    security.new_token(layout)


def _write_grant(layout):
    from cocoplus.sandbox import writes

    writes.grant(layout, "w1", "/nonexistent/cache", "p_1", "operator")


def _lock(layout):
    with Lock(layout.lock("test")):
        pass


def _hook_log(layout):
    run_hook(layout, "Frobnicate", fixture("claude-pretooluse-bash.json"))  # an unknown event is logged


def _cli_log(layout):
    try:
        raise RuntimeError("boom")
    except RuntimeError as exc:
        crashlog.log_exception("test", exc, layout)


def _marker(layout):
    from cocoplus.core.paths import ensure_marker

    if os.path.isfile(layout.marker) and not os.path.islink(layout.marker):
        os.unlink(layout.marker)  # made by init: ensure_marker writes it again
    ensure_marker(layout)


def _permission_request(layout):
    from cocoplus.session import permissions

    return permissions.open_request(
        layout, None, runtime="claude", tool="Bash", tool_input={"command": "ls"}, wait_s=5, worker=None
    )


def _permission_decision(layout):
    from cocoplus.session import permissions

    req = _permission_request(layout)
    permissions.answer(layout, req["id"], "deny", principal="operator", by="ann")


def _left_decision(layout):
    from cocoplus.inbox import decisions

    decisions.leave(layout, {"id": "q_x", "kind": "question"}, "ann", "cli")


def _refusal(layout):
    from cocoplus.core.errors import Refused
    from cocoplus.ops import authority

    try:
        authority.require(authority.worker("cc1"), "resume", "session resume", layout)
    except Refused:
        pass


def _spawned_log(path_of):
    def op(layout):
        child = proc.spawn_cocoplus(["--version"], state_dir=layout.root, cwd=layout.project, log_path=path_of(layout))
        child.wait(60)

    return op


def _fleet_command(layout):
    from cocoplus.fleet import commands, naming
    from cocoplus.relay import apply

    cmd = commands.make("fc_test", 1, "stop", naming.Target("m1", "p"), {}, "ann", "m2")
    apply.Applied(layout).begin(cmd)


def _fleet_sent(layout):
    from cocoplus.ops import fleet as fleet_ops

    fleet_ops.log_sent(layout, {"batch": "fc_test", "phase": "sent", "type": "stop", "targets": ["m1/p"]})


def _fleet_cursors(layout):
    from cocoplus.relay import outbox

    outbox.save_cursors(layout, {"signals": {"ino": 1, "offset": 0}})


def _relay_state(layout):
    from cocoplus.fleet.options import FleetOptions
    from cocoplus.relay.service import Relay

    Relay(layout, FleetOptions(urls=["nats://127.0.0.1:1"], fleet="t", machine="m1", project="p")).write_status()


# Layout member -> (the operation that writes it, "file" or "dir").
def _notify_state(layout):
    from cocoplus.notify import outbox

    outbox.save(layout, outbox.fresh({}))


def _notify_delivery(layout):
    from cocoplus.notify import outbox

    outbox.log_delivery(layout, {"nid": "n_000000000000", "kind": "pending", "target": "t", "ok": True})


def _notify_log(layout):
    from cocoplus.notify.runner import Notifier

    Notifier(layout, {}).log("a line")


def _telemetry(lay: Layout) -> None:
    """One export pass (its status and its cursor) of a worker's ended run, to a loopback receiver."""
    from cocoplus.telemetry.export import Exporter
    from tests.support.otlp import Receiver

    os.makedirs(lay.worker_dir("w9"), exist_ok=True)
    fsio.atomic_write_json(lay.worker_record("w9"), {
        "id": "w9", "runtime": "claude", "state": "exited", "created_at": "2026-01-01T00:00:00.000Z",
        "ended_at": "2026-01-01T00:00:01.000Z",
    })  # fmt: skip
    with Receiver() as rx:
        Exporter(lay, "test", environ={"OTEL_EXPORTER_OTLP_ENDPOINT": rx.url}).pass_once()


def _worker_calls(lay: Layout) -> None:
    """A worker's own call log, appended as its hook appends it where its runtime's events name no session."""
    from cocoplus.supervision.workers import store

    with store.lock(lay):
        fsio_ensure(lay.worker_dir("w1"))
    registry.append_call(lay.worker_calls("w1"), "0" * 24)


def _worker_stop(lay: Layout) -> None:
    """Why a worker's run was ended by its hook, written as hook/tripped.py writes it (an atomic JSON write)."""
    from cocoplus.core import fsio

    fsio_ensure(lay.worker_dir("w1"))
    fsio.atomic_write_json(lay.worker_stop("w1"), {"principal": "loop-guard", "scope": "worker", "reason": "test"})


def _mcp_approval(lay: Layout) -> None:
    """The record of the MCP approval `install claude` gave (install/mcp_config.py)."""
    from cocoplus.install import mcp_config

    mcp_config._save_records(lay, {"claude": {"file": ".claude/settings.local.json"}})


def _night_summary(lay: Layout) -> None:
    """The mark of the last summary logged for the end of all workers (supervision/summary.py)."""
    from cocoplus.core import clock
    from cocoplus.supervision import summary
    from cocoplus.supervision.workers import store

    with store.lock(lay):
        fsio_ensure(lay.worker_dir("w1"))
        store.write(lay, {"schema_version": 1, "id": "w1", "state": "exited", "ended_at": clock.iso()})
    summary.after_worker_end(lay, "w1")


def fsio_ensure(path: str) -> None:
    from cocoplus.core import fsio

    fsio.ensure_dir(path)


def _worker_files(lay: Layout) -> None:
    """A worker's record, output and runner log, written as a launch and its runner write them."""
    from cocoplus.core import fsio
    from cocoplus.supervision import workerrun
    from cocoplus.supervision.workers import store

    with store.lock(lay):
        fsio.ensure_dir(lay.worker_dir("w1"))
        store.write(lay, {"schema_version": 1, "id": "w1", "state": "exited"})
    out = workerrun.Output(lay.worker_log("w1"), 1 << 20)
    out.write(b"output\n")
    out.close()
    fd = fsio.open_log(lay.worker_runner_log("w1"))
    os.write(fd, b"runner\n")
    os.close(fd)


def _git_project(lay: Layout) -> None:
    import subprocess

    if not os.path.isdir(os.path.join(lay.project, ".git")):
        for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "base"]):
            subprocess.run(
                ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args], cwd=lay.project,
                check=True, capture_output=True, timeout=60,
            )  # fmt: skip


def _worktree(lay: Layout) -> None:
    """A worker's git worktree made as `launch --worktree` makes it (under worktrees/, its key beside the record)."""
    from cocoplus.supervision import worktrees

    _git_project(lay)
    os.makedirs(lay.worker_dir("w1"), exist_ok=True)
    worktrees.create(lay, "w1", "w1", "claude", worktrees.check(lay, "w1", {}))


def _worktree_marker(lay: Layout) -> None:
    """The marker and key as `launch --worktree` writes them, with this state directory as the worktree's own."""
    from cocoplus.supervision import worktrees

    worktrees._mark(Layout(lay.root), "w1", lay.project)


WRITERS = {
    "agent_stop": (lambda lay: killswitch.stop(lay, "ann", "test"), "file"),
    "steer": (lambda lay: steering.steer(lay, "look here"), "file"),
    "steer_claimed_dir": (_claim, "dir"),
    "pod_state": (lambda lay: status.set_state(lay, "idle"), "file"),
    "status": (lambda lay: status.set_state(lay, "idle"), "file"),
    "hook_config": (config.compile_for_hook, "file"),
    "price_table": (lambda lay: __import__("cocoplus.cost.price_table", fromlist=["refresh"]).refresh(lay), "file"),
    "readme": (init_ := lambda lay: init(lay.root), "file"),
    "gitignore": (init_, "file"),
    "session_dir": (lambda lay: status.set_state(lay, "idle"), "dir"),
    "progress": (_init_and_count, "file"),
    "context": (init_, "file"),
    "handoff_stamp": (_init_and_count, "file"),
    "task_queue": (lambda lay: queue.add(lay, "later"), "file"),
    "iteration_budget": (_count, "file"),
    "iteration_spool_dir": (_spool, "dir"),
    "budget_state": (_budget_state, "file"),
    "steps": (lambda lay: events.log_step(lay, "x"), "file"),
    "stage": (_stage, "file"),
    "cost_dir": (_spend, "dir"),
    "spend_log": (_spend, "file"),
    "legacy_spend_log": (_measure, "file"),
    "cost_cursors": (_measure, "file"),
    "sessions_dir": (_session, "dir"),
    "sessions_index": (_session, "file"),
    "session_record": (_session, "file"),
    "session_stops_dir": (_session_stop, "dir"),
    "session_stop": (_session_stop, "file"),
    "session_steers_dir": (_session_steer, "dir"),
    "session_steer": (_session_steer, "file"),
    "session_steer_claimed_dir": (_session_steer_claim, "dir"),
    "holds_dir": (_hold, "dir"),
    "hold": (_hold, "file"),
    "hold_decision": (_hold_decision, "file"),
    "resumes_dir": (_resume_log, "dir"),
    "resume_log": (_resume_log, "dir"),
    "stall_cooldowns": (_stall_cooldowns, "file"),
    "supervision_dir": (_autonomy, "dir"),
    "supervision_state": (_autonomy, "file"),
    "signals": (_signal, "file"),
    "rounds": (_round, "file"),
    "current_round": (_round, "file"),
    "supervisor_pid": (_supervisor, "file"),
    "supervisor_cursor": (_supervisor_cursor, "file"),
    "workflows": (_workflow, "file"),
    "chat_dir": (_conversation, "dir"),
    "conversation_dir": (_conversation, "dir"),
    "conversation_file": (_conversation, "file"),
    "ledger": (_ledger, "file"),
    "tasks_dir": (_task, "dir"),
    "task_record": (_task, "file"),
    "chat_worker_pid": (_chat_worker, "file"),
    "server_token": (_token, "file"),
    "secrets_dir": (_token, "dir"),
    "worker_write_grants": (_write_grant, "file"),
    "locks_dir": (_lock, "dir"),
    "lock": (_lock, "file"),
    "kill_switch_lock": (lambda lay: killswitch.stop(lay, "ann", "test"), "file"),
    "logs_dir": (_cli_log, "dir"),
    "hook_log": (_hook_log, "file"),
    "cli_log": (_cli_log, "file"),
    "authority_log": (_refusal, "file"),
    "session_calls": (_call, "file"),
    "session_edits": (_edit, "file"),
    "collisions": (_collision, "file"),
    "permissions_dir": (_permission_request, "dir"),
    "permission_requests_dir": (_permission_request, "dir"),
    "permission_request": (_permission_request, "file"),
    "permission_log": (_permission_decision, "file"),
    "inbox_left": (_left_decision, "file"),
    "marker": (_marker, "file"),
    "supervisor_log": (_spawned_log(lambda lay: lay.supervisor_log), "file"),
    "chat_worker_log": (_spawned_log(lambda lay: lay.chat_worker_log), "file"),
    "fleet_dir": (_fleet_command, "dir"),
    "fleet_commands": (_fleet_command, "file"),
    "fleet_sent": (_fleet_sent, "file"),
    "fleet_cursors": (_fleet_cursors, "file"),
    "relay_state": (_relay_state, "file"),
    "notify_dir": (_notify_state, "dir"),
    "notify_state": (_notify_state, "file"),
    "notify_log": (_notify_log, "file"),
    "telemetry_dir": (_telemetry, "dir"),
    "telemetry_status": (_telemetry, "file"),
    "telemetry_cursor": (_telemetry, "file"),
    "notify_deliveries": (_notify_delivery, "file"),
    "relay_log": (_spawned_log(lambda lay: lay.relay_log), "file"),
    "workers_dir": (_worker_files, "dir"),
    "worker_dir": (_worker_files, "dir"),
    "worker_record": (_worker_files, "file"),
    "worker_log": (_worker_files, "file"),
    "worker_runner_log": (_worker_files, "file"),
    "worker_calls": (_worker_calls, "file"),
    "mcp_approvals": (_mcp_approval, "file"),
    "worker_stop": (_worker_stop, "file"),
    "night_summary": (_night_summary, "file"),
    "worker_worktree_key": (_worktree_marker, "file"),
    "worktree_marker": (_worktree_marker, "file"),
    "worktrees_dir": (_worktree, "dir"),
    "worktree": (_worktree, "dir"),
}

# Members that are not files under `.cocoplus/` that cocoplus writes, and why.
NOT_WRITTEN_HERE = {
    "root": "the state directory itself: test_a_linked_state_directory_is_refused",
    "project": "the project directory, not under .cocoplus/",
    "config": "cocoplus.toml in the project, written by the user",
    "tool_streak": "named, but nothing reads or writes it (test_unwritten_paths_stay_unwritten)",
    "rel": "a function of a path, not a path",
    "appended_files": "the list of the logs above",
    "worker_helpers": "a directory of links the runner makes (fsio.ensure_dir refuses a linked directory; each link "
    "in it is unlinked and made anew, never followed)",
    "worker_channel": "a Unix socket the runner binds (sandbox/channel.py `listen` unlinks what is at its name, and a "
    "bind makes a new socket, never following a link)",
    "worker_proxy": "a Unix socket the runner binds, as worker_channel (the same `listen`)",
    "legacy_server_token": "where an earlier version kept the server's token: only removed (unlinking a link "
    "removes the link), never written (test_an_earlier_versions_server_token_is_removed)",
}


def _path_of(layout: Layout, name: str) -> str | None:
    member = getattr(layout, name)
    if not callable(member):
        return member
    args = {
        "session_record": (registry.cs_id_for(SESSION),),
        "conversation_dir": (CONV,),
        "conversation_file": (CONV,),
        "ledger": (CONV,),
        "tasks_dir": (CONV,),
        "lock": ("test",),
        **{
            n: ("w1",)
            for n in (
                "worker_dir",
                "worker_record",
                "worker_log",
                "worker_runner_log",
                "worker_worktree_key",
                "worker_calls",
                "worker_stop",
                "worker_write_grants",
            )
        },
        "worktree": ("w1",),
    }
    if name in ("task_record", "resume_log", "permission_request"):
        return None  # its name is a fresh id: its directory is planted instead
    cs = registry.cs_id_for(SESSION)
    args.update(
        {
            n: (cs,)
            for n in (
                "session_calls",
                "session_edits",
                "session_stop",
                "session_steer",
                "session_steer_claimed_dir",
                "hold",
                "hold_decision",
            )
        }
    )
    return member(*args[name])


def test_every_layout_path_is_covered():
    members = {
        n
        for n, v in vars(Layout).items()
        if not n.startswith("_") and (isinstance(v, property) or inspect.isfunction(v))
    }
    members |= set(Layout.__slots__)
    assert members == set(WRITERS) | set(NOT_WRITTEN_HERE)


def _target(layout: Layout, name: str, kind: str) -> tuple[str, str]:
    target = _path_of(layout, name)
    if target is None:  # task records and resume logs: their directory stands in
        dirs = {"resume_log": layout.resumes_dir, "permission_request": layout.permission_requests_dir}
        return dirs.get(name, layout.tasks_dir(CONV)), "dir"
    return target, kind


def _clear(target: str) -> None:
    import shutil

    if os.path.isdir(target) and not os.path.islink(target):
        shutil.rmtree(target)
    elif os.path.lexists(target):
        os.unlink(target)


REMOVED_ON_EXIT = {"supervisor_pid", "chat_worker_pid"}  # written at start, removed when the process leaves


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_each_operation_really_writes_its_path(project, name, monkeypatch):
    """Without a link, the operation creates the path: the symlink test below is not passing vacuously."""
    from cocoplus.core import fsio

    op, kind = WRITERS[name]
    target, kind = _target(project, name, kind)
    _clear(target)
    written: list[str] = []
    real_write = fsio.atomic_write_bytes

    def watching_write(path, data, mode=0o600):
        written.append(path)
        return real_write(path, data, mode)

    monkeypatch.setattr(fsio, "atomic_write_bytes", watching_write)  # still the real write, only watched
    if name == "legacy_spend_log":
        os.makedirs(project.cost_dir, exist_ok=True)
        with open(target, "w") as fh:
            fh.write('{"key": "k1", "usd": 1.0}\n')
    op(project)
    if name == "legacy_spend_log":
        assert not os.path.lexists(target) and os.path.isfile(project.spend_log)  # adopted under its new name
    elif name in REMOVED_ON_EXIT:
        assert target in written
    elif kind == "file":
        assert os.path.isfile(target), target
    else:
        assert os.path.isdir(target) and any(os.scandir(target)), target


def test_unwritten_paths_stay_unwritten():
    import cocoplus

    root = os.path.dirname(cocoplus.__file__)
    for dirpath, _, names in os.walk(root):
        for n in names:
            if n.endswith(".py") and not (dirpath.endswith("core") and n == "paths.py"):
                with open(os.path.join(dirpath, n)) as fh:
                    assert ".tool_streak" not in fh.read(), f"{n} uses tool_streak: give it a writer in WRITERS"


def _snapshot(path: str) -> dict[str, bytes]:
    if os.path.isfile(path):
        with open(path, "rb") as fh:
            return {"": fh.read()}
    out = {}
    for dirpath, _, names in os.walk(path):
        for n in names:
            full = os.path.join(dirpath, n)
            with open(full, "rb") as fh:
                out[os.path.relpath(full, path)] = fh.read()
    return out


def _cases():
    for name, (op, kind) in sorted(WRITERS.items()):
        yield pytest.param(name, op, kind, id=name)


@pytest.mark.parametrize("name, op, kind", list(_cases()))
def test_a_symlink_planted_at_a_written_path_is_never_written_through(project, tmp_path, name, op, kind):
    target, kind = _target(project, name, kind)
    victim = str(tmp_path / "victim")
    if kind == "file":
        with open(victim, "wb") as fh:
            fh.write(VICTIM)
    else:
        os.mkdir(victim)
        # Files with the names the operation would write, so a write through the link shows.
        for n in (
            "status.json",
            "pod-state.json",
            "steps.jsonl",
            "spend.jsonl",
            "cocoplus.log",
            "hook.log",
            "index.json",
            "state.json",
            "conversation.json",
            "test.lock",
            "x",
        ):
            with open(os.path.join(victim, n), "wb") as fh:
                fh.write(VICTIM)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    _clear(target)
    os.symlink(victim, target)
    before = _snapshot(victim)
    try:
        op(project)
    except CocoplusError:
        pass  # refusing is fine; writing through the link is not
    assert _snapshot(victim) == before


def test_a_linked_state_directory_is_refused(tmp_path):
    real = tmp_path / "elsewhere"
    real.mkdir()
    init(str(real / ".cocoplus"))
    proj = tmp_path / "clone"
    proj.mkdir()
    os.symlink(real / ".cocoplus", proj / ".cocoplus")
    with pytest.raises(CocoplusError, match="symbolic link"):
        discover(str(proj))
    with pytest.raises(CocoplusError, match="symbolic link"):
        init(str(proj / ".cocoplus"))


def test_a_state_directory_owned_by_someone_else_is_refused_for_writing(tmp_path):
    from tests.hardening.support import second_user

    with second_user() as user:
        proj = tmp_path / "theirs"
        proj.mkdir()
        os.mkdir(proj / ".cocoplus", 0o700)
        os.chown(proj / ".cocoplus", user.pw_uid, user.pw_gid)
        with pytest.raises(CocoplusError, match="owned by uid"):
            discover(str(proj))
        layout = discover(str(proj), check=False)  # a reader may still look
        assert layout.root == str(proj / ".cocoplus")


def test_a_state_directory_writable_by_everyone_is_refused(tmp_path):
    proj = tmp_path / "shared"
    proj.mkdir()
    os.mkdir(proj / ".cocoplus")
    os.chmod(proj / ".cocoplus", 0o777)
    with pytest.raises(CocoplusError, match="writable by every user"):
        discover(str(proj))


def test_an_earlier_versions_server_token_is_removed(project):
    """A server starting removes the token an earlier version left where a sandbox hides it only while it stays
    the same file; a link there is removed, not followed."""
    from cocoplus.server import security

    elsewhere = os.path.join(os.path.dirname(project.root), "elsewhere-token")
    with open(elsewhere, "w") as fh:
        fh.write("keep\n")
    os.symlink(elsewhere, project.legacy_server_token)
    token = security.new_token(project)
    assert not os.path.lexists(project.legacy_server_token)
    assert open(elsewhere).read() == "keep\n" and security.read_token(project) == token
    assert stat.S_IMODE(os.stat(project.secrets_dir).st_mode) == 0o700
