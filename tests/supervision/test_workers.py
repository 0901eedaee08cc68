"""Managed workers with real runner processes and a scripted stand-in runtime.

The stand-in is a shell script named `claude` first on PATH (the real
Claude Code CLI runs in tests/e2e/test_workers_claude.py): it prints its
arguments, then waits for a gate file of its own, prints a given amount of
output, or starts a grandchild, as each test asks.  Every test's finalizer
kills whatever its workers left (`stop_workers`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cocoplus.core import clock, fsio, jsonl
from cocoplus.core.paths import Layout
from cocoplus.core.shapes import SessionRecord
from cocoplus.runtimes.adapters import codex
from cocoplus.session import killswitch, procinfo, registry
from cocoplus.session.workspace import init
from cocoplus.supervision import dispatch, headless, triggers, workerrun, workers
from tests.supervision.workers_support import stop_workers
from tests.support.typed import present
from tests.support.waiting import wait_until
from tests.support.wired import hooks_installed

FAKE = """#!/bin/sh
# Stand-in runtime for the worker tests: $FAKE_DIR/<task>.gate releases it.
task="$2"
echo "fake runtime: $*"
if [ -n "$FAKE_BYTES" ]; then head -c "$FAKE_BYTES" /dev/zero | tr '\\0' 'x'; echo; fi
if [ -n "$FAKE_CHILD" ]; then sleep 300 & echo "child $!" > "$FAKE_DIR/$task.child"; fi
if [ -n "$FAKE_DAEMON" ]; then
  # A double fork with setsid: the daemon leaves the runtime's process group and session, keeps its stdout
  # (the worker's output pipe) open, and starts a child of its own; "daemon PID CHILD SID" once both run.
  ( setsid sh -c 'sleep 301 & echo "daemon $$ $! $(cut -d" " -f6 /proc/$$/stat)" > "$FAKE_DIR/$0.daemon.tmp" &&
    mv "$FAKE_DIR/$0.daemon.tmp" "$FAKE_DIR/$0.daemon"; echo "daemon up"; exec sleep 300' "$task" & )
  while [ ! -e "$FAKE_DIR/$task.daemon" ]; do sleep 0.05; done  # up before the runtime goes on (or exits)
fi
if [ -n "$FAKE_STREAM" ]; then
  # A runtime's stream, cut at byte $FAKE_SPLIT (mid-line): the rest once $FAKE_DIR/<task>.half exists.
  head -c "$FAKE_SPLIT" "$FAKE_STREAM"
  while [ ! -e "$FAKE_DIR/$task.half" ]; do sleep 0.05; done
  tail -c +"$((FAKE_SPLIT + 1))" "$FAKE_STREAM"
fi
i=0
while [ ! -e "$FAKE_DIR/$task.gate" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done
echo "fake runtime: $task done"
exit "${FAKE_CODE:-0}"
"""


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Layout]:
    project = tmp_path / "shop"
    project.mkdir()
    init(str(project / ".cocoplus"))
    layout = Layout(str(project / ".cocoplus"))
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    script = bindir / "claude"
    script.write_text(FAKE)
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_DIR", str(tmp_path))
    hooks_installed(layout, "claude")  # launch refuses a runtime that would run no cocoplus hook
    yield layout
    for gate in [*tmp_path.glob("*.child"), *tmp_path.glob("*.daemon")]:
        for pid in gate.read_text().split()[1:]:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (OSError, ValueError):
                pass
    stop_workers(layout)


def release(layout: Layout, task: str) -> None:
    (Path(layout.project).parent / f"{task}.gate").touch()


def state(layout: Layout, wid: str) -> str | None:
    rec = workers.read(layout, wid)
    return rec.get("state") if rec else None


def config(layout: Layout, text: str) -> None:
    Path(layout.config).write_text(text)


def test_a_launch_beyond_max_parallel_waits_and_starts_when_one_finishes_with_no_watcher(proj: Layout) -> None:
    config(proj, "[workers]\nmax_parallel = 2\n")
    first = workers.launch(proj, "claude", "one", by="alice")
    second = workers.launch(proj, "claude", "two", by="alice")
    third = workers.launch(proj, "claude", "three", by="alice")
    assert [first["state"], second["state"], third["state"]] == ["running", "running", "queued"]
    assert third["waiting_since"] and third["pid"] is None
    listing = workers.listing(proj)
    assert (listing["running"], listing["queued"], listing["max_parallel"]) == (2, 1, 2)
    release(proj, "two")
    wait_until(lambda: state(proj, "w2") == "exited" and state(proj, "w3") == "running", timeout=30)
    assert state(proj, "w1") == "running"
    w3 = workers.read(proj, "w3")
    assert w3 and w3["started_at"] >= workers.read(proj, "w2")["ended_at"]  # type: ignore[index]
    release(proj, "one")
    release(proj, "three")
    wait_until(lambda: {state(proj, w) for w in ("w1", "w2", "w3")} == {"exited"}, timeout=30)
    assert workers.read(proj, "w3")["exit"] == {"code": 0, "signal": None, "status": "exit code 0"}  # type: ignore[index]
    log = Path(proj.worker_log("w3")).read_text()
    assert "fake runtime: -p three --output-format stream-json --verbose" in log and "three done" in log


def test_the_worker_runs_detached_in_its_own_process_group_in_the_project(proj: Layout) -> None:
    rec = workers.launch(proj, "claude", "where", by="alice", model="m-1", effort="high")
    assert rec["command"][1:] == [
        "-p",
        "where",
        "--output-format",
        "stream-json",
        "--verbose",
        "--model",
        "m-1",
        "--effort",
        "high",
    ]
    rec = wait_until(lambda: (r := workers.read(proj, "w1")) and r.get("pid") and r)
    pid = rec["pid"]
    assert os.getpgid(pid) == pid and os.getsid(pid) != os.getsid(0)  # its own group, not this terminal's session
    assert os.readlink(f"/proc/{pid}/cwd") == proj.project
    env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    assert b"COCOPLUS_WORKER=w1" in env
    release(proj, "where")
    wait_until(lambda: state(proj, "w1") == "exited")


def test_kill_stops_the_process_group_and_says_who(proj: Layout, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_CHILD", "1")
    workers.launch(proj, "claude", "long", by="alice")
    child_file = Path(proj.project).parent / "long.child"
    # The shell creates the file before it writes the line: wait for the whole line.
    grandchild = int(wait_until(lambda: child_file.exists() and len(f := child_file.read_text().split()) == 2 and f)[1])
    rec = wait_until(lambda: (r := workers.read(proj, "w1")) and r.get("pid") and r)
    assert procinfo.alive(grandchild) is True
    done = workers.kill(proj, "w1", "bob")
    assert done["state"] == "exited" and done["killed_by"] == "bob"
    assert done["reason"].startswith("killed by bob") and done["exit"]["signal"] == "SIGTERM"
    wait_until(lambda: procinfo.alive(grandchild) is False and procinfo.alive(rec["pid"], rec["start_ticks"]) is False)
    with pytest.raises(Exception, match="is not running"):
        workers.kill(proj, "w1", "bob")


def test_the_kill_switch_ends_a_run_whose_hooks_are_not_running(proj: Layout, monkeypatch: pytest.MonkeyPatch) -> None:
    # As a launched `codex exec` in a project whose hooks nobody reviewed: it runs, and no hook records a session.
    bindir = Path(shutil.which("claude") or "").parent
    (bindir / "codex").write_text(
        '#!/bin/sh\nfor a; do t=$a; done; exec claude -p "$t"\n'
    )  # codex exec --json [flags] TASK, as the stand-in
    (bindir / "codex").chmod(0o755)
    monkeypatch.setenv("FAKE_CHILD", "1")
    workers.launch(proj, "codex", "unhooked", by="alice", unsupervised=True)
    child_file = Path(proj.project).parent / "unhooked.child"
    grandchild = int(wait_until(lambda: child_file.exists() and len(f := child_file.read_text().split()) == 2 and f)[1])
    rec = wait_until(lambda: (r := workers.read(proj, "w1")) and r.get("pid") and r)
    killswitch.stop(proj, "carol", "everything stops")
    # At once: Codex may skip the project's hooks (HOOKS_NEED_REVIEW), so no start-up grace is given.
    done = wait_until(
        lambda: (r := workers.read(proj, "w1")) and r["state"] == "exited" and r, timeout=workerrun.STARTUP_GRACE_S
    )
    assert done["killed_by"] == workerrun.STOPPED_BY and done["exit"]["signal"] == "SIGTERM", done
    wait_until(lambda: procinfo.alive(grandchild) is False and procinfo.alive(rec["pid"], rec["start_ticks"]) is False)
    assert "hooks recorded no session" in Path(proj.worker_runner_log("w1")).read_text()


@pytest.mark.slow
def test_a_run_whose_hooks_record_no_session_in_its_start_up_grace_is_ended_too(proj: Layout) -> None:
    workers.launch(proj, "claude", "silent", by="alice")  # Claude Code's hooks run: its session is awaited
    wait_until(lambda: (r := workers.read(proj, "w1")) and r.get("pid"))
    killswitch.stop(proj, "carol", "everything stops")
    done = wait_until(
        lambda: (r := workers.read(proj, "w1")) and r["state"] == "exited" and r,
        timeout=workerrun.STARTUP_GRACE_S + 30,
    )
    assert done["killed_by"] == workerrun.STOPPED_BY, done
    ran = clock.parse_iso(done["ended_at"]) - clock.parse_iso(done["started_at"])  # type: ignore[operator]
    assert ran >= workerrun.STARTUP_GRACE_S - 0.5  # not before its hooks had their chance to record its session


CODEX = '#!/bin/sh\nfor a; do t=$a; done; exec claude -p "$t"\n'  # codex exec --json [flags] TASK, as the stand-in
THREAD = "01a235df-660b-7823-b699-5cc3287db900"


def codex_stand_in() -> None:
    bindir = Path(shutil.which("claude") or "").parent
    (bindir / "codex").write_text(CODEX)
    (bindir / "codex").chmod(0o755)


def test_a_run_limited_before_any_hook_ran_is_paused_on_the_session_its_output_named(proj: Layout) -> None:
    # A launched `codex exec` whose hooks nobody reviewed, stopped by a limit: its runner names the thread.
    codex_stand_in()
    workers.launch(proj, "codex", "limited", by="alice", alias="cparser", unsupervised=True)
    rec = wait_until(lambda: (r := workers.read(proj, "w1")) and r.get("pid") and r)
    found = {"reason": "rate limit", "resets_at": None, "detail": "exceeded retry limit, last status: 429"}
    done = workers.finish(proj, "w1", 1, limit=found, native={"id": THREAD, "transcript_path": "/x/rollout.jsonl"})
    release(proj, "limited")
    assert done is not None and done["state"] == "exited" and done["limit"]["estimate"] is True, done
    sess = registry.read_record(proj, done["session"])
    assert sess is not None and sess["state"] == "paused" and sess["alias"] == "cparser" and sess["worker"] == "w1"
    assert sess["runtime_session_id"] == THREAD and sess["last_event"] == workers.FROM_OUTPUT
    assert sess["limit"]["resume"] == "watcher" and sess["transcript_path"] == "/x/rollout.jsonl"
    # Sealed as its SessionStart hook would have sealed it: dispatch may resume it (as the worker's next run).
    assert headless.refused(proj, sess) is None
    wait_until(lambda: procinfo.alive(rec["pid"], rec["start_ticks"]) is False)
    assert dispatch.route(proj, sess)[0] == "resume"  # its run's process is gone
    with_transcript: SessionRecord = {**sess, "transcript_path": __file__}
    cmd, why = headless.plan(proj, with_transcript, "go on")
    assert cmd == [rec["command"][0], "exec", "resume", THREAD, "go on", "--json", codex.BYPASS_REVIEW], why
    assert [s["kind"] for s in jsonl.read_jsonl(proj.signals).records].count("limited") == 1


def test_the_kill_switch_ends_a_run_whose_session_only_its_output_named(proj: Layout) -> None:
    # A resumed Codex thread whose hooks still do not run: a session is recorded, but no hook blocks its tools.
    codex_stand_in()
    workers.launch(proj, "codex", "resumed", by="alice", unsupervised=True)
    rec = wait_until(lambda: (r := workers.read(proj, "w1")) and r.get("pid") and r)
    assert workers.session_from_output(proj, rec, {"id": THREAD}) is not None
    killswitch.stop(proj, "carol", "everything stops")
    done = wait_until(
        lambda: (r := workers.read(proj, "w1")) and r["state"] == "exited" and r, timeout=workerrun.STARTUP_GRACE_S
    )
    assert done["killed_by"] == workerrun.STOPPED_BY, done


@pytest.mark.slow
def test_the_kill_switch_leaves_a_run_whose_hooks_run_to_them(proj: Layout) -> None:
    workers.launch(proj, "claude", "hooked", by="alice")
    wait_until(lambda: (r := workers.read(proj, "w1")) and r.get("pid"))
    linked_session(proj, "w1")  # its SessionStart hook ran: its hooks block its tools, and it ends its turn itself
    killswitch.stop(proj, "carol", "everything stops")
    time.sleep(3 * workerrun.STOP_POLL_S)  # the guard has looked (and left it) several times
    assert state(proj, "w1") == "running"
    release(proj, "hooked")
    done = wait_until(lambda: (r := workers.read(proj, "w1")) and r["state"] == "exited" and r)
    assert done["killed_by"] is None and done["exit"]["code"] == 0, done


def daemon_of(layout: Layout, task: str) -> tuple[int, int]:
    """The pids of the stand-in's setsid daemon and of the daemon's own child, once both run."""
    path = Path(layout.project).parent / f"{task}.daemon"
    _, daemon, child, sid = wait_until(lambda: path.exists() and path.read_text().split())
    assert int(sid) == int(daemon)  # a session of its own: out of the runtime's process group, which killpg would reach
    return int(daemon), int(child)


def gone(pid: int, ticks: int | None) -> bool:
    return procinfo.alive(pid, ticks) is False


@pytest.mark.slow
def test_a_daemon_the_runtime_leaves_behind_holds_no_slot_and_is_ended(
    proj: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    config(proj, "[workers]\nmax_parallel = 1\n")
    monkeypatch.setenv("FAKE_DAEMON", "1")
    release(proj, "serve")  # the runtime exits as soon as it has started its daemon
    workers.launch(proj, "claude", "serve", by="alice")
    daemon, its_child = daemon_of(proj, "serve")
    monkeypatch.delenv("FAKE_DAEMON")
    second = workers.launch(proj, "claude", "next", by="alice")
    # The daemon keeps the output pipe open and sleeps for minutes; the slot comes free when the runtime exits.
    wait_until(lambda: state(proj, "w1") == "exited" and state(proj, "w2") == "running", timeout=60)
    assert second["id"] == "w2"
    w1 = wait_until(
        lambda: (
            (r := workers.read(proj, "w1")) and r.get("left_behind") and all(p["ended"] for p in r["left_behind"]) and r
        )
    )
    assert w1["exit"]["status"] == "exit code 0" and w1["reason"] == "ended (exit code 0)"
    left = {p["pid"]: p for p in w1["left_behind"]}
    assert left[daemon]["command"] == "sleep 300" and left[its_child]["command"] == "sleep 301"
    # It is ended, and so is the daemon's own child (re-parented to the runner when the daemon went): gone and reaped.
    wait_until(lambda: not os.path.exists(f"/proc/{daemon}") and not os.path.exists(f"/proc/{its_child}"))
    runner_log = Path(proj.worker_runner_log("w1")).read_text()
    assert (
        "the runtime left" in runner_log
        and f"pid {daemon} (sleep 300)" in runner_log
        and f"pid {its_child} (sleep 301)" in runner_log
        and "what it left behind is ended" in runner_log
    )
    assert "daemon up" in Path(proj.worker_log("w1")).read_text()
    from tests.conftest import run_cli_subprocess

    listed = run_cli_subprocess("workers", "list", cwd=proj.project)
    row = next(line for line in listed.out.splitlines() if line.startswith("w1 "))
    assert "left" in row and "behind (ended)" in row, listed.out
    release(proj, "next")
    wait_until(lambda: state(proj, "w2") == "exited")
    assert "left_behind" not in (workers.read(proj, "w2") or {})


def test_kill_ends_what_the_runtime_left_behind_too(proj: Layout, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_DAEMON", "1")
    workers.launch(proj, "claude", "stays", by="alice")
    daemon, its_child = daemon_of(proj, "stays")
    ticks = (procinfo.start_ticks(daemon), procinfo.start_ticks(its_child))
    wait_until(lambda: (r := workers.read(proj, "w1")) and r.get("pid"))
    done = workers.kill(proj, "w1", "bob")
    assert done["state"] == "exited" and done["killed_by"] == "bob"
    # When kill returns, the daemon (in a session of its own) and its child are gone.
    assert gone(daemon, ticks[0]) and gone(its_child, ticks[1])
    assert {p["pid"] for p in done["left_behind"]} >= {daemon} and all(p["ended"] for p in done["left_behind"])
    # And reaped: the runner, their subreaper, leaves no zombie.
    wait_until(lambda: not os.path.exists(f"/proc/{daemon}") and not os.path.exists(f"/proc/{its_child}"))


def test_a_queued_worker_killed_never_starts(proj: Layout) -> None:
    config(proj, "[workers]\nmax_parallel = 1\n")
    workers.launch(proj, "claude", "busy", by="alice")
    queued = workers.launch(proj, "claude", "later", by="alice", alias="later-one")
    assert queued["state"] == "queued" and queued["alias"] == "later-one"
    done = workers.kill(proj, "later-one", "carol")
    assert done["state"] == "exited" and done["killed_by"] == "carol"
    runner = queued["runner"] if queued.get("runner") else workers.read(proj, "w2")["runner"]  # type: ignore[index]
    wait_until(lambda: procinfo.alive(runner["pid"], runner["start_ticks"]) is False)
    release(proj, "busy")
    wait_until(lambda: state(proj, "w1") == "exited")
    assert workers.read(proj, "w2")["pid"] is None  # type: ignore[index]


def linked_session(layout: Layout, wid: str) -> SessionRecord:
    """What the runtime's SessionStart hook records for a launched worker."""
    rec, _ = registry.ensure(layout, "claude", f"sess-{wid}", event="SessionStart", info={"worker": wid})
    return rec


def test_a_worker_killed_with_sigkill_is_failed_with_its_status_and_signals_once(proj: Layout) -> None:
    workers.launch(proj, "claude", "doomed", by="alice")
    rec = wait_until(lambda: (r := workers.read(proj, "w1")) and r.get("pid") and r)
    sess = linked_session(proj, "w1")
    os.kill(rec["pid"], signal.SIGKILL)
    done = wait_until(lambda: (r := workers.read(proj, "w1")) and r["state"] == "failed" and r)
    assert done["exit"] == {"code": None, "signal": "SIGKILL", "status": "killed by SIGKILL"}
    assert done["session"] == sess["id"] and done["session_alias"] == "cc1"
    assert registry.resolve(proj, "cc1")["state"] == "failed"
    exits = [s for s in jsonl.read_jsonl(proj.signals).records if s["kind"] == "exit"]
    assert [(s["alias"], s["value"], s["worker"]) for s in exits] == [("cc1", "failed", "w1")]
    # A failure wakes the brain even when no other worker is active (an ordinary exit would converge).
    doc = {"autonomous": {"enabled": True}, "scope": {"mode": "all", "excluded": [], "only": []}}
    records = {r["id"]: r for r in registry.list_sessions(proj)[0]}
    assert triggers.classify(exits[0], doc, records) == ("trigger", "worker failed")
    assert workers.reconcile(proj) == []  # recorded once


def test_a_worker_that_died_with_its_runner_is_found_by_reconcile(proj: Layout) -> None:
    workers.launch(proj, "claude", "orphaned", by="alice")
    rec = wait_until(lambda: (r := workers.read(proj, "w1")) and r.get("pid") and r)
    linked_session(proj, "w1")
    os.kill(rec["runner"]["pid"], signal.SIGKILL)
    os.killpg(rec["pid"], signal.SIGKILL)
    wait_until(lambda: not workers.alive(workers.read(proj, "w1") or {}))
    assert workers.reconcile(proj) == ["w1"]
    done = workers.read(proj, "w1")
    assert done is not None and done["state"] == "failed" and done["exit"]["status"] == "exit status unknown"
    assert "its runner is gone too" in done["reason"] or "so is its runner" in done["reason"]
    assert [s["value"] for s in jsonl.read_jsonl(proj.signals).records if s["kind"] == "exit"] == ["failed"]


def test_output_is_rotated_and_bounded(proj: Layout, monkeypatch: pytest.MonkeyPatch) -> None:
    limit = 64 * 1024
    config(proj, f"[workers]\nlog_max_bytes = {limit}\n")
    monkeypatch.setenv("FAKE_BYTES", str(5 * limit))
    release(proj, "chatty")
    workers.launch(proj, "claude", "chatty", by="alice")
    wait_until(lambda: state(proj, "w1") == "exited")
    log, old = Path(proj.worker_log("w1")), Path(proj.worker_log("w1") + ".1")
    assert old.exists() and 0 < log.stat().st_size <= limit and old.stat().st_size <= limit
    assert "chatty done" in log.read_text()
    got = workers.logs(proj, "w1")
    assert got["text"] == log.read_text() and got["offset"] == log.stat().st_size
    assert workers.logs(proj, "w1", got["offset"])["text"] == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("bogus", "x"), "choose one of claude, codex, gemini"),
        (("claude", "  "), "the task is empty"),
        (("claude", "--help"), "starts with '-'"),
        (("claude", "x", "cs_1"), "--alias"),
        (("claude", "x", "w7"), "--alias"),
    ],
)
def test_bad_launches_are_one_line_errors_and_leave_nothing(proj: Layout, args: tuple[str, ...], message: str) -> None:
    runtime, task, *alias = args
    with pytest.raises(Exception, match=message.replace("(", r"\(")):
        workers.launch(proj, runtime, task, by="alice", alias=alias[0] if alias else None)
    assert not os.path.exists(proj.workers_dir) or not os.listdir(proj.workers_dir)


