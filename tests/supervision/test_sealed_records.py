"""Sealed records: cocoplus runs a recorded command only from a record it sealed for this user, project and record.

With real processes: a stand-in runtime started like the real CLIs (a node
script) runs the real SessionStart hook, which records and seals its
command line; `cocoplus dispatch` resumes it from that record.  A copy of
the record in another project, the record with its argv changed, a record
sealed under another user's key, and a record a cloned repository brought
along (naming a program inside the repository) are never run: a program
each would start leaves a marker file, which does not appear, and the
dispatch is queued with the reason.  The same for a managed worker's
command and its runner.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cocoplus.core import fsio, seal, userfiles
from cocoplus.core.paths import Layout
from cocoplus.core.shapes import SessionRecord
from cocoplus.session import procinfo, registry, steering
from cocoplus.supervision import workers
from tests.conftest import Result, passwd_env_for, run_cli_subprocess
from tests.hook.helpers import hook_argv, hook_env
from tests.support.waiting import wait_until
from tests.support.wired import hooks_installed
from tests.trust.conftest import git

NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="the stand-in runtime is a node script, as the real CLIs are")

# A stand-in for the claude CLI, run by node as the real one is.  Started, it runs the SessionStart hook
# (through `sh -c`, as Claude Code does) with its session's payload and ends; resumed (`--resume`), it
# records how it was started beside itself and ends.
RUNTIME = r"""#!/usr/bin/env node
const fs = require("fs"), path = require("path"), cp = require("child_process");
if (process.argv.includes("--resume")) {
  const out = path.join(__dirname, "resumed.json");
  fs.writeFileSync(out + ".part", JSON.stringify({argv: process.argv, cwd: process.cwd()}));
  fs.renameSync(out + ".part", out);
  process.exit(0);
}
const r = cp.spawnSync("sh", ["-c", process.env.STANDIN_HOOK],
                       {input: process.env.STANDIN_PAYLOAD, stdio: ["pipe", "inherit", "inherit"]});
