"""`cocoplus top` acts on the selected session, through Textual's pilot: stop and resume it, steer it, dispatch
to it, answer its question, allow or deny its permission request; each through the operation every door calls,
as the person at the terminal, and each checked where it takes effect (the installed hook, the files it reads)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable

from cocoplus.core.paths import Layout
from cocoplus.ops import view
from cocoplus.session import registry, steering
from cocoplus.supervision import signals
from cocoplus.tui import app as top
from tests.hook.helpers import fixture, hook_argv, hook_env, run_hook
from tests.support import vouched
from tests.tui.test_top import drive, table_rows, until


def sid(layout: Layout, alias: str) -> str:
    return str(registry.resolve(layout, alias)["id"])


async def select(app: top.TopApp, pilot: Any, alias: str) -> None:
    """Move the cursor to `alias`'s row with the arrow keys."""
    aliases = [r[0] for r in table_rows(app)]
    here = app.query_one("#sessions", DataTable).cursor_row
    there = aliases.index(alias)
    await pilot.press(*(["down"] * (there - here) if there > here else ["up"] * (here - there)))
    await until(pilot, lambda: (app.selected() or {}).get("alias") == alias)


def toasts(app: top.TopApp) -> list[str]:
    return [n.message for n in app._notifications]


def row(app: top.TopApp, alias: str) -> dict[str, str]:
    titles = [str(c.label) for c in app.query_one("#sessions", DataTable).columns.values()]
    return next(dict(zip(titles, r, strict=True)) for r in table_rows(app) if r[0] == alias)


def payload(layout: Layout, name: str, runtime_id: str) -> dict[str, Any]:
    p = fixture(name)
    p.update(cwd=layout.project, session_id=runtime_id)
    return p


def blocked(layout: Layout, runtime_id: str) -> str | None:
    """What the installed PreToolUse hook tells that session's agent (None: its tool may run)."""
    out = run_hook(layout, "PreToolUse", payload(layout, "claude-pretooluse-bash.json", runtime_id)).json
    return None if out is None else str(out["hookSpecificOutput"]["permissionDecisionReason"])


@pytest.mark.slow
def test_s_stops_only_the_selected_session_and_r_resumes_it_after_asking(busy: Layout) -> None:
    stop_file = Path(busy.session_stop(sid(busy, "cc2")))

    async def body(app: top.TopApp, pilot: Any) -> None:
        await select(app, pilot, "cc2")
        await pilot.press("s")
        await until(pilot, stop_file.exists)
        doc = json.loads(stop_file.read_text())
        assert (doc["principal"], doc["operator"], doc["reason"]) == ("operator", "tester", "stopped from cocoplus top")
        assert not Path(busy.agent_stop).exists()  # the project goes on
        await until(pilot, lambda: row(app, "cc2")["state"] == "stopped")
        assert row(app, "cc1")["state"] == "running"
        # Where it takes effect: the hook blocks cc2's tools, and only cc2's.
        why = blocked(busy, "s-two")
        assert why is not None and "cc2" in why and "stopped from cocoplus top" in why
        assert blocked(busy, "s-one") is None

        await pilot.press("r")  # asks first, naming whose stop it lifts
        await until(pilot, lambda: isinstance(app.screen, top.ConfirmScreen))
        assert "Resume cc2 (lift its stop by tester: stopped from cocoplus top)?" in str(
            app.screen.query_one("#confirm-question").render()
        )
        await pilot.press("n")
        await until(pilot, lambda: not isinstance(app.screen, top.ConfirmScreen))
        assert stop_file.exists()
        await pilot.press("r", "y")
        await until(pilot, lambda: not stop_file.exists())
        await until(pilot, lambda: row(app, "cc2")["state"] == "running")
        assert blocked(busy, "s-two") is None
        assert "cc2 may use tools again" in toasts(app)
        # Nothing stopped: r says so, and asks nothing.
        await pilot.press("r")
        await until(pilot, lambda: "cc2 is not stopped" in toasts(app))
        assert not isinstance(app.screen, top.ConfirmScreen)

    drive(busy, body)