def test_a_used_alias_is_refused(proj: Layout) -> None:
    linked_session(proj, "w0")
    with pytest.raises(Exception, match="already names"):
        workers.launch(proj, "claude", "x", by="alice", alias="cc1")


def test_the_list_shows_the_session_and_its_attention(proj: Layout) -> None:
    release(proj, "quick")
    workers.launch(proj, "claude", "quick", by="alice")
    wait_until(lambda: state(proj, "w1") == "exited")
    sess = linked_session(proj, "w1")
    registry.update(proj, sess["id"], lambda r: registry.set_attention(r, "pending"))
    (w,) = workers.listing(proj)["workers"]
    assert (w["session_alias"], w["attention"], w["log"]) == ("cc1", "pending", ".cocoplus/workers/w1/output.log")
    assert workers.resolve(proj, "cc1")["id"] == "w1"
    assert json.loads(json.dumps(w)) == w
    # Its session ends, linked to the worker as the runner links it at the end of a run: the list says what
    # `sessions list` says, an ended session waits for nothing.
    registry.update(proj, sess["id"], lambda r: r.update({"state": "exited"}))
    fsio.atomic_write_json(
        proj.worker_record("w1"), {**present(workers.read(proj, "w1")), "session": sess["id"], "session_alias": "cc1"}
    )
    (w,) = workers.listing(proj)["workers"]
    (s,) = registry.list_sessions(proj)[0]
    assert (w["session_state"], w["attention"]) == ("exited", None) == (s["state"], s["attention"])


