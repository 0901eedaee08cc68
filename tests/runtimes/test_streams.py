"""Each runtime's headless output read as a transcript, from streams the real CLIs printed.

The recordings are in tests/fixtures/runtime-streams (its README says how
they were made); tests/e2e/test_worker_logs.py reads the same formats from
launched workers of the CLIs themselves.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cocoplus.runtimes import registry, streams

STREAMS = Path(__file__).resolve().parents[1] / "fixtures" / "runtime-streams"


def read(name: str) -> str:
    return (STREAMS / name).read_text()


def shape(entries: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (e["kind"], e.get("tool"), bool(e.get("error"))) for e in entries if e["kind"] in ("tool", "result", "text")
    ]


@pytest.mark.parametrize(
    ("runtime", "shell", "first_result"),
    [
        ("claude", "Bash", "Exit code 2\nhello\nls: cannot access '/nonexistent-x'"),
        ("codex", "shell", "exit code 2\nhello\nls: cannot access '/nonexistent-x'"),
        ("gemini", "run_shell_command", "hello\nls: cannot access '/nonexistent-x'"),
    ],
)
def test_two_commands_and_an_answer(runtime: str, shell: str, first_result: str) -> None:
    entries = streams.transcript(runtime, read(f"{runtime}-two-commands.jsonl"))
    # Gemini CLI reports a command that exits non-zero as a tool call that succeeded: it is not marked failed.
    failed = runtime != "gemini"
    assert shape(entries) == [
        ("tool", shell, False),
        ("result", shell, failed),
        ("tool", shell, False),
        ("result", shell, False),
        ("text", None, False),
    ]
    calls = [e for e in entries if e["kind"] in ("tool", "result")]
    assert "echo hello; ls /nonexistent-x" in calls[0]["text"] and calls[1]["text"].startswith(first_result)
    assert [e["text"].strip() for e in calls[3:]] == ["a\nb" + ("\nc" if runtime == "claude" else "")]
    assert [e["text"] for e in entries if e["kind"] == "text"] == ["All done: hello printed."]
    assert entries[0]["kind"] == "session" and entries[-1]["kind"] == "end" and not entries[-1].get("error")
    assert streams.outcome(entries) == ("started", None) and streams.failure(entries) is None


def test_a_log_whose_runs_changed_runtime_is_read_run_by_run_in_each_ones_own_stream() -> None:
    # A failover: the worker's log holds a Claude Code run, then a Codex run (the runner's lines say which).
    mark = streams.RUNNER_MARK
    log = (
        f"{mark}2026-12-02T15:00:00.000Z run 1: /usr/bin/claude -p Write the parser. --output-format stream-json\n"
        + read("claude-two-commands.jsonl")
        + f"{mark}2026-12-02T15:00:09.000Z run 1 ended: exit code 0\n"
        + f"{mark}2026-12-02T15:01:00.000Z run 2: /opt/node /opt/lib/codex exec --json You are taking over\n"
        + read("codex-two-commands.jsonl")
    )
    entries = streams.transcript("claude", log)
    tools = [e["tool"] for e in entries if e["kind"] == "tool"]
    assert tools == ["Bash", "Bash", "shell", "shell"], tools
    assert [e["text"] for e in entries if e["kind"] == "text"] == ["All done: hello printed."] * 2
    assert not [e for e in entries if e["kind"] == "output"]  # no line left unread as another runtime's
    assert streams.run_runtime("2026-12-02T15:00:00.000Z run 3: /home/u/.local/bin/gemini -p go") == "gemini"
    for other in ("2026-12-02T15:00:09.000Z run 1 ended: exit code 0", "run 1: claude", "x run 2: /bin/sh -c x"):
        assert streams.run_runtime(other) is None, other


@pytest.mark.parametrize(
    ("runtime", "name", "why"),
    [
        ("claude", "claude-not-logged-in.jsonl", "Not logged in · Please run /login"),
        ("codex", "codex-missing-key.jsonl", "Missing environment variable: `STUB_API_KEY`."),
        (
            "gemini",
            "gemini-missing-key.txt",
            "When using Gemini API, you must specify the GEMINI_API_KEY environment variable. | Update your "
            "environment",
        ),
    ],
)
def test_a_run_that_fails_before_its_model_answers_says_why_in_its_own_words(runtime: str, name: str, why: str) -> None:
    entries = streams.transcript(runtime, read(name))
    assert (streams.failure(entries) or "").startswith(why)
    state, said = streams.outcome(entries)
    # Claude Code and Codex say in their stream that the run failed; Gemini CLI only exits (41) after its words.
    assert (state, said) == (("failed", why) if runtime != "gemini" else (None, None))


def test_gemini_text_in_pieces_is_one_answer_and_a_result_names_its_call() -> None:
    lines = [
        '{"type":"tool_use","tool_name":"read_file","tool_id":"t1","parameters":{"file_path":"notes.md"}}',
        '{"type":"tool_result","tool_id":"t1","status":"error","error":{"type":"file_not_found","message":"File not '
        'found."}}',
        '{"type":"message","role":"assistant","content":"The file ","delta":true}',
        '{"type":"message","role":"assistant","content":"is missing.","delta":true}',
        '{"type":"error","severity":"warning","message":"Loop detected"}',
        '{"type":"result","status":"error","error":{"type":"FatalTurnLimitedError","message":"Reached max session '
        'turns"}}',
    ]
    entries = streams.transcript("gemini", "\n".join(lines) + "\n")
    assert [(e["kind"], e.get("tool"), e["text"], bool(e.get("error"))) for e in entries] == [
        ("tool", "read_file", "notes.md", False),
        ("result", "read_file", "File not found.", True),
        ("text", None, "The file is missing.", False),
        ("warning", None, "Loop detected", False),
        ("end", None, "Reached max session turns", True),
    ]


def test_lines_that_are_not_events_are_kept_as_they_came() -> None:
    # An event of its runtime's that holds nothing to show (a message of an unknown shape) adds no entry.
    text = (
        "[cocoplus] 2026-01-01T00:00:00Z run 1: claude -p x\nplain stderr line\n{not json\n"
        + '{"type":"assistant","message":"not a dict"}\n'
    )
    entries = streams.transcript("claude", text)
    assert [(e["kind"], e["text"]) for e in entries] == [
        ("cocoplus", "2026-01-01T00:00:00Z run 1: claude -p x"),
        ("output", "plain stderr line"),
        ("output", "{not json"),
    ]
    # A runtime cocoplus never runs headless, or none: every line as it came.
    assert [e["kind"] for e in streams.transcript("cursor", '{"type":"x"}\n')] == ["output"]
    assert [e["kind"] for e in streams.transcript(None, '{"type":"x"}\n')] == ["output"]


@pytest.mark.parametrize("adapter", registry.ordered(), ids=lambda a: a.NAME)
def test_every_adapter_reads_its_stream_or_says_it_has_none(adapter: Any) -> None:
    got = adapter.stream_entries({"type": "something new"})
    assert got is None or got == []
    try:
        launched = adapter.launch_argv(["x"], "task", None, None)
    except ValueError:  # it cannot be launched at all, and says why (the Antigravity CLI)
        launched = None
    if launched is not None:
        assert got == [], f"{adapter.NAME} is launched headless: it must read its own stream"
