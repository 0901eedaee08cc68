"""The CLI shows what workers, steers and records say as inert text: real `python -m cocoplus`
processes, their output checked byte by byte (a pipe: Rich adds no colour, so every ESC would be
the data's own)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cocoplus.core import fsio, vocab
from cocoplus.core.paths import Layout
from cocoplus.session import registry
from tests.hook.helpers import fixture, run_hook

READABLE = "Café 数据库 🚀 שלום"
# A hyperlink, colour, a title change, a screen clear, BEL, backspace, CR, DEL, a C1 control, 8-bit CSI,
# a bidi override and an isolate, then a cut-off CSI.
NASTY = (
    "\x1b]8;;https://evil.example/\x1b\\link\x1b]8;;\x1b\\ \x1b[31mred\x1b[0m \x1b]0;title\x07\x1b[2J"
    "bel\x07 bs\x08 cr\rx del\x7f nel\x85 \x9b2Jcsi \u202eevil\u202c \u2066iso\u2069 end\x1b["
)
QUESTION = f"question {READABLE}: {NASTY}"
BLOCKED = f"blocked {READABLE}: {NASTY}"
STEER = f"steer {READABLE}: {NASTY}"
REASON = f"reason {READABLE}: {NASTY}"
INSTRUCTION = f"instruction {READABLE}: {NASTY}"
LAST_EVENT = "Post\x1b[8mToolUse\u202e\nfake row"  # a record edited by hand (or by anything in the project)

FORBIDDEN = {chr(c) for c in (*range(0x00, 0x20), *range(0x7F, 0xA0))} | set(vocab.BIDI_CONTROLS) | {"\u2028", "\u2029"}
FORBIDDEN_BYTES = [c.encode() for c in sorted(FORBIDDEN - {"\n"})]


def run(layout: Layout, *argv: str) -> tuple[int, bytes, bytes]:
    """`python -m cocoplus ARGV` in a child process; stdout and stderr as bytes."""
    env = dict(os.environ, COCOPLUS_DIR=layout.root)
    env.pop("FORCE_COLOR", None)
    p = subprocess.run(
        [sys.executable, "-m", "cocoplus", *argv],
        cwd=layout.project,
        env=env,
        capture_output=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    return p.returncode, p.stdout, p.stderr


def controls_in(data: bytes) -> list[bytes]:
    return [b for b in FORBIDDEN_BYTES if b in data]


@pytest.fixture
def said(project: Layout) -> Layout:
    """Two sessions; a question, a blocked report, a queued instruction, a steer, a stop reason,
    a hand-edited record."""
    for i in (1, 2):
        payload = fixture("claude-sessionstart-startup.json") | {"session_id": f"sess-{i}", "cwd": project.project}
        assert run_hook(project, "SessionStart", payload).code == 0
    for argv in (
        ("ask-human", QUESTION, "--session", "cc1"),
        ("report", "blocked", BLOCKED, "--session", "cc2"),
        ("session", "queue", "add", INSTRUCTION),
        ("session", "steer", STEER),
        ("session", "stop", "--reason", REASON),
    ):
        code, _out, err = run(project, *argv)
        assert code == 0, (argv, err)
    rec = registry.resolve(project, "cc2")
    fsio.atomic_write_json(project.session_record(rec["id"]), rec | {"last_event": LAST_EVENT})
    return project


@pytest.mark.slow
@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (
            ("chat", "log"),
            [
                f"worker cc1: question {READABLE}: link red ",
                "bel␇ bs␈ cr␍x del␡ nel\\x85 csi \\u202eevil\\u202c \\u2066iso\\u2069 end␛[",
            ],
        ),
        (
            ("session", "status"),
            [f"steer {READABLE}: link red ", f"reason {READABLE}: link red ", f"instruction {READABLE}: link red "],
        ),
        (("sessions", "list"), ["PostToolUse\\u202e fake row"]),
        (("session", "queue", "list"), [f"instruction {READABLE}: link red "]),
    ],
    ids=["chat log", "session status", "sessions list", "session queue list"],
)
def test_worker_and_steer_text_is_printed_inert(said: Layout, argv: tuple[str, ...], shown: list[str]) -> None:
    code, out, err = run(said, *argv)
    assert code == 0, err
    assert controls_in(out) == [], out
    assert controls_in(err) == [], err
    text = out.decode("utf-8")
    for piece in shown:
        assert piece in text, (piece, text)
    assert "evil.example" not in text  # the hyperlink's hidden target


@pytest.mark.slow
def test_a_table_cell_stays_on_its_line(said: Layout) -> None:
    code, out, _err = run(said, "sessions", "list")
    lines = out.decode().splitlines()
    assert code == 0 and len(lines) == 3, lines  # the header and one line per session: the newline is a space
    assert lines[2].startswith("cc2 ") and "fake row" in lines[2]


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv", [("sessions", "list", "--json"), ("session", "status", "--json"), ("chat", "log", "--json")]
)
def test_json_output_carries_the_text_as_it_was_written_with_no_raw_control(
    said: Layout, argv: tuple[str, ...]
) -> None:
    code, out, err = run(said, *argv)
    assert code == 0, err
    assert controls_in(out.replace(b"\n", b"")) == [], out  # JSON escapes every control character: \u001b, \u202e, ...
    doc = json.loads(out)
    dumped = json.dumps(doc, ensure_ascii=False)
    wanted = {"sessions": LAST_EVENT, "session": STEER, "chat": QUESTION}[argv[0]]
    assert json.dumps(wanted, ensure_ascii=False)[1:-1] in dumped  # the data itself is unchanged


@pytest.mark.slow
def test_a_workers_transcript_is_inert(project: Layout) -> None:
    """What a worker's runtime printed (its model's text, a tool's output, stderr) is shown inert, in the
    transcript and with --raw, and each tool result stays on its line."""
    fsio.ensure_dir(project.worker_dir("w1"))
    fsio.atomic_write_json(
        project.worker_record("w1"), {"schema_version": 1, "id": "w1", "runtime": "claude", "state": "exited"}
    )
    events = [
        {"type": "assistant", "message": {"content": [{"type": "text", "text": f"said {NASTY}"}]}},
        {
            "type": "assistant",
            "message": {
                "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": f"cmd {NASTY}"}}]
            },
        },
        {
            "type": "user",
            "message": {
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "is_error": True, "content": f"out\n{NASTY}\nlast"}
                ]
            },
        },
    ]
    with open(project.worker_log("w1"), "w", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(e) + "\n" for e in events) + f"stderr {NASTY}\n")
    code, out, err = run(project, "workers", "logs", "w1")
    assert code == 0, err
    assert controls_in(out.replace(b"\n", b"")) == [], out
    lines = out.decode().splitlines()
    assert [ln.split()[0] for ln in lines] == ["assistant", "tool", "result", "output"], lines
    assert lines[2].startswith("result     Bash: ERROR out ↵ link red ") and lines[2].endswith(" ↵ last")
    assert "evil.example" not in out.decode()
    code, out, err = run(project, "workers", "logs", "w1", "--raw")
    assert code == 0 and controls_in(out.replace(b"\n", b"")) == [], out