@pytest.mark.slow
def test_the_commands_launch_list_follow_and_kill(proj: Layout) -> None:
    import subprocess
    import sys

    from tests.conftest import run_cli_subprocess

    r = run_cli_subprocess("launch", "claude", "followed", cwd=proj.project)
    assert r.code == 0 and r.out.startswith("running: worker w1 started: claude"), r
    follow = subprocess.Popen(
        [sys.executable, "-m", "cocoplus", "workers", "logs", "w1", "--follow"],
        cwd=proj.project,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: workers.logs(proj, "w1")["text"].count("fake runtime") >= 1)
        listing = run_cli_subprocess("workers", "list", cwd=proj.project)
        assert listing.out.splitlines()[0] == "workers: 1 running, 0 queued (max_parallel 4)"
        assert listing.out.splitlines()[2].split()[:2] == ["w1", "running"]
        release(proj, "followed")
        out, _ = follow.communicate(timeout=60)  # --follow ends when the worker does
    finally:
        if follow.poll() is None:
            follow.kill()
            follow.wait()
    assert "fake runtime: -p followed" in out and "followed done" in out and "run 1 ended: exit code 0" in out
    bad = run_cli_subprocess("workers", "kill", "w9", cwd=proj.project)
    assert bad.code == 1 and bad.err.startswith("cocoplus: error: no worker 'w9'") and len(bad.err.splitlines()) == 1


