"""One lock for the kill switch: stops and resumes race without losing an acknowledged stop,
and AGENT_STOP always agrees with the run state once a command has returned."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from cocoplus.core.lock import Budget
from cocoplus.session import killswitch, status
from tests.hardening.support import held_by_stopped_process
from tests.support.typed import present

AUTO_STOP = (
    "import json, sys; from cocoplus.core.paths import Layout; from cocoplus.session import killswitch\n"
    "r = killswitch.auto_stop(Layout(sys.argv[1]), sys.argv[2], source='loop-guard')\n"
    "print(json.dumps(r))\n"
)


def _run(argv: list[str], cwd: str) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COCOPLUS_DIR")}
    p = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


def _state_agrees(project) -> tuple[bool, str]:
    stop = killswitch.read_stop(project)
    st = present(status.read_status(project))["state"]
    pod = present(status.read_status(project, "pod"))["state"]
    if stop is not None:
        return st != "running" and pod != "running", f"AGENT_STOP present, state {st}/{pod}"
    return st == "running" and pod == "running", f"no AGENT_STOP, state {st}/{pod}"


@pytest.mark.slow
def test_concurrent_stops_and_resumes_through_the_cli_lose_no_acknowledged_stop(project):
    py = sys.executable
    jobs: list[tuple[str, list[str]]] = []
    for i in range(50):
        jobs.append(("stop", [py, "-m", "cocoplus", "session", "stop", "--reason", f"race-{i}", "--json"]))
        jobs.append(("resume", [py, "-m", "cocoplus", "session", "resume", "--yes", "--json"]))
    for i in range(20):  # the hooks' own stops take the same lock
        jobs.append(("auto", [py, "-c", AUTO_STOP, project.root, f"auto-{i}"]))
    random.Random(13).shuffle(jobs)

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda job: (job[0], *_run(job[1], project.project)), jobs))

    stops: list[dict] = []
    resumes: list[dict] = []
    autos: list[dict] = []
    for kind, code, out, err in results:
        assert code == 0, (kind, out, err)
        doc = json.loads(out)
        {"stop": stops, "resume": resumes, "auto": autos}[kind].append(doc)

    final = killswitch.read_stop(project)
    final_reason = final["reason"] if final else None
    replaced = [s["replaced"]["reason"] for s in stops if s.get("replaced")]
    removed = [r["previous"]["reason"] for r in resumes if r["resumed"]]
    accounted = replaced + removed + ([final_reason] if final_reason else [])

    acknowledged = [s["stop"]["reason"] for s in stops if not s["kept_existing"]]
    acknowledged += [a["stop"]["reason"] for a in autos if a["created"]]
    assert len(acknowledged) >= 50
    for reason in acknowledged:
        # Every stop that was reported made is still there, or was replaced or removed by a command that said so.
        assert accounted.count(reason) == 1, (reason, accounted.count(reason))
    assert sorted(accounted) == sorted(acknowledged)  # and nothing was removed that nobody made

    agrees, detail = _state_agrees(project)
    assert agrees, detail

    # steps.jsonl tells the same story, in the order the lock serialised it.
    events = [json.loads(line) for line in open(project.steps) if line.strip()]
    current = None
    for e in events:
        if e["event"] == "stop":
            current = e["reason"]
        elif e["event"] == "resume":
            assert e["previous_reason"] == current
            current = None
    assert current == final_reason


def test_resume_keeps_a_stop_newer_than_the_one_it_read(project):
    killswitch.stop(project, "ann", "first")
    seen = present(killswitch.read_stop(project))
    time.sleep(0.01)  # distinct mtimes are not needed (the inode changes), but keep the two apart anyway
    killswitch.stop(project, "bob", "second")
    result = killswitch.resume(project, "ann", expect=seen["token"])
    assert result["resumed"] is False and result["removed"] is None
    assert result["kept"]["operator"] == "bob" and result["kept"]["reason"] == "second"
    assert "changed since it was read" in result["message"] and "bob" in result["message"]
    assert present(killswitch.read_stop(project))["reason"] == "second"
    assert present(status.read_status(project))["state"] == "paused"

    again = killswitch.resume(project, "ann", expect=present(killswitch.read_stop(project))["token"])
    assert again["resumed"] is True and again["removed"]["reason"] == "second"
    assert killswitch.read_stop(project) is None
    assert present(status.read_status(project))["state"] == "running"


def test_resume_with_nothing_stopped_changes_nothing(project):
    before = {p: open(p, "rb").read() for p in (project.status, project.pod_state, project.steps)}
    result = killswitch.resume(project, "ann")
    assert result["resumed"] is False and result["removed"] is None and result["kept"] is None
    assert "nothing changed" in result["message"]
    assert {p: open(p, "rb").read() for p in before} == before


def test_running_is_never_written_while_agent_stop_exists(project):
    killswitch.stop(project, "ann", "hold")
    doc = status.set_state(project, "running", "a session started")
    assert "kept" in doc
    assert present(status.read_status(project))["state"] == "paused"
    assert present(status.read_status(project, "pod"))["state"] == "paused"


def test_an_automatic_stop_is_made_even_when_the_kill_switch_lock_is_held(project):
    with held_by_stopped_process(project.kill_switch_lock):
        start = time.monotonic()
        result = killswitch.auto_stop(
            project, "iteration budget exhausted (5/5)", source="iteration-budget", budget=Budget(0.5)
        )
        took = time.monotonic() - start
        assert result["created"] is True and result["state_written"] is False
        assert any("lock still held" in p for p in result["problems"])
        assert present(killswitch.read_stop(project))["reason"] == "iteration budget exhausted (5/5)"
        assert took < 3.0  # the budget (0.5 s) plus process noise, never the lock's 10 s default

        created, _ = killswitch.create_stop(
            project, "cocoplus", "loop", source="loop-guard", replace=False, budget=Budget(0.2)
        )
        assert created is False  # one exists; a lock-less stop never replaces it
    # Once the lock is free again, the state catches up at the next stop or resume.
    result = killswitch.resume(project, "ann")
    assert result["resumed"] and result["removed"]["reason"] == "iteration budget exhausted (5/5)"
    assert _state_agrees(project)[0]


def test_an_operator_stop_is_made_even_when_the_kill_switch_lock_is_held(project):
    with held_by_stopped_process(project.kill_switch_lock):
        result = killswitch.stop(project, "ann", "runaway", budget=Budget(0.3))
    assert result["stopped"] and result["locked"] is False
    assert present(killswitch.read_stop(project))["reason"] == "runaway"
    assert any("run state was not updated" in p for p in result["problems"])


def test_resume_waits_for_the_lock_and_removes_nothing_when_it_stays_busy(project):
    from cocoplus.core.errors import LockTimeout

    killswitch.stop(project, "ann", "hold")
    with held_by_stopped_process(project.kill_switch_lock):
        with pytest.raises(LockTimeout):
            killswitch.resume(project, "bob", timeout=0.3)
    assert present(killswitch.read_stop(project))["reason"] == "hold"


def test_a_confirmed_resume_keeps_a_stop_made_while_the_question_was_on_screen(project):
    """The operator confirms the stop they were shown; a newer stop (another operator, the page) stays."""
    import pty

    killswitch.stop(project, "ann", "the one shown")
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cocoplus", "session", "resume"],
        cwd=project.project, stdin=follower, stdout=follower, stderr=follower, close_fds=True,
    )  # fmt: skip
    os.close(follower)
    seen = b""
    deadline = time.monotonic() + 60
    while b"Resume the agent?" not in seen:
        assert time.monotonic() < deadline and proc.poll() is None, seen
        seen += os.read(leader, 4096)
    assert b"the one shown" in seen
    killswitch.stop(project, "bob", "a newer stop")  # made while the question is on screen
    os.write(leader, b"y\n")
    out = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the other side closed: the command has ended
            break
        if not chunk:
            break
        out += chunk
    assert proc.wait(timeout=60) == 0
    os.close(leader)
    assert b"left in place" in out, out
    current = killswitch.read_stop(project)
    assert current is not None and current["reason"] == "a newer stop"
    agrees, detail = _state_agrees(project)
    assert agrees, detail
