"""The `srt` profile (cocoplus/sandbox/srt.py) run for real: a shell under the pinned Anthropic sandbox runtime,
inside cocoplus's outer layer, with the settings a worker gets. The same file-system checks as `workspace`
(a write inside lands; a write to ~/.ssh/x, a read of a planted secret, a write outside the tree, a write to
.claude/settings.local.json fail), the marker and the control channel inside, and the network: a loopback
"registry" that is not on the allow list is unreachable, one that is on it answers."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from cocoplus.hook import channel as wire
from cocoplus.sandbox import bwrap, network, srt
from tests.sandbox.test_fail_closed import no_worker_ran, standins_dir
from tests.support import runtimes
from tests.support.runtimes import SRT_BIN
from tests.support.sandbox import channel_serving, require_sandbox, require_srt
from tests.support.waiting import wait_until

HOOK = str(Path(wire.__file__).with_name("__main__.py"))


def _pipe(data: bytes) -> int:
    read_end, write_end = os.pipe()
    os.write(write_end, data)
    os.close(write_end)
    return read_end


def run_in_srt(
    found: dict[str, Any],
    layout: Layout,
    home: Path,
    script: str,
    *,
    tree: str | None = None,
    channel_socket: str | None = None,
    extra_env: dict[str, str] | None = None,
    hosts: tuple[str, ...] = (),
    program: tuple[str, ...] = ("sh", "-c"),
    granted: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """`script` run as a worker of `layout`'s project would be under `srt` (Claude Code's files)."""
    tree = tree or layout.project
    env = {**os.environ, "PATH": found["PATH"], "HOME": str(home), **(extra_env or {})}
    bwrap.prepare(tree, layout.project, "claude", str(home), env)
    policy = srt.settings(runtime="claude", tree=tree, project=layout.project, home=str(home), environ=env,
                          hosts=hosts, granted=granted)  # fmt: skip
    marker = _pipe(bwrap.marker_text("w1", layout.project, "srt"))
    settings = _pipe(srt.settings_text(policy))
    args = srt.arguments(
        found["bwrap"], found["srt"], runtime="claude", tree=tree, cwd=tree, project=layout.project,
        home=str(home), environ=env, marker_fd=marker, settings_fd=settings, channel_socket=channel_socket,
    )  # fmt: skip
    try:
        return subprocess.run(
            [*args, *program, script], env=srt.environment("claude", env), pass_fds=(marker, settings),
            capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    finally:
        os.close(marker)
        os.close(settings)


@pytest.fixture
def base() -> Iterator[Path]:
    """Where the test's home and project lie: not under /dev, which srt's own bubblewrap mounts afresh (nor /tmp:
    the test's base directory may be under either)."""
    where = Path(tempfile.mkdtemp(prefix="cocoplus-srt-", dir="/var/tmp"))
    try:
        (where / "home").mkdir()
        yield where
    finally:
        shutil.rmtree(where, ignore_errors=True)


@pytest.fixture
def project_dir(base: Path) -> str:
    """The project (tests/conftest.py's `project` initialises it) under `base`."""
    (base / "proj").mkdir()
    return str(base / "proj")


@pytest.fixture
def planted(project: Layout, base: Path) -> tuple[Layout, Path]:
    """A home with a key in ~/.ssh, cloud credentials and Claude Code's state; a project with a kill switch and
    Claude Code's local settings."""
    home = base / "home"
    (home / ".ssh").mkdir(exist_ok=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    (home / ".aws").mkdir(exist_ok=True)
    (home / ".aws" / "credentials").write_text("AWS SECRET\n")
    (home / ".claude").mkdir(exist_ok=True)
    (home / ".claude" / ".credentials.json").write_text('{"token": "own"}\n')
    (home / ".codex").mkdir(exist_ok=True)
    (home / ".codex" / "auth.json").write_text('{"token": "CODEX SECRET"}\n')
    Path(project.root, "AGENT_STOP").write_text("stopped\n")
    (Path(project.project) / ".claude").mkdir(exist_ok=True)
    (Path(project.project) / ".claude" / "settings.local.json").write_text("{}\n")
    return project, home


def test_srt_holds_the_workspace_files(planted: tuple[Layout, Path], base: Path) -> None:
    found = require_srt()
    layout, home = planted
    outside = base / "outside.txt"
    script = (
        "echo ok > inside.txt && echo WROTE-INSIDE; "
        f"echo x > {home}/.ssh/x && echo WROTE-SSH; "
        f"cat {home}/.ssh/id_ed25519 {home}/.aws/credentials {home}/.codex/auth.json; "
        f"echo x > {outside} && echo WROTE-OUTSIDE; "
        f"echo x > {home}/elsewhere.txt && echo WROTE-HOME; "
        "echo '{\"hooks\": {}}' > .claude/settings.local.json && echo WROTE-SETTINGS; "
        "rm -f .cocoplus/AGENT_STOP; [ -e .cocoplus/AGENT_STOP ] || echo DELETED-STOP; "
        f"echo x > {home}/.claude/state && echo WROTE-STATE; "
        f"echo x > {home}/.claude/.credentials.json && echo WROTE-CREDENTIALS; "
        f"cat {home}/.claude/.credentials.json; "
        f"cat {bwrap.MARKER} && echo; rm -f {bwrap.MARKER}; echo x > {bwrap.MARKER} || echo MARKER-HELD; "
        "echo x > /tmp/scratch && echo WROTE-TMP"
    )
    r = run_in_srt(found, layout, home, script)
    out = r.stdout + r.stderr
    said = set(out.split())
    assert {"WROTE-INSIDE", "WROTE-STATE", "WROTE-TMP", "MARKER-HELD"} <= said, out
    assert not {"WROTE-SSH", "WROTE-OUTSIDE", "WROTE-HOME", "WROTE-SETTINGS", "DELETED-STOP"} & said, out
    assert not {"WROTE-CREDENTIALS"} & said and '{"token": "own"}' in out, out  # its own: read, not written
    assert "PRIVATE KEY" not in out and "AWS SECRET" not in out and "CODEX SECRET" not in out, out
    assert '"worker": "w1"' in out and '"profile": "srt"' in out, out
    assert (Path(layout.project) / "inside.txt").read_text() == "ok\n"
    assert Path(layout.root, "AGENT_STOP").exists() and not outside.exists() and not (home / ".ssh" / "x").exists()
    assert (Path(layout.project) / ".claude" / "settings.local.json").read_text() == "{}\n"
    assert (home / ".claude" / "state").exists() and not Path("/tmp/scratch").exists()


def test_a_worktree_under_the_project_is_writable_and_the_rest_of_cocoplus_is_not(
    planted: tuple[Layout, Path],
) -> None:
    """A worktree lives in .cocoplus/worktrees: srt's deny of .cocoplus would win over the tree's allow, so the
    settings leave the tree's ancestors out of the denies (the project is not writable anyway)."""
    found = require_srt()
    layout, home = planted
    tree = Path(layout.root) / "worktrees" / "w1"
    subprocess.run(["git", "init", "-q", layout.project], check=True)
    tree.mkdir(parents=True)
    script = (
        "echo ok > made.txt && echo WROTE-TREE; "
        f"echo x > {layout.root}/steer-forged && echo WROTE-COCOPLUS; "
        f"echo x > {layout.project}/top.txt && echo WROTE-PROJECT"
    )
    r = run_in_srt(found, layout, home, script, tree=str(tree))
    said = set((r.stdout + r.stderr).split())
    assert "WROTE-TREE" in said and not {"WROTE-COCOPLUS", "WROTE-PROJECT"} & said, r
    assert (tree / "made.txt").exists() and not Path(layout.root, "steer-forged").exists()


@pytest.fixture
def channel(project: Layout) -> Iterator[Layout]:
    """The control channel of worker w1 of `project`, listening outside."""
    with channel_serving(project) as served:
        yield served


def test_the_hooks_inside_srt_reach_their_channel_and_a_stop_denies(
    channel: Layout, base: Path, cli_subprocess
) -> None:
    """srt blocks new Unix sockets by default: the settings let the hook reach its channel, and what the hook
    answers is decided outside (the kill switch)."""
    found = require_srt()
    home = base / "home"
    payload = json.dumps({"session_id": "s-srt", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                          "tool_input": {"command": "ls"}, "cwd": channel.project,
                          "transcript_path": "/nonexistent"})  # fmt: skip
    script = (
        f"printf '%s' '{payload}' | {sys.executable} -S {HOOK} PreToolUse --runtime claude --timeout 30 "
        "--count-before-call; echo EXIT=$?"
    )
    sock = channel.worker_channel("w1")
    r = run_in_srt(found, channel, home, script, channel_socket=sock)
    assert "EXIT=0" in r.stdout and "deny" not in r.stdout, r
    cli_subprocess("session", "stop", "--reason", "enough", cwd=channel.project)
    r = run_in_srt(found, channel, home, script, channel_socket=sock)
    assert "EXIT=0" in r.stdout and '"permissionDecision": "deny"' in r.stdout and "enough" in r.stdout, r


def test_without_its_channel_a_hook_inside_srt_blocks(planted: tuple[Layout, Path]) -> None:
    found = require_srt()
    layout, home = planted
    payload = json.dumps({"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                          "tool_input": {"command": "ls"}, "cwd": layout.project})  # fmt: skip
    script = (
        f"printf '%s' '{payload}' | {sys.executable} -S {HOOK} PreToolUse --runtime claude --timeout 10; echo EXIT=$?"
    )
    r = run_in_srt(found, layout, home, script)
    assert f"EXIT={wire.BLOCKED}" in r.stdout and "cannot reach its control channel" in r.stderr, r


class _Registry(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"REGISTRY-ANSWERED"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def registries() -> Iterator[tuple[int, int]]:
    """Two loopback "registries": ports of servers on 127.0.0.1."""
    servers = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Registry) for _ in range(2)]
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    try:
        yield servers[0].server_address[1], servers[1].server_address[1]
    finally:
        for s in servers:
            s.shutdown()
            s.server_close()


# Inside: the registry at argv[1], directly and through srt's proxy (its variables; no_proxy emptied, since srt
# exempts loopback from the proxy and the sandbox's own loopback is not the host's).
FETCH = """
import os, sys, urllib.request
port = sys.argv[1]
for how in ("direct", "proxy"):
    try:
        if how == "direct":
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        else:
            os.environ["no_proxy"] = os.environ["NO_PROXY"] = ""
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": os.environ["http_proxy"]}))
        print(how, opener.open(f"http://127.0.0.1:{port}/pkg", timeout=20).read().decode())
    except Exception as exc:
        print(how, "REFUSED", type(exc).__name__, exc)
"""


def test_a_loopback_registry_off_the_allow_list_is_unreachable(
    planted: tuple[Layout, Path], registries: tuple[int, int]
) -> None:
    found = require_srt()
    layout, home = planted
    denied, allowed = registries
    fetch = Path(layout.project) / "fetch.py"
    fetch.write_text(FETCH)
    for port, hosts in ((denied, ()), (allowed, (f"127.0.0.1:{allowed}",))):
        r = run_in_srt(found, layout, home, f"{sys.executable} -S {fetch} {port}", hosts=hosts)
        lines = dict(ln.split(" ", 1) for ln in r.stdout.splitlines() if ln.startswith(("direct ", "proxy ")))
        assert lines["direct"].startswith("REFUSED"), r  # no network namespace of the host's inside
        if port == denied:
            # srt's proxy answered, and refused: 403 (not a proxy that cannot be reached)
            assert lines["proxy"].startswith("REFUSED HTTPError HTTP Error 403"), r
            assert "REGISTRY-ANSWERED" not in r.stdout, r
        else:
            assert lines["proxy"] == "REGISTRY-ANSWERED", r  # the same path, allowed: the check can fail


def test_the_model_endpoint_is_allowed_by_its_base_url() -> None:
    env = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:4141/v1", "OPENAI_BASE_URL": "https://elsewhere.example"}
    assert srt.model_hosts("claude", env) == ["127.0.0.1:4141"]
    assert srt.model_hosts("claude", {}) == ["api.anthropic.com"]
    assert srt.model_hosts("codex", env) == ["elsewhere.example"]
    # The adapters' one table, read as the workspace profile's proxy reads it: with no base URL, the vendor's
    # API and its sign-in backends.
    assert srt.model_hosts("codex", {}) == ["api.openai.com", "chatgpt.com"]
    assert [f"{h}" for h, _port in network.endpoints("codex", {})] == srt.model_hosts("codex", {})


def launch(cli_subprocess, layout: Layout, runtime: str, path: str, *more: str):
    return cli_subprocess(
        "launch", runtime, "Do the work.", "--sandbox", "srt", *more, cwd=layout.project, env={"PATH": path}
    )


@pytest.fixture
def hooked(cli_subprocess, project: Layout) -> Layout:
    """A project whose Claude Code and Codex hooks are installed: a launch there is refused for its sandbox alone."""
    for runtime in ("claude", "codex"):
        assert cli_subprocess("install", runtime, cwd=project.project).code == 0
    return project


def test_without_srt_a_worker_under_srt_does_not_start(cli_subprocess, hooked: Layout) -> None:
    require_sandbox()
    r = launch(
        cli_subprocess, hooked, "claude", f"{standins_dir()}{os.pathsep}{os.path.dirname(shutil.which('bwrap') or '')}"
    )
    lines = r.err.strip().splitlines()
    assert r.code == 1 and len(lines) == 1, r
    assert "the sandbox 'srt' cannot be applied here: Anthropic's sandbox runtime (`srt`) is not on PATH" in lines[0]
    assert srt.FIX_INSTALL in lines[0]
    no_worker_ran(hooked)


def test_a_codex_worker_is_refused_under_srt(cli_subprocess, hooked: Layout) -> None:
    """Codex's own sandbox cannot start inside srt (checked with the real CLI: "bwrap: Creating new namespace
    failed ... (ENOSPC)", and `codex exec` exited 0): refused in one line, before anything runs."""
    # --unsupervised: Codex's hooks need a trusted project, which this test does not need to set up
    r = launch(cli_subprocess, hooked, "codex", f"{SRT_BIN}{os.pathsep}{os.environ['PATH']}", "--unsupervised")
    lines = r.err.strip().splitlines()
    assert r.code == 1 and len(lines) == 1, r
    assert "the sandbox 'srt' cannot hold this worker: Codex" in lines[0] and "workspace" in lines[0]
    no_worker_ran(hooked)


def test_a_project_under_dev_is_refused_by_its_runner(cli_subprocess) -> None:
    """srt mounts a fresh /dev: a worker whose tree lies there does not start (its run ends, one line), and no
    process of it ran."""
    require_srt()
    where = Path(tempfile.mkdtemp(prefix="cocoplus-srt-", dir="/dev/shm"))
    try:
        assert cli_subprocess("init", cwd=where).code == 0
        assert cli_subprocess("install", "claude", cwd=where).code == 0
        layout = Layout(str(where / ".cocoplus"))
        r = launch(cli_subprocess, layout, "claude", f"{SRT_BIN}{os.pathsep}{os.environ['PATH']}")
        assert r.code == 0, r
        rec = wait_until(
            lambda: (x := json.loads(Path(layout.worker_record("w1")).read_text()))["state"] == "failed" and x,
            timeout=60,
        )
        assert "lies under /dev, which srt mounts afresh" in rec["reason"], rec
        assert runtimes.standin_calls(Path(standins_dir()) / "calls.log") == ""
    finally:
        shutil.rmtree(where, ignore_errors=True)


def test_a_worker_cannot_leave_srt_by_starting_another(planted: tuple[Layout, Path]) -> None:
    """Attacks from inside: a second srt with settings of the worker's own that allow writing the home, a new user
    namespace (where the read-only binds could be undone), and srt's settings file rewritten: each fails, and the
    home stays unwritten."""
    found = require_srt()
    layout, home = planted
    mine = Path(layout.project) / "mine.json"
    wide = {"allowWrite": [str(home)], "denyWrite": [], "denyRead": []}
    mine.write_text(
        json.dumps({"network": {"allowedDomains": ["example.com"], "deniedDomains": []}, "filesystem": wide})
    )
    script = (
        f"{found['srt']} --settings {mine} -- sh -c 'echo x > {home}/escaped' && echo NESTED-RAN; "
        "unshare -r true && echo USERNS; "
        f"echo '{{}}' > {srt.SETTINGS} && echo REWROTE-SETTINGS; "
        f"echo x > {home}/escaped && echo ESCAPED"
    )
    r = run_in_srt(found, layout, home, script)
    said = set((r.stdout + r.stderr).split())
    assert not {"NESTED-RAN", "USERNS", "REWROTE-SETTINGS", "ESCAPED"} & said, r
    assert "Creating new namespace failed" in r.stderr, r  # the second srt met the sandbox, not a bad config
    assert not (home / "escaped").exists(), r


def test_cocoplus_doctor_calls_a_missing_srt_a_problem_when_workers_need_it(cli_subprocess, project: Layout) -> None:
    from cocoplus.core import userfiles

    require_sandbox()
    user = Path(userfiles.config_file())
    user.parent.mkdir(parents=True, exist_ok=True)
    env = {"PATH": f"{standins_dir()}{os.pathsep}{os.path.dirname(shutil.which('bwrap') or '')}"}
    user.write_text('[workers]\nsandbox = "workspace"\n')
    box = json.loads(cli_subprocess("doctor", "--json", cwd=project.project, env=env).out)["sandbox"]
    assert box["ok"] is True and box["problem"] is False, box  # workspace does not need srt
    user.write_text('[workers]\nsandbox = "srt"\n')
    box = json.loads(cli_subprocess("doctor", "--json", cwd=project.project, env=env).out)["sandbox"]
    assert box["problem"] is True and box["profile"] == "srt" and "(`srt`) is not on PATH" in box["text"], box


def test_a_granted_path_is_writable_under_srt_and_only_it(planted: tuple[Layout, Path]) -> None:
    """A write the operator approved after a sandbox refused it (sandbox/writes.py) is in srt's allowWrite in the
    worker's next sandbox; a directory beside it stays read-only."""
    layout, home = planted
    found = require_srt()
    for name in ("cache", "beside"):
        (home / name).mkdir()
    script = f"echo x > {home}/cache/f && echo WROTE-GRANTED; echo x > {home}/beside/f && echo WROTE-BESIDE"
    before = run_in_srt(found, layout, home, script)
    assert "WROTE-GRANTED" not in before.stdout and "WROTE-BESIDE" not in before.stdout, before
    after = run_in_srt(found, layout, home, script, granted=(str(home / "cache"),))
    assert "WROTE-GRANTED" in after.stdout and "WROTE-BESIDE" not in after.stdout, after
    assert (home / "cache" / "f").read_text() == "x\n" and not (home / "beside" / "f").exists()
