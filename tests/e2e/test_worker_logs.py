"""`cocoplus workers logs` reads each runtime's own stream as a transcript, with the real CLIs.

For each runtime `cocoplus launch` supports (Claude Code's `-p --output-format
stream-json`, Codex's `exec --json`, Gemini CLI's `-p --output-format
stream-json`), a worker launched through the CLI against its scripted model
runs a shell command that fails, one that succeeds, and answers; then
`workers logs` shows the answer, each tool call and its result on a line,
the failed one marked, and how the run ended; `--raw` gives the stream
itself and `--json` the same entries as data.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from tests.e2e.conftest import Project, cocoplus, runtime_bin
from tests.e2e.test_codex import codex_home
from tests.e2e.test_gemini import MODEL
from tests.supervision.workers_support import stop_workers
from tests.support.model_stubs import AnthropicStub, GeminiStub, ResponsesStub, text, tool
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e

# A command that fails inside the project (Claude Code itself blocks a read outside its working directories when no
# allow rule is passed on to it: cocoplus's rules decide at its permission event, docs/runtimes.md).
FAILING = "echo LOGS-7f3a; ls nonexistent-logs-dir"
PASSING = "printf 'one\\ntwo\\nthree\\n'"
ANSWER = "LOGS-DONE-51c9: both commands ran."


def claude_env(p: Project, stub: Any, path: str) -> dict[str, str]:
    return p.env(
        PATH=path,
        ANTHROPIC_BASE_URL=stub.url,
        ANTHROPIC_API_KEY="sk-test-local",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
    )


def codex_env(p: Project, stub: Any, path: str) -> dict[str, str]:
    return p.env(PATH=path, CODEX_HOME=str(codex_home(p, stub)), STUB_API_KEY="sk-test-local")


def gemini_env(p: Project, stub: Any, path: str) -> dict[str, str]:
    settings = p.home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(
        json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}}})
    )
    return p.env(
        PATH=path, GOOGLE_GEMINI_BASE_URL=stub.url, GEMINI_API_KEY="test-key-local", GEMINI_CLI_NO_RELAUNCH="true"
    )


# Each runtime: its scripted stand-in, the environment a worker inherits from `cocoplus launch` (its CLI on PATH,
# pointed at the stand-in), launch options (a model: no routing call), and how the transcript names the failed call
# and the shell.  Gemini CLI reports a shell command that exits non-zero as a tool call that succeeded (its output
# says what went wrong), so its failed call is a file that is not there, which it reports as failed.
Runtime = tuple[Callable[[], Any], Callable[[Project, Any, str], dict[str, str]], list[str], str, str, str]
RUNTIMES: dict[str, Runtime] = {
    "claude": (
        lambda: AnthropicStub([
            tool("Bash", command=FAILING, description="x"),
            tool("Bash", command=PASSING, description="y"),
            text(ANSWER),
        ]),
        claude_env, [], r"Bash: .*ls nonexistent-logs-dir", "No such file or directory", "Bash",
    ),
    "codex": (
        lambda: ResponsesStub([tool("exec_command", cmd=FAILING), tool("exec_command", cmd=PASSING), text(ANSWER)]),
        codex_env, [], r"shell: .*ls nonexistent-logs-dir", "No such file or directory", "shell",
    ),
    "gemini": (
        lambda: GeminiStub([
            tool("read_file", file_path="missing-LOGS-7f3a.txt"),
            tool("run_shell_command", command=PASSING),
            text(ANSWER),
        ]),
        gemini_env, ["--model", MODEL], r"read_file: missing-LOGS-7f3a\.txt", "File not found", "run_shell_command",
    ),
}  # fmt: skip


@pytest.fixture
def proj(e2e_project: Project) -> Iterator[Project]:
    yield e2e_project
    stop_workers(Layout(str(e2e_project.root)))


@pytest.mark.parametrize("runtime", list(RUNTIMES))
def test_workers_logs_is_a_transcript_of_each_runtimes_stream(proj: Project, runtime: str) -> None:
    p = proj
    make_stub, make_env, options, failing_call, why, shell = RUNTIMES[runtime]
    p.cocoplus("install", runtime)  # `launch` refuses a runtime that would run no cocoplus hook
    with make_stub() as stub:
        env = make_env(p, stub, f"{os.path.dirname(runtime_bin(runtime))}{os.pathsep}{os.environ['PATH']}")
        launched = json.loads(
            cocoplus(
                p.project, "launch", runtime, "Run the two commands.", "--allow", "Bash", *options, "--json", env=env
            ).stdout
        )
        wid = launched["id"]

        def ended() -> dict[str, Any] | None:
            listing = json.loads(cocoplus(p.project, "workers", "list", "--json", env=env).stdout)
            w = next(w for w in listing["workers"] if w["id"] == wid)
            return w if w["state"] not in ("queued", "running") else None

        w = wait_until(ended, timeout=180)
        raw = cocoplus(p.project, "workers", "logs", wid, "--raw", env=env).stdout
        assert w["state"] == "exited" and w["exit"]["code"] == 0, (w, raw[-3000:])
    shown = cocoplus(p.project, "workers", "logs", wid, env=env).stdout
    lines = shown.splitlines()

    def one(pattern: str) -> str:
        found = [ln for ln in lines if re.search(pattern, ln)]
        assert len(found) == 1, f"{pattern!r} in:\n{shown}"
        return found[0]

    # Each tool call on a line, and its result on the next line of its own, the failed one marked.
    call = one(rf"^tool +{failing_call}")
    failed = lines[lines.index(call) + 1]
    assert re.match(rf"^result +{re.escape(call.split()[1])} ERROR ", failed) and why in failed, shown
    ok = one(rf"^result +{shell}: one ↵ two ↵ three$")
    assert lines[lines.index(ok) - 1].startswith("tool") and "printf" in lines[lines.index(ok) - 1]
    assert lines.index(failed) < lines.index(ok) < lines.index(one(rf"^assistant +{re.escape(ANSWER)}$"))
    assert re.search(r"^end +(finished|turn completed)", shown, re.M) and "FAILED" not in shown
    assert re.search(r"^cocoplus +\S+ run 1: ", shown, re.M) and re.search(
        r"^cocoplus +\S+ run 1 ended: exit code 0", shown, re.M
    )
    assert not re.search(r'^\s*\{"type"', shown, re.M)  # no raw event is shown as it came
    # --raw is the stream itself; the transcript is a fraction of it.
    assert ANSWER in raw and sum(1 for ln in raw.splitlines() if ln.startswith("{")) >= 5
    assert len(shown) < len(raw)
    # --json: the same entries as data, what another program reads.
    got = json.loads(cocoplus(p.project, "workers", "logs", wid, "--json", env=env).stdout)
    kinds = [
        (e["kind"], e.get("tool"), bool(e.get("error")))
        for e in got["entries"]
        if e["kind"] in ("tool", "result", "text")
    ]
    first = call.split()[1].rstrip(":")
    assert kinds == [
        ("tool", first, False),
        ("result", first, True),
        ("tool", shell, False),
        ("result", shell, False),
        ("text", None, False),
    ]
    assert got["runtime"] == runtime and got["worker"] == wid and ANSWER in got["text"]
