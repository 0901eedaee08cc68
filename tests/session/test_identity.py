"""Identities no repository or worker can forge, with real processes (session/identity.py, session/agents.py).

A hook takes its session for a managed worker, with the worker's own rules,
only from the worker's sealed record whose runner is among its ancestors; a
session `dispatch` resumed is taken for headless only from its sealed
`resumed` process.  Launched workers here are real runners starting a
stand-in runtime (a shell script named `claude` first on PATH), which runs
the installed PermissionRequest hook as Claude Code does (`sh -c`, the payload
on stdin) and keeps what it answered.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core import fsio, jsonl, seal, userfiles
from cocoplus.core.errors import Refused
from cocoplus.core.paths import Layout
from cocoplus.mcp import server as mcp_server
from cocoplus.notify import events as notify_events
from cocoplus.notify import messages
from cocoplus.ops import authority
from cocoplus.ops import workers as workers_ops
from cocoplus.session import agents, permissions, procinfo, registry
from cocoplus.session.workspace import init
from cocoplus.supervision import watcher, workers
from tests.conftest import passwd_env, run_cli_subprocess
from tests.hook.helpers import fixture, hook_argv, hook_env, run_hook
from tests.supervision.workers_support import stop_workers
from tests.support import vouched
from tests.support.waiting import wait_until
from tests.support.wired import hooks_installed

# The stand-in runtime: what $FAKE_STEP says, then it ends.
#   edit:    the worker rewrites its own record, adding "Bash" to its rules (as any program it runs could);
#   ask:     a Bash tool call's PermissionRequest hook, run as Claude Code runs it; its answer kept;
#   approve: the worker's shell, with a cleaned environment, runs `cocoplus approve` in another project.
FAKE = """#!/bin/sh
task="$2"
for step in $FAKE_STEPS; do
  case "$step" in
  edit)
    "$FAKE_PY" -c 'import json, sys
p = sys.argv[1]
d = json.load(open(p))
d["allow"] = d.get("allow", []) + ["Bash"]
json.dump(d, open(p, "w"))' "$FAKE_RECORD" ;;
  ask)
    printf '%s' "$FAKE_PAYLOAD" | sh -c "$FAKE_HOOK" > "$FAKE_DIR/$task.answer" 2> "$FAKE_DIR/$task.err" ;;
  approve)
    env -i PATH=/usr/bin:/bin LD_PRELOAD="$LD_PRELOAD" NSS_WRAPPER_PASSWD="$NSS_WRAPPER_PASSWD" \\
      NSS_WRAPPER_GROUP="$NSS_WRAPPER_GROUP" "$FAKE_PY" -m cocoplus --dir "$FAKE_OTHER" approve "$FAKE_REQUEST" \\
      > "$FAKE_DIR/$task.out" 2> "$FAKE_DIR/$task.approve-err"
    echo $? > "$FAKE_DIR/$task.code" ;;
  esac