@pytest.mark.slow
def test_t_steers_the_selected_session_only(busy: Layout) -> None:
    async def body(app: top.TopApp, pilot: Any) -> None:
        await select(app, pilot, "cc1")
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, top.AskScreen))
        assert "Steer cc1" in str(app.screen.query_one("#ask-heading").render())
        await pilot.press(*"rebase on main first", "enter")
        await until(pilot, lambda: steering.pending_steer(busy, sid(busy, "cc1")) is not None)
        assert "rebase on main first" in str(steering.pending_steer(busy, sid(busy, "cc1")))
        assert steering.pending_steer(busy) is None and steering.pending_steer(busy, sid(busy, "cc2")) is None
        # Where it takes effect: cc1's next prompt carries it, once; cc2's does not.
        other = run_hook(busy, "UserPromptSubmit", payload(busy, "claude-userpromptsubmit.json", "s-two"))
        assert "rebase on main first" not in other.out
        mine = run_hook(busy, "UserPromptSubmit", payload(busy, "claude-userpromptsubmit.json", "s-one"))
        assert "rebase on main first" in mine.out, mine
        assert steering.pending_steer(busy, sid(busy, "cc1")) is None

    drive(busy, body)


@pytest.mark.slow
def test_d_dispatches_to_the_selected_session(busy: Layout) -> None:
    async def body(app: top.TopApp, pilot: Any) -> None:
        await select(app, pilot, "cc1")
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, top.AskScreen))
        assert "Dispatch to cc1" in str(app.screen.query_one("#ask-heading").render())
        await pilot.press(*"run the parser tests", "enter")
        await until(pilot, lambda: steering.pending_steer(busy, sid(busy, "cc1")) is not None)
        # cc1 is mid-turn: the instruction waits for its turn end, framed as the operator's, never as a permission.
        text = str(steering.pending_steer(busy, sid(busy, "cc1")))
        assert (
            "Next instruction from tester, through cocoplus:\nrun the parser tests" in text
            and "not a permission" in text
        )
        actions = [json.loads(x) for x in Path(busy.rounds).read_text().splitlines() if '"action"' in x]
        done = [a for a in actions if a.get("event") == "action" and a.get("action") == "dispatch"]
        assert len(done) == 1 and done[0]["principal"] == "operator" and done[0]["by"] == "tester"
        assert done[0]["alias"] == "cc1" and done[0]["result"]["route"] == "steer"
        await until(pilot, lambda: any("cc1 is mid-turn" in t for t in toasts(app)))

    drive(busy, body)


@pytest.mark.slow
def test_a_answers_the_selected_sessions_question(busy: Layout) -> None:
    asked = signals.ask_human(busy, "Tabs or spaces in the new parser?", session="cc1")
    question = asked["message"]

    async def body(app: top.TopApp, pilot: Any) -> None:
        await until(pilot, lambda: row(app, "cc1")["attention"] == "decide")
        await select(app, pilot, "gm1")
        await pilot.press("a")  # gm1 asked nothing: said, and no screen
        await until(pilot, lambda: any("gm1 has asked no question" in t for t in toasts(app)))
        assert not isinstance(app.screen, top.AskScreen)
        await select(app, pilot, "cc1")
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, top.AskScreen))
        assert "cc1 asked: Tabs or spaces in the new parser?" in str(app.screen.query_one("#ask-detail").render())
        await pilot.press(*"spaces, four", "enter")
        await until(pilot, lambda: steering.pending_steer(busy, sid(busy, "cc1")) is not None)
        text = str(steering.pending_steer(busy, sid(busy, "cc1")))
        assert (
            'Answer from tester, through cocoplus, to your question "Tabs or spaces in the new parser?":\nspaces, four'
            in text
        )
        ledger = [json.loads(x) for x in Path(busy.ledger("master-agent")).read_text().splitlines()]
        answer = [m for m in ledger if m.get("answer_to") == question["id"]]
        assert len(answer) == 1 and answer[0]["text"] == "spaces, four" and answer[0]["principal"] == "operator"
        await until(pilot, lambda: row(app, "cc1")["attention"] == "-")  # the question is answered
        assert (view.question(busy, sid(busy, "cc1")) or {}).get("answered") is True

    drive(busy, body)


