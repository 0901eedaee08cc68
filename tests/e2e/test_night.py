"""A scripted night, end to end: four workers of the real Claude Code and Codex CLIs, a Claude Code brain, the
phone channel, and the morning's `cocoplus summary`.

One model stand-in serves every Claude Code run (each worker and the brain, routed by their opening words), one
serves Codex.  Nobody starts a watcher: the first paused worker's runner does (as the principal `watcher`), and
that watcher runs the brain's rounds too.

* w1 (Codex) meets a usage limit: paused with an estimated reset a few seconds away, resumed at the reset by the
  watcher its runner started, and it finishes;
* w2 (Claude Code) loops on one command: the loop guard stops its session alone, the others go on;
* w3 (Claude Code) asks permission: the inbox pushes it to the phone (ntfy's stand-in), a tap approves it, its
  tool runs and it finishes;
* w4 (Claude Code) finishes in a worktree; the brain, woken by its end, merges it (`brain_may_merge`).

Then `cocoplus summary` tells each worker's story, checked field by field.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core import jsonl
from cocoplus.core.paths import Layout
from cocoplus.session import permissions
from cocoplus.supervision import workers
from tests.e2e.conftest import Project, runtime_bin, trust_everywhere
from tests.e2e.test_codex import codex_home
from tests.e2e.test_workers_claude import cli_json, worker
from tests.inbox.test_service import TOPIC, Service, ntfy, start, user_config  # noqa: F401 - fixtures
from tests.supervision.workers_support import stop_workers
from tests.support.model_stubs import AnthropicStub, ResponsesStub, text, tool
from tests.support.ntfy_stub import NtfyStub
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

HOUR = 3600.0
LOOP, ASK, TREE, LIMITED = (
    "LOOP-7c1: list the files.",
    "ASK-2b9: make the file.",
    "TREE-5e3: write notes.",
    ("LIMIT-9d4: write the parser."),
)


def git(p: Project, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=p.project, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip


@pytest.fixture
def night(e2e_project: Project) -> Iterator[Project]:
    p = e2e_project
    (p.project / "shared.txt").write_text("base\n")
    git(p, "add", "shared.txt")
    git(p, "commit", "-q", "-m", "base")
    for runtime in ("claude", "codex"):
        p.cocoplus("install", runtime)
    yield p
    stop_workers(Layout(str(p.root)))


# The night's records, for the recorder (issue: a flight recorder) to read: written by `WRITE_NIGHT_FIXTURE=1`.
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "night"
KEPT = ("session", "sessions", "supervision", "permissions", "cost", "workers", "logs/authority.jsonl")


def keep_the_night(layout: Layout) -> None:
    """The records of the night copied to tests/fixtures/night (logs, records, outputs; not locks or keys), with
    the project's path replaced by `<project>`, when WRITE_NIGHT_FIXTURE=1."""
    import shutil

    if os.environ.get("WRITE_NIGHT_FIXTURE") != "1":
        return
    shutil.rmtree(FIXTURE, ignore_errors=True)
    for rel in KEPT:
        src = Path(layout.root, rel)
        for f in [src] if src.is_file() else sorted(x for x in src.rglob("*") if x.is_file()) if src.exists() else []:
            if f.suffix in (".lock", ".sock") or "worktrees" in f.parts:
                continue
            dst = FIXTURE / f.relative_to(layout.root)
            dst.parent.mkdir(parents=True, exist_ok=True)
            try:
                dst.write_text(scrubbed(f.read_text(encoding="utf-8"), layout))
            except UnicodeDecodeError:
                continue


def scrubbed(text: str, layout: Layout) -> str:
    """`text` with this machine's paths named by what they are (tests/support/recorded_runs.py)."""
    from tests.support.recorded_runs import scrubbed as named

    return named(text, layout)