done
touch "$FAKE_DIR/$task.done"
"""


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Layout]:
    project = tmp_path / "shop"
    project.mkdir()
    init(str(project / ".cocoplus"))
    layout = Layout(str(project / ".cocoplus"))
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    (bindir / "claude").write_text(FAKE)
    (bindir / "claude").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_DIR", str(tmp_path))
    monkeypatch.setenv("FAKE_PY", sys.executable)
    monkeypatch.setenv("FAKE_HOOK", shlex.join(hook_argv("PermissionRequest", "claude")))
    hooks_installed(layout, "claude")  # launch refuses a runtime that would run no cocoplus hook
    yield layout
    stop_workers(layout)


def bash_call(layout: Layout, command: str, sid: str = "s-worker") -> dict[str, Any]:
    payload = fixture("claude-permissionrequest-bash.json") | {"session_id": sid, "cwd": layout.project}
    payload["tool_input"] = {"command": command}
    return payload


def run_worker(layout: Layout, monkeypatch: pytest.MonkeyPatch, task: str, steps: str, **env: str) -> Path:
    """Launch a worker whose stand-in runtime does `steps`; wait for it to end; the directory it wrote in."""
    for k, v in {"FAKE_STEPS": steps, **env}.items():
        monkeypatch.setenv(k, v)
    rec = workers.launch(layout, "claude", task, by="tester", allow=env.get("ALLOW", "").split() or None)
    out = Path(layout.project).parent
    wait_until(lambda: (out / f"{task}.done").exists(), timeout=60)
    wait_until(lambda: (workers.read(layout, rec["id"]) or {}).get("state") == "exited", timeout=60)
    return out


def answer(out: Path, task: str) -> dict[str, Any] | None:
    text = (out / f"{task}.answer").read_text()
    return json.loads(text) if text.strip() else None


def hook_log(layout: Layout) -> str:
    return Path(layout.hook_log).read_text() if os.path.exists(layout.hook_log) else ""


def allowed(doc: dict[str, Any] | None) -> bool:
    return ((doc or {}).get("hookSpecificOutput") or {}).get("decision", {}).get("behavior") == "allow"


# -- a worker and its own record -------------------------------------------------------------------------------


def test_a_worker_launched_with_a_rule_is_vouched_for_and_its_rule_decides(
    proj: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    side = Path(proj.project) / "made"
    out = run_worker(
        proj, monkeypatch, "granted", "ask", ALLOW="Bash", FAKE_PAYLOAD=json.dumps(bash_call(proj, f"touch {side}"))
    )
    assert allowed(answer(out, "granted")), (out / "granted.err").read_text() + hook_log(proj)
    rec = workers.read(proj, "w1") or {}
    assert rec["headless"] is True and rec["allow"] == ["Bash"]
    assert seal.worker_grant_problem(rec, proj.project, "w1") is None  # its runner bound itself, sealed again
    logged = [json.loads(x) for x in Path(proj.root, "permissions", "decisions.jsonl").read_text().splitlines()]
    assert [(d["behavior"], d["where"]) for d in logged] == [("allowed", "launch --allow")]


def test_a_worker_that_adds_bash_to_its_own_record_gets_no_rule_from_it(
    proj: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Launched with `--allow Write`, the worker rewrites its record to allow "Bash": the seal no longer holds, so
    the record grants nothing: not the rule, not even the worker's identity (its runtime's own handling applies:
    under `claude -p` an unanswered request is denied)."""
    side = Path(proj.project) / "made"
    out = run_worker(
        proj, monkeypatch, "forger", "edit ask", ALLOW="Write",
        FAKE_RECORD=proj.worker_record("w1"), FAKE_PAYLOAD=json.dumps(bash_call(proj, f"touch {side}")),
    )  # fmt: skip
    rec = workers.read(proj, "w1") or {}
    assert rec["allow"] == ["Write", "Bash"]  # the edit is there
    assert answer(out, "forger") is None, (out / "forger.err").read_text()
    assert "identity: COCOPLUS_WORKER=w1: its record has a seal that does not hold" in hook_log(proj)
    assert not os.path.exists(os.path.join(proj.root, "permissions", "decisions.jsonl"))
    assert permissions.requests(proj) == []  # not held for an answer either: it is no vouched-for worker
    # The runner seals nothing it did not seal: the record stays unsealed, and doctor says it grants nothing.
    assert seal.worker_grant_problem(rec, proj.project, "w1") == seal.MISMATCH
    doctor = run_cli_subprocess("doctor", cwd=proj.project).err
    assert "workers/w1/worker.json: ignored" in doctor and "grants nothing" in doctor, doctor


