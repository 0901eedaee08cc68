"""Two clones of one repository by two users of this machine: the first installs cocoplus for Claude Code and
commits what `install` says to commit; the second pulls, installs cocoplus for themself, runs `cocoplus install
claude`, and the real Claude Code CLI in the second clone obeys `session stop` there.  No committed file names a
path under either user's home or either clone."""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import PASSWD_ENV, passwd_env
from tests.hardening.support import second_user
from tests.support.model_stubs import AnthropicStub, text, tool
from tests.support.runtimes import runtime_bin

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parent.parent.parent
GIT_ENV = {
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "safe.directory",
    "GIT_CONFIG_VALUE_0": "*",
    "GIT_AUTHOR_NAME": "a",
    "GIT_AUTHOR_EMAIL": "a@example.invalid",
    "GIT_COMMITTER_NAME": "a",
    "GIT_COMMITTER_EMAIL": "a@example.invalid",
}


def run(
    argv: list[str], cwd: Path, env: dict[str, str], user: str | None = None, **kw: object
) -> subprocess.CompletedProcess[str]:
    if user is not None:
        argv = ["runuser", "-u", user, "--", "env", "-i", *(f"{k}={v}" for k, v in env.items()), *argv]
        # The second user is real: the system's password database, not this test's (tests/conftest.py).
        env = {k: v for k, v in os.environ.items() if k not in PASSWD_ENV}
    r = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL, **kw
    )  # type: ignore[call-overload]
    assert r.returncode == 0, f"{argv[-3:]}: {r.stdout[-2000:]} {r.stderr[-2000:]}"
    return r


def test_a_teammate_pulls_installs_and_their_claude_obeys_a_stop(tmp_path: Path) -> None:
    with second_user() as bob:
        base = Path(tempfile.mkdtemp(prefix="cocoplus-team-", dir="/var/tmp"))
        try:
            base.chmod(0o755)
            team_clones(base, bob.pw_name, bob.pw_uid, bob.pw_gid)
        finally:
            shutil.rmtree(base, ignore_errors=True)


