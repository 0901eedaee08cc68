"""A recorded run for the timeline and replay tests, written by the hook itself (`run_hook_here`, the entry point the
installed command runs): one Claude Code session of 40 tool calls, the 22nd to the 29th the same failing `pytest -x`
(PreToolUse counts each before it runs, PostToolUseFailure follows a failing one), the others each a command of
its own; a secret in one call's input; Claude Code's transcript, with each call's tool_use and tool_result (in the
form of tests/fixtures' recorded transcript), and two turn ends (Stop, after calls 10 and 35) that price the
model's usage in it (the recorded transcript's usage lines) into the spend log.  `[session]` is given as `config`
(the live policy of the recording)."""

from __future__ import annotations

import json
import time
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
TURN_ENDS = {10: 4, 35: 7}  # after call N, the fixture transcript's lines up to this one are in the transcript


def at(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{int(seconds * 1000) % 1000:03d}Z"


def tool_lines(n: int) -> list[str]:
    """Claude Code's transcript lines of tool call `n`, asked for now: the assistant's tool_use, then the
    tool_result (pytest's failing, after 5 s; the others after 2 s), in the form of the fixture transcript's."""
    asked = time.time()
    use = {
        "type": "assistant",
        "sessionId": SID,
        "timestamp": at(asked),
        "uuid": f"u-{n}-a",
        "message": {
            "role": "assistant",
            "model": "claude-sonnet-5",
            "id": f"msg_rec{n:03d}",
            "type": "message",
            "content": [{"type": "tool_use", "id": f"toolu_rec{n:03d}", "name": "Bash", "input": command(n)}],
        },
    }
    failed = command(n) is PYTEST
    result = {"type": "user", "sessionId": SID, "timestamp": at(asked + (5 if failed else 2)), "uuid": f"u-{n}-r",
              "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_rec{n:03d}",
                          "content": "1 failed" if failed else "ok", "is_error": failed}]}}  # fmt: skip
    return [json.dumps(use) + "\n", json.dumps(result) + "\n"]


def record(layout: Layout, config: str, calls: int = 40) -> list[dict[str, Any]]:
    """The run recorded under the `[session]` keys `config`; the hook's answer to each call (as JSON).  The
    transcript grows as Claude Code's does: each call that runs, and at each turn end the usage lines."""
    Path(layout.config).write_text(f"[session]\n{config}")
    transcript = Path(layout.project) / "transcript.jsonl"
    transcript.write_text("")
    where = {"session_id": SID, "cwd": layout.project, "transcript_path": str(transcript)}
    assert (
        run_hook_here(layout, "SessionStart", fixture("claude-sessionstart-startup.json") | where, "claude").code == 0
    )
    usage = TRANSCRIPT.read_text().splitlines(keepends=True)
    answers, done = [], 0
    for n in range(1, calls + 1):
        pre = fixture("claude-pretooluse-bash.json") | where | {"tool_input": command(n)}
        r = run_hook_here(layout, "PreToolUse", pre, "claude", COUNT_BEFORE_CALL)
        assert r.code == 0, r
        answer = r.json or {}
        answers.append(answer)
        if (answer.get("hookSpecificOutput") or {}).get("permissionDecision") != "deny":
            with transcript.open("a") as fh:
                fh.writelines(tool_lines(n))
        if command(n) is PYTEST:
            failed = fixture("claude-posttoolusefailure-bash.json") | where | {"tool_input": PYTEST}
            assert run_hook_here(layout, "PostToolUseFailure", failed, "claude", COUNT_BEFORE_CALL).code == 0
        if n in TURN_ENDS:
            with transcript.open("a") as fh:
                fh.writelines(usage[done : TURN_ENDS[n]])
            done = TURN_ENDS[n]
            stop = fixture("claude-stop.json") | where
            assert run_hook_here(layout, "Stop", stop, "claude").code == 0
    return answers