@pytest.mark.slow
def test_a_record_sealed_before_the_seal_covered_grants_runs_asks_and_doctor_says_so(proj: Layout) -> None:
    """An upgrade with a worker running: its record (sealed over its command alone) still names the worker,
    headless, but grants no rules; its request waits for an answer, and doctor says why."""
    Path(proj.config).write_text("[permissions]\nwait_s = 30\n")
    rec = vouched.sealed_worker(proj, "w1", allow=["Bash"])
    rec.pop("headless")
    rec["seal"] = seal.seal(seal.legacy_worker_fields("w1", proj.project, rec["command"]))
    fsio.atomic_write_json(proj.worker_record("w1"), rec)
    hook = subprocess.Popen(
        [*vouched.prefix("worker", proj.root, "w1"), *hook_argv("PermissionRequest", "claude")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=hook_env(proj),
    )  # fmt: skip
    assert hook.stdin is not None
    hook.stdin.write(json.dumps(bash_call(proj, "echo hi")).encode())
    hook.stdin.close()
    hook.stdin = None  # sent: `communicate` only reads from now on
    try:
        (req,) = wait_until(lambda: permissions.requests(proj), timeout=30)
        assert req["worker"] == "w1"  # it asks: no rule of its record decided
        doctor = run_cli_subprocess("doctor", cwd=proj.project).err
        assert "worker w1 is running with a record sealed before worker seals covered their grants" in doctor
        assert "its --allow Bash is not applied" in doctor, doctor
        permissions.answer(proj, req["id"], "deny", principal="operator", by="tester", reason="not now")
        out, _err = hook.communicate(timeout=30)
    finally:
        if hook.poll() is None:
            hook.kill()
    assert "tester denied this permission request" in out.decode()
    assert "sealed by a release of cocoplus before worker seals covered its grants" in hook_log(proj)
    # Bound to its runner, it stays sealed as it was: over its command alone.
    assert seal.worker_grant_problem(workers.read(proj, "w1") or {}, proj.project, "w1") == seal.LEGACY


# -- what the environment says ----------------------------------------------------------------------------------


def test_the_environment_alone_makes_no_worker_and_no_headless_session(proj: Layout) -> None:
    """COCOPLUS_WORKER and COCOPLUS_HEADLESS, as a cloned repository's `.claude/settings.json` `env` sets them,
    with a planted worker record allowing Bash: the hook answers nothing (the runtime's own dialog applies), holds
    nothing, records no worker on the session."""
    planted = vouched.sealed_worker(proj, "w9", allow=["Bash"])
    planted["seal"] = "0" * 64  # what a repository can carry: not sealed by this user
    fsio.atomic_write_json(proj.worker_record("w9"), planted)
    env = hook_env(proj, COCOPLUS_WORKER="w9", COCOPLUS_HEADLESS="1")
    r = run_hook(proj, "PermissionRequest", bash_call(proj, "touch x", sid="s-clone"), env=env)
    assert r.code == 0 and r.json is None, r
    assert permissions.requests(proj) == []
    start = fixture("claude-sessionstart-startup.json") | {"session_id": "s-clone", "cwd": proj.project}
    assert run_hook(proj, "SessionStart", start, env=env).code == 0
    assert (registry.read_record(proj, registry.cs_id_for("s-clone")) or {}).get("worker") is None
    log = hook_log(proj)
    assert "identity: COCOPLUS_WORKER=w9: its record's runner is not among this hook's processes" in log, log
    # Headless alone: no sealed `resumed` names an ancestor.
    r = run_hook(proj, "PermissionRequest", bash_call(proj, "touch x"), env=hook_env(proj, COCOPLUS_HEADLESS="1"))
    assert r.json is None and permissions.requests(proj) == []
    assert "COCOPLUS_HEADLESS is set, but no sealed record" in hook_log(proj)


def test_a_session_dispatch_resumed_is_headless_only_by_its_sealed_record(proj: Layout) -> None:
    Path(proj.config).write_text("[permissions]\nwait_s = 1\n")
    registry.ensure(proj, "claude", "s-resumed", event="SessionStart")
    cs = registry.cs_id_for("s-resumed")
    below = vouched.prefix("resumed", proj.root, cs)
    r = run_hook(proj, "PermissionRequest", bash_call(proj, "touch y", sid="s-resumed"), below=below, timeout=60)
    told = (((r.json or {}).get("hookSpecificOutput") or {}).get("decision") or {}).get("message", "")
    assert "denied by default: no one answered within 1 s" in told, r  # held for an answer: headless
    (step,) = [s for s in jsonl.read_jsonl(proj.steps).records if s.get("event") == "permission_expired"]
    expired = notify_events.to_event("steps", step)  # the operator is told the default applied
    assert expired is not None and expired["kind"] == "request_expired"
    assert messages.headline(expired).endswith(f"permission request {step['request']} was denied at its deadline")
    rec = registry.read_record(proj, cs) or {}
    assert seal.resumed_problem(rec, proj.project) is None
    # The same record, its process changed by hand: the seal no longer holds, nothing is held.
    rec["resumed"]["seal"] = seal.seal(seal.resumed_fields("cs_other", proj.project, rec["resumed"]))
    fsio.atomic_write_json(proj.session_record(cs), rec)
    plain = [sys.executable, "-c", "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode)"]
    r = run_hook(proj, "PermissionRequest", bash_call(proj, "touch y", sid="s-resumed"), below=plain)
    assert r.json is None


# -- this user's files, whatever HOME and XDG_* say ---------------------------------------------------------------


@pytest.mark.slow
def test_the_hook_reads_this_users_rules_and_key_not_those_home_and_xdg_name(proj: Layout, tmp_path: Path) -> None:
    """A repository points HOME and XDG_CONFIG_HOME into itself, where it planted a seal key, "always" rules
    allowing everything, and a worker record sealed with that key: the hook reads the user's own key and rules
    (from the password database's home), so the planted record grants nothing, and the user's own rule decides
    for a worker cocoplus vouches for."""
    repo = Path(proj.project)
    fake = repo / "fakehome" / ".config" / "cocoplus"
    fake.mkdir(parents=True)
    planted_key = os.urandom(32)
    (fake / "seal.key").write_bytes(planted_key)
    (fake / "seal.key").chmod(0o600)
    everything = {"projects": {os.path.realpath(proj.project): {"allow": ["Bash"], "deny": []}}}
    (fake / "permissions.json").write_text(json.dumps(everything))
    # The user's own rule, in the password database's home.
    permissions.add_user_rule(proj.project, "allow", "Bash(echo real *)")
    Path(proj.config).write_text("[permissions]\nwait_s = 1\n")
    env = hook_env(
        proj, HOME=str(repo / "fakehome"), XDG_CONFIG_HOME=str(repo / "fakehome" / ".config"), COCOPLUS_WORKER="w9"
    )
    # A record sealed with the planted key, naming this test's own process (an ancestor of the hook) as runner.
    planted = vouched.sealed_worker(proj, "w9", allow=["Bash"], runner=procinfo.self_process())
    planted["seal"] = seal.hmac_sha256(planted_key, seal.encode(seal.worker_fields_of(planted, proj.project, "w9")))
    fsio.atomic_write_json(proj.worker_record("w9"), planted)
    r = run_hook(proj, "PermissionRequest", bash_call(proj, "touch planted"), env=env)
    assert r.json is None, r  # neither the planted key nor the planted rules
    assert "w9: its record has a seal that does not hold" in hook_log(proj)
    # A worker cocoplus vouches for: the user's own "always" rule allows; the planted one does not.
    vouched.sealed_worker(proj, "w1")
    below = vouched.prefix("worker", proj.root, "w1")
    env["COCOPLUS_WORKER"] = "w1"
    ok = run_hook(proj, "PermissionRequest", bash_call(proj, "echo real thing"), env=env, below=below)
    assert allowed(ok.json), ok
    no = run_hook(proj, "PermissionRequest", bash_call(proj, "echo planted"), env=env, below=below, timeout=60)
    assert not allowed(no.json) and "denied by default" in json.dumps(no.json), no
    assert not (Path(os.environ["XDG_CONFIG_HOME"]) / "cocoplus").exists()


# -- a worker's shell, in another project of the same user -----------------------------------------------------


@pytest.mark.slow
def test_a_workers_shell_with_a_clean_environment_cannot_approve_in_another_project(
    proj: Layout, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Project B has a request waiting; worker w1 of project A runs `env -i ... cocoplus --dir B approve ID` (the
    test's own password database is passed on: it stands for the system's).  Its runner is in this user's
    registry of agent processes, so the command acts as that worker, in B too, and is refused."""
    other = tmp_path / "other"
    other.mkdir()
    init(str(other / ".cocoplus"))
    b = Layout(str(other / ".cocoplus"))
    Path(b.config).write_text("[permissions]\nwait_s = 120\n")
    vouched.sealed_worker(b, "w1")
    waiting = subprocess.Popen(
        [*vouched.prefix("worker", b.root, "w1"), *hook_argv("PermissionRequest", "claude")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=hook_env(b),
    )  # fmt: skip
    assert waiting.stdin is not None
    waiting.stdin.write(json.dumps(bash_call(b, "rm -rf build", sid="s-b")).encode())
    waiting.stdin.close()
    try:
        (req,) = wait_until(lambda: permissions.requests(b), timeout=30)
        assert set(passwd_env()) == {"LD_PRELOAD", "NSS_WRAPPER_PASSWD", "NSS_WRAPPER_GROUP"}
        out = run_worker(proj, monkeypatch, "approver", "approve", FAKE_OTHER=str(other), FAKE_REQUEST=req["id"])
        err = (out / "approver.approve-err").read_text()
        assert (out / "approver.code").read_text().strip() == "1", err
        assert err.startswith("cocoplus: error: refused: cocoplus approve is for the operator or the main brain, not ")
        assert "the worker session w1" in err and len(err.strip().splitlines()) == 1, err
        assert [r["state"] for r in permissions.requests(b, state=None)] == ["pending"]  # not approved
        logged = [json.loads(x) for x in Path(b.authority_log).read_text().splitlines()]
        assert logged[-1]["principal"] == "worker" and logged[-1]["action"] == "approve"
        assert logged[-1]["recognised_by"] == f"process ancestry: worker w1 of {os.path.realpath(proj.project)}"
        # The operator, at a terminal, still may.
        r = run_cli_subprocess("deny", req["id"], "--reason", "not now", cwd=b.project)
        assert r.code == 0, r.err
        assert waiting.wait(timeout=30) == 0
    finally:
        if waiting.poll() is None:
            waiting.kill()


@pytest.mark.slow
def test_this_users_projects_are_listed_from_the_registry(tmp_path: Path) -> None:
    made = []
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        r = run_cli_subprocess("init", cwd=tmp_path / name)
        assert r.code == 0, r.err
        made.append(os.path.realpath(tmp_path / name / ".cocoplus"))
    assert [p["state_dir"] for p in agents.projects()] == made
    listed = os.listdir(agents.projects_dir())
    assert len(listed) == 2 and Path(agents.projects_dir()).is_relative_to(Path(userfiles.home()))
    shutil.rmtree(tmp_path / "one" / ".cocoplus")
    assert [p["state_dir"] for p in agents.projects()] == made[1:]  # a removed project is forgotten


# -- what cocoplus starts for itself ------------------------------------------------------------------------------

PRINCIPAL = (
    "import sys; from cocoplus.core.paths import Layout; from cocoplus.ops import authority; "
    "from cocoplus.session import agents; agents.claim(); print(authority.caller(Layout(sys.argv[1])).word)"
)


def below_a_worker(layout: Layout, code: str, *args: str) -> str:
    """Run `code` in a process below worker w1's runner (as a watcher its runner starts would be); its output."""
    r = subprocess.run(
        [*vouched.prefix("worker", layout.root, "w1"), sys.executable, "-c", code, *args],
        capture_output=True, text=True, timeout=60, env=dict(os.environ),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.mark.slow
def test_a_process_cocoplus_starts_as_its_watcher_below_a_runner_acts_as_the_watcher(proj: Layout) -> None:
    """The runner vouches for its child (a one-time token, sealed); the child claims it and acts as `watcher`, not
    as the worker whose runner it descends from.  Without the token, or with a used or forged one, it is the
    worker; the token is never inherited."""
    vouched.sealed_worker(proj, "w1")
    start = (
        "import os, subprocess, sys; from cocoplus.session import agents; "
        "env = {**os.environ, **(agents.vouch('watcher', sys.argv[1]) if sys.argv[3] == 'vouched' else {})}; "
        "env.update({'COCOPLUS_VOUCHED': 'f' * 32} if sys.argv[3] == 'forged' else {}); "
        "print(subprocess.run([sys.executable, '-c', sys.argv[2], sys.argv[1]], env=env, capture_output=True, "
        "text=True).stdout.strip())"
    )
    assert below_a_worker(proj, start, proj.root, PRINCIPAL, "vouched") == "watcher"
    assert below_a_worker(proj, start, proj.root, PRINCIPAL, "none") == "worker"
    assert below_a_worker(proj, start, proj.root, PRINCIPAL, "forged") == "worker"
    # What the watcher starts inherits no token: it is below the watcher's sealed entry, not vouched itself.
    nested = (
        "import os, subprocess, sys; from cocoplus.session import agents; agents.claim(); "
        "assert 'COCOPLUS_VOUCHED' not in os.environ; "
        f"print(subprocess.run([sys.executable, '-c', {PRINCIPAL!r}, sys.argv[1]], capture_output=True, "
        "text=True).stdout.strip())"
    )
    assert below_a_worker(proj, start, proj.root, nested, "vouched") == "watcher"
    # A token is used once: a second claim of the same one makes nothing.
    twice = (
        "import os, sys; from cocoplus.session import agents; token = agents.vouch('watcher', sys.argv[1]); "
        "print(agents.claim(dict(token)), agents.claim(dict(token)))"
    )
    assert below_a_worker(proj, twice, proj.root) == "watcher None"


def test_the_watcher_a_paused_workers_runner_starts_is_not_refused_as_that_worker(proj: Layout) -> None:
    """`cocoplus supervision watcher run` started from below a runner (the runner of a worker a limit paused)
    runs as the watcher; started without the token it would be refused as the worker."""
    vouched.sealed_worker(proj, "w1")
    code = (
        "import sys; from cocoplus.core.paths import Layout; from cocoplus.supervision import watcher; "
        "print(watcher.start_detached(Layout(sys.argv[1]), vouched=sys.argv[2] == 'vouched'))"
    )
    try:
        below_a_worker(proj, code, proj.root, "plain")
        wait_until(lambda: "refused" in Path(proj.supervisor_log).read_text(), timeout=30)
        assert "not the worker session w1" in Path(proj.supervisor_log).read_text()
        assert watcher.running_pid(proj) is None
        pid = int(below_a_worker(proj, code, proj.root, "vouched"))
        wait_until(lambda: watcher.running_pid(proj) == pid, timeout=30)
        entry = next(d for _i, d in agents.find([(pid, procinfo.start_ticks(pid) or 0)]))
        assert entry["kind"] == "watcher" and agents.own_principal(entry) == "watcher"
    finally:
        watcher.stop(proj)


def test_a_brain_launch_grants_no_rules_and_nothing_widens_a_workers_rules_later(proj: Layout) -> None:
    """The brain may launch workers but grant them no rules (`launch --allow` is the operator's; its MCP tools have
    no such parameter, whatever brain_may_allow says); a later run of a worker (a resume, a take-over) keeps only
    the rules its seal covers."""
    Path(proj.config).write_text('[permissions]\nbrain_may_allow = ["Bash"]\n')
    with pytest.raises(Refused, match="granting a worker permissions is for the operator"):
        workers_ops.launch(proj, "claude", "a task", allow=["Bash"], principal=authority.BRAIN)
    tools = asyncio.run(mcp_server.build("brain").list_tools())
    for name in ("launch_worker", "dispatch", "answer_worker"):
        (tool,) = [t for t in tools if t.name == name]
        assert not {"allow", "rules", "permissions"} & set(tool.input_schema["properties"]), tool.input_schema
    rec = vouched.sealed_worker(proj, "w1", allow=["Read"], state="exited")
    rec["allow"] = ["Read", "Bash"]  # widened by hand since
    fsio.atomic_write_json(proj.worker_record("w1"), rec)
    assert workers.vouched_allow(proj, rec) == []
    assert workers.vouched_allow(proj, vouched.sealed_worker(proj, "w2", allow=["Read"])) == ["Read"]


def test_the_registry_of_agent_processes_is_pruned_and_keeps_machines_apart(tmp_path: Path) -> None:
    state_dir = str(tmp_path / ".cocoplus")
    me = procinfo.self_process()
    path = agents.register(agents.SESSION, state_dir, "cs_x", me, runtime="claude")
    assert path is not None and os.path.exists(path)
    assert [d["id"] for _i, d in agents.find(procinfo.ancestors(os.getpid()))] == ["cs_x"]
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ticks = procinfo.start_ticks(ended.pid) or 1
    ended.wait()
    dead = agents.register(agents.SESSION, state_dir, "cs_y", {**me, "pid": ended.pid, "start_ticks": ticks})
    elsewhere = {**me, "pid": ended.pid, "start_ticks": ticks, "host": "another-machine"}
    other = agents.register(agents.SESSION, state_dir, "cs_z", elsewhere)
    assert dead and other and dead != other
    agents.prune()
    # This machine's ended process is forgotten; another machine's entry is not this machine's to judge.
    assert os.path.exists(path) and not os.path.exists(dead) and os.path.exists(other)
    assert agents.register(agents.SESSION, state_dir, "cs_w", me, keep=True) == path
    assert (fsio.read_json(path) or {})["id"] == "cs_x"  # `keep`: what was recorded first stays