def team_clones(base: Path, bob: str, uid: int, gid: int) -> None:
    alice_home, bob_home = base / "alice", base / "bob"
    alice_home.mkdir(mode=0o755)
    bob_home.mkdir(mode=0o755)
    os.chown(bob_home, uid, gid)
    # The shared origin belongs to alice: bob's git must be told it may read it (as a team's server would not need).
    (bob_home / ".gitconfig").write_text("[safe]\n\tdirectory = *\n")
    os.chown(bob_home / ".gitconfig", uid, gid)
    keep = {k: v for k, v in os.environ.items() if k.startswith("PIP_") or k in ("LANG", "SSL_CERT_FILE")}
    # cocoplus finds a user's home in the password database: alice's (this process's user) names alice_home
    # through the test's nss_wrapper (tests/conftest.py); bob's real entry is set to bob_home.
    alice_db = base / "alice.passwd"
    me = list(pwd.getpwuid(os.getuid()))
    me[5] = str(alice_home)
    alice_db.write_text(":".join(str(f) for f in me) + "\n")
    alice_nss = {**passwd_env(), "NSS_WRAPPER_PASSWD": str(alice_db)}
    system = {k: v for k, v in os.environ.items() if k not in PASSWD_ENV}
    subprocess.run(["usermod", "--home", str(bob_home), bob], check=True, capture_output=True, env=system)
    alice = {**keep, **GIT_ENV, **alice_nss, "HOME": str(alice_home), "PATH": os.environ["PATH"]}
    origin = base / "origin.git"
    run(["git", "init", "-q", "--bare", str(origin)], base, alice)

    # Alice: clone, install for Claude Code, commit exactly what install says to commit, push.
    run(["git", "clone", "-q", str(origin), "alice-repo"], alice_home, alice)
    repo1 = alice_home / "alice-repo"
    (repo1 / "README.md").write_text("team project\n")
    run([sys.executable, "-m", "cocoplus", "init"], repo1, alice)
    out = run([sys.executable, "-m", "cocoplus", "install", "claude"], repo1, alice).stdout
    commit = re.search(r"^commit \(the same for everyone\): (.+)$", out, re.M)
    assert commit and "do not commit (yours, with paths on this machine): .claude/settings.local.json" in out, out
    files = ["README.md", *commit.group(1).split(", ")]
    run(["git", "add", *files], repo1, alice)
    run(["git", "commit", "-qm", "cocoplus"], repo1, alice)
    run(["git", "push", "-q", "origin", "HEAD:main"], repo1, alice)

    # Bob: his own cocoplus (a venv of his, from the wheel), his own clone, `cocoplus install claude` there.
    dist = base / "dist"
    dist.mkdir(mode=0o755)
    run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist), str(ROOT)],
        base,
        alice,
    )
    wheel = next(dist.glob("cocoplus-*.whl"))
    bob_env = {**keep, **GIT_ENV, "HOME": str(bob_home), "PATH": f"{bob_home}/venv/bin:/usr/bin:/bin"}
    run(["/usr/bin/python3", "-m", "venv", str(bob_home / "venv")], bob_home, bob_env, user=bob)
    run([str(bob_home / "venv" / "bin" / "pip"), "install", "-q", str(wheel)], bob_home, bob_env, user=bob)
    run(["git", "clone", "-q", "-b", "main", str(origin), "bob-repo"], bob_home, bob_env, user=bob)
    repo2 = bob_home / "bob-repo"
    run(["cocoplus", "init"], repo2, bob_env, user=bob)
    run(["cocoplus", "install", "claude"], repo2, bob_env, user=bob)
    assert str(bob_home / "venv") in (repo2 / ".claude" / "settings.local.json").read_text()
    status = run(["git", "status", "--porcelain", "--untracked-files=all"], repo2, bob_env, user=bob).stdout
    # Only the handoff, which a team may choose to commit, is offered to git: no state, no per-user file.
    handoff = {
        ".cocoplus/README.md",
        ".cocoplus/session/CONTEXT.md",
        ".cocoplus/session/PROGRESS.md",
        ".cocoplus/session/handoff-stamp.json",
        ".cocoplus/session/task-queue.jsonl",
    }
    offered = {line[3:] for line in status.splitlines()}
    assert offered <= handoff, offered - handoff

    # No committed file names either home or either clone (or an interpreter).
    tracked = run(["git", "ls-files"], repo2, bob_env, user=bob).stdout.split()
    assert set(tracked) >= {".mcp.json", ".claude/commands/supervise.md", ".cocoplus/.gitignore"}, tracked
    for rel in tracked:
        text_ = (repo2 / rel).read_text()
        for bad in (str(alice_home), str(bob_home), str(base), sys.executable, "/usr/bin/python3"):
            assert bad not in text_, f"{rel} names {bad}"

    # Bob stops the agent in his clone; the real Claude Code there obeys.
    run(["cocoplus", "session", "stop", "--reason", "bob's freeze", "--operator", "bob"], repo2, bob_env, user=bob)
    side_effect = repo2 / "side_effect.txt"
    with AnthropicStub([tool("Bash", command=f"touch {side_effect}", description="x"), text("done")]) as stub:
        env = {
            **bob_env,
            "ANTHROPIC_BASE_URL": stub.url,
            "ANTHROPIC_API_KEY": "sk-test-local",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
        }
        r = run(
            [bobs_claude(base), "-p", "Go.", "--output-format", "json", "--allowedTools", "Bash"], repo2, env, user=bob
        )
    result = json.loads(r.stdout)
    assert not side_effect.exists(), "Claude Code in the second clone ran Bash although AGENT_STOP exists there"
    assert [d["tool_name"] for d in result.get("permission_denials", [])] == ["Bash"], result
    assert not (repo1 / ".cocoplus" / "AGENT_STOP").exists(), "a stop in one clone is that clone's alone"


def bobs_claude(base: Path) -> str:
    """The pinned Claude Code binary where the second user can reach it: the test's own copy may sit under a
    directory only its owner can search (a clone made in a private temporary directory)."""
    src = os.path.realpath(runtime_bin("claude"))
    dst = base / "claude"
    if not dst.exists():
        try:
            os.link(src, dst)
        except OSError:  # another file system
            shutil.copy2(src, dst)
        dst.chmod(0o755)
    return str(dst)