@pytest.mark.slow
def test_logs_follow_shows_the_transcript_of_a_stream_that_arrives_cut_mid_line(
    proj: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code's stream (recorded from the real CLI) printed in two pieces, the first ending inside an event:
    `--follow` shows each entry once, whole, as the transcript of the finished run shows it."""
    import subprocess
    import sys

    from tests.conftest import run_cli_subprocess

    stream = Path(__file__).resolve().parents[1] / "fixtures" / "runtime-streams" / "claude-two-commands.jsonl"
    data = stream.read_bytes()
    cut = data.index(b'"tool_result"')
    monkeypatch.setenv("FAKE_STREAM", str(stream))
    monkeypatch.setenv("FAKE_SPLIT", str(cut))
    assert run_cli_subprocess("launch", "claude", "pieces", cwd=proj.project).code == 0
    follow = subprocess.Popen(
        [sys.executable, "-m", "cocoplus", "workers", "logs", "w1", "--follow"],
        cwd=proj.project,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: data[:cut].decode() in workers.logs(proj, "w1", raw=True)["text"])
        early = workers.logs(proj, "w1")  # what a reader sees now: whole lines only
        assert [e["kind"] for e in early["entries"] if e["kind"] not in ("output", "cocoplus")] == ["session", "tool"]
        (Path(proj.project).parent / "pieces.half").touch()
        release(proj, "pieces")
        out, _ = follow.communicate(timeout=60)
    finally:
        if follow.poll() is None:
            follow.kill()
            follow.wait()
    after = run_cli_subprocess("workers", "logs", "w1", cwd=proj.project).out
    assert out == after, (out, after)
    lines = after.splitlines()
    assert (
        "result     Bash: ERROR Exit code 2 ↵ hello ↵ ls: cannot access '/nonexistent-x': No such file or directory"
        in lines
    )
    assert "assistant  All done: hello printed." in lines and "end        finished: 3 turn(s), $0.0004" in lines
    assert sum(1 for ln in lines if ln.startswith("tool ")) == 2 and not any(
        ln.startswith("output     {") for ln in lines
    )
    raw = run_cli_subprocess("workers", "logs", "w1", "--raw", cwd=proj.project).out
    assert data.decode() in raw
    bad = run_cli_subprocess("launch", "claude", "x", "--effort", "max", cwd=proj.project)
    assert bad.code == 2 and "--effort 'max': choose one of low, medium, high" in bad.err and "Traceback" not in bad.err


@pytest.mark.slow
def test_a_worker_that_fails_before_its_session_starts_wakes_the_brain(
    proj: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A runtime that exits at once (a rejected login, a bad flag) never runs its SessionStart hook, so
    no session record says it failed: its exit signal names the worker, and it wakes the brain even
    with a scope naming only other sessions (no scope can name a worker that never had a session)."""
    from cocoplus.supervision import autonomy
    from tests.supervision.conftest import Brain, Watcher, rounds_started, stop_chat_worker, triggers_of

    brain = Brain(proj, quiet=0.3)
    other = linked_session(proj, "w0")  # cc1, the one session the scope names
    autonomy.enable(proj, task_hint="keep the parser going", scope_mode="only", scope_session_ids=[other["id"]])
    watcher = Watcher(proj)
    try:
        monkeypatch.setenv("FAKE_CODE", "3")
        release(proj, "early")
        workers.launch(proj, "claude", "early", by="brain")
        done = wait_until(lambda: (r := workers.read(proj, "w1")) and r["state"] == "failed" and r, timeout=30)
        assert done["exit"]["status"] == "exit code 3" and done["session"] is None
        exits = [s for s in jsonl.read_jsonl(proj.signals).records if s["kind"] == "exit"]
        assert [(s["session"], s["alias"], s["value"], s["worker"]) for s in exits] == [(None, "w1", "failed", "w1")]
        assert "no session had started" in exits[0]["detail"]
        prompts = wait_until(brain.prompts, timeout=30)
        # Its reason is the runtime's own last words (what it printed before it exited), then its exit status.
        assert (
            "w1 failed: worker w1: fake runtime: -p early --output-format stream-json --verbose | fake runtime: early "
            "done (exit code 3); no session had started" in prompts[0]
        )
        (started,) = rounds_started(proj)
        assert triggers_of(started) == [("w1", "exit", "failed")]
    finally:
        watcher.stop()
        stop_chat_worker(proj)


def test_two_workers_failing_before_their_sessions_are_two_triggers_in_one_round() -> None:
    from cocoplus.supervision import rounds

    a = {"session": None, "alias": "w1", "kind": "exit", "value": "failed", "worker": "w1"}
    b = {**a, "alias": "w2", "worker": "w2"}
    assert rounds._dedupe([a, b, dict(a)]) == [a, b]
