"""Dispatch with the real Codex and Gemini CLIs: both routes each, the held turn end and the headless resume.

The test plays the main brain itself: it holds the watcher's lock (a turn
end is held only while a watcher runs), waits until the worker's turn end
is held, dispatches through the CLI, and at the second
held turn end finishes supervision.  Then the run has exited, and a second
dispatch resumes it (`codex exec resume`, `gemini --resume`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from cocoplus.core.lock import Lock
from cocoplus.core.paths import Layout
from cocoplus.session import holds, registry
from cocoplus.supervision import autonomy
from tests.e2e.conftest import Project, cocoplus
from tests.e2e.test_codex import run_codex
from tests.e2e.test_gemini import MODEL, run_gemini
from tests.support.model_stubs import GeminiStub, ResponsesStub, text
from tests.support.waiting import in_thread, wait_until

pytestmark = pytest.mark.e2e


def play_brain(p: Project, alias: str, instruction: str, env: dict[str, str]) -> dict[str, Any]:
    """Wait for the held turn end, dispatch; wait for the next one, finish supervision.

    Returns the dispatch's answer."""
    layout = Layout(str(p.root))
    cs = wait_until(
        lambda: next((r["id"] for r in registry.list_sessions(layout)[0] if r["alias"] == alias), None), timeout=120
    )
    wait_until(lambda: holds.current(layout, cs), timeout=120)
    out = json.loads(cocoplus(p.project, "dispatch", alias, instruction, "--json", env=env).stdout)
    assert out["route"] == "held", out
    wait_until(lambda: len([s for s in p.steps() if s["event"] == "hold_started"]) == 2, timeout=120)
    wait_until(lambda: holds.current(layout, cs), timeout=30)
    cocoplus(p.project, "supervision", "finish", "--summary", "done", env=env)
    return dict(out)


def hold_outcomes(p: Project) -> list[str]:
    return [s["outcome"] for s in p.steps() if s["event"] == "hold_ended"]


# -- Codex ---------------------------------------------------------------------------------------


@pytest.fixture
def codex_project(e2e_project: Project) -> Any:
    e2e_project.cocoplus("install", "codex")
    with Lock(Layout(str(e2e_project.root)).lock("supervisor")):  # the test is the watcher
        yield e2e_project


def test_codex_held_turn_end_then_resume(codex_project: Project) -> None:
    p = codex_project
    layout = Layout(str(p.root))
    autonomy.enable(layout, task_hint="t")
    env = p.env(CODEX_HOME=str(p.home / ".codex"), STUB_API_KEY="sk-test-local")
    with ResponsesStub([text("first part done"), text("HELD-OK"), text("RESUMED-OK")]) as stub:
        t, box = in_thread(run_codex, p, stub, "Start the parser change.", timeout=240)
        dispatched = play_brain(p, "cx1", "CX-HOLD-5a: add the changelog entry", env)
        t.join(240)
        assert "error" not in box, box.get("error")
        events = box["result"]
        said = [
            e["item"]["text"]
            for e in events
            if e.get("type") == "item.completed" and e["item"].get("type") == "agent_message"
        ]
        assert said == ["first part done", "HELD-OK"]  # one `codex exec`, continued in the same turn
        assert "CX-HOLD-5a: add the changelog entry" in json.dumps(stub.loop_requests[1]["input"])
        assert dispatched["hold"] and hold_outcomes(p) == ["decision", "released: supervision is off"]
        thread = next(e["thread_id"] for e in events if e.get("type") == "thread.started")

        # The run has exited: a dispatch resumes it headless, same thread, with the instruction as the prompt.
        out = json.loads(
            cocoplus(p.project, "dispatch", "cx1", "CX-RESUME-9b: now the tests", "--json", env=env).stdout
        )
        assert out["route"] == "resume", out
        cmd = out["resume"]["command"]
        assert cmd[1:5] == ["exec", "resume", thread, out["delivered_text"]] and 'sandbox_mode="workspace-write"' in cmd
        log = p.project / out["resume"]["log"]
        done = wait_until(
            lambda: [
                json.loads(x) for x in log.read_text().splitlines() if x.startswith("{") and "turn.completed" in x
            ],
            timeout=120,
        )
        assert done
        started = [json.loads(x) for x in log.read_text().splitlines() if x.startswith("{") and "thread.started" in x]
        assert started[0]["thread_id"] == thread
        assert "CX-RESUME-9b: now the tests" in json.dumps(stub.loop_requests[-1]["input"])
    assert [s.get("source") for s in p.steps() if s["event"] == "session_start"] == ["startup", "resume"]


# -- Gemini --------------------------------------------------------------------------------------


@pytest.fixture
def gemini_project(e2e_project: Project) -> Iterator[Project]:
    settings = e2e_project.home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(
        json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}}})
    )
    e2e_project.cocoplus("install", "gemini")
    with Lock(Layout(str(e2e_project.root)).lock("supervisor")):  # the test is the watcher
        yield e2e_project


def test_gemini_held_turn_end_then_resume(gemini_project: Project) -> None:
    p = gemini_project
    layout = Layout(str(p.root))
    autonomy.enable(layout, task_hint="t")
    with GeminiStub([text("first part done"), text("HELD-OK"), text("RESUMED-OK")]) as stub:
        env = p.env(GOOGLE_GEMINI_BASE_URL=stub.url, GEMINI_API_KEY="test-key-local", GEMINI_CLI_NO_RELAUNCH="true")
        t, box = in_thread(run_gemini, p, stub, "Start the parser change.", timeout=240)
        dispatched = play_brain(p, "gm1", "GM-HOLD-3c: add the changelog entry", env)
        t.join(240)
        assert "error" not in box, box.get("error")
        result, _stderr = box["result"]
        assert "HELD-OK" in result["response"]  # one `gemini -p`: the answers of both turns in its one result
        assert "GM-HOLD-3c: add the changelog entry" in json.dumps(stub.loop_requests[1])
        assert dispatched["hold"] and hold_outcomes(p) == ["decision", "released: supervision is off"]
        sid = result["session_id"]

        out = json.loads(
            cocoplus(p.project, "dispatch", "gm1", "GM-RESUME-8d: now the tests", "--json", env=env).stdout
        )
        assert out["route"] == "resume", out
        cmd = out["resume"]["command"]
        assert cmd[2:6] == ["--resume", sid, "-p", out["delivered_text"]] and "--yolo" in cmd and MODEL in cmd
        log = p.project / out["resume"]["log"]
        resumed = wait_until(lambda: _json_result(log.read_text()), timeout=180)
        assert resumed["session_id"] == sid and "RESUMED-OK" in resumed["response"]
        assert "GM-RESUME-8d: now the tests" in json.dumps(stub.loop_requests[-1])
    assert [s.get("source") for s in p.steps() if s["event"] == "session_start"] == ["startup", "resume"]


def _json_result(text: str) -> dict[str, Any] | None:
    """The JSON object `gemini --output-format json` prints at its end (stderr shares the log)."""
    start = text.find("{\n")
    while start != -1:
        try:
            obj = json.loads(text[start:])
        except ValueError:
            start = text.find("{\n", start + 1)
            continue
        return obj if isinstance(obj, dict) and "session_id" in obj else None
    return None
