"""A write a sandbox refused becomes a decision in the inbox (cocoplus/sandbox/writes.py): the messages real programs
print inside a real sandbox are read, what is offered is judged, the channel asks once per path and run and waits,
an approval is a sealed grant the worker's next sandbox makes writable (and this one does not), an unanswered one is
denied at its deadline, and a grant cocoplus did not seal grants nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cocoplus.core import fsio, userfiles
from cocoplus.core.paths import Layout
from cocoplus.inbox import decisions
from cocoplus.sandbox import bwrap, writes
from cocoplus.session import permissions
from tests.support.sandbox import channel_call, channel_serving, require_sandbox
from tests.support.waiting import wait_until


def sandboxed(project: Layout, script: str, granted: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """`sh -c script` in worker w1's `workspace` sandbox working in the project; its exit status and output."""
    found = require_sandbox()
    read_end, write_end = os.pipe()
    os.write(write_end, bwrap.marker_text("w1", project.project, "workspace"))
    os.close(write_end)
    bwrap.prepare(project.project, project.project)
    args = bwrap.arguments(
        found["bwrap"], runtime="claude", tree=project.project, cwd=project.project, project=project.project,
        home=userfiles.home(), environ=dict(os.environ), marker_fd=read_end, granted=granted,
    )  # fmt: skip
    try:
        return subprocess.run(
            [*args, "sh", "-c", script], env=bwrap.environment("claude", dict(os.environ)), pass_fds=(read_end,),
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    finally:
        os.close(read_end)


@pytest.fixture
def cache() -> Path:
    """A directory of this user's home, as a package manager's cache is."""
    where = Path(userfiles.home()) / "cache"
    where.mkdir(exist_ok=True)
    return where


def failure(error: str, tool: str = "Bash", tool_input: dict[str, object] | None = None) -> dict[str, object]:
    """Claude Code's PostToolUseFailure payload (reference fixture claude-posttoolusefailure-bash.json)."""
    return {
        "session_id": "s-w1", "transcript_path": "/nonexistent", "cwd": "/nonexistent", "permission_mode": "default",
        "hook_event_name": "PostToolUseFailure", "tool_name": tool,
        "tool_input": tool_input if tool_input is not None else {"command": "npm install"},
        "tool_use_id": "toolu_01Wb8mN2cQ5rT7yL1kH9xF3a", "error": error, "is_interrupt": False, "duration_ms": 41,
    }  # fmt: skip


def test_what_real_programs_print_when_a_sandbox_refuses_a_write_names_the_path(project: Layout, cache: Path) -> None:
    """Each shell's redirection (bash, dash and zsh: Claude Code and Codex run bash or zsh), coreutils, Python and
    Node (how Claude Code's Write tool fails), each refused for real inside a sandbox: each message names the path,
    and what is offered is the cache directory."""
    shells = {name: shutil.which(name) for name in ("bash", "dash", "zsh")}
    assert all(shells.values()), f"tests/e2e/runtimes/install.sh installs these shells: {shells}"
    scripts = {
        **{cache / f"by-{name}": f"{program} -c 'echo x > {cache}/by-{name}'" for name, program in shells.items()},
        cache / "by-touch": f"touch {cache}/by-touch",
        cache / "by-python": f"python3 -c \"open('{cache}/by-python', 'w')\"",
    }
    if shutil.which("node"):
        scripts[cache / "by-node"] = f"node -e \"require('fs').writeFileSync('{cache}/by-node', 'x')\""
    for path, script in scripts.items():
        r = sandboxed(project, script)
        assert r.returncode != 0 and "read-only file system" in r.stderr.lower(), (script, r)
        said = r.stderr.strip()
        # Claude Code (Bash's failure, and a Write tool's), and Codex (the command's output as the tool's response)
        for payload in (
            failure(f"Exit code 1\n{said}"),
            failure(said, "Write", {"file_path": str(path), "content": "x"}),
            {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_response": said},
        ):
            assert writes.refused(payload)[:1] == [str(path)], (said, payload)
            target, why = writes.offer(str(path), project.project, project.project, [userfiles.home()])
            assert (target, why) == (str(cache), "ok")


def test_a_result_that_does_not_say_read_only_names_nothing() -> None:
    assert writes.refused(failure("Exit code 1\nFAILED tests/test_counter.py::test_cap - AssertionError")) == []
    assert writes.refused({"tool_response": {"stdout": "wrote /home/u/x", "stderr": ""}}) == []


def test_what_is_never_offered(project: Layout, tmp_path: Path) -> None:
    """Only a path in this user's home that starts nothing and holds no secret is offered; the reason otherwise."""
    home = userfiles.home()
    for made in (".ssh", ".config/autostart", ".local/bin", ".claude", "work/app", "real"):
        os.makedirs(os.path.join(home, made), exist_ok=True)
    Path(home, ".bashrc").write_text("# login\n")
    os.symlink(os.path.join(home, "real"), os.path.join(home, "linked"))
    never = {
        f"{home}/.bashrc": "a file of its own",
        f"{home}/new-file": "a file of its own",
        f"{home}/.ssh/config": "secret",
        f"{home}/.config/autostart/x.desktop": "~/.config",
        f"{home}/.local/bin/git": "~/.local",
        f"{home}/.claude/settings.json": "decides what runs",
        f"{home}/linked/x": "symbolic link",
        "/etc/profile.d/x.sh": "outside your home",
        "/proc/no-such/x": "outside your home",
        f"{project.project}/.claude/settings.local.json": "in the worker's tree",
    }
    for path, why in never.items():
        target, said = writes.offer(path, project.project, project.project, [home])
        assert target is None and why in said, (path, said)
    # A directory that holds the project is never offered (the nearest one that exists, for a path not made yet);
    # a directory beside it is.
    app = f"{home}/work/app"
    os.makedirs(f"{home}/work/cache")
    target, said = writes.offer(f"{home}/work/x", app, app, [home])
    assert target is None and "holds the project" in said
    assert writes.offer(f"{home}/work/cache/x", app, app, [home]) == (f"{home}/work/cache", "ok")
    assert writes.offer(f"{home}/work/app2/y", str(tmp_path), str(tmp_path), [home]) == (f"{home}/work", "ok")


def _requests(layout: Layout) -> list[dict[str, object]]:
    return [dict(r) for r in permissions.requests(layout, state=None) if r.get("tool") == writes.TOOL]


def test_a_refused_write_is_asked_once_approved_it_is_writable_in_the_next_sandbox_only(
    cli_subprocess, project: Layout, cache: Path
) -> None:
    """Through the channel as a sandboxed worker's hook: the decision, once for the path however often it fails;
    approved through the inbox, a sealed grant; the running sandbox is unchanged, the next one writes."""
    refused = sandboxed(project, f"echo x > {cache}/pkg.tgz")
    assert refused.returncode != 0
    argv = ["PostToolUseFailure", "--runtime", "claude", "--timeout", "10"]
    with channel_serving(project) as served:
        for _ in range(2):
            code, _out, _err = channel_call(served, argv, failure(f"Exit code 2\n{refused.stderr.strip()}"))
            assert code == 0
        (req,) = wait_until(lambda: _requests(project) or None)
        assert req["state"] == "pending" and req["worker"] == "w1" and req["call"]["path"] == str(cache)
        assert "not in this run" in str(req["why"])
        shown = [d for d in decisions.collect(project) if d["id"] == req["id"]]
        assert shown and shown[0]["summary"] == f"allow writes to {cache} for w1's next run?", shown
        assert len(_requests(project)) == 1  # the second failure asked nothing new
        still = sandboxed(project, f"echo x > {cache}/pkg.tgz && echo WROTE")
        assert "WROTE" not in still.stdout  # this run's mounts do not change
        r = cli_subprocess("decide", str(req["id"]), "approve", cwd=project.project)
        assert r.code == 0, r
        wait_until(lambda: os.path.exists(project.worker_write_grants("w1")))
    said: list[str] = []
    assert writes.granted(project, "w1", project.project, [userfiles.home()], said.append) == [str(cache)]
    assert said == []
    nxt = sandboxed(project, f"echo x > {cache}/pkg.tgz && echo WROTE", granted=(str(cache),))
    assert "WROTE" in nxt.stdout and (cache / "pkg.tgz").read_text() == "x\n"
    log = [json.loads(line) for line in Path(project.permission_log).read_text().splitlines()]
    steps = [e.get("behavior") or e.get("state") for e in log if e.get("tool") == writes.TOOL]
    assert steps == ["held", "allowed", "granted"], steps
    from cocoplus.report import timeline

    lines = [str(e["text"]) for e in timeline.timeline(project)["events"] if e["kind"] == "permission"]
    assert [t.split(":")[0] for t in lines] == ["permission held", "permission allowed", "permission granted"], lines
    assert f"{cache} is writable in w1's next sandbox" in lines[-1]


def test_unanswered_the_default_deny_applies_at_the_deadline(project: Layout, cache: Path) -> None:
    Path(project.project, "cocoplus.toml").write_text("[sandbox]\nwrite_wait_s = 1\n")
    argv = ["PostToolUseFailure", "--runtime", "claude", "--timeout", "10"]
    error = f"Exit code 1\nsh: 1: cannot create {cache}/late: Read-only file system"
    with channel_serving(project) as served:
        assert channel_call(served, argv, failure(error))[0] == 0
        (req,) = wait_until(lambda: [r for r in _requests(project) if r["state"] == "expired"] or None, timeout=30)
    assert req["by"] == "deadline" and not os.path.exists(project.worker_write_grants("w1"))


def test_a_refused_write_to_what_decides_what_runs_asks_nothing_and_is_logged(project: Layout) -> None:
    home = userfiles.home()
    argv = ["PostToolUseFailure", "--runtime", "claude", "--timeout", "10"]
    error = f"Exit code 1\nsh: 1: cannot create {home}/.bashrc: Read-only file system"
    with channel_serving(project) as served:
        assert channel_call(served, argv, failure(error))[0] == 0
        wait_until(lambda: os.path.exists(project.permission_log))
    assert _requests(project) == []
    (entry,) = [json.loads(line) for line in Path(project.permission_log).read_text().splitlines()]
    assert entry["behavior"] == "not asked" and "a file of its own" in entry["reason"], entry


def test_a_grant_cocoplus_did_not_seal_for_this_worker_and_path_grants_nothing(project: Layout, cache: Path) -> None:
    """Hand-written, copied from another worker, or changed since: each is left out, and said."""
    writes.grant(project, "w2", str(cache), "p_1", "operator")
    other = fsio.read_json(project.worker_write_grants("w2"))
    assert isinstance(other, dict)
    os.makedirs(project.worker_dir("w1"), exist_ok=True)
    forged = {"schema_version": 1, "grants": [
        dict(other["grants"][0]),  # another worker's
        {**other["grants"][0], "path": str(Path(userfiles.home()) / "elsewhere")},  # changed since
        {"path": str(cache), "decision": "p_2", "by": "operator", "seal": "0" * 64},  # hand-written
    ]}  # fmt: skip
    fsio.atomic_write_json(project.worker_write_grants("w1"), forged)
    said: list[str] = []
    assert writes.granted(project, "w1", project.project, [userfiles.home()], said.append) == []
    assert len(said) == 3 and all("is not used" in s for s in said), said
    assert writes.granted(project, "w2", project.project, [userfiles.home()], said.append) == [str(cache)]


def test_the_runner_makes_a_granted_path_writable_and_leaves_a_forged_one_out(
    project: Layout, cache: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """`workerrun.sandboxed`, as a worker's runner builds its sandbox: the sealed grant is writable there; the same
    grant changed to name another directory is left out, and the runner says so."""
    from cocoplus.supervision import workerrun

    require_sandbox()
    other = Path(userfiles.home()) / "other"
    other.mkdir()
    rec: dict[str, object] = {"id": "w1", "runtime": "claude", "alias": None, "state": "running",
                              "sandbox": "workspace", "session": None}  # fmt: skip
    fsio.ensure_dir(project.worker_dir("w1"))
    fsio.atomic_write_json(project.worker_record("w1"), rec)
    writes.grant(project, "w1", str(cache), "p_1", "operator")
    doc = fsio.read_json(project.worker_write_grants("w1"))
    assert isinstance(doc, dict)
    doc["grants"].append({**doc["grants"][0], "path": str(other)})  # a grant's path changed since it was sealed
    fsio.atomic_write_json(project.worker_write_grants("w1"), doc)
    script = f"echo x > {cache}/granted && echo WROTE-GRANTED; echo x > {other}/forged && echo WROTE-FORGED"
    try:
        args, env, fds = workerrun.sandboxed(project, "w1", rec, ["sh", "-c", script], project.project, "workspace")  # type: ignore[arg-type]
        r = subprocess.run(args, env=env, pass_fds=fds, capture_output=True, text=True, timeout=60)
        for fd in fds:
            os.close(fd)
    finally:
        workerrun.end_channels()
    assert "WROTE-GRANTED" in r.stdout and "WROTE-FORGED" not in r.stdout, r
    said = capfd.readouterr().err
    assert f"writable in its sandbox, as approved after an earlier one refused a write: {cache}" in said, said
    assert f"the write grant of {other} is not used" in said, said


def test_a_runtime_whose_own_sandbox_runs_inside_is_given_the_granted_paths_too() -> None:
    """Codex's `-s workspace-write` (its own bubblewrap, nested) writes only its workspace and /tmp: the granted paths
    join its writable roots, a config override `exec` and `exec resume` take; the others run no sandbox of their own
    inside cocoplus's (docs/runtimes.md)."""
    from cocoplus.runtimes import registry

    got = registry.get("codex").granted_argv(["/home/u/cache", '/home/u/a "b"'])
    assert got[0] == "-c" and got[1].startswith("sandbox_workspace_write.writable_roots=")
    assert json.loads(got[1].split("=", 1)[1]) == ["/home/u/cache", '/home/u/a "b"']
    assert registry.get("codex").granted_argv([]) == []
    for name in registry.names():
        if name != "codex":
            assert registry.get(name).granted_argv(["/home/u/cache"]) == [], name


def test_a_worker_failing_on_ever_new_paths_opens_a_bounded_number_of_decisions(project: Layout) -> None:
    """As a worker flooding the inbox would: a failure naming new paths each time asks about MAX_OPEN at most while
    they are open; the rest are in the audit log, not asked."""
    home = Path(userfiles.home())
    argv = ["PostToolUseFailure", "--runtime", "claude", "--timeout", "10"]
    paths = []
    for i in range(writes.MAX_OPEN + 2):
        (home / f"d{i}").mkdir()
        paths.append(home / f"d{i}")
    with channel_serving(project) as served:
        for group in range(0, len(paths), writes.MAX_PATHS):
            lines = "\n".join(f"sh: 1: cannot create {p}/x: Read-only file system" for p in paths[group : group + 4])
            assert channel_call(served, argv, failure(f"Exit code 2\n{lines}"))[0] == 0
        wait_until(lambda: len(_requests(project)) == writes.MAX_OPEN or None)
        refused = wait_until(
            lambda: [
                e for e in map(json.loads, Path(project.permission_log).read_text().splitlines())
                if e.get("behavior") == "not asked"
            ] or None
        )  # fmt: skip
    assert len(_requests(project)) == writes.MAX_OPEN
    assert "decisions about its writes are open already" in refused[0]["reason"], refused


def test_the_brain_approves_a_refused_write_only_within_brain_may_allow(project: Layout, cache: Path) -> None:
    """Widening a sandbox is the operator's: the main brain may approve a write only where `[permissions]
    brain_may_allow` (a trusted key) names it, as `SandboxWrite(/home/u/cache)`."""
    from cocoplus.core.errors import Refused
    from cocoplus.ops import authority
    from cocoplus.ops import permissions as permissions_ops
    from tests.support.trusting import trust_project

    def held(path: Path) -> str:
        return permissions.open_request(
            project, None, runtime="claude", tool=writes.TOOL, tool_input={"path": str(path), "refused": str(path)},
            wait_s=60, worker="w1",
        )["id"]  # fmt: skip

    with pytest.raises(Refused, match="brain_may_allow does not cover it"):
        permissions_ops.approve(project, held(cache), principal=authority.BRAIN)
    Path(project.config).write_text(f'[permissions]\nbrain_may_allow = ["SandboxWrite({cache})"]\n')
    trust_project(project)
    assert permissions_ops.approve(project, held(cache), principal=authority.BRAIN)["state"] == "allowed"
    with pytest.raises(Refused, match="brain_may_allow does not cover it"):
        permissions_ops.approve(project, held(cache.parent / "other"), principal=authority.BRAIN)


def test_a_damaged_grants_file_grants_nothing_and_says_so(project: Layout) -> None:
    os.makedirs(project.worker_dir("w1"), exist_ok=True)
    Path(project.worker_write_grants("w1")).write_text('{"grants": [')
    said: list[str] = []
    assert writes.granted(project, "w1", project.project, [userfiles.home()], said.append) == []
    assert len(said) == 1 and "write-grants.json" in said[0] and "not used" in said[0], said


def test_a_decision_outlives_the_run_that_asked_and_expires_at_its_deadline(cli_subprocess, project: Layout) -> None:
    """The grant is for the next run, so nothing waits for the answer: approved after the run (and its channel)
    ended, it grants all the same; past its deadline, unanswered, it is expired (the default), and an approval
    then grants nothing."""
    home = Path(userfiles.home())
    for name in ("later", "overdue"):
        (home / name).mkdir()
    argv = ["PostToolUseFailure", "--runtime", "claude", "--timeout", "10"]
    with channel_serving(project) as served:
        error = f"Exit code 1\nsh: 1: cannot create {home}/later/x: Read-only file system"
        assert channel_call(served, argv, failure(error))[0] == 0
        (req,) = wait_until(lambda: _requests(project) or None)
    assert req["hook"] is None
    r = cli_subprocess("decide", str(req["id"]), "approve", cwd=project.project)
    assert r.code == 0 and "writable in w1's next sandbox" in r.out, r
    said: list[str] = []
    assert writes.granted(project, "w1", project.project, [str(home)], said.append) == [str(home / "later")]
    late = permissions.open_request(
        project, None, runtime="claude", tool=writes.TOOL, tool_input={"path": str(home / "overdue")}, wait_s=0.2,
        worker="w1", waited=False,
    )  # fmt: skip
    wait_until(lambda: [r for r in _requests(project) if r["id"] == late["id"] and r["state"] == "expired"] or None)
    r = cli_subprocess("decide", str(late["id"]), "approve", cwd=project.project)
    assert "is expired: by its deadline" in r.out, r
    assert writes.granted(project, "w1", project.project, [str(home)], said.append) == [str(home / "later")]
    # Any answer that reaches it records its deadline's denial, not the answer.
    got = permissions.answer(project, str(late["id"]), "allow", principal="operator", by="test")
    assert got["state"] == "expired" and got["by"] == "deadline" and got["already_decided"], got
    log = [json.loads(line) for line in Path(project.permission_log).read_text().splitlines()]
    assert [e.get("behavior") for e in log if e.get("request") == late["id"]] == ["expired"], log


def test_a_line_a_worker_made_endless_is_cut_and_read_backwards_from_each_mention() -> None:
    """What the worker prints is read: a line is cut at MAX_LINE characters (a mention past the cut names nothing),
    and the word before a mention is found by reading back from it, not by trying every slash of the line."""
    far = "x" * writes.MAX_LINE + " sh: 1: cannot create /home/u/cache/f: Read-only file system"
    assert writes.refused(failure(far)) == []
    slashes = "/" * (writes.MAX_LINE - 100) + ": Read-only file system"
    assert writes.refused(failure(slashes)) == ["/"]  # one answer, at once: `offer` then refuses "/"
    near = "sh: 1: cannot create /home/u/cache/f: Read-only file system " + "/" * writes.MAX_LINE
    assert writes.refused(failure(near)) == ["/home/u/cache/f"]


def test_a_home_the_workers_environment_names_is_not_believed(project: Layout, tmp_path: Path) -> None:
    """As a worker setting HOME in its hooks' environment to make a system directory look like a home: the channel
    judges against this user's homes as the runner knows them, and asks nothing."""
    fake = tmp_path / "system"
    (fake / "cron.d").mkdir(parents=True)
    env = dict(os.environ, HOME=str(fake))
    argv = ["PostToolUseFailure", "--runtime", "claude", "--timeout", "10"]
    error = f"Exit code 1\nsh: 1: cannot create {fake}/cron.d/job: Read-only file system"
    with channel_serving(project) as served:
        assert channel_call(served, argv, failure(error), env)[0] == 0
        wait_until(lambda: os.path.exists(project.permission_log))
    assert _requests(project) == []
    (entry,) = [json.loads(line) for line in Path(project.permission_log).read_text().splitlines()]
    assert entry["behavior"] == "not asked" and "outside your home" in entry["reason"], entry


def test_gemini_clis_after_tool_result_is_read_as_the_others() -> None:
    """Gemini CLI's AfterTool gives the tool's result as `tool_response` {llmContent, returnDisplay} (reference
    fixture gemini-aftertool-read-file.json): a write_file the sandbox refused, and a shell command's stderr."""
    base = {"hook_event_name": "AfterTool", "session_id": "4c1e8a90", "cwd": "/nonexistent"}
    refused_write = "Error writing to file: EROFS: read-only file system, open '/home/u/cache/a.txt'"
    wrote = {
        **base, "tool_name": "write_file", "tool_input": {"file_path": "/home/u/cache/a.txt", "content": "x"},
        "tool_response": {"llmContent": refused_write, "returnDisplay": "Error writing to file"},
    }  # fmt: skip
    assert writes.refused(wrote) == ["/home/u/cache/a.txt"]
    output = (
        "Command: echo x > /home/u/cache/b\nStdout: (empty)\n"
        "Stderr: sh: 1: cannot create /home/u/cache/b: Read-only file system\nExit Code: 2"
    )
    shell = {
        **base, "tool_name": "run_shell_command", "tool_input": {"command": "echo x > /home/u/cache/b"},
        "tool_response": {"llmContent": output},
    }  # fmt: skip
    assert writes.refused(shell) == ["/home/u/cache/b"]
