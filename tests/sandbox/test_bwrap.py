"""The `workspace` profile's bubblewrap command line, run for real: a shell inside it tries what a worker's shell
might (delete the kill switch, edit the runtime's settings, read `~/.ssh`, reach the seal key, write outside its
tree) and each attempt is checked from outside. Skipped with the doctor's reason where a sandbox cannot be applied
(on CI it must run); the table test of the arguments always runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cocoplus.core import userfiles
from cocoplus.sandbox import bwrap
from tests.support.sandbox import require_sandbox
from tests.support.waiting import wait_until


def make_project(tmp_path: Path) -> tuple[Path, Path]:
    home = Path(userfiles.home())
    project = tmp_path / "project"
    (project / ".cocoplus").mkdir(parents=True)
    (project / ".cocoplus" / "AGENT_STOP").write_text("stopped by the operator\n")
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text("{}\n")
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (home / ".ssh").mkdir(exist_ok=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    (home / ".config" / "cocoplus").mkdir(parents=True, exist_ok=True)
    (home / ".config" / "cocoplus" / "seal.key").write_text("SEAL KEY\n")
    (home / ".codex").mkdir(exist_ok=True)
    (home / ".codex" / "auth.json").write_text('{"OPENAI_API_KEY": "sk-codex-credential"}\n')
    (home / ".claude").mkdir(exist_ok=True)
    (home / ".claude" / ".credentials.json").write_text('{"token": "claude-credential"}\n')
    (home / ".claude" / "settings.json").write_text("{}\n")
    return project, home


def run_inside(runtime: str, project: Path, home: Path, script: str, env: dict[str, str] | None = None) -> str:
    """`sh -c script` under the workspace profile for `runtime` working in `project`; its output."""
    found = require_sandbox()
    read_end, write_end = os.pipe()
    os.write(write_end, bwrap.marker_text("w1", str(project), "workspace"))
    os.close(write_end)
    environ = dict(os.environ if env is None else env)
    bwrap.prepare(str(project), str(project))  # before the arguments, as the runner does: what it makes is mounted
    args = bwrap.arguments(
        found["bwrap"], runtime=runtime, tree=str(project), cwd=str(project), project=str(project), home=str(home),
        environ=environ, marker_fd=read_end,
    )  # fmt: skip
    try:
        r = subprocess.run(
            [*args, "sh", "-c", script], env=bwrap.environment(runtime, environ), pass_fds=(read_end,),
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    finally:
        os.close(read_end)
    return r.stdout + r.stderr


def test_a_worker_shell_writes_its_tree_and_nothing_that_decides_what_runs(tmp_path: Path) -> None:
    project, home = make_project(tmp_path)
    out = run_inside(
        "claude", project, home,
        "echo ok > inside.txt && echo WROTE-INSIDE; "
        "rm -f .cocoplus/AGENT_STOP && echo DELETED-STOP; "
        "echo '{}' > .claude/settings.local.json && echo WROTE-SETTINGS; "
        "echo x >> .claude/settings.json && echo EDITED-SETTINGS; "
        "echo x >> .git/config && echo EDITED-GIT-CONFIG; "
        "echo 'rm -rf /' > .git/hooks/pre-commit && echo WROTE-GIT-HOOK; "
        f"echo x > {home}/outside.txt && echo WROTE-OUTSIDE; "
        f"echo x > {home}/.claude/settings.json && echo WROTE-USER-SETTINGS; "
        f"echo x > {home}/.claude/transcript.jsonl && echo WROTE-STATE; "
        "echo x > /tmp/scratch && echo WROTE-TMP",
    )  # fmt: skip
    said = set(out.split())
    assert {"WROTE-INSIDE", "WROTE-STATE", "WROTE-TMP"} <= said, out
    refused = {"DELETED-STOP", "WROTE-SETTINGS", "EDITED-SETTINGS", "EDITED-GIT-CONFIG", "WROTE-GIT-HOOK"}
    assert not (refused | {"WROTE-OUTSIDE", "WROTE-USER-SETTINGS"}) & said, out
    assert "Read-only file system" in out
    assert (project / ".cocoplus" / "AGENT_STOP").exists()
    assert not (project / ".claude" / "settings.local.json").exists() and not (home / "outside.txt").exists()
    assert not (project / ".git" / "hooks" / "pre-commit").exists()
    assert (project / "inside.txt").read_text() == "ok\n" and (home / ".claude" / "transcript.jsonl").exists()
    assert not (tmp_path / "scratch").exists() and not Path("/tmp/scratch").exists()  # its /tmp was its own


def test_secrets_and_other_runtimes_credentials_are_hidden_its_own_are_read_only(tmp_path: Path) -> None:
    project, home = make_project(tmp_path)
    out = run_inside(
        "claude", project, home,
        f"cat {home}/.ssh/id_ed25519; ls -A {home}/.ssh; cat {home}/.config/cocoplus/seal.key; "
        f"cat {home}/.codex/auth.json; echo; cat {home}/.claude/.credentials.json; echo; "
        f"echo x > {home}/.claude/.credentials.json && echo WROTE-CREDENTIALS",
    )  # fmt: skip
    assert "PRIVATE KEY" not in out and "SEAL KEY" not in out and "sk-codex-credential" not in out, out
    assert "claude-credential" in out and "WROTE-CREDENTIALS" not in out, out


def test_the_projects_server_token_is_hidden(tmp_path: Path) -> None:
    """The page's and the REST API's token is the operator's authority: a worker that read it could answer its own
    requests through the server."""
    project, home = make_project(tmp_path)
    (project / ".cocoplus" / "secrets").mkdir(mode=0o700)
    (project / ".cocoplus" / "secrets" / "server-token").write_text("operator-token-value\n")
    (project / ".cocoplus" / "server-token").write_text("an-earlier-versions-token\n")
    (project / ".cocoplus" / "shown.txt").write_text("the rest of .cocoplus stays readable\n")
    out = run_inside(
        "claude", project, home,
        "cat .cocoplus/secrets/server-token; echo \"LS:$(ls -A .cocoplus/secrets)\"; cat .cocoplus/server-token; echo; "
        "cat .cocoplus/shown.txt",
    )  # fmt: skip
    assert "operator-token-value" not in out and "LS:" in out.splitlines(), out
    assert "an-earlier-versions-token" not in out and "stays readable" in out, out


def test_a_server_started_after_the_worker_writes_a_token_the_worker_cannot_read(tmp_path: Path) -> None:
    """A mount over a file shows the file again, inside, once it is replaced by a rename outside (as every atomic
    write replaces it): the token's directory is what is hidden, made before the sandbox starts, so a server started
    (or restarted) while the worker runs writes a token the worker never sees."""
    from cocoplus.core.paths import Layout
    from cocoplus.server import security

    project, home = make_project(tmp_path)
    layout = Layout(str(project / ".cocoplus"))
    security.new_token(layout)  # a server that ran before the worker started
    found = require_sandbox()
    read_end, write_end = os.pipe()
    os.write(write_end, bwrap.marker_text("w1", str(project), "workspace"))
    os.close(write_end)
    bwrap.prepare(str(project), str(project))
    args = bwrap.arguments(
        found["bwrap"], runtime="claude", tree=str(project), cwd=str(project), project=str(project), home=str(home),
        environ=dict(os.environ), marker_fd=read_end,
    )  # fmt: skip
    script = (
        "touch started; while [ ! -e go ]; do sleep 0.05; done; "
        'cat .cocoplus/secrets/server-token; echo "LS:$(ls -A .cocoplus/secrets)"; cat .cocoplus/server-token; '
        "echo DONE"
    )
    worker = subprocess.Popen(
        [*args, "sh", "-c", script], env=bwrap.environment("claude", dict(os.environ)), pass_fds=(read_end,),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    os.close(read_end)
    try:
        wait_until(lambda: (project / "started").exists())
        token = security.new_token(layout)  # a server started while the worker runs
        (project / "go").touch()
        out, _ = worker.communicate(timeout=60)
    finally:
        worker.kill()
    assert security.read_token(layout) == token
    assert "DONE" in out and token not in out and "LS:" in out.splitlines(), out


def test_other_runtimes_keys_the_capability_and_the_ssh_agent_never_reach_it(tmp_path: Path) -> None:
    project, home = make_project(tmp_path)
    env = dict(os.environ, OPENAI_API_KEY="sk-openai", GEMINI_API_KEY="gm-key", ANTHROPIC_API_KEY="sk-ant",
               SSH_AUTH_SOCK="/run/agent.sock", COCOPLUS_MCP_TOKEN="capability")  # fmt: skip
    out = run_inside("claude", project, home, "env", env)
    assert "ANTHROPIC_API_KEY=sk-ant" in out
    for gone in ("sk-openai", "gm-key", "SSH_AUTH_SOCK", "COCOPLUS_MCP_TOKEN"):
        assert gone not in out, out


def test_the_host_pids_are_hidden_and_the_marker_cannot_be_removed(tmp_path: Path) -> None:
    project, home = make_project(tmp_path)
    out = run_inside(
        "claude", project, home,
        f"ls /proc | grep -c '^[0-9]'; test -e /proc/{os.getpid()}/status && echo SEES-HOST-PID; "
        f"cat {bwrap.MARKER}; echo; rm -f {bwrap.MARKER}; test -e {bwrap.MARKER} && echo MARKER-STAYS",
    )  # fmt: skip
    lines = out.splitlines()
    assert int(lines[0]) < 10 and "SEES-HOST-PID" not in out, out
    assert json.loads(lines[1]) == {"worker": "w1", "project": str(project), "profile": "workspace"}
    assert "MARKER-STAYS" in out


def test_a_cocoplus_command_inside_is_a_worker(tmp_path: Path) -> None:
    project, home = make_project(tmp_path)
    code = "from cocoplus.ops import authority; p = authority.caller(); print(p.kind, p.name, p.why)"
    path = os.pathsep.join(p for p in sys.path if p)
    out = run_inside("claude", project, home, f"PYTHONPATH={path} {sys.executable} -c '{code}'")
    assert out.split()[:2] == ["worker", "w1"] and "sandbox marker" in out, out


def test_the_arguments_are_the_same_for_every_runtime_but_its_own_files(tmp_path: Path) -> None:
    """The table test: claude, codex and gemini get the same mounts, apart from each one's declared state,
    settings and credential files (SANDBOX_STATE, SANDBOX_READONLY, SANDBOX_CREDENTIALS)."""
    project, home = make_project(tmp_path)
    (home / ".gemini").mkdir(exist_ok=True)
    (home / ".gemini" / "oauth_creds.json").write_text("{}")
    (home / ".claude.json").write_text("{}")
    env = {"PATH": os.environ["PATH"]}
    own = {
        "claude": {str(home / ".claude"), str(home / ".claude.json"), str(home / ".claude" / ".credentials.json"),
                   str(home / ".claude" / "settings.json")},
        "codex": {str(home / ".codex"), str(home / ".codex" / "auth.json")},
        "gemini": {str(home / ".gemini"), str(home / ".gemini" / "oauth_creds.json")},
    }  # fmt: skip

    def mounts(runtime: str) -> list[tuple[str, ...]]:
        args = bwrap.arguments("bwrap", runtime=runtime, tree=str(project), cwd=str(project), project=str(project),
                               home=str(home), environ=env, marker_fd=9)  # fmt: skip
        out: list[tuple[str, ...]] = []
        i = 1
        while i < len(args):
            a = args[i]
            n = {"--ro-bind": 2, "--bind": 2, "--dev": 1, "--proc": 1, "--tmpfs": 1, "--remount-ro": 1, "--chdir": 1,
                 "--perms": 1, "--ro-bind-data": 2}.get(a, 0)  # fmt: skip
            out.append((a, *args[i + 1 : i + 1 + n]))
            i += 1 + n
        return out

    every = set(own["claude"] | own["codex"] | own["gemini"])
    # Another runtime's credential file is hidden rather than mounted: the same path, covered by /dev/null.
    seen = {r: [m for m in mounts(r) if not (set(m[1:]) & every)] for r in own}
    assert seen["claude"] == seen["codex"] == seen["gemini"]
    for runtime, files in own.items():
        named = {p for m in mounts(runtime) for p in m[1:]}
        assert files <= named, (runtime, files - named)
    assert ("--unshare-pid",) in seen["claude"] and (
        "--ro-bind",
        str(project / ".cocoplus"),
        str(project / ".cocoplus"),
    ) in seen["claude"]