process.exit(r.status === null ? 1 : r.status);
"""

# A program inside a repository: it leaves a marker in the repository's root when anything runs it.
REPO_PROGRAM = """#!/bin/sh
here=$(cd "$(dirname "$0")/.." && pwd)
echo "$*" >> "$here/AGENT_RAN"
"""

RID = "rid-seal-1"
CS = registry.cs_id_for(RID)


class Runtime:
    """The stand-in runtime, in a directory of its own outside every project."""

    def __init__(self, where: Path) -> None:
        where.mkdir(exist_ok=True)
        self.dir = where
        self.script = where / "fake-claude.js"
        self.script.write_text(RUNTIME)
        self.script.chmod(0o755)
        self.resumed = where / "resumed.json"

    def start(
        self, layout: Layout, rid: str = RID, *, script: str | None = None, cwd: Path | None = None
    ) -> SessionRecord:
        """Start a session as Claude Code would (its SessionStart hook runs); return the record the hook wrote."""
        transcript = self.dir / f"{rid}.jsonl"
        transcript.write_text("{}\n")
        payload = {
            "session_id": rid,
            "transcript_path": str(transcript),
            "cwd": layout.project,
            "hook_event_name": "SessionStart",
            "source": "startup",
        }
        env = hook_env(
            layout, STANDIN_HOOK=shlex.join(hook_argv("SessionStart", "claude")), STANDIN_PAYLOAD=json.dumps(payload)
        )
        argv = [
            str(NODE),
            script or str(self.script),
            "--dangerously-skip-permissions",
            "-p",
            "the first task",
            "--model",
            "sonnet",
        ]
        r = subprocess.run(argv, cwd=str(cwd or layout.project), env=env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        rec = registry.read_record(layout, registry.cs_id_for(rid))
        assert rec is not None and rec["process"]["argv"] is not None, rec
        return rec


def cli(layout: Layout, *argv: str) -> Result:
    return run_cli_subprocess(*argv, cwd=layout.project)


def dispatch(layout: Layout, ref: str = CS, text: str = "rebase on main") -> dict[str, Any]:
    r = cli(layout, "dispatch", ref, text, "--json")
    assert r.code == 0, r.err
    doc: dict[str, Any] = json.loads(r.out)
    return doc


def other_users_seal(tmp_path: Path, fields: list[Any]) -> str:
    """The seal another user (another key, in another home) makes over exactly `fields`."""
    other = tmp_path / "other-user-home"
    code = "import json, sys; from cocoplus.core import seal; print(seal.seal(json.load(sys.stdin)))"
    r = subprocess.run(
        [sys.executable, "-c", code], input=json.dumps(fields), env=dict(os.environ, **passwd_env_for(other)),
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return r.stdout.strip()


def assert_not_run(layout: Layout, doc: dict[str, Any], marker: Path, *why: str) -> None:
    """Dispatch queued the instruction for the next prompt, said why, and started nothing."""
    assert doc["route"] == "queued" and doc["resume"] is None, doc
    assert doc["refused"] and all(w in doc["refused"] for w in why), doc["refused"]
    assert doc["refused"] in doc["why"] and "cocoplus does not run it" in doc["message"], doc
    assert steering.pending_steer(layout, doc["session"]) is not None  # the instruction is kept for its next prompt
    rec = registry.read_record(layout, doc["session"]) or {}
    assert "resumed" not in rec and not os.path.exists(layout.resumes_dir), rec
    assert not marker.exists(), marker.read_text()


# -- a record the real hook sealed ------------------------------------------------------------


@pytest.mark.slow
@needs_node
def test_a_session_the_real_hook_recorded_resumes_from_its_sealed_command_line(project: Layout, tmp_path: Path) -> None:
    rt = Runtime(tmp_path / "runtime")
    rec = rt.start(project)
    proc = rec["process"]
    assert proc["program"] == [str(NODE), str(rt.script)]  # absolute paths, as they were when it started
    assert isinstance(proc["seal"], str) and len(proc["seal"]) == 64
    key = Path(userfiles.seal_key_file())
    assert stat.S_IMODE(key.lstat().st_mode) == 0o600 and key.stat().st_size == seal.KEY_BYTES
    assert cli(project, "doctor").err.count("ignored") == 0

    doc = dispatch(project)
    assert doc["route"] == "resume" and doc["refused"] is None, doc
    got = json.loads(wait_until(lambda: rt.resumed.exists() and rt.resumed.read_text()))
    assert got["argv"][:2] == [str(NODE), str(rt.script)] and got["cwd"] == project.project
    assert got["argv"][2:6] == ["-p", doc["delivered_text"], "--resume", RID]
    # The settings of the recorded command line are kept, the recorded prompt is not.
    assert "--dangerously-skip-permissions" in got["argv"] and got["argv"][got["argv"].index("--model") + 1] == "sonnet"
    assert "the first task" not in got["argv"]


@pytest.mark.slow
@needs_node
def test_a_program_named_relatively_is_resolved_when_it_is_recorded_not_from_the_project(
    project: Layout, tmp_path: Path
) -> None:
    rt = Runtime(tmp_path / "runtime")
    # The runtime was started from its own directory as `node fake-claude.js`: that is where its script is.
    rec = rt.start(project, script="fake-claude.js", cwd=rt.dir)
    assert rec["process"]["argv"][1] == "fake-claude.js" and rec["process"]["program"] == [str(NODE), str(rt.script)]
    # A file of the same name in the project is not what runs.
    decoy = Path(project.project) / "fake-claude.js"
    decoy.write_text('require("fs").writeFileSync(__dirname + "/DECOY_RAN", "x");\n')
    assert dispatch(project)["route"] == "resume"
    wait_until(rt.resumed.exists)
    assert not (Path(project.project) / "DECOY_RAN").exists()


def test_a_bare_command_is_found_in_absolute_path_directories_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = tmp_path / "here"
    here.mkdir()
    (here / "claude").write_text("#!/bin/sh\n")
    (here / "claude").chmod(0o755)
    monkeypatch.chdir(here)
    assert procinfo.find_program("claude", f".{os.pathsep}{os.pathsep}bin") is None  # ".", "" and "bin" are skipped
    assert procinfo.find_program("claude", f".{os.pathsep}{here}") == str(here / "claude")


# -- records that are not run -------------------------------------------------------------------


@pytest.mark.slow
@needs_node
def test_a_copy_of_a_sealed_record_in_another_project_is_refused(
    project: Layout, tmp_path: Path, cli_subprocess: Any
) -> None:
    rt = Runtime(tmp_path / "runtime")
    rt.start(project)
    other_dir = tmp_path / "other"
    other_dir.mkdir()
    assert cli_subprocess("init", cwd=other_dir).code == 0
    other = Layout(str(other_dir / ".cocoplus"))
    fsio.ensure_dir(other.sessions_dir)
    shutil.copyfile(project.session_record(CS), other.session_record(CS))
    doc = dispatch(other)
    assert_not_run(other, doc, rt.resumed, "has a seal that does not hold", "another record or project")
    # In its own project the same record still resumes: the copy, not the record, is refused.
    assert dispatch(project)["route"] == "resume"
    wait_until(rt.resumed.exists)


@pytest.mark.slow
@needs_node
@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda p: p["argv"].append("--dangerously-skip-permissions"), id="a flag added to the argv"),
        pytest.param(
            lambda p: p["argv"].__setitem__(4, "--permission-mode=bypassPermissions"), id="an argument changed"
        ),
        pytest.param(lambda p: p.__setitem__("program", ["/bin/sh", p["program"][1]]), id="another program"),
        pytest.param(lambda p: p.pop("seal"), id="the seal removed"),
    ],
)
def test_a_sealed_record_changed_since_is_refused(project: Layout, tmp_path: Path, change: Any) -> None:
    rt = Runtime(tmp_path / "runtime")
    rt.start(project)
    path = Path(project.session_record(CS))
    rec = json.loads(path.read_text())
    change(rec["process"])
    path.write_text(json.dumps(rec))
    doc = dispatch(project)
    assert_not_run(project, doc, rt.resumed, "seal")


@needs_node
def test_the_runtime_session_and_the_record_are_sealed_too(project: Layout, tmp_path: Path) -> None:
    """The seal cannot be moved to a record for another runtime session (its id is an argument of the resume)."""
    rt = Runtime(tmp_path / "runtime")
    rt.start(project)
    path = Path(project.session_record(CS))
    rec = json.loads(path.read_text())
    rec["runtime_session_id"] = "--dangerously-skip-permissions"
    path.write_text(json.dumps(rec))
    assert_not_run(project, dispatch(project), rt.resumed, "has a seal that does not hold")


def committed_session(project: Path, argv: list[str], process: dict[str, Any]) -> dict[str, Any]:
    transcript = project / "transcript.jsonl"  # written in the clone: a transcript to resume from is there
    return {
        "schema_version": 1, "id": CS, "runtime": "claude", "runtime_session_id": RID, "alias": "cc1",
        "state": "exited", "attention": None, "started_at": "2026-01-01T00:00:00Z", "transcript_path": str(transcript),
        "process": {"pid": 999_999_999, "start_ticks": None, "argv": argv, **process},
    }  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("forged", ["no seal", "a made-up seal", "another user's seal"])
def test_a_cloned_repository_with_a_committed_session_record_runs_nothing(
    tmp_path: Path, cli_subprocess: Any, forged: str
) -> None:
    origin, clone = tmp_path / "origin", tmp_path / "clone"
    (origin / "tools").mkdir(parents=True)
    (origin / "tools" / "agent").write_text(REPO_PROGRAM)
    (origin / "tools" / "agent").chmod(0o755)
    argv = ["tools/agent", "--dangerously-skip-permissions", "-p", "x"]  # a program in the repo, by a relative name
    process: dict[str, Any] = {}
    if forged == "a made-up seal":
        process = {"program": [str(clone / "tools" / "agent")], "seal": "ab" * 32}
    elif forged == "another user's seal":
        program = [str(clone / "tools" / "agent")]
        fields = seal.session_fields(CS, "claude", RID, str(clone), program, argv)
        process = {"program": program, "seal": other_users_seal(tmp_path, fields)}
    record = committed_session(clone, argv, process)
    sessions = origin / ".cocoplus" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / f"{CS}.json").write_text(json.dumps(record))
    git("init", "-q", "-b", "main", cwd=origin)
    git("add", "-A", "-f", cwd=origin)
    git("commit", "-q", "-m", "a project that carries a session record", cwd=origin)
    git("clone", "-q", str(origin), str(clone), cwd=tmp_path)
    (clone / "transcript.jsonl").write_text("{}\n")
    layout = Layout(str(clone / ".cocoplus"))
    marker = clone / "AGENT_RAN"

    r = cli_subprocess("init", cwd=clone)
    assert r.code == 0, r.err
    said = [line for line in r.err.splitlines() if f"sessions/{CS}.json" in line]
    assert len(said) == 1 and said[0].startswith("cocoplus: note: ") and "ignored" in said[0] and "seal" in said[0], (
        r.err
    )
    r = cli_subprocess("doctor", cwd=clone)
    said = [line for line in r.err.splitlines() if f"sessions/{CS}.json" in line]
    assert len(said) == 1 and "ignored" in said[0] and "cocoplus dispatch" in said[0], r.err
    assert json.loads(cli_subprocess("doctor", "--json", cwd=clone).out)["ignored"] == [
        said[0].removeprefix("cocoplus: note: ")
    ]

    doc = dispatch(layout, CS)
    expected = {
        "no seal": "carries no seal",
        "a made-up seal": "has no seal key",  # nothing was ever sealed by this user: there is no key to check with
        "another user's seal": "has no seal key",
    }[forged]
    assert_not_run(layout, doc, marker, expected)
    assert not os.path.exists(userfiles.seal_key_file())  # checking made no key

    # Once this user has a key (anything sealed here), a foreign seal is refused for not holding.
    seal.seal(["anything"])
    doc = dispatch(layout, CS)
    assert_not_run(layout, doc, marker, "carries no seal" if forged == "no seal" else "has a seal that does not hold")


# -- the key -------------------------------------------------------------------------------------


def test_the_key_is_made_once_0600_even_when_first_uses_race(tmp_path: Path) -> None:
    code = "from cocoplus.core import seal; print(seal.key(create=True).hex())"
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) for _ in range(8)]
    keys = {p.communicate(timeout=60)[0].strip() for p in procs}
    assert all(p.returncode == 0 for p in procs)
    assert len(keys) == 1 and len(next(iter(keys))) == 2 * seal.KEY_BYTES
    path = Path(userfiles.seal_key_file())
    assert stat.S_IMODE(path.lstat().st_mode) == 0o600 and path.is_file() and not path.is_symlink()
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620, 0o606])
def test_a_key_others_can_read_or_write_is_refused_not_repaired(mode: int) -> None:
    seal.key(create=True)
    path = Path(userfiles.seal_key_file())
    path.chmod(mode)
    with pytest.raises(seal.KeyUnusable, match=f"can be read or written by others \\(mode {mode:o}\\)"):
        seal.seal(["x"])
    assert seal.check(["x"], "00" * 32) is not None and "can be read or written by others" in str(
        seal.check(["x"], "00" * 32)
    )
    assert stat.S_IMODE(path.stat().st_mode) == mode  # left as it is, for the user to see


def test_a_key_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.key"
    target.write_bytes(os.urandom(seal.KEY_BYTES))
    target.chmod(0o600)
    path = Path(userfiles.seal_key_file())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)
    with pytest.raises(seal.KeyUnusable, match="is a symbolic link"):
        seal.seal(["x"])


def test_a_damaged_key_is_refused() -> None:
    path = Path(userfiles.seal_key_file())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"short")
    path.chmod(0o600)
    with pytest.raises(seal.KeyUnusable, match="is damaged"):
        seal.key()


@pytest.mark.slow
@needs_node
def test_a_session_start_whose_key_cannot_be_used_records_no_seal_and_says_so(project: Layout, tmp_path: Path) -> None:
    seal.key(create=True)
    Path(userfiles.seal_key_file()).chmod(0o644)
    rt = Runtime(tmp_path / "runtime")
    rec = rt.start(project)
    assert rec["process"]["seal"] is None and rec["process"]["argv"]
    assert "not sealed: the seal key" in Path(project.hook_log).read_text()
    assert_not_run(project, dispatch(project), rt.resumed, "can be read or written by others")


@given(secret=st.binary(max_size=200), message=st.binary(max_size=500))
def test_the_hmac_written_out_is_hmac_sha256(secret: bytes, message: bytes) -> None:
    import hmac

    assert seal.hmac_sha256(secret, message) == hmac.new(secret, message, "sha256").hexdigest()


@given(
    a=st.lists(st.one_of(st.none(), st.text(), st.lists(st.text(), max_size=4)), max_size=6),
    b=st.lists(st.one_of(st.none(), st.text(), st.lists(st.text(), max_size=4)), max_size=6),
)
def test_the_encoding_tells_every_two_field_lists_apart(a: list[Any], b: list[Any]) -> None:
    assert (seal.encode(a) == seal.encode(b)) == (a == b)


# -- a managed worker's command -------------------------------------------------------------------


def queued_worker(layout: Layout, wid: str, command: list[str], seal_value: str | None, here: bool = False) -> None:
    """A queued worker's record with `seal_value` as its seal (`here`: sealed as cocoplus seals it, over its command
    and its grants)."""
    rec = {
        "schema_version": 1, "id": wid, "runtime": "claude", "task": "t", "state": "queued", "command": command,
        "runs": 0, "created_at": "2026-01-01T00:00:00Z", "headless": True, "allow": [], "seal": seal_value,
    }  # fmt: skip
    if here:
        rec["seal"] = seal.seal_worker(rec, layout.project, wid)
    fsio.ensure_dir(layout.worker_dir(wid))
    fsio.atomic_write_json(layout.worker_record(wid), rec)


@pytest.mark.parametrize("forged", ["no seal", "another user's seal", "a sealed command changed since"])
def test_a_worker_record_whose_command_is_not_sealed_here_is_never_started(
    project: Layout, tmp_path: Path, forged: str
) -> None:
    program = Path(project.project) / "tools" / "agent"
    program.parent.mkdir()
    program.write_text(REPO_PROGRAM)
    program.chmod(0o755)
    command = [str(program), "-p", "task"]
    if forged == "no seal":
        value = None
    elif forged == "another user's seal":
        value = other_users_seal(tmp_path, seal.worker_fields("w1", project.project, command))
    else:
        value = seal.seal(seal.worker_fields("w1", project.project, [str(program), "-p", "another task"]))
    queued_worker(project, "w1", command, value)
    child = workers.start_runner(project, "w1", dict(os.environ))
    assert child.wait(timeout=60) == 1
    rec = workers.read(project, "w1") or {}
    assert rec["state"] == "failed" and "not started: its command" in rec["reason"] and "seal" in rec["reason"], rec
    assert not (Path(project.project) / "AGENT_RAN").exists()
    said = [line for line in cli(project, "doctor").err.splitlines() if "workers/w1/worker.json" in line]
    assert len(said) == 1 and "ignored: its command" in said[0], said

    # The same command sealed here, for this worker and project, runs.
    queued_worker(project, "w1", command, None, here=True)
    child = workers.start_runner(project, "w1", dict(os.environ))
    assert child.wait(timeout=60) == 0, Path(project.worker_runner_log("w1")).read_text()
    assert (Path(project.project) / "AGENT_RAN").read_text() == "-p task\n"


def test_a_launch_with_a_key_others_can_read_fails_before_anything_is_written(project: Layout) -> None:
    hooks_installed(project)
    seal.key(create=True)
    Path(userfiles.seal_key_file()).chmod(0o644)
    with pytest.raises(seal.KeyUnusable, match="can be read or written by others"):
        workers.launch(project, "claude", "port the parser tests", by="tester")
    assert workers.ids(project) == []