def ask_permission(layout: Layout, runtime_id: str) -> subprocess.Popen[bytes]:
    """The installed PermissionRequest hook of a headless session (one `dispatch` resumed): it waits for an answer."""
    below = vouched.prefix("resumed", layout.root, registry.cs_id_for(runtime_id))
    proc = subprocess.Popen(
        [*below, *hook_argv("PermissionRequest", "claude")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env=hook_env(layout, COCOPLUS_HEADLESS="1"),
    )  # fmt: skip
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(payload(layout, "claude-permissionrequest-bash.json", runtime_id)).encode())
    proc.stdin.close()
    return proc


def decision(proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    assert proc.stdout is not None and proc.stderr is not None
    out, err = proc.stdout.read(), proc.stderr.read()
    assert proc.wait(timeout=60) == 0, err
    return dict(json.loads(out)["hookSpecificOutput"]["decision"])


@pytest.mark.slow
def test_p_allows_or_denies_the_selected_sessions_permission_request(busy: Layout) -> None:
    cc1 = sid(busy, "cc1")

    async def body(app: top.TopApp, pilot: Any) -> None:
        await select(app, pilot, "cc1")
        await pilot.press("p")  # nothing pending yet
        await until(pilot, lambda: any("cc1 has no pending permission request" in t for t in toasts(app)))
        assert not isinstance(app.screen, top.PermissionScreen)

        for key, behavior in (("a", "allow"), ("d", "deny")):
            hook = ask_permission(busy, "s-one")
            try:
                await until(pilot, lambda: view.permission_requests(busy, cc1) != [], timeout=30)
                await pilot.press("ctrl+r")
                await until(pilot, lambda: row(app, "cc1")["attention"] == "authorize")
                await pilot.press("p")
                await until(pilot, lambda: isinstance(app.screen, top.PermissionScreen))
                shown = str(app.screen.query_one("#permission-request").render())
                assert "cc1 asks to use Bash" in shown and "rm -rf build" in shown
                await pilot.press(key)
                await until(pilot, lambda: hook.poll() is not None, timeout=60)
                got = decision(hook)
            finally:
                if hook.poll() is None:
                    hook.kill()
                    hook.wait()
            assert got["behavior"] == behavior
            if behavior == "deny":
                assert "tester denied this permission request" in got["message"]
        log = [json.loads(x) for x in Path(busy.permission_log).read_text().splitlines()]
        assert [(d["behavior"], d["principal"], d["by"]) for d in log] == [
            ("allowed", "operator", "tester"),
            ("denied", "operator", "tester"),
        ]
        await pilot.press("ctrl+r")
        await until(pilot, lambda: row(app, "cc1")["attention"] != "authorize")

    drive(busy, body)


def test_inside_an_agents_session_its_keys_are_refused_and_nothing_is_written(
    busy: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDECODE", "1")  # top run from an agent's own shell acts as that worker

    async def body(app: top.TopApp, pilot: Any) -> None:
        await select(app, pilot, "cc2")
        await pilot.press("s")
        await until(pilot, lambda: any("refused:" in t for t in toasts(app)))
        said = next(t for t in toasts(app) if "refused:" in t)
        assert "is for the operator or the main brain, not" in said and "worker session" in said
        await pilot.press("S")
        await until(pilot, lambda: sum("refused:" in t for t in toasts(app)) == 2)
        assert not Path(busy.session_stop(sid(busy, "cc2"))).exists() and not Path(busy.agent_stop).exists()

    drive(busy, body)