def wait_or_tell(
    p: Project, env: dict[str, str], ntfy: NtfyStub, wait: Callable[[], Any], extra: Callable[[], str] | None = None
) -> Any:
    """`wait()`, or a failure that shows the workers, the sessions, the requests and the pushes."""
    try:
        return wait()
    except AssertionError:
        shown = [json.dumps(cli_json(p, env, "workers", "list")["workers"], indent=1)[-6000:]]
        shown.append(json.dumps(cli_json(p, env, "sessions", "list")["sessions"], indent=1)[-4000:])
        shown.append(json.dumps(permissions.requests(Layout(str(p.root)), state=None), indent=1)[-3000:])
        shown.append(json.dumps(ntfy.messages(TOPIC), indent=1)[-3000:])
        lay = Layout(str(p.root))
        for path in (lay.rounds, lay.supervisor_log, lay.chat_worker_log):
            shown.append(Path(path).read_text()[-3000:] if Path(path).exists() else f"no {path}")
        if extra is not None:
            shown.append(extra())
        raise AssertionError("\n---\n".join(shown)) from None


def brain(layout: Layout, merged: list[str]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The brain: in its first round after w4 ended, it merges w4; in every other round it notes what it is told."""

    def turn(body: dict[str, Any]) -> dict[str, Any]:
        last = (body.get("messages") or [{}])[-1]
        content = last.get("content")
        if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            return text("BRAIN: merged w4.")

        told = json.dumps(body.get("messages") or [])
        if not merged and ("tree exited" in told or (workers.read(layout, "w4") or {}).get("state") == "exited"):
            merged.append("w4")
            return tool("mcp__cocoplus__merge_worker", worker="w4")
        return text("BRAIN: noted.")

    return turn


def test_a_scripted_night(night: Project, ntfy: NtfyStub, start: Callable[[], Service]) -> None:
    p = night
    layout = Layout(str(p.root))
    claude = runtime_bin("claude")
    asked = p.project / "asked.txt"
    (p.project / "cocoplus.toml").write_text(
        f'[chat]\ncontroller = "cc"\n[accounts.cc]\nkind = "claude"\nbinary = "{claude}"\n'
        "[supervision]\nquiet_window_s = 0.5\nreconcile_s = 1\nbrain_may_merge = true\n"
        "[session]\nloop_guard_repeats = 2\n"
        "[workers]\nmax_parallel = 4\nlimit_retry_s = 5\n"
        "[permissions]\nwait_s = 300\n"
    )
    trust_everywhere(p)
    user_config(ntfy)
    start()
    merged: list[str] = []
    routes: dict[str, Any] = {
        LOOP: [tool("Bash", command="ls") for _ in range(6)] + [text("LOOP done")],
        ASK: [tool("Bash", command=f"touch {asked}"), text("ASK done")],
        TREE: [tool("Write", file_path="notes.txt", content="night notes\n"), text("TREE done")],
        "You are the main brain supervising": brain(layout, merged),
    }
    with (
        AnthropicStub(routes=routes, usage={"input_tokens": 1000, "output_tokens": 200}) as anth,
        ResponsesStub([text("CX-LIMIT-DONE")]) as cx,
    ):
        home = codex_home(p, cx)
        config = (home / "config.toml").read_text()
        (home / "config.toml").write_text(
            config.replace('env_key = "STUB_API_KEY"\n', 'env_key = "STUB_API_KEY"\nstream_max_retries = 0\n'
                           "request_max_retries = 0\n")
        )  # fmt: skip
        path = f"{Path(claude).parent}:{Path(runtime_bin('codex')).parent}:{p.env()['PATH']}"
        env = p.env(
            PATH=path, ANTHROPIC_BASE_URL=anth.url, ANTHROPIC_API_KEY="sk-test-local", CODEX_HOME=str(home),
            STUB_API_KEY="sk-test-local", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1",
            MCP_CONNECTION_NONBLOCKING="false", MCP_TIMEOUT="60000",
        )  # fmt: skip
        cli_json(p, env, "supervision", "enable", "--task-hint", "the night's work")
        cx.limit(HOUR)
        cli_json(p, env, "launch", "codex", LIMITED, "--alias", "limited")
        cli_json(p, env, "launch", "claude", LOOP, "--alias", "looper")
        cli_json(p, env, "launch", "claude", ASK, "--alias", "asker")
        cli_json(p, env, "launch", "claude", TREE, "--alias", "tree", "--worktree", "--allow", "Write")

        # w1: paused by the limit; its runner started the watcher that will resume it. The stand-in lifts the
        # limit before the estimated reset.
        w1 = wait_until(lambda: (w := worker(p, env, "w1"))["state"] == "exited" and w.get("paused") and w, timeout=180)
        assert "resets" in w1["paused"] and "(estimate)" in w1["paused"], w1
        cx.lift()
        # w3 asks; the push reaches the phone; a tap approves; its tool runs.
        push = wait_or_tell(
            p,
            env,
            ntfy,
            lambda: wait_until(
                lambda: next(
                    (
                        m
                        for m in ntfy.messages(TOPIC)
                        if ": permission p_" in str(m.get("title")) and "Approve" in json.dumps(m.get("actions"))
                    ),
                    None,
                ),
                timeout=180,
            ),
        )
        status, _ = ntfy.tap(push, "Approve")
        assert status == 200
        # Everyone ends: w2 by the loop guard (its session alone), the others on their own.
        done = {
            wid: wait_until(lambda wid=wid: (w := worker(p, env, wid))["state"] in ("exited", "failed") and not
                            w.get("paused") and w, timeout=240)
            for wid in ("w1", "w2", "w3", "w4")
        }  # fmt: skip
        wait_or_tell(
            p,
            env,
            ntfy,
            lambda: wait_until(
                lambda: merged and (worker(p, env, "w4").get("worktree") or {}).get("merged"), timeout=180
            ),
        )
        rep = cli_json(p, env, "summary", "--since", "1h")
        stops = [s for s in jsonl.read_jsonl(layout.steps).records if s.get("event") == "loop_guard_stop"]

    assert asked.exists(), "the approved tool did not run"
    assert done["w1"]["runs"] == 2 and done["w1"]["exit"]["code"] == 0, done["w1"]
    assert "CX-LIMIT-DONE" in Path(layout.worker_log("w1")).read_text()
    assert not layout.agent_stop or not Path(layout.agent_stop).exists()  # the loop stopped no one but itself
    assert stops and {s.get("alias") for s in stops} == {"looper"}, stops  # its session alone
    decided = permissions.requests(layout, state=None)
    assert [(r["state"], r["channel"]) for r in decided] == [("allowed", "phone:ntfy")], decided
    assert (p.project / "notes.txt").read_text() == "night notes\n"  # merged from w4's branch

    stories = {s["worker"]: s for s in rep["workers"]}
    assert set(stories) == {"w1", "w2", "w3", "w4"}
    asked_of = {"w1": LIMITED, "w2": LOOP, "w3": ASK, "w4": TREE}
    for wid, story in stories.items():
        assert story["asked"] == asked_of[wid] and story["waiting"] == [], story
    assert stories["w1"]["runtime"] == "codex" and stories["w1"]["ended"].startswith("exited"), stories["w1"]
    assert "loop" in stories["w2"]["ended"], stories["w2"]
    assert stories["w2"]["tool_calls"] >= 2 and stories["w3"]["tool_calls"] == 1
    assert all(stories[w]["cost_usd"] > 0 for w in ("w2", "w3", "w4")), stories
    keep_the_night(layout)
    tree = stories["w4"]["changed"]
    assert tree["where"] == "branch cocoplus/tree" and tree["merged"] is True and "1 file changed" in tree["stat"]
    assert stories["w3"]["changed"]["where"] == "the project itself"
    assert rep["spent_usd"] >= sum(stories[w]["cost_usd"] for w in stories) - 1e-9
