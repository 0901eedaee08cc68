"""A recorded run for the timeline and replay tests, written by the hook itself (`run_hook_here`, the entry point the
installed command runs): one Claude Code session of 40 tool calls, the 22nd to the 29th the same failing `pytest -x`
(PreToolUse counts each before it runs, PostToolUseFailure follows a failing one), the others each a command of
its own; a secret in one call's input; two turn ends (Stop, after calls 10 and 35) that price the model's usage
from Claude Code's transcript into the spend log.  `[session]` is given as `config` (the live policy of the
recording)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cocoplus.core.paths import Layout
from cocoplus.hook import COUNT_BEFORE_CALL
from tests.hook.helpers import FIXTURES, fixture
from tests.support.hookdriver import run_hook_here

SID = "rec-0001"
SECRET = "sk-live0123456789abcdef"
PYTEST = {"command": "pytest -x"}


def command(n: int) -> dict[str, Any]:
    """The input of tool call `n` (1-based)."""
    if 22 <= n <= 29:
        return PYTEST
    if n == 5:
        return {"command": f"OPENAI_API_KEY={SECRET} python tools/fetch.py"}
    return {"command": f"echo step {n}"}


TRANSCRIPT = FIXTURES / "claude-transcript.jsonl"
TURN_ENDS = {10: 4, 35: 7}  # after call N, the transcript's first so many lines are written


def turn_end(layout: Layout, lines: int) -> None:
    """Claude Code's turn end, its transcript holding the fixture's first `lines` lines."""
    path = Path(layout.project) / "transcript.jsonl"
    path.write_text("".join(TRANSCRIPT.read_text().splitlines(keepends=True)[:lines]))
    stop = fixture("claude-stop.json") | {"session_id": SID, "transcript_path": str(path), "cwd": layout.project}
    assert run_hook_here(layout, "Stop", stop, "claude").code == 0


def record(layout: Layout, config: str, calls: int = 40) -> list[dict[str, Any]]:
    """The run recorded under the `[session]` keys `config`; the hook's answer to each call (as JSON)."""
    Path(layout.config).write_text(f"[session]\n{config}")
    start = fixture("claude-sessionstart-startup.json") | {"session_id": SID, "cwd": layout.project}
    assert run_hook_here(layout, "SessionStart", start, "claude").code == 0
    answers = []
    for n in range(1, calls + 1):
        pre = fixture("claude-pretooluse-bash.json") | {"session_id": SID, "tool_input": command(n)}
        r = run_hook_here(layout, "PreToolUse", pre, "claude", COUNT_BEFORE_CALL)
        assert r.code == 0, r
        answers.append(r.json or {})
        if command(n) is PYTEST:
            failed = fixture("claude-posttoolusefailure-bash.json") | {"session_id": SID, "tool_input": PYTEST}
            assert run_hook_here(layout, "PostToolUseFailure", failed, "claude", COUNT_BEFORE_CALL).code == 0
        if n in TURN_ENDS:
            turn_end(layout, TURN_ENDS[n])
    return answers
